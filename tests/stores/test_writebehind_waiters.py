"""``WriteBehind.flush``: every flush waiting on one drain gets the drain's outcome.

The flushes of a session share one drain task; each waits on a future of its own that
the drain settles as it ends (it used to be ``asyncio.shield(drain)``). What the store
contract checks (a cancelled flush loses nothing, cancelling one flusher leaves the others
waiting) is joined here by the outcomes the contract does not reach: a failed drain raises
the same error in every waiting flush, a drain cancelled by the loop's teardown cancels
every waiting flush, and a flush cancelled before the drain ends leaves no unretrieved
exception behind. These pass on the old ``shield`` code too.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.errors import PersistenceFailed
from harness.events.event import Event
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore


class _Gate(JsonlBackend):
    """A JSONL backend whose appends wait for ``release`` and may fail."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, compression="none")
        self.release = asyncio.Event()
        self.fail: BaseException | None = None
        self.calls = 0

    async def append(self, session_id: str, batch: Sequence[Event]) -> None:
        self.calls += 1
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        await super().append(session_id, batch)


async def _store(tmp_path: Path) -> tuple[_Gate, SessionStore, Any]:
    backend = _Gate(tmp_path)
    store = SessionStore(backend, write_window_s=3600)
    session = await store.create()
    session.append("turn/start", {"turn": 1})
    return backend, store, session


def test_a_failed_drain_raises_the_same_error_in_every_waiting_flush(tmp_path: Path) -> None:
    async def scenario() -> None:
        backend, store, session = await _store(tmp_path)
        backend.fail = PersistenceFailed("disk full (injected)")
        flushes = [asyncio.ensure_future(store.flush(session)) for _ in range(3)]
        await asyncio.sleep(0.01)
        assert backend.calls == 1  # one drain, one write
        backend.release.set()
        outcomes = await asyncio.gather(*flushes, return_exceptions=True)
        assert all(outcome is backend.fail for outcome in outcomes)
        assert store.pending(session) == 1  # kept for the next flush
        backend.fail = None
        await store.flush(session)
        assert store.pending(session) == 0
        await store.close()

    asyncio.run(scenario())


def test_a_cancelled_drain_cancels_every_waiting_flush_and_keeps_the_events(tmp_path: Path) -> None:
    async def scenario() -> None:
        backend, store, session = await _store(tmp_path)
        writer = store._live[session.id].writer
        flushes = [asyncio.ensure_future(store.flush(session)) for _ in range(2)]
        await asyncio.sleep(0.01)
        drain = writer._drain
        assert drain is not None
        drain.cancel()  # what the loop's teardown does to a task still running
        outcomes = await asyncio.gather(*flushes, return_exceptions=True)
        assert all(isinstance(outcome, asyncio.CancelledError) for outcome in outcomes)
        assert drain.cancelled()
        assert store.pending(session) == 1 and writer.idle is False
        backend.release.set()
        await store.flush(session)  # the next flush writes it (after a resync)
        assert store.pending(session) == 0
        assert await backend.stored_length(session.id) == 1
        await store.close()

    asyncio.run(scenario())


def test_a_flush_cancelled_before_a_failure_leaves_nothing_unretrieved(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        backend, store, session = await _store(tmp_path)
        backend.fail = PersistenceFailed("fsync failed (injected)")
        cancelled = asyncio.ensure_future(store.flush(session))
        waiting = asyncio.ensure_future(store.flush(session))
        await asyncio.sleep(0.01)
        cancelled.cancel()
        backend.release.set()
        with pytest.raises(PersistenceFailed):
            await waiting
        assert cancelled.cancelled()
        backend.fail = None
        await store.close()

    asyncio.run(scenario())
    gc.collect()
    assert "never retrieved" not in caplog.text
