"""Write-behind persistence of one live session (FORMAT §10).

A ``WriteBehind`` is the session observer a store attaches. Appended events are
queued; the first event into an idle queue arms a fixed timer (the window,
200 ms by default) that later events do not extend; its expiry writes the whole
queue as one durable batch. Events admitted during a write arm their own timer;
if it expires mid-write the next batch starts right after. A failed background
write is logged, its batch goes back to the front of the queue, and writing
pauses until a new event re-arms the window or someone flushes.

``flush()`` cancels the timer, waits for the running write and drains the queue
to empty; concurrent flushes share one drain. It returns only when every event
appended before the call is durable, and raises ``PersistenceFailed`` (keeping the
events queued) otherwise. Writes and the drain run as tasks of their own that
callers only wait for: cancelling a flush (a timeout, a cancelled task) stops the
wait, never a write halfway, so no batch is dropped and no backend call is cut
short while its thread or server goes on. After a failure whose outcome is
unknown (``OutcomeUnknown``: a failed fsync or rollback, a connection that broke after
the statement was sent; a cancelled write; any error that is not a ``PersistenceFailed``),
the next attempt first asks the backend how much it holds and drops the events it already
committed (after checking they are the same by ``stored_equals``), so a retry never
duplicates or loses. A ``WriteRefused`` (a conflict, a lost or held lease) and a plain
``PersistenceFailed`` (the backend knows nothing was written) need no such check; a
``LeaseLost`` that names a stored prefix of the batch (``stored``) has it dropped. A
session the backend no longer holds (deleted, here or by another writer) fails its flush
with ``SessionDeleted``, the events kept.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Final

from harness.errors import (
    OutcomeUnknown,
    PersistenceFailed,
    SessionConflict,
    SessionDeleted,
    SessionNotFound,
    StorageError,
    WriteRefused,
)
from harness.events.event import Event
from harness.stores.backend import Backend, read_whole, stored_equals
from harness.stores.ownership import writing_as

__all__ = ["DEFAULT_WINDOW_S", "WriteBehind"]

logger = logging.getLogger("harness.stores")

DEFAULT_WINDOW_S: Final = 0.2
MAX_WINDOW_S: Final = 2_147_483.647


class WriteBehind:
    """Batches a session's appended events into durable backend appends."""

    def __init__(
        self,
        backend: Backend,
        session_id: str,
        *,
        cursor: int,
        window_s: float = DEFAULT_WINDOW_S,
        loop: asyncio.AbstractEventLoop | None = None,
        store: str | None = None,
    ) -> None:
        if not 0 <= window_s <= MAX_WINDOW_S:
            raise ValueError(f"write window must be between 0 and {MAX_WINDOW_S} s, got {window_s}")
        self._backend = backend
        self._id = session_id
        self._store = store  # the owning store's id, told to the backend with each write
        self._cursor = cursor
        self._window = window_s
        self._loop = loop or asyncio.get_running_loop()
        self._queue: list[Event] = []
        self._timer: asyncio.TimerHandle | None = None
        self._writing: asyncio.Task[None] | None = None
        self._write_after_current = False
        self._uncertain = False
        self._drain: asyncio.Task[None] | None = None
        self._waiters: list[asyncio.Future[None]] = []  # one per flush waiting for the drain
        self._closed = False
        self.last_error: BaseException | None = None

    @property
    def cursor(self) -> int:
        """The seq the backend holds next (everything below it is durable)."""
        return self._cursor

    @property
    def pending(self) -> int:
        """How many events are queued and not yet durable."""
        return len(self._queue)

    def __call__(self, event: Event) -> None:
        """The session observer: queue ``event`` and arm the window if it is idle."""
        if self._closed:
            logger.error(
                "session %s: event %d appended after its store closed; not persisted", self._id, event.seq
            )
            return
        if event.seq < self._cursor:
            return  # already stored (never re-append below the cursor)
        self._queue.append(event)
        if self._timer is None:
            self._timer = self._loop.call_later(self._window, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._writing is not None:
            self._write_after_current = True
            return
        self._start_background_write()

    def _start_background_write(self) -> None:
        if not self._queue or self._drain is not None:
            return
        self._writing = self._loop.create_task(self._background_write())

    async def _background_write(self) -> None:
        try:
            await self._write_queue()
        except Exception as error:
            logger.warning("session %s: background write failed, batch kept for retry: %s", self._id, error)
        finally:
            self._writing = None
        if self._write_after_current and self._drain is None:
            self._write_after_current = False
            self._start_background_write()

    async def _resync(self) -> None:
        """After a failure of unknown outcome: drop what the backend already committed."""
        stored = await self._backend.stored_length(self._id)
        if stored <= self._cursor:
            self._cursor = stored if stored < self._cursor else self._cursor
            self._uncertain = False
            return
        committed = [event for event in self._queue if event.seq < stored]
        if committed:
            log = await read_whole(self._backend, self._id)
            for event in committed:
                if event.seq >= len(log.events) or not stored_equals(log.events[event.seq], event):
                    # What landed before it is ours and stays adopted; from here on another
                    # writer's events are stored, so the rest of the queue never will be.
                    self._queue = [queued for queued in self._queue if queued.seq >= event.seq]
                    self._cursor = event.seq
                    self._uncertain = False
                    raise SessionConflict(
                        f"session {self._id!r}: stored event {event.seq} differs from the one being "
                        f"retried (another writer wrote after this one's events up to {event.seq - 1})",
                        expected=stored,
                        got=event.seq,
                    )
        self._queue = [event for event in self._queue if event.seq >= stored]
        self._cursor = stored
        self._uncertain = False

    async def _settle(self) -> None:
        """Learn what the backend holds after a write of unknown outcome (``_resync``); a
        failure to learn it is ``OutcomeUnknown`` again, the events kept."""
        try:
            await self._resync()
        except SessionNotFound as missing:
            raise self._gone(missing, self._queue) from missing
        except (SessionConflict, OutcomeUnknown):
            raise
        except StorageError as error:
            self.last_error = error
            first = f" from seq {self._queue[0].seq}" if self._queue else ""
            raise OutcomeUnknown(
                f"session {self._id!r}: {len(self._queue)} events{first} follow a write whose outcome "
                f"is unknown, and what is stored could not be read ({error})"
            ) from error

    async def settle(self) -> None:
        """After a write of unknown outcome, drop the queued events the backend holds (a no-op
        otherwise). ``OutcomeUnknown`` when the backend cannot be asked: nothing changes."""
        if self._uncertain:
            await self._settle()

    def _gone(self, missing: SessionNotFound, batch: Sequence[Event]) -> SessionDeleted:
        first = f" from seq {batch[0].seq}" if batch else ""
        deleted = SessionDeleted(
            f"session {self._id!r} is no longer in the store (it was deleted, here or by another "
            f"writer): its {len(batch)} pending events{first} were not written ({missing})"
        )
        self.last_error = deleted
        return deleted

    async def _write_queue(self) -> None:
        """Write everything queued now as one batch; on failure put it back in front."""
        if self._uncertain:
            await self._settle()
        batch = self._queue
        if not batch:
            return
        self._queue = []
        try:
            with writing_as(self._store):
                await self._backend.append(self._id, batch)
        except SessionNotFound as missing:
            # Nothing was written: the backend holds no such session any more.
            self._queue = batch + self._queue
            raise self._gone(missing, batch) from missing
        except WriteRefused as refusal:
            # Nothing was written by this attempt, so the retry needs no resync; a refused
            # writer may learn that an earlier attempt stored a prefix of the batch.
            stored = getattr(refusal, "stored", None)
            if isinstance(stored, int) and stored > batch[0].seq:
                self._cursor = min(stored, batch[-1].seq + 1)
                batch = [event for event in batch if event.seq >= self._cursor]
            self._queue = batch + self._queue
            self.last_error = refusal
            raise
        except asyncio.CancelledError:
            # Only when the loop itself tears the task down; the write may have landed.
            self._queue = batch + self._queue
            self._uncertain = True
            raise
        except Exception as error:
            self._queue = batch + self._queue
            self._uncertain = isinstance(error, OutcomeUnknown) or not isinstance(error, PersistenceFailed)
            self.last_error = error
            if isinstance(error, StorageError):
                raise
            raise PersistenceFailed(
                f"session {self._id!r}: writing {len(batch)} events failed: {error}"
            ) from error
        self._cursor = batch[-1].seq + 1
        self.last_error = None

    @property
    def idle(self) -> bool:
        """Nothing queued and no write running: everything appended is durable."""
        return not self._queue and self._writing is None and self._drain is None

    @property
    def busy(self) -> bool:
        """A write (or a flush's drain) is running in this writer's loop."""
        return self._writing is not None or self._drain is not None

    def rebind(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Run from now on in ``loop`` (the caller's): False, changing nothing, while a write
        runs in the current loop. A window armed there is re-armed in ``loop``. Call it from
        ``loop`` and only when no other loop uses this writer any more."""
        if loop is self._loop:
            return True
        if self.busy:
            return False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._loop = loop
        if self._queue and not self._closed:
            self._timer = loop.call_later(self._window, self._on_timer)
        return True

    async def flush(self) -> None:
        """Return when every event appended before this call is durable."""
        if self.idle:
            return  # nothing to wait for, from whatever loop
        if asyncio.get_running_loop() is not self._loop:
            raise StorageError(
                f"session {self._id!r}: its pending events are written by another event loop; "
                "flush from that loop (or rebind the store first)"
            )
        if self._drain is None:
            drain = self._drain = self._loop.create_task(self._drain_queue())
            drain.add_done_callback(_retrieve)
        # Each flush waits on a future of its own, which the drain settles as it ends: what
        # ``shield(drain)`` does, one turn of the loop sooner. Cancelling a flush cancels its
        # future only, never the drain.
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._waiters.append(waiter)
        await waiter

    async def _drain_queue(self) -> None:
        """Write until the queue is empty (what every waiting ``flush`` shares), then give
        each waiting flush the outcome."""
        outcome: BaseException | None = None
        try:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            while True:
                running = self._writing
                if running is not None:
                    await asyncio.shield(running)
                    continue
                if not self._queue:
                    break
                await self._write_queue()
        except BaseException as error:
            outcome = error
            raise
        finally:
            self._drain = None
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if waiter.done():  # its flush was cancelled
                    continue
                if outcome is None:
                    waiter.set_result(None)
                elif isinstance(outcome, asyncio.CancelledError):
                    waiter.cancel()
                else:
                    waiter.set_exception(outcome)

    async def quiesce(self) -> None:
        """Start no write on the window's expiry and wait for the write (or drain) running now,
        whatever its outcome. ``rearm`` undoes it."""
        while True:
            self._write_after_current = False
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            task = self._writing or self._drain
            if task is None:
                return
            await asyncio.wait([task])

    def rearm(self) -> None:
        """Arm the window again for what is queued (after ``quiesce``)."""
        if self._queue and not self._closed and self._timer is None:
            self._timer = self._loop.call_later(self._window, self._on_timer)

    def discard(self) -> int:
        """Stop for good without writing (the session was deleted): return how many events
        were still queued; they are dropped, later events are ignored."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        dropped = len(self._queue)
        self._queue = []
        return dropped

    async def close(self) -> None:
        """Flush, then stop accepting events."""
        try:
            await self.flush()
        finally:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def queued(self) -> Sequence[Event]:
        """The events not yet durable (read-only copy)."""
        return tuple(self._queue)


def _retrieve(task: asyncio.Task[None]) -> None:
    """Mark a drain's failure as seen: its waiters may all have been cancelled, and the
    failure is kept anyway (``last_error``, the events stay queued)."""
    if not task.cancelled():
        task.exception()
