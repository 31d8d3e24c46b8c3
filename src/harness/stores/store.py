"""``SessionStore``: live sessions made durable by a backend (SPEC §4, FORMAT §7.4, §10).

``create`` returns a live session whose appends a write-behind observer persists;
``adopt`` does the same for a session built elsewhere (checked against what is stored);
``load`` restores a stored session, commits its crash-repair closers durably and
returns it live; ``inspect`` gives the same view and writes nothing; ``flush`` is
the durability point; ``delete`` removes a stored session for good.

Durability: a returned ``append`` means committed in memory; a returned
``flush(session)`` means every event appended before the call is on the backend
(fsync'd or committed); a crash loses at most what was appended after the last
returned flush (and whatever a background write made durable earlier is kept).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import math
import random
import secrets
import time
import weakref
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from typing import Any

from harness.errors import (
    CorruptSession,
    InvalidSeed,
    OutcomeUnknown,
    SessionConflict,
    SessionDeleted,
    SessionExists,
    SessionHasForks,
    SessionInUse,
    SessionNotFound,
    SessionOwner,
    StorageError,
)
from harness.events.collector import collector_paused
from harness.events.event import Event
from harness.session.header import SessionHeader
from harness.session.session import Session
from harness.stores.backend import (
    Backend,
    ReadProgress,
    SessionInfo,
    StoredLog,
    StreamRejected,
    WireStream,
    read_whole,
    stored_equals,
)
from harness.stores.fastrestore import fast_events
from harness.stores.ids import check_session_id
from harness.stores.leases import TailingBackend
from harness.stores.legacy import (
    check_closers,
    is_current,
    normalize_legacy,
    refuse_null_boundaries,
    refuse_retired,
    refuse_unknown,
)
from harness.stores.ownership import Claim, new_owner, owner_gone_note, writing_as
from harness.stores.writebehind import DEFAULT_WINDOW_S, WriteBehind

_FIRST_PAUSE_S = 0.005  # waiting for an owner: the first pause, doubled up to the last
_LAST_PAUSE_S = 0.2

__all__ = ["Progress", "SessionStore", "restore_logged", "restore_stored", "restore_streamed"]

logger = logging.getLogger("harness.stores")

Clock = Callable[[], int]


class _Live:
    __slots__ = ("session", "unsubscribe", "writer")

    def __init__(self, session: Session, writer: WriteBehind, unsubscribe: Callable[[], None]) -> None:
        self.session = session
        self.writer = writer
        self.unsubscribe = unsubscribe


def restore_stored(
    session_id: str,
    log: StoredLog,
    *,
    clock: Clock | None = None,
    repair: bool = True,
    repair_note: Mapping[str, Any] | None = None,
) -> tuple[Session, list[Event]]:
    """The load pipeline after the backend read (FORMAT §7.4): format refusals, legacy
    normalisation, restore with full validation and crash repair.

    Returns the detached session and the closers it added. Raises ``UnsupportedFormat``
    for retired or unknown formats and ``CorruptSession`` for anything else invalid.
    """
    events = log.events
    if log.header.id != session_id:
        raise CorruptSession(
            f"stored session {session_id!r} has a header for {log.header.id!r}", path=log.location
        )
    try:
        with collector_paused():
            refuse_retired(session_id, events, log.location)
            normalize_legacy(session_id, events)
            refuse_unknown(session_id, events, log.location)
            refuse_null_boundaries(events)
            session, closers = Session.from_stored(
                session_id, events, log.header, clock=clock, repair=repair, repair_note=repair_note
            )
            check_closers(closers)
            return session, closers
    except InvalidSeed as error:
        raise CorruptSession(
            f"stored session {session_id!r} failed validation: {error}", path=log.location
        ) from error


Progress = Callable[[int, int], None]
"""Told ``(done, total)`` now and then while a stored session is read (units: bytes or rows)."""

_PROGRESS_EVERY = 4096


def _current_only(
    events: Iterator[dict[str, Any]], stream: WireStream, progress: Progress | None
) -> Iterator[dict[str, Any]]:
    read = stream.progress
    for count, event in enumerate(events, 1):
        if not is_current(event):
            raise StreamRejected(f"event at seq {event.get('seq')!r} needs the legacy pipeline")
        if progress is not None and count % _PROGRESS_EVERY == 0:
            progress(read.done, read.total)
        yield event
    if progress is not None:
        progress(read.total, read.total)


def _counted(events: Iterator[Event], stream: WireStream, progress: Progress | None) -> Iterator[Event]:
    if progress is None:
        return events
    return _reported(events, stream.progress, progress)


def _reported(events: Iterator[Event], read: ReadProgress, progress: Progress) -> Iterator[Event]:
    for count, event in enumerate(events, 1):
        if count % _PROGRESS_EVERY == 0:
            progress(read.done, read.total)
        yield event
    progress(read.total, read.total)


def restore_streamed(
    session_id: str,
    log: StoredLog,
    *,
    clock: Clock | None = None,
    progress: Progress | None = None,
    repair: bool = True,
    repair_note: Mapping[str, Any] | None = None,
) -> tuple[Session, list[Event]] | None:
    """``restore_stored`` over ``log.stream``, validating each event as it is decoded.

    Returns ``None`` when the stream refused something or the log failed validation:
    the caller then restores from ``log.stream.exact()``, whose exact pipeline gives
    the precise outcome (an error, a legacy rewrite, a torn-tail repair). A log this
    returns a session for is one the exact pipeline restores identically.
    """
    stream = log.stream
    assert stream is not None
    if log.header.id != session_id:
        return None
    try:
        with collector_paused():
            if stream.lines is not None:
                lines = fast_events(stream.lines(), packed=stream.packed, finished=stream.finished)
                checked = _counted(lines, stream, progress)
                session, closers = Session.from_checked(
                    session_id, checked, log.header, clock=clock, repair=repair, repair_note=repair_note
                )
                check_closers(closers)
                return session, closers
            events = _current_only(stream.events(), stream, progress)
            session, closers = Session.from_stored(
                session_id, events, log.header, clock=clock, repair=repair, repair_note=repair_note
            )
            check_closers(closers)
            return session, closers
    except (StreamRejected, InvalidSeed):
        return None


async def restore_logged(
    session_id: str,
    log: StoredLog,
    *,
    clock: Clock | None = None,
    progress: Progress | None = None,
    repair: bool = True,
    repair_note: Mapping[str, Any] | None = None,
) -> tuple[Session, list[Event], StoredLog]:
    """Restore ``log`` (streamed when it can), falling back to the exact read. Returns the
    session, its closers and the log the result came from. ``repair=False`` adds no closers
    (a live session read as stored); ``repair_note`` see ``Session.from_stored``."""
    options: dict[str, Any] = {"clock": clock, "repair": repair, "repair_note": repair_note}
    if log.stream is not None:
        restored = restore_streamed(session_id, log, progress=progress, **options)
        if restored is not None:
            return restored[0], restored[1], log
        log = await log.stream.exact()
    session, closers = restore_stored(session_id, log, **options)
    return session, closers, log


def _check_adoptable(session: Session, log: StoredLog) -> None:
    """``SessionConflict`` unless the stored log is a prefix of ``session`` (FORMAT §10)."""
    stored, live = log.header.to_json(line=True), session.header.to_json(line=True)
    if stored != live:
        raise SessionConflict(
            f"cannot adopt session {session.id!r}: the stored header differs ({stored} != {live})"
        )
    events = session.events
    if len(log.events) > len(events):
        raise SessionConflict(
            f"cannot adopt session {session.id!r}: {len(log.events)} events are stored, "
            f"the live session has {len(events)}",
            expected=len(log.events),
            got=len(events),
        )
    for seq, wire in enumerate(log.events):
        if not stored_equals(wire, events[seq]):
            raise SessionConflict(
                f"cannot adopt session {session.id!r}: stored event {seq} differs from the live one",
                expected=len(log.events),
                got=seq,
            )


class SessionStore:
    """Creates, loads and persists sessions on one backend. Use from one event loop."""

    def __init__(
        self,
        backend: Backend,
        *,
        write_window_s: float = DEFAULT_WINDOW_S,
        clock: Clock | None = None,
    ) -> None:
        self._backend = backend
        self._window = write_window_s
        self._clock = clock
        self._live: dict[str, _Live] = {}
        self._deleted: dict[str, Session] = {}  # live sessions ``delete`` detached
        self._closed = False
        self._id = secrets.token_hex(6)
        self._claims: dict[str, SessionOwner] = {}

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def store_id(self) -> str:
        """This store's random id: the ``store`` of the owner records of its sessions."""
        return self._id

    async def _claim(self, session_id: str, take_over: bool = False) -> Claim:
        with writing_as(self._id):
            claim = await self._backend.claim(session_id, new_owner(self._id), take_over=take_over)
        self._claims[session_id] = claim.owner
        return claim

    async def _claim_waiting(self, session_id: str, take_over: bool, wait: float) -> Claim:
        """``_claim``, asked again while another live writer owns the session, up to ``wait`` s."""
        if not (wait >= 0 and math.isfinite(wait)):
            raise ValueError(f"wait must be a finite number of seconds >= 0, not {wait!r}")
        deadline = time.monotonic() + wait
        pause = _FIRST_PAUSE_S
        while True:
            try:
                return await self._claim(session_id, take_over)
            except SessionInUse:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
            await asyncio.sleep(min(pause, left) * random.uniform(0.5, 1.0))  # spread the askers
            pause = min(pause * 2, _LAST_PAUSE_S)

    async def _unclaim(self, session_id: str) -> None:
        if self._claims.pop(session_id, None) is None:
            return
        try:
            with writing_as(self._id):
                await self._backend.unclaim(session_id)
        except StorageError as error:  # the kernel or the lease's expiry lets it go anyway
            logger.warning("session %s: releasing its ownership failed: %s", session_id, error)

    async def owner(self, session_id: str) -> SessionOwner | None:
        """The session's live owner (pid, host, store, since), or ``None`` when no writer holds
        it; reads only. A session live in this store is owned by this store."""
        self._check_open()
        check_session_id(session_id)
        return await self._backend.owner(session_id)

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError("this SessionStore is closed")

    def _attach(self, session: Session, cursor: int) -> Session:
        writer = WriteBehind(self._backend, session.id, cursor=cursor, window_s=self._window, store=self._id)
        for event in session.events[cursor:]:
            writer(event)
        unsubscribe = session.subscribe(writer)
        self._live[session.id] = _Live(session, writer, unsubscribe)
        return session

    async def create(
        self,
        header: SessionHeader | Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        cwd: str | None = None,
    ) -> Session:
        """A new live session, owned by this store. Nothing is written until its first flush or
        batch. ``SessionInUse`` when another live writer owns the id."""
        self._check_open()
        if header is None:
            header = SessionHeader.new(id=id, cwd=cwd, created_at=self._clock() if self._clock else None)
        session = Session.create(header, clock=self._clock)
        check_session_id(session.id)
        if session.id in self._live:
            raise SessionExists(f"session {session.id!r} is already live in this store")
        await self._claim(session.id)
        try:
            await self._backend.create(session.header)
        except BaseException:
            await self._unclaim(session.id)
            raise
        return self._attach(session, 0)

    async def adopt(self, session: Session) -> Session:
        """Make a session built elsewhere live in this store (FORMAT §10 live adoption).

        For a session made in memory, forked, or restored from another store. When the
        backend holds no session of this id, it is created and every event is queued.
        When it holds one, its header must be the session's and its committed events
        must equal the session's first events by serialized JSON; a torn tail is cut,
        and only the later events are queued (events below the stored cursor are never
        appended again). Anything else raises ``SessionConflict`` and writes nothing.
        Returns ``session``, now persisted by this store like one from ``create``.
        """
        self._check_open()
        check_session_id(session.id)
        live = self._live.get(session.id)
        if live is not None:
            if live.session is session:
                return session
            raise SessionExists(f"another session {session.id!r} is already live in this store")
        await self._claim(session.id)
        try:
            with writing_as(self._id):
                try:
                    log = await read_whole(self._backend, session.id)
                except SessionNotFound:
                    await self._backend.create(session.header)
                    return self._attach(session, 0)
                _check_adoptable(session, log)
                if log.torn is not None:
                    await self._backend.repair(session.id, log, [])
        except BaseException:
            await self._unclaim(session.id)
            raise
        return self._attach(session, len(log.events))

    async def _restore(
        self,
        session_id: str,
        progress: Progress | None,
        *,
        repair: bool = True,
        repair_note: Mapping[str, Any] | None = None,
    ) -> tuple[Session, list[Event], StoredLog]:
        log = await self._backend.read(session_id)
        return await restore_logged(
            session_id, log, clock=self._clock, progress=progress, repair=repair, repair_note=repair_note
        )

    async def load(
        self,
        session_id: str,
        *,
        take_over: bool = False,
        wait: float = 0.0,
        progress: Progress | None = None,
    ) -> Session:
        """Take ownership of a stored session, commit its repair closers durably, return it live.

        The store becomes the session's one live writer until ``release``, ``close`` or the
        process ends. ``SessionInUse`` (naming the owner, nothing written) when another live
        writer owns it; ``take_over=True`` fences that owner off instead (its next write
        raises ``LeaseLost``). A turn is repaired only once its owner is gone or fenced off,
        and the repair ends with a ``harness/repair`` record naming that owner.

        A session already live in this store is flushed and returned as is, unless
        its turn is open (a live turn is never repaired): then ``StorageError``.
        ``wait`` is how many seconds to wait for another live writer to let go (it is asked
        again, more slowly as time passes) before ``SessionInUse``.
        ``progress`` is told how far the read has come (see ``Progress``).
        """
        self._check_open()
        check_session_id(session_id)
        live = self._live.get(session_id)
        if live is not None:
            await live.writer.flush()
            if _open_turn(live.session):
                raise StorageError(f"session {session_id!r} is live in this store with an open turn")
            return live.session
        if take_over:
            await self._backend.stored_length(session_id)  # nothing to take over: SessionNotFound
        claim = await self._claim_waiting(session_id, take_over, wait)
        return await self._load_claimed(session_id, claim, progress)

    async def _load_claimed(self, session_id: str, claim: Claim, progress: Progress | None) -> Session:
        """``load`` once the claim is made: restore, commit the repair, attach (or let go)."""
        try:
            note = owner_gone_note(claim)
            session, closers, log = await self._restore(session_id, progress, repair_note=note)
            if closers or log.torn is not None:
                with writing_as(self._id):
                    await self._backend.repair(session_id, log, closers)
        except BaseException:
            await self._unclaim(session_id)
            raise
        return self._attach(session, session.first_live_seq)

    async def reclaim(self, session: Session, *, wait: float = 0.0) -> Session:
        """Own again a session this store released: ``session`` itself, live once more, when
        the stored log still holds exactly its events; otherwise (another writer appended, or
        ``session`` holds events that were never stored) the stored session, loaded as
        ``load`` does. ``wait`` as for ``load``. For a writer that owns a session only while
        it works: nothing is read again, and no end-seed is added, while no one else wrote.
        """
        self._check_open()
        live = self._live.get(session.id)
        if live is not None:
            if live.session is session:
                return session
            raise SessionExists(f"another session {session.id!r} is already live in this store")
        claim = await self._claim_waiting(session.id, False, wait)
        try:
            unchanged = (
                (claim.previous is None or claim.previous.store == self._id)  # no other owner since
                and not _open_turn(session)
                and await self._backend.stored_length(session.id) == len(session.events)
            )
        except BaseException:
            await self._unclaim(session.id)
            raise
        if unchanged:
            return self._attach(session, len(session.events))
        return await self._load_claimed(session.id, claim, None)

    async def stored_length(self, session_id: str) -> int:
        """How many events of the session are stored (reads only; ``SessionNotFound``)."""
        self._check_open()
        check_session_id(session_id)
        return await self._backend.stored_length(session_id)

    async def inspect(self, session_id: str, *, progress: Progress | None = None) -> Session:
        """A detached view of the session; writes nothing and needs no ownership.

        A session no live writer owns is shown as ``load`` would give it (crash-repair closers
        included); one a live writer owns (see ``owner``) is shown as stored: its open turn
        is running, not crashed.
        """
        self._check_open()
        check_session_id(session_id)
        live = self._live.get(session_id)
        if live is not None:
            return Session.from_restore(session_id, list(live.session.events), live.session.header)
        owned = await self._backend.owner(session_id) is not None
        session, _, _ = await self._restore(session_id, progress, repair=not owned)
        return session

    async def list(self) -> list[SessionInfo]:
        """Every stored session (id, created, cwd, event count, last activity, title). One that
        cannot be loaded (a damaged header, a newer format) is listed with ``problem`` set."""
        self._check_open()
        return await self._backend.list()

    def is_live(self, session: Session) -> bool:
        """Whether ``session`` is live in this store (owned and persisted by it)."""
        live = self._live.get(session.id)
        return live is not None and live.session is session

    def _live_of(self, session: Session) -> _Live:
        live = self._live.get(session.id)
        if live is None or live.session is not session:
            if self._deleted.get(session.id) is session:
                raise SessionDeleted(
                    f"session {session.id!r} was deleted from this store: it is detached, and "
                    "nothing appended to it is written"
                )
            raise SessionNotFound(f"session {session.id!r} is not live in this store")
        return live

    async def forks(self, session_id: str) -> tuple[str, ...]:
        """The ids of the stored sessions whose header names ``session_id`` as their fork
        parent (``parentSession``), sorted."""
        self._check_open()
        listed = await self._backend.list()
        return tuple(sorted(i.id for i in listed if i.parent == session_id and i.id != session_id))

    async def delete(self, session_id: str, *, orphan_forks: bool = False) -> None:
        """Delete a stored session for good: its header and every event, durably.

        Afterwards ``list`` omits it and ``load``/``inspect`` raise ``SessionNotFound``; other
        sessions are untouched. A session live in this store is detached: its unwritten
        events are dropped and ``flush`` of it raises ``SessionDeleted``; a writer elsewhere
        (another store, another process) gets ``SessionDeleted`` on its next flush, nothing
        written. ``SessionNotFound`` when the store holds no such session.

        Forks: a fork holds its own copy of what it inherited, so deleting its parent loses
        none of the fork's events, but the parent's later history and the fork's lineage link
        go. So a session that stored forks name as parent is refused (``SessionHasForks``,
        nothing deleted) unless ``orphan_forks`` is true. The delete takes ownership first:
        ``SessionInUse`` (nothing deleted) while another live writer owns it. A search index
        is the caller's: its next catch-up drops the session (``SearchIndex.forget`` at once).
        """
        self._check_open()
        check_session_id(session_id)
        if not orphan_forks:
            forks = await self.forks(session_id)
            if forks:
                raise SessionHasForks(
                    f"session {session_id!r} is the parent of {len(forks)} stored fork(s) "
                    f"({', '.join(map(repr, forks))}): delete them first, or pass orphan_forks=True "
                    "(each fork keeps its own copy of the events it inherited)",
                    forks=forks,
                )
        live = self._live.get(session_id)
        if live is not None:
            await live.writer.quiesce()  # no write of it runs while it is deleted
        claimed = live is None and session_id not in self._claims
        if claimed:
            await self._claim(session_id)  # SessionInUse while another live writer owns it
        try:
            with writing_as(self._id):
                await self._backend.delete(session_id)
        except SessionNotFound:
            if live is None:
                await self._unclaim(session_id)
                raise
            # Live here but never written: dropping its reservation is the whole delete.
        except BaseException:
            if live is not None:
                live.writer.rearm()
            if claimed:
                await self._unclaim(session_id)
            raise
        if live is None:
            await self._unclaim(session_id)
        if live is not None:
            dropped = live.writer.discard()
            live.unsubscribe()
            del self._live[session_id]
            await self._unclaim(session_id)
            self._deleted[session_id] = live.session
            if dropped:
                logger.info("session %s: deleted with %d unwritten events", session_id, dropped)

    async def flush(self, session: Session) -> None:
        """Return when every event appended to ``session`` before the call is durable."""
        await self._live_of(session).writer.flush()

    def pending(self, session: Session) -> int:
        """Events of ``session`` appended but not yet durable."""
        return self._live_of(session).writer.pending

    def rebind_loop(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Move every live session's write-behind to ``loop`` (call from ``loop``): False, moving
        none, while a write runs in the loop they use now. A store is used from one event loop
        at a time; this hands it to the next one (the backend must work from any loop, as the
        memory, JSONL, SQLite and PostgreSQL backends do)."""
        writers = [live.writer for live in self._live.values()]
        if any(writer.busy for writer in writers):
            return False
        for writer in writers:
            writer.rebind(loop)
        return True

    async def release(self, session: Session) -> None:
        """Flush ``session``, stop persisting it (it becomes detached) and give up its
        ownership. If the flush fails the session stays live and owned here."""
        live = self._live_of(session)
        await live.writer.close()
        live.unsubscribe()
        del self._live[session.id]
        await self._unclaim(session.id)

    async def discard(self, session: Session) -> builtins.list[Event]:
        """Stop persisting ``session`` without writing what it still holds: it becomes detached,
        and the events not yet durable are returned (they will not be written). For a writer
        that lost a race (its flush raised ``SessionConflict`` or ``LeaseLost``) and loads the
        session again. After a write of unknown outcome it first asks the backend what it holds,
        so a stored event is never returned; ``OutcomeUnknown`` when it cannot (nothing changes:
        discard again once the backend is reachable)."""
        live = self._live_of(session)
        await live.writer.quiesce()
        try:
            await live.writer.settle()
        except OutcomeUnknown:
            live.writer.rearm()
            raise
        except (SessionConflict, SessionNotFound):
            pass  # none of the queued events is stored: they are all returned
        unwritten = list(live.writer.queued())
        live.writer.discard()
        live.unsubscribe()
        del self._live[session.id]
        await self._unclaim(session.id)
        return unwritten

    async def close(self) -> None:
        """Flush every live session, then close the backend. Raises the first failure."""
        if self._closed:
            return
        first: BaseException | None = None
        for live in list(self._live.values()):
            try:
                await live.writer.close()
            except Exception as error:
                logger.error("session %s: final flush failed: %s", live.session.id, error)
                first = first or error
            live.unsubscribe()
        self._live.clear()
        for session_id in list(self._claims):
            await self._unclaim(session_id)
        self._closed = True
        await self._backend.close()
        if first is not None:
            raise first

    async def __aenter__(self) -> SessionStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- live tail (backends that offer it: harness.stores.leases) ------------------------

    def tail(self, session_id: str, from_seq: int = 0) -> AsyncGenerator[Event, None]:
        """The committed events of ``session_id`` from ``from_seq`` on, then each new one as it
        commits (an async iterator; close it to stop). ``StorageError`` if the backend cannot
        follow a session live."""
        self._check_open()
        check_session_id(session_id)
        if not isinstance(self._backend, TailingBackend):
            raise StorageError(
                f"{type(self._backend).__name__} cannot tail a session "
                "(the JSONL, harness SQLite and PostgreSQL backends can)"
            )
        return self._backend.tail(session_id, from_seq)


_TURNS: weakref.WeakKeyDictionary[Session, tuple[int, bool]] = weakref.WeakKeyDictionary()
"""Per session: how many events ``_open_turn`` read, and whether a turn was open after them."""


def _open_turn(session: Session) -> bool:
    """Whether the session's last turn bracket is an open ``turn/start``. Reads only the events
    appended since it last asked (a session of a framework adapter may hold no turn at all)."""
    events = session.events
    read, open_ = _TURNS.get(session, (0, False))
    for seq in range(read, len(events)):
        kind = events[seq].type
        if kind == "turn/start":
            open_ = True
        elif kind == "turn/end":
            open_ = False
    _TURNS[session] = (len(events), open_)
    return open_
