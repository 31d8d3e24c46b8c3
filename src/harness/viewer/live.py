"""Live updates of a session page, as server-sent events (``/session/live``).

The stream says when the stored log grew and what state the session is in. A PostgreSQL
store is followed through its tail (``tail_wakes_on_commit``: LISTEN/NOTIFY, no polling); a JSONL
root or an SQLite file is watched by polling the log's version (the file's size and time,
or the stored length) every ``poll`` seconds. Each message is JSON:

* ``event: grown`` ``{"length": N, "stored": N, "open": bool, "last": {...}}``: the log now
  holds N events; the page fetches the new rows through the bounded reads;
* ``event: state`` the same fields, sent first, so the page can say at once whether a turn
  is running or when the last one ended (``last`` is the last ``turn/end``: its seq, time
  and reason), and who owns it now (``owner``: the live writer described, or ``null``).

A stream ends after ``limit`` seconds (the browser's ``EventSource`` reconnects) or when the
client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

from harness.errors import HarnessError
from harness.stores.capabilities import tail_wakes_on_commit
from harness.viewer.catalog import Catalog, Loaded

__all__ = ["live_response", "session_state"]


def session_state(loaded: Loaded) -> dict[str, Any]:
    """Where the stored session stands: its length, whether a turn is open, its last turn's end."""
    events = loaded.session.events
    state: dict[str, Any] = {
        "length": len(events),
        "stored": loaded.stored_length,
        "open": False,
        "last": None,
    }
    for event in reversed(events[: loaded.stored_length]):  # closers a load would add are not the session's
        if event.type == "turn/end":
            data = event.data
            reason = data.get("reason") if isinstance(data, Mapping) else None
            kind = reason.get("kind") if isinstance(reason, Mapping) else None
            state["last"] = {
                "seq": event.seq,
                "time": event.time,
                "reason": kind if isinstance(kind, str) else None,
            }
            break
        if event.type == "turn/start":
            state["open"] = True
            break
    return state


async def _owned(catalog: Catalog, session_id: str, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with ``owner``: the session's live writer described (pid, host, since), or
    ``None`` when no writer owns it."""
    owner = await catalog.store.owner(session_id)
    state["owner"] = owner.describe() if owner is not None else None
    return state


def _message(kind: str, value: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(value)}\n\n".encode()


async def _wakeups(catalog: Catalog, session_id: str, since: int, poll: float) -> AsyncIterator[None]:
    """Yields whenever the stored log of ``session_id`` may have grown past ``since``."""
    backend = catalog.store.backend
    # A tail that polls (JSONL, SQLite) is no better than the cheaper version poll below.
    if tail_wakes_on_commit(backend):
        tail = catalog.store.tail(session_id, since)
        try:
            async for _ in tail:
                yield
        finally:
            await tail.aclose()
        return
    version = await catalog.version(session_id)
    while True:
        await asyncio.sleep(poll)
        now = await catalog.version(session_id)
        if now != version:
            version = now
            yield


def live_response(
    catalog: Catalog,
    session_id: str,
    since: int,
    request: Request,
    *,
    poll: float = 0.5,
    limit: float = 300.0,
) -> StreamingResponse:
    """The server-sent events of ``session_id`` from length ``since`` on (see the module doc)."""

    async def stream() -> AsyncIterator[bytes]:
        loaded = await catalog.load(session_id)
        state = await _owned(catalog, session_id, session_state(loaded))
        yield _message("state", state)
        if state["length"] > since:
            yield _message("grown", state)
        known = state["length"]
        deadline = time.monotonic() + limit
        wakeups = _wakeups(catalog, session_id, loaded.stored_length, poll).__aiter__()
        try:
            while time.monotonic() < deadline:
                try:
                    await asyncio.wait_for(wakeups.__anext__(), timeout=min(5.0, poll * 10))
                except TimeoutError:
                    if await request.is_disconnected():
                        return
                    yield b": keep-alive\n\n"
                    continue
                except StopAsyncIteration:
                    return
                try:
                    loaded = await catalog.load(session_id)
                except HarnessError as error:
                    yield _message("problem", {"error": str(error)})
                    return
                state = await _owned(catalog, session_id, session_state(loaded))
                if state["length"] != known:
                    known = state["length"]
                    yield _message("grown", state)
        finally:
            with contextlib.suppress(Exception):
                await wakeups.aclose()  # type: ignore[attr-defined]

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )
