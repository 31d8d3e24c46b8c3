"""The CLI over dsh's SQLite databases: ``--store sqlite:FILE`` opens one by its application id
(``sessions``, ``log``, ``verify``, ``serve``), and ``export --to`` converts between JSONL and
either SQLite layout without loss."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.events.json import json_equal, loads
from harness.stores.backend import read_whole
from harness.stores.dsh_sqlite import sqlite_layout
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.paths import Layout
from tests.test_fixtures_dsh import FIXTURES, read_raw

DSH_SQLITE = FIXTURES.parent / "dsh-sqlite"
ONE = "01-simple-chat"
ONE_ID = "session-ea42392f-5cb5-4208-abdf-02d603c6d578"


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def private(tmp_path: Path) -> Path:
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    return folder


def dsh_copy(private: Path, name: str = ONE) -> Path:
    target = private / f"{name}.sqlite"
    shutil.copyfile(DSH_SQLITE / f"{name}.sqlite", target)
    os.chmod(target, 0o600)
    return target


def test_sessions_log_and_verify_open_a_dsh_database_by_its_application_id(private: Path) -> None:
    db = dsh_copy(private)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    code, out, err = cli("--store", f"sqlite:{db}", "sessions", "--json")
    assert code == 0, err
    (listed,) = json.loads(out)
    assert (listed["id"], listed["eventCount"], listed["title"]) == (ONE_ID, 37, "Fixture session title")
    code, out, err = cli("--store", f"sqlite:{db}", "log", ONE_ID)
    assert code == 0, err
    assert "assistant/message" in out and "permission/preset" in out
    code, out, err = cli("--store", f"sqlite:{db}", "verify", ONE_ID, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["valid"] is True and report["events"] == 37
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # a rollback-journal file stays as it is


def test_a_dsh_database_others_may_read_is_refused_with_the_reason(private: Path) -> None:
    db = dsh_copy(private)
    os.chmod(db, 0o644)
    code, _, err = cli("--store", f"sqlite:{db}", "sessions")
    assert code == 1 and "accessible only by that user" in err


def test_serve_opens_a_dsh_database(private: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn
    from starlette.testclient import TestClient

    db = dsh_copy(private)
    ran: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: ran.update(options, app=app))
    code, out, err = cli("serve", "--store", f"sqlite:{db}")
    assert code == 0, out + err
    with TestClient(ran["app"], base_url="http://127.0.0.1:8765") as client:
        page = client.get("/")
        assert page.status_code == 200 and ONE_ID in page.text
        session = client.get("/session", params={"id": ONE_ID})
        assert session.status_code == 200 and "Say hello." in session.text


def _fixture_root(tmp_path: Path, names: list[str]) -> Path:
    layout = Layout(tmp_path / "root", "none")
    for name in names:
        lines = (FIXTURES / f"{name}.jsonl").read_bytes()
        first = loads(lines.split(b"\n", 1)[0])
        path = Path(layout.log_path(first["cwd"], first["id"]))
        path.parent.mkdir(parents=True)
        path.write_bytes(lines)
    return Path(layout.root)


async def _read_root(root: Path) -> dict[str, list[dict[str, Any]]]:
    backend = JsonlBackend(root, compression="none")
    try:
        return {info.id: (await read_whole(backend, info.id)).events for info in await backend.list()}
    finally:
        await backend.close()


NAMES = ["01-simple-chat", "02-tool-call", "04-killed-mid-stream"]


@pytest.mark.parametrize("layout", ["dsh", "harness"])
def test_export_converts_jsonl_to_either_sqlite_layout_and_back_without_loss(
    tmp_path: Path, private: Path, layout: str
) -> None:
    root = _fixture_root(tmp_path, NAMES)
    db = private / "sessions.sqlite"
    code, out, err = cli("--store", str(root), "export", "--to", f"sqlite:{db}", "--layout", layout, "--json")
    assert code == 0, err
    assert sorted(s["events"] for s in json.loads(out)["sessions"]) == [37, 66, 68]
    assert sqlite_layout(db) == layout
    back = tmp_path / "back"
    code, out, err = cli("--store", f"sqlite:{db}", "export", "--to", str(back), "--to-compression", "none")
    assert code == 0, err
    assert out.strip() == f"exported 3 sessions (171 events) to {back}"
    copied = asyncio.run(_read_root(back))
    for name in NAMES:
        header, events = read_raw(f"{name}.jsonl")
        ours = copied[header["id"]]
        assert len(ours) == len(events) and all(json_equal(a, b) for a, b in zip(ours, events, strict=True))
    headers = {loads(p.read_bytes().split(b"\n", 1)[0])["id"]: p for p in back.rglob("session.jsonl")}
    for name in NAMES:
        header, _ = read_raw(f"{name}.jsonl")
        assert loads(headers[header["id"]].read_bytes().split(b"\n", 1)[0]) == header


def test_export_between_the_two_sqlite_layouts_keeps_every_row(tmp_path: Path, private: Path) -> None:
    source = dsh_copy(private, "03-manual-compact")
    ours = private / "ours.db"
    code, _, err = cli("--store", f"sqlite:{source}", "export", "--to", f"sqlite:{ours}")
    assert code == 0, err
    again = private / "again.sqlite"
    code, _, err = cli("--store", f"sqlite:{ours}", "export", "--to", f"sqlite:{again}", "--layout", "dsh")
    assert code == 0, err
    query = "SELECT count(*) FROM events"
    with sqlite3.connect(source) as a, sqlite3.connect(again) as b:
        assert a.execute(query).fetchone() != (0,) and b.execute(query).fetchone() != (0,)
    _, first, _ = cli(
        "--store", f"sqlite:{source}", "log", "session-296dce0a-e3c2-43e7-bbc2-195aa16b9b0f", "--json"
    )
    _, last, _ = cli(
        "--store", f"sqlite:{again}", "log", "session-296dce0a-e3c2-43e7-bbc2-195aa16b9b0f", "--json"
    )
    # Equal but for the end-seed a restore adds, whose time is "now".
    assert [loads(line) for line in first.splitlines()][:-1] == [loads(line) for line in last.splitlines()][
        :-1
    ]
    assert len(first.splitlines()) == 132


def test_export_refuses_to_overwrite_and_an_unknown_id(tmp_path: Path, private: Path) -> None:
    root = _fixture_root(tmp_path, ["01-simple-chat"])
    db = private / "sessions.sqlite"
    assert cli("--store", str(root), "export", "--to", f"sqlite:{db}", "--layout", "dsh")[0] == 0
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    code, _, err = cli("--store", str(root), "export", "--to", f"sqlite:{db}")
    assert code == 1 and "already stored in the target" in err
    code, _, err = cli("--store", str(root), "export", "nope", "--to", f"sqlite:{db}")
    assert code == 1 and "nope" in err
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    code, _, err = cli("--store", str(root), "export", "--to", f"sqlite:{db}", "--layout", "other")
    assert code == 2 and "--layout must be harness or dsh" in err
    code, _, err = cli("--store", str(root), "export")
    assert code == 2 and "give its ID" in err
