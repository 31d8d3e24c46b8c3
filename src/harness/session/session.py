"""The event-sourced ``Session`` (SPEC §3, FORMAT §7).

A session owns an append-only log of ``Event`` and the Surface folded from it.
``append`` is the in-memory commit point: it snapshots the data (to JSON bytes),
assigns ``seq = len(log)`` and ``time``, validates the event under the Surface
rules, pushes it and then tells the observers. It never waits for I/O; a store's
observer makes events durable and ``SessionStore.flush`` is the durability point.

Threading: a session is not thread-safe; use it from one thread (or one event loop).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, overload

from harness.errors import ForkError, InvalidEvent, InvalidEventData, InvalidHeader, InvalidSeed
from harness.events.collector import collector_paused
from harness.events.envelope import as_safe_int, envelope_problem
from harness.events.event import APPEND, Event, SurfaceOp
from harness.events.json import FrozenDict, check_json, check_members, dumps_kept, encode_lossless
from harness.events.vocabulary import SURFACE_TYPES
from harness.messages.call_ids import CALL_ID_CHECKS
from harness.messages.model import Message
from harness.messages.shapes import assistant_message_ok, message_event_problem, request_header_problem
from harness.session.header import SessionHeader, validate_header
from harness.session.repair import REPAIR_NOTE, repair_closers
from harness.surface.manager import MISSING, SurfaceManager, SurfaceRuleError, SurfaceView
from harness.surface.projection import project

__all__ = ["END_SEED", "EventLog", "Observer", "Session", "fork_seed"]

logger = logging.getLogger("harness.session")

END_SEED: Final = "session/end-seed"

Observer = Callable[[Event], object]
"""Called with every event after it is committed in memory, in seq order."""

Clock = Callable[[], int]

_type_of: Final = type  # ``append`` names its event type ``type``


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class EventLog(Sequence[Event]):
    """A read-only, live view of a session's events (index = seq)."""

    __slots__ = ("_events",)

    def __init__(self, events: list[Event]) -> None:
        self._events = events

    def __len__(self) -> int:
        return len(self._events)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Event, ...]: ...

    def __getitem__(self, index: int | slice) -> Event | tuple[Event, ...]:
        if isinstance(index, slice):
            return tuple(self._events[index])
        return self._events[index]

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def __repr__(self) -> str:
        return f"EventLog({len(self._events)} events)"


class Session:
    """A live, in-memory session: its header, its log and its Surface.

    Make one with ``Session.create`` (new, empty) or ``Session.from_restore``
    (validated seed). A store wraps either to make it durable.
    """

    __slots__ = (
        "__weakref__",
        "_clock",
        "_derived",
        "_derived_generation",
        "_derived_upto",
        "_events",
        "_first_live_seq",
        "_header",
        "_notifying",
        "_observers",
        "_queue",
        "_surface",
    )

    def __init__(self, header: SessionHeader, *, clock: Clock | None = None) -> None:
        """Prefer ``Session.create`` or ``Session.from_restore``."""
        if not isinstance(header, SessionHeader):
            raise InvalidHeader("Session() takes a SessionHeader; use Session.create or Session.from_restore")
        self._header = header
        self._clock: Clock = clock or _now_ms
        self._events: list[Event] = []
        self._surface = SurfaceManager(self._events)
        self._observers: list[Observer] = []
        self._queue: deque[Event] = deque()
        self._notifying = False
        self._first_live_seq = 0
        self._derived: list[Message] = []
        self._derived_generation = 0
        self._derived_upto = 0

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        header: SessionHeader | Mapping[str, Any] | None = None,
        *,
        clock: Clock | None = None,
    ) -> Session:
        """A new, empty, detached session. Without a header one is minted (new id, now)."""
        if header is None:
            typed = SessionHeader.new(created_at=(clock or _now_ms)())
        else:
            typed = validate_header(header)
        return cls(typed, clock=clock)

    @classmethod
    def from_restore(
        cls,
        id: str,
        seed: Iterable[Event | Mapping[str, Any]],
        header: SessionHeader | Mapping[str, Any],
        *,
        clock: Clock | None = None,
    ) -> Session:
        """Validate ``seed`` under the same rules as a live append and adopt it.

        Checks the header (FORMAT §7.1), then every event in order (§7.2); the first
        failure refuses the whole seed with ``InvalidSeed`` naming the index and rule.
        Appends ``session/end-seed`` unless the seed already ends with one.
        """
        return _restore(id, seed, header, clock=clock, decoded=False)

    @classmethod
    def from_decoded(
        cls,
        id: str,
        seed: Iterable[Mapping[str, Any]],
        header: SessionHeader | Mapping[str, Any],
        *,
        clock: Clock | None = None,
    ) -> Session:
        """``from_restore`` for stores: every seed item is a wire object freshly decoded
        from JSON text and handed over (the caller keeps no reference to it).

        JSON decoding already guarantees losslessness, so step 1 of FORMAT §7.2 is
        skipped and the data is re-encoded without a validating walk. Every other
        check runs exactly as in ``from_restore``.
        """
        return _restore(id, seed, header, clock=clock, decoded=True)

    @classmethod
    def from_stored(
        cls,
        id: str,
        seed: Iterable[Mapping[str, Any]],
        header: SessionHeader | Mapping[str, Any],
        *,
        clock: Clock | None = None,
        repair: bool = True,
        repair_note: Mapping[str, Any] | None = None,
    ) -> tuple[Session, list[Event]]:
        """``from_decoded`` plus crash repair, for stores: returns the session and the
        closers (FORMAT §8) it added after the stored events and before the end-seed.

        The store must make the closers durable before it persists anything later.
        With ``repair_note``, a repair ends with an ignorable ``harness/repair`` event
        holding the note and ``closedTurn`` (who owned the turn, and why it could be
        closed). ``repair=False`` restores the log as stored (a read of a live session).
        """
        closers: list[Event] = []
        session = _restore(
            id, seed, header, clock=clock, decoded=True, closers=closers if repair else None, note=repair_note
        )
        return session, closers

    @classmethod
    def from_checked(
        cls,
        id: str,
        seed: Iterable[Event],
        header: SessionHeader | Mapping[str, Any],
        *,
        clock: Clock | None = None,
        repair: bool = True,
        repair_note: Mapping[str, Any] | None = None,
    ) -> tuple[Session, list[Event]]:
        """``from_stored`` for a store's fast restore: ``seed`` holds finished ``Event``s
        that the caller already held to FORMAT §7.2 steps 1-5 (lossless ``data_json``,
        envelope, message and request-header shapes, nothing legacy). Here only the seq
        order and the Surface rules are checked, as ``from_stored`` does, then crash
        repair (``repair``, ``repair_note`` as there). Raises ``InvalidSeed`` like ``from_stored``.
        """
        closers: list[Event] = []
        session = _restore(
            id,
            seed,
            header,
            clock=clock,
            decoded=True,
            closers=closers if repair else None,
            checked=True,
            note=repair_note,
        )
        return session, closers

    # ---- state --------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._header.id

    @property
    def header(self) -> SessionHeader:
        return self._header

    @property
    def events(self) -> EventLog:
        """The log (read-only, live)."""
        return EventLog(self._events)

    @property
    def surface(self) -> SurfaceView:
        """The Surface, read-only and live: ``nodes`` and ``replace_generation``."""
        return SurfaceView(self._surface)

    @property
    def first_live_seq(self) -> int:
        """Seq of the first event of this lifecycle (the seed length; 0 for a new session)."""
        return self._first_live_seq

    def __len__(self) -> int:
        return len(self._events)

    def __repr__(self) -> str:
        return f"Session({self.id!r}, {len(self._events)} events, {len(self._surface)} nodes)"

    # ---- observers ----------------------------------------------------------------------

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer(event)`` after every later append; returns an unsubscribe function.

        Observers run in seq order even when one of them appends (the new event is
        delivered after the current one reached every observer). An observer that
        raises is logged and ignored: it cannot undo an append.
        """
        self._observers.append(observer)

        def unsubscribe() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return unsubscribe

    def _notify(self, event: Event) -> None:
        if not self._observers:
            return
        if self._notifying:  # an observer appended: deliver after the current event
            self._queue.append(event)
            return
        self._notifying = True
        queue = self._queue
        if queue:  # left over by an observer that raised past the handler below: keep seq order
            queue.append(event)
            current = queue.popleft()
        else:
            current = event
        try:
            while True:
                for observer in tuple(self._observers):
                    try:
                        observer(current)
                    except Exception:
                        logger.exception(
                            "session %s: observer %r failed on event %d (%s); the event stays committed",
                            self.id,
                            observer,
                            current.seq,
                            current.type,
                        )
                if not queue:
                    break
                current = queue.popleft()
        finally:
            self._notifying = False

    # ---- append -------------------------------------------------------------------------

    def append(
        self,
        type: str,
        data: Any,
        *,
        surface_op: SurfaceOp | Mapping[str, Any] | None = None,
        source_event_seqs: Sequence[int] | None = None,
        ignorable: bool = False,
    ) -> Event:
        """Commit one event in memory and return it. Never waits for I/O.

        Raises ``InvalidEventData`` when ``data`` is not lossless JSON or carries a
        tool call id that is not a non-empty string (a crash would leave a log that
        does not load), and ``InvalidEvent`` when the event breaks a rule, including the
        shape rules restore applies to messages and request headers (FORMAT §7.2 steps
        4-5); either way nothing changes.
        """
        if not isinstance(type, str) or not type:
            raise InvalidEvent(f"event type must be a non-empty string, got {type!r}")
        if type == "request/header-delta":
            raise InvalidEvent("unsupported legacy request/header-delta format")
        if ignorable is not True and ignorable is not False:
            raise InvalidEvent(f"ignorable must be a bool, got {ignorable!r}")
        data_json = encode_lossless(data)  # C-level proof and the snapshot bytes, or None
        if data_json is None:
            check_json(data)  # the exact walk: refuses (naming the path) or accepts
        if data is None and (type == "turn/start" or type == "step/start"):
            # dsh's crash-repair scan reads data.turn / data.step of every such event: a
            # null there makes dsh refuse the whole log (the load refuses it too).
            raise InvalidEvent(f"{type} data must not be null")
        if type != "assistant/message" or not assistant_message_ok(data):  # one pass for a model reply
            call_ids = CALL_ID_CHECKS.get(type)
            if call_ids is not None:
                problem = call_ids(data)
                if problem is not None:
                    raise InvalidEventData(*problem)
            if type in SURFACE_TYPES or type == "request/header":
                # What restore refuses (FORMAT §7.2 steps 4-5), append refuses too: a log holding
                # it would not load again, in harness or in dsh.
                if type == "request/header":
                    shape = request_header_problem(data)
                else:
                    shape = message_event_problem(type, data)
                if shape is not None:
                    raise InvalidEvent(f"{type} {shape} (a log holding it would not load)")
        if data_json is None:
            data_json = dumps_kept(data)
        if type == "request/header" and isinstance(data, Mapping) and data.get("reason") == "fallback":
            raise InvalidEvent("unsupported legacy request/header reason 'fallback'")
        events = self._events
        surface = self._surface
        seq = len(events)
        if (
            surface_op is None
            and source_event_seqs is None
            and type not in SURFACE_TYPES
            and seq == surface._next_seq
        ):
            # Most events (chunks, boundaries, headers) leave the Surface alone: what
            # check() + apply() would do for them is this one step, without the calls.
            event = Event(type, seq, self._clock(), data_json, None, None, ignorable)
            surface._next_seq = seq + 1
        elif (
            _type_of(surface_op) is str
            and surface_op == APPEND
            and seq == surface._next_seq
            and type in SURFACE_TYPES
            and (
                source_event_seqs is None
                or (
                    (_type_of(source_event_seqs) is list or _type_of(source_event_seqs) is tuple)
                    and not source_event_seqs
                    and type == "assistant/message"
                )
            )
        ):
            # A plain Surface append (no sources, or an assistant message's empty list): what
            # check() + apply() would do for it, without the calls.
            sources = None if source_event_seqs is None else ()
            event = Event(type, seq, self._clock(), data_json, APPEND, sources, ignorable)
            surface._nodes.append(seq)
            surface._next_seq = seq + 1
        else:
            transition = surface.check(
                type,
                seq,
                MISSING if surface_op is None else surface_op,
                MISSING if source_event_seqs is None else source_event_seqs,
                data,
            )
            event = Event(
                type,
                transition.seq,
                self._clock(),
                data_json,
                transition.surface_op,
                transition.source_event_seqs,
                ignorable,
            )
            surface.apply(transition)
        events.append(event)
        if self._observers:
            self._notify(event)
        return event

    # ---- model history ------------------------------------------------------------------

    def derive_messages(self) -> list[Message]:
        """The model history: a new list of read-only messages, in Surface order.

        Incremental: after plain appends only the new nodes are projected; a
        replace (new generation) rebuilds. Message objects are shared between calls.
        """
        surface = self._surface
        nodes = surface._nodes  # the session owns the surface; read without a copy
        events = self._events
        derived = self._derived
        if surface.replace_generation != self._derived_generation:
            derived.clear()
            self._derived_upto = 0
            self._derived_generation = surface.replace_generation
        upto = self._derived_upto
        if upto < len(nodes):
            for seq in nodes[upto:] if upto else nodes:
                raw = project(events[seq])
                if raw is not None:
                    derived.append(Message(raw))
            self._derived_upto = len(nodes)
        return list(derived)

    # ---- fork ---------------------------------------------------------------------------

    def fork(self, boundary: int | None = None, *, id: str | None = None) -> Session:
        """A new session seeded with events ``[0..boundary]`` (default: all).

        The child inherits ``cwd``, records ``parentSession`` and ``seedLength`` and
        gets its own end-seed. Raises ``ForkError`` (INVALID_BOUNDARY, OPEN_TURN).
        """
        seed = fork_seed(self._events, boundary)
        child = SessionHeader.new(id=id, cwd=self._header.cwd, created_at=self._clock())
        child_header = {**child.to_json(), "parentSession": self.id, "seedLength": len(seed)}
        return Session.from_restore(child.id, seed, child_header, clock=self._clock)


def fork_seed(events: Sequence[Event], boundary: int | None = None) -> list[Event]:
    """The seed of a fork at ``boundary`` (inclusive). See ``Session.fork``."""
    if not events:
        raise ForkError("INVALID_BOUNDARY", "cannot fork an empty session")
    if boundary is None:
        boundary = len(events) - 1
    if as_safe_int(boundary) is None or isinstance(boundary, bool) or boundary < 0 or boundary >= len(events):
        raise ForkError(
            "INVALID_BOUNDARY", f"boundary {boundary!r} is not an event index below {len(events)}"
        )
    boundary = int(boundary)
    if events[boundary].seq != boundary:
        raise ForkError("INVALID_BOUNDARY", f"event at index {boundary} has seq {events[boundary].seq}")
    prefix = list(events[: boundary + 1])
    for event in reversed(prefix):
        if event.type == "turn/start":
            raise ForkError("OPEN_TURN", f"the turn opened at seq {event.seq} is still open at {boundary}")
        if event.type == "turn/end":
            break
    return prefix


# ---- restore ----------------------------------------------------------------------------


def _restore(
    session_id: str,
    seed: Iterable[Event | Mapping[str, Any]],
    header: SessionHeader | Mapping[str, Any],
    *,
    clock: Clock | None,
    decoded: bool,
    closers: list[Event] | None = None,
    checked: bool = False,
    note: Mapping[str, Any] | None = None,
) -> Session:
    """Restore a session. ``decoded=True``: seed items are fresh JSON decodes owned by
    the caller (a store), so the lossless walk is skipped. With a ``closers`` list, the
    repair closers of an open turn are computed, applied and reported there."""
    try:
        typed_header = validate_header(header, session_id)
    except InvalidHeader as error:
        raise InvalidSeed(f"invalid session header: {error}", index=None, rule="header") from None
    session = Session(typed_header, clock=clock)
    # A restore walks millions of acyclic JSON containers; the cyclic garbage
    # collector would rescan the growing heap again and again for nothing.
    with collector_paused():
        if checked:
            _adopt_checked(session, seed)  # type: ignore[arg-type]
        else:
            _validate_seed(session, seed, decoded=decoded)
        if closers is not None:
            closers.extend(_checked_closers(session, note))
    session._first_live_seq = len(session._events)
    if not session._events or session._events[-1].type != END_SEED:
        session.append(END_SEED, FrozenDict())
    return session


def _checked_closers(session: Session, note: Mapping[str, Any] | None = None) -> list[Event]:
    """The repair closers of the session's open turn, validated and applied.

    They pass the seed rules like any stored event, as in the reference, so what a
    store commits always restores; closers that cannot (a pending call without a
    usable id, say) refuse the whole seed with ``InvalidSeed`` (rule ``repair``).
    """
    events = session._events
    start = len(events)
    closers = repair_closers(events)
    if closers and note is not None:
        turn = closers[-1].data.get("turn") if isinstance(closers[-1].data, Mapping) else None
        record = {**note, "closedTurn": turn}
        closers.append(
            Event(REPAIR_NOTE, start + len(closers), closers[-1].time, dumps_kept(record), ignorable=True)
        )
    try:
        _validate_seed(session, closers, decoded=True, start=start)
    except InvalidSeed as error:
        raise InvalidSeed(
            f"the turn left open cannot be closed by crash repair into a log that loads: {error}",
            index=error.index,
            rule="repair",
        ) from None
    return events[start:]


def _adopt_checked(session: Session, seed: Iterable[Event]) -> None:
    """The Surface half of ``_validate_seed`` for events already checked otherwise
    (``Session.from_checked``): seq contiguity, then the Surface rules."""
    events = session._events
    surface = session._surface
    append = events.append
    for index, event in enumerate(seed):
        if event.seq != index:
            raise InvalidSeed(
                f"seed must be contiguous from 0: event at index {index} has seq {event.seq!r}",
                index=index,
                rule="contiguity",
            )
        op = event.surface_op
        sources = event.source_event_seqs
        kind = event.type
        if op is None and sources is None and kind not in SURFACE_TYPES:
            # What check() + apply() do for an event that leaves the Surface alone.
            surface._next_seq = index + 1
        elif (
            op == APPEND
            and type(op) is str
            and kind in SURFACE_TYPES
            and (sources is None or (sources == () and kind == "assistant/message"))
        ):
            # A plain Surface append (as in ``append``): what check() + apply() do for it.
            surface._nodes.append(index)
            surface._next_seq = index + 1
        else:
            try:
                transition = surface.validate_next(event)
            except SurfaceRuleError as error:
                raise InvalidSeed(
                    f"invalid seed event at index {index}: {error.detail}", index=index, rule="surface"
                ) from None
            surface.apply(transition)
        append(event)


def _validate_seed(
    session: Session, seed: Iterable[Event | Mapping[str, Any]], *, decoded: bool, start: int = 0
) -> None:
    events = session._events
    surface = session._surface
    for index, item in enumerate(seed, start):
        data_json: bytes | None = None
        if type(item) is dict:
            obj: Any = item
        elif isinstance(item, Event):
            obj = item.to_json()
            data_json = item.data_json
        else:
            obj = item
        if not decoded:
            try:
                check_members(obj, f"seed[{index}]")
            except InvalidEventData as error:
                raise InvalidSeed(
                    f"seed event at index {index} is not losslessly JSON-serializable: {error}",
                    index=index,
                    rule="lossless",
                ) from None
        kind = obj.get("type") if type(obj) is dict or isinstance(obj, Mapping) else None
        if kind == "request/header-delta":
            raise InvalidSeed(
                f"seed event at index {index}: unsupported legacy request/header-delta format",
                index=index,
                rule="legacy",
            )
        problem = envelope_problem(obj)
        if problem is not None:
            raise InvalidSeed(
                f"seed event at index {index} has an invalid event envelope: {problem}",
                index=index,
                rule="envelope",
            )
        assert type(kind) is str
        data = obj["data"]
        if kind == "request/header":
            problem = request_header_problem(data)
            if problem is not None:
                raise InvalidSeed(
                    f"seed request/header at index {index} {problem}", index=index, rule="request-header"
                )
        elif kind in SURFACE_TYPES:
            problem = message_event_problem(kind, data)
            if problem is not None:
                raise InvalidSeed(f"seed {kind} at index {index} {problem}", index=index, rule="message")
        if kind == "request/header" and isinstance(data, Mapping) and data.get("reason") == "fallback":
            raise InvalidSeed(
                f"seed event at index {index}: unsupported legacy request/header reason 'fallback'",
                index=index,
                rule="legacy",
            )
        seq = as_safe_int(obj["seq"], negative_zero=True)
        if seq != index:
            raise InvalidSeed(
                f"seed must be contiguous from 0: event at index {index} has seq {obj['seq']!r}",
                index=index,
                rule="contiguity",
            )
        try:
            transition = surface.check(
                kind, index, obj.get("surfaceOp", MISSING), obj.get("sourceEventSeqs", MISSING), data
            )
        except SurfaceRuleError as error:
            raise InvalidSeed(
                f"invalid seed event at index {index}: {error.detail}", index=index, rule="surface"
            ) from None
        event = Event(
            kind,
            index,
            as_safe_int(obj["time"], negative_zero=True),  # type: ignore[arg-type]
            data_json if data_json is not None else dumps_kept(data),
            transition.surface_op,
            transition.source_event_seqs,
            obj.get("ignorable") is True,
        )
        surface.apply(transition)
        events.append(event)
