"""One side of the two-process race (``test_two_processes.py``): get the session, say so, wait
for the start signal, append one event, and print ``won`` or ``stale`` (or the error).

``python -m tests.integrations.adk.racer KIND TARGET SCHEMA NAME READY_FILE GO_FILE``
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from google.adk.errors import StaleSessionError as AdkStaleSessionError

from harness.errors import SessionConflict, SessionInUse
from harness.integrations.adk import HarnessSessionService
from harness.stores.backend import Backend
from harness.stores.store import SessionStore
from tests.integrations.adk.scenarios import text


def backend_of(kind: str, target: str, schema: str) -> Backend:
    if kind == "jsonl":
        from harness.stores.jsonl.backend import JsonlBackend

        return JsonlBackend(target, compression="none")
    if kind == "sqlite":
        from harness.stores.sqlite import SqliteBackend

        return SqliteBackend(target)
    from harness.stores.postgres import PostgresBackend

    return PostgresBackend(target, schema=schema, application_name=f"harness-test-{schema}")


async def main(kind: str, target: str, schema: str, name: str, ready: str, go: str) -> str:
    store = SessionStore(backend_of(kind, target, schema))
    service = HarnessSessionService(store)
    try:
        session = await service.get_session(app_name="race", user_id="u", session_id="s")
        assert session is not None and not session.events
        with open(ready, "w") as handle:
            handle.write(name)
        deadline = time.monotonic() + 120
        while not os.path.exists(go):
            if time.monotonic() > deadline:
                return "no start signal"
            await asyncio.sleep(0.005)
        try:
            await service.append_event(session, text("user", f"from {name}", at=1.0, event_id=name))
        except AdkStaleSessionError as error:
            cause = error.__cause__
            if isinstance(cause, SessionConflict | SessionInUse):
                return "stale"
            return f"stale, not from a conflict or an owner: {cause!r}"
        return "won"
    finally:
        await service.close()
        await store.close()


if __name__ == "__main__":
    print(asyncio.run(main(*sys.argv[1:7])), flush=True)
