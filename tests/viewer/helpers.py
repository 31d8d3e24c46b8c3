"""Stores for the viewer's tests: the engine demo's sessions, an XSS-planted session, every
dsh fixture in a root of its own, a helper that opens the app over a root, and one that
follows a session's live feed."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from starlette.testclient import TestClient

import harness
from harness.demos.engine import build_crash_fork, build_demo_session
from harness.events.json import loads
from harness.recovery.findings import Finding
from harness.recovery.report import WorldReport
from harness.recovery.vocabulary import FindingKind, Severity
from harness.recovery.world import record_report
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.frames import decode_frame, scan_frames
from harness.stores.jsonl.paths import Compression, Layout
from harness.stores.store import SessionStore
from harness.viewer import create_app
from tests.test_fixtures_dsh import FIXTURES

PAYLOADS: Final = (
    "<script>window.__xss = 1; alert('xss')</script>",
    "<img src=x onerror=\"window.__xss = 2; alert('img')\">",
    '<a href="javascript:window.__xss = 3">click me</a>',
    "</textarea><script>window.__xss = 4</script>",
    "</script><script>window.__xss = 5</script>",
    '"><svg onload="window.__xss = 6">',
    "{{ 7*7 }} {% raw %}",
)
"""What a hostile model or tool might write; none of it may run or break a page."""

XSS: Final = " ".join(PAYLOADS)
XSS_ID: Final = "xss-<script>alert(1)</script>"
XSS_CWD: Final = "/tmp/<img src=x onerror=alert(1)>"


def fixture_files() -> list[Path]:
    """Every dsh session log among the fixtures (plain and zstd, the torn input too)."""
    return sorted(p for p in FIXTURES.glob("*.jsonl*") if p.name.endswith((".jsonl", ".jsonl.zstd")))


def place_fixture(root: Path, source: Path) -> tuple[str, Compression]:
    """Copy one fixture into ``root`` where the JSONL layout keeps it; its id and encoding."""
    data = source.read_bytes()
    compression: Compression = "zstd" if source.name.endswith(".zstd") else "none"
    if compression == "zstd":
        start, end = scan_frames(data, max_frames=1).frames[0]
        header = loads(decode_frame(data[start:end]))
    else:
        header = loads(data.split(b"\n", 1)[0])
    path = Path(Layout(root, compression).log_path(header.get("cwd"), header["id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return header["id"], compression


def _xss_session() -> harness.Session:
    header = harness.SessionHeader.new(id=XSS_ID, cwd=XSS_CWD, created_at=1_767_225_600_000)
    session = harness.Session.create(header)
    session.append("session/title", {"title": PAYLOADS[0]})
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("user/message", harness.user_message(XSS, id="u-1"), surface_op=harness.APPEND)
    epoch = harness.EpochHeader.build(provider="deepseek-official", model="deepseek-v4-flash", system=XSS)
    session.append("request/header", {"header": epoch.to_json(), "reason": "initial"})
    call = harness.tool_call_block("call-1", "read_file", '{"path": "' + PAYLOADS[3].replace('"', "'") + '"}')
    message = harness.assistant_message(
        XSS, provider="deepseek-official", model="deepseek-v4-flash", id="a-1"
    )
    content = [*message["content"], call]
    session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "message": {**message, "content": content}},
        surface_op=harness.APPEND,
    )
    session.append(
        "tool/call", {"turn": 1, "step": 1, "callId": "call-1", "name": "read_file", "arguments": XSS}
    )
    result = {
        "id": "r-1",
        "role": "user",
        "source": {"kind": "tool", "callId": "call-1"},
        "content": [
            {"type": "tool-result", "toolCallId": "call-1", "content": [{"type": "text", "text": XSS}]}
        ],
    }
    session.append("tool/result", {"turn": 1, "step": 1, "message": result}, surface_op=harness.APPEND)
    session.append("step/end", {"turn": 1, "step": 1})
    session.append("turn/end", {"turn": 1, "reason": {"kind": "error", "error": {"message": XSS}}})
    finding = Finding(
        kind=FindingKind.FILE_CHANGED, severity=Severity.WARN, summary=XSS, evidence={"path": XSS}, action=XSS
    )
    report = WorldReport(session=XSS_ID, workspace=XSS_CWD, at_seq=len(session) - 1, findings=(finding,))
    record_report(session, report)
    return session


async def _adopt(root: Path, sessions: list[harness.Session]) -> None:
    store = SessionStore(JsonlBackend(root, compression="none"))
    try:
        for session in sessions:
            await store.adopt(session)
            await store.flush(session)
    finally:
        await store.close()


def demo_root(root: Path) -> dict[str, str]:
    """The engine demo's session, its crash fork and the XSS session, stored in ``root``."""
    demo = build_demo_session()
    fork = build_crash_fork(demo)
    xss = _xss_session()
    asyncio.run(_adopt(root, [demo, fork, xss]))
    return {"demo": demo.id, "fork": fork.id, "xss": xss.id}


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` and the digest of its bytes (to prove nothing was written)."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@contextmanager
def client(root: Path, compression: Compression = "none", **options: Any) -> Iterator[TestClient]:
    """A test client of the viewer over the JSONL ``root`` (its own search index beside the
    root, never in the user's cache)."""
    options.setdefault("search_index_path", str(root) + ".viewer-index.sqlite")

    async def open_store() -> SessionStore:
        return SessionStore(JsonlBackend(root, compression=compression))

    with TestClient(create_app(open_store, **options), base_url="http://127.0.0.1:8765") as test_client:
        yield test_client


def live_messages(
    c: TestClient, since: int, grow: Callable[[], None], *, joined: bool = True
) -> list[tuple[str, Any]]:
    """Follow ``/session/live`` of ``demo-session`` from ``since`` while ``grow`` runs on a
    thread, collecting the (event, data) messages up to the first ``grown`` (``joined``: then
    wait for ``grow`` to end)."""
    writer = threading.Thread(target=grow)
    writer.start()
    messages: list[tuple[str, Any]] = []
    with c.stream("GET", f"/session/live?id=demo-session&from={since}") as stream:
        kind = ""
        for line in stream.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                messages.append((kind, json.loads(line[6:])))
                if kind == "grown":
                    break
    if joined:
        writer.join()
    return messages
