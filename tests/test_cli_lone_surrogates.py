"""No CLI traceback for a stored lone surrogate (issue 12 item 2: "no traceback in any CLI command").

JavaScript strings may hold an unpaired UTF-16 surrogate and dsh writes it as the escape
``\\ud800`` (FORMAT §0); harness reads it back as the same one-character Python string.
Printing that string to a UTF-8 stream raised ``UnicodeEncodeError`` out of ``harness log``,
``surface``, ``export`` and every ``--json`` printer. The command line writes such a character
as its escape instead (``\\ud800``), which keeps JSON output valid JSON with the same value.
Run as a real process: the stream settings are the entry point's.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from harness.stores.jsonl import JsonlBackend
from harness.stores.jsonl.paths import Layout
from harness.stores.store import SessionStore

SID = "surrogate-1"
CWD = "/work/surrogate"
MARK = "MARK-TO-REPLACE"


def session_file(root: Path) -> Path:
    async def build() -> None:
        async with SessionStore(JsonlBackend(root, "none")) as store:
            session = await store.create(id=SID, cwd=CWD)
            session.append("turn/start", {"turn": 1})
            session.append("user/message", harness.user_message(f"a {MARK} b"), surface_op="append")
            session.append("plugin/probe", {"text": MARK}, ignorable=True)
            session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
            await store.flush(session)

    asyncio.run(build())
    path = Path(Layout(root, "none").log_path(CWD, SID))
    path.write_bytes(path.read_bytes().replace(MARK.encode(), b"\\ud800"))
    return path


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100", "PYTHONIOENCODING": "utf-8", "HARNESS_STORE": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize(
    "args",
    [
        ["log", "{path}"],
        ["log", "--json", "{path}"],
        ["surface", "{path}"],
        ["verify", "--json", "{path}"],
        ["export", SID],
        ["export", "--json", SID],
    ],
    ids=lambda args: "-".join(a for a in args if not a.startswith("{") and a != SID),
)
def test_read_commands_print_a_stored_lone_surrogate_as_its_escape(tmp_path: Path, args: list[str]) -> None:
    path = session_file(tmp_path)
    before = path.read_bytes()
    done = cli(tmp_path, *[str(path) if a == "{path}" else a for a in args])
    assert "Traceback" not in done.stderr and "UnicodeEncodeError" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == before


def test_log_json_keeps_the_lone_surrogate_as_valid_json(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    done = cli(tmp_path, "log", "--json", str(path))
    assert done.returncode == 0, done.stderr
    probes = [json.loads(line) for line in done.stdout.splitlines() if "plugin/probe" in line]
    assert [probe["data"]["text"] for probe in probes] == ["\ud800"]
