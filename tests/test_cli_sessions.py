"""``harness sessions`` and the store a read command opens (issue 12 item 11): ids stay whole
at any width, a root's encoding is found by looking, a root mixing encodings is one clear
line, and a session whose header is damaged is shown with the reason (``--json`` too)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.events.json import loads
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.frames import scan_frames
from harness.stores.jsonl.paths import Compression, Layout, root_compression
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn
from tests.test_fixtures_dsh import FIXTURES

UUID_ID = "session-3f706544-ca59-4a7f-a825-92b905f9b9bc"
LONG_ID = "nightly-" + "x" * 150 + "-end"


def cli(root: Path, *args: str, columns: int = 80) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--store", str(root), *args], env={"COLUMNS": str(columns)})
    return result.exit_code, result.stdout, result.stderr


def store_sessions(root: Path, ids: list[str], compression: Compression = "zstd") -> None:
    async def build() -> None:
        store = SessionStore(JsonlBackend(root, compression=compression))
        for n, session_id in enumerate(ids):
            session = await store.create(id=session_id, cwd=f"/home/me/project-{n}")
            one_turn(session)
            session.append("session/title", {"title": f"Title of {n}"})
        await store.close()

    asyncio.run(build())


def log_path(root: Path, session_id: str, compression: Compression = "zstd") -> Path:
    (path,) = root.glob(f"*/{session_id}/session.jsonl{'.zstd' if compression == 'zstd' else ''}")
    return path


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_ids_are_never_wrapped_or_cut(tmp_path: Path, columns: int) -> None:
    store_sessions(tmp_path, [UUID_ID, "short-1"])
    code, out, err = cli(tmp_path, "sessions", columns=columns)
    assert code == 0, err
    lines = out.splitlines()
    for session_id in (UUID_ID, "short-1"):  # whole, on one line: copyable
        assert any(session_id in line for line in lines), (columns, session_id, out)
    assert all(len(line.rstrip()) <= columns for line in lines), out
    assert "Title of 0" in out


def test_an_id_longer_than_the_terminal_is_printed_whole(tmp_path: Path) -> None:
    store_sessions(tmp_path, [LONG_ID, UUID_ID])
    code, out, _ = cli(tmp_path, "sessions", columns=80)
    assert code == 0
    assert any(line.strip() == LONG_ID for line in out.splitlines())  # one line; a terminal soft-wraps it
    assert any(line.strip() == UUID_ID for line in out.splitlines())


def place_dsh_fixture(root: Path, name: str) -> str:
    """A dsh fixture where dsh puts it with compression off: ``<root>/<project>/<id>/session.jsonl``."""
    data = (FIXTURES / name).read_bytes()
    header = loads(data.split(b"\n", 1)[0])
    path = Path(Layout(root, "none").log_path(header.get("cwd"), header["id"]))
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return str(header["id"])


def test_a_plain_root_is_read_without_a_compression_option(tmp_path: Path) -> None:
    first = place_dsh_fixture(tmp_path, "02-tool-call.jsonl")
    second = place_dsh_fixture(tmp_path, "03-manual-compact.jsonl")
    assert root_compression(tmp_path) == "none"
    code, out, err = cli(tmp_path, "sessions", "--json")
    assert code == 0, err
    assert sorted(info["id"] for info in json.loads(out)) == sorted([first, second])
    code, out, err = cli(tmp_path, "log", first, "--json")
    assert code == 0, err
    assert json.loads(out.splitlines()[0])["seq"] == 0
    code, out, err = cli(tmp_path, "verify", second)
    assert code == 0 and "valid" in out, err
    # an explicit --compression still wins, and its refusal names the rule
    code, _, err = cli(tmp_path, "--compression", "zstd", "sessions")
    assert code == 1 and "one encoding" in err and "Traceback" not in err


def test_a_new_root_is_zstd_and_an_existing_one_keeps_its_encoding(tmp_path: Path) -> None:
    assert root_compression(tmp_path / "nothing-here") is None
    store_sessions(tmp_path / "plain", ["p-1"], compression="none")
    assert root_compression(tmp_path / "plain") == "none"
    store_sessions(tmp_path / "zstd", ["z-1"])
    assert root_compression(tmp_path / "zstd") == "zstd"


def test_a_root_mixing_encodings_is_one_clear_line(tmp_path: Path) -> None:
    store_sessions(tmp_path, ["zstd-1", "zstd-2"])
    store_sessions(tmp_path / "elsewhere", ["plain-1"], compression="none")
    plain = log_path(tmp_path / "elsewhere", "plain-1", "none")
    (tmp_path / "--other--").mkdir()
    plain.parent.rename(tmp_path / "--other--" / "plain-1")  # a plain log moved into a zstd root
    offending = log_path(tmp_path, "plain-1", "none")
    for args in (["sessions"], ["log", "zstd-1"], ["sessions", "--json"]):
        code, out, err = cli(tmp_path, *args, columns=400)
        assert code == 1 and out == ""
        (line,) = err.strip().splitlines()
        assert str(offending) in line and "a root holds one encoding (FORMAT §9.1)" in line, line
        assert "backend" not in line and "Traceback" not in line


def test_a_damaged_session_is_listed_with_the_reason(tmp_path: Path) -> None:
    store_sessions(tmp_path, ["good-1", "bad-raw"], compression="none")
    bad = log_path(tmp_path, "bad-raw", "none")
    bad.write_bytes(b"not a header\n" + bad.read_bytes().split(b"\n", 1)[1])
    code, out, err = cli(tmp_path, "sessions", columns=120)
    assert code == 0, err
    row = next(line for line in out.splitlines() if "bad-raw" in line)
    assert "cannot load" in row and "header line is not valid JSON" in " ".join(out.split())
    assert "1 session cannot be loaded" in out
    code, out, _ = cli(tmp_path, "sessions", "--json")
    listed = {info["id"]: info for info in json.loads(out)}
    assert listed["good-1"]["problem"] is None
    assert "header line is not valid JSON" in listed["bad-raw"]["problem"]
    assert listed["bad-raw"]["location"] == str(bad) and listed["bad-raw"]["eventCount"] == 9


def test_a_corrupt_zstd_header_frame_is_listed_with_the_reason(tmp_path: Path) -> None:
    """FORMAT §13 case 57: listing over a header frame with a corrupted checksum says
    "header frame failed validation" (here: for that session, not for the whole root)."""
    store_sessions(tmp_path, ["good-1", "bad-frame"])
    bad = log_path(tmp_path, "bad-frame")
    data = bytearray(bad.read_bytes())
    data[scan_frames(bytes(data)).frames[0][1] - 1] ^= 0xFF
    bad.write_bytes(bytes(data))
    code, out, err = cli(tmp_path, "sessions", "--json")
    assert code == 0, err
    listed = {info["id"]: info for info in json.loads(out)}
    assert listed["good-1"]["problem"] is None and listed["good-1"]["title"] == "Title of 0"
    assert "header frame failed validation" in listed["bad-frame"]["problem"]
    code, out, _ = cli(tmp_path, "sessions", columns=80)
    assert code == 0 and "bad-frame" in out and "header frame failed validation" in " ".join(out.split())


def test_a_session_a_newer_harness_wrote_is_listed_as_not_loadable(tmp_path: Path) -> None:
    store_sessions(tmp_path, ["good-1", "newer-1"], compression="none")
    newer = log_path(tmp_path, "newer-1", "none")
    header, rest = newer.read_bytes().split(b"\n", 1)
    newer.write_bytes(header.replace(b'"version":0', b'"version":1') + b"\n" + rest)
    code, out, _ = cli(tmp_path, "sessions", "--json")
    listed = {info["id"]: info for info in json.loads(out)}
    assert code == 0 and listed["good-1"]["problem"] is None
    assert "newer harness" in listed["newer-1"]["problem"]
