"""Real session logs written by DeepSeek Harness load, validate and repair here.

The files in ``../shared/fixtures/dsh`` were written by the TypeScript reference.
The raw ``.jsonl`` ones are read line by line (packed chunk rows expanded, FORMAT
§9.2), restored with every check of FORMAT §7, and compared with what dsh did.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.events.json import dumps, loads
from harness.events.packed import PackedRowError, expand_row, is_packed_row
from harness.session.repair import TOOL_OUTCOME_UNKNOWN_TEXT


def _origin_checkout() -> Path | None:
    """The checkout this one was cloned from, when ``origin`` is a local path."""
    try:
        url = subprocess.run(
            ["git", "config", "--get", "remote.origin.url"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        return None
    return Path(url) if url and os.path.isabs(url) and os.path.isdir(url) else None


def _find_fixtures() -> Path:
    """``shared/fixtures/dsh`` beside the checkout (or above it), beside the checkout it was
    cloned from, or ``$HARNESS_DSH_FIXTURES``. Missing fixtures fail the tests, never skip them."""
    override = os.environ.get("HARNESS_DSH_FIXTURES")
    if override:
        return Path(override)
    here = Path(__file__).resolve()
    origin = _origin_checkout()
    for parent in [*here.parents, *(origin.resolve().parents if origin else [])]:
        candidate = parent / "shared" / "fixtures" / "dsh"
        if candidate.is_dir():
            return candidate
    return here.parents[2] / "shared" / "fixtures" / "dsh"


FIXTURES = _find_fixtures()
RAW_FILES = sorted(p.name for p in FIXTURES.glob("*.jsonl") if "DERIVED" not in p.name)


def read_raw(name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = (FIXTURES / name).read_bytes().split(b"\n")
    assert lines[-1] == b"", "every fixture line ends with a newline"
    header = loads(lines[0])
    events: list[dict[str, Any]] = []
    for line in lines[1:-1]:
        record = loads(line)
        events.extend(expand_row(record) if is_packed_row(record) else [record])
    return header, events


def restore(name: str) -> harness.Session:
    header, events = read_raw(name)
    header.pop("type")
    return harness.Session.from_decoded(header["id"], events, header)


def test_fixtures_are_present() -> None:
    assert len(RAW_FILES) >= 10, f"expected the dsh fixtures in {FIXTURES}"


@pytest.mark.parametrize("name", RAW_FILES)
def test_dsh_log_restores_with_full_validation(name: str) -> None:
    _, events = read_raw(name)
    session = restore(name)
    assert [e.seq for e in session.events][: len(events)] == list(range(len(events)))
    # Restored events re-encode to the same JSON values dsh wrote (key order aside).
    for original, event in zip(events, session.events, strict=False):
        assert loads(harness.encode_event(event)) == original
    fold = harness.fold_surface(list(session.events))
    assert list(fold.nodes) == list(session.surface.nodes)
    assert session.events[-1].type == "session/end-seed"


def test_packed_and_unpacked_files_hold_the_same_chunks() -> None:
    _, packed = read_raw("02-tool-call.jsonl")
    _, unpacked = read_raw("02-tool-call-unpacked.jsonl")
    shape = [(e["type"], e["data"].get("chunk", {}).get("type")) for e in packed]
    assert shape == [(e["type"], e["data"].get("chunk", {}).get("type")) for e in unpacked]
    assert len(packed) == len(unpacked)


def test_packed_rows_expand_in_format_key_order() -> None:
    _, events = read_raw("02-tool-call.jsonl")
    deltas = [
        e
        for e in events
        if e["type"] == "assistant/chunk" and e["data"]["chunk"]["type"] == "tool-call-delta"
    ]
    assert deltas
    assert dumps(deltas[0]).startswith(b'{"type":"assistant/chunk","seq":')
    assert list(deltas[0]["data"]["chunk"]) == ["type", "index", "id", "name", "argumentsDelta"]


def test_compaction_fixture_replaces_the_surface() -> None:
    session = restore("03-manual-compact.jsonl")
    fold = harness.fold_surface(list(session.events))
    assert session.surface.replace_generation == 1
    (replacement,) = fold.replacements
    checkpoint = session.events[replacement.seq]
    assert checkpoint.type == "user/message"
    assert checkpoint.data["source"]["plugin"] == "compact"
    messages = session.derive_messages()
    assert messages[0].id == checkpoint.data["id"]


@pytest.mark.parametrize(
    ("killed", "resumed"),
    [
        ("04-killed-during-tool.jsonl", "05-resumed-after-kill-during-tool.jsonl"),
        ("04-killed-mid-stream.jsonl", "05-resumed-after-kill-mid-stream.jsonl"),
    ],
)
def test_repair_closers_match_what_dsh_wrote(killed: str, resumed: str) -> None:
    """FORMAT §8 / §13 E: our closers equal dsh's, except the model-visible wording."""
    session = restore(killed)
    stored = list(session.events)[:-1]  # without our end-seed
    closers = harness.repair_closers(stored)
    _, after = read_raw(resumed)
    expected = after[len(stored) : len(stored) + len(closers)]
    assert [c.type for c in closers] == [e["type"] for e in expected]
    assert after[len(stored) + len(closers)]["type"] == "session/end-seed"
    for ours, theirs in zip(closers, expected, strict=True):
        ours_json = loads(harness.encode_event(ours))
        if ours.type == "tool/result":
            ours_text = ours_json["data"]["message"]["content"][0]["content"][0].pop("text")
            theirs["data"]["message"]["content"][0]["content"][0].pop("text")
            assert ours_text == TOOL_OUTCOME_UNKNOWN_TEXT
        assert ours_json == theirs


def test_resumed_fixture_has_no_open_turn() -> None:
    session = restore("05-resumed-after-kill-during-tool.jsonl")
    assert harness.repair_closers(list(session.events)) == []


@pytest.mark.parametrize(
    "row",
    [
        {
            "type": "text-chunks",
            "seq0": 0,
            "time0": 1,
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a"]},
        },
        {
            "type": "text-chunks",
            "seq0": 0,
            "time0": 1,
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": []},
        },
        {
            "type": "text-chunks",
            "seq0": 0,
            "time0": 1.5,
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": ["a"]},
        },
        {"type": "text-chunks", "seq0": 0, "time0": 1, "extra": 1, "data": {}},
        {
            "type": "tool-call-chunks",
            "seq0": 0,
            "time0": 1,
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "args": ["a"]},
        },
        {
            "type": "text-chunks",
            "seq0": 0,
            "time0": 2**53 - 1,
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [5], "texts": ["a", "b"]},
        },
    ],
)
def test_bad_packed_rows_are_unparsable(row: dict[str, Any]) -> None:
    with pytest.raises(PackedRowError):
        expand_row(row)


def test_packed_row_negative_gaps_decode_exactly() -> None:
    """FORMAT §13 case 66: times 1000, 990, 995 → negative dt, exact decode."""
    row = {
        "type": "text-chunks",
        "seq0": 4,
        "time0": 1000,
        "data": {"turn": 1, "step": 2, "index": 0, "dt": [-10, 5], "texts": ["a", "b", "c"]},
    }
    events = expand_row(row)
    assert [(e["seq"], e["time"], e["data"]["chunk"]["text"]) for e in events] == [
        (4, 1000, "a"),
        (5, 990, "b"),
        (6, 995, "c"),
    ]


def _types(name: str) -> list[str]:
    return [e["type"] for e in read_raw(name)[1]]


def test_readme_01_simple_chat_shows_startup_records_and_two_titles() -> None:
    session = restore("01-simple-chat.jsonl")
    kinds = [e.type for e in session.events]
    assert kinds[:3] == ["permission/preset", "sandbox/mode", "approval/policy"]
    titles = [e.data for e in session.events if e.type == "session/title"]
    assert [t["source"]["kind"] for t in titles] == ["fallback", "provider"]
    assert kinds.count("turn/end") == 1
    turn_end = next(e for e in session.events if e.type == "turn/end")
    assert turn_end.data["reason"]["kind"] == "completed"
    (answer,) = [m for m in session.derive_messages() if m.role == "assistant"]
    assert answer.text


def test_readme_02_tool_error_sandbox_unavailable() -> None:
    session = restore("02-tool-error-sandbox-unavailable.jsonl")
    (result,) = [e for e in session.events if e.type == "tool/result"]
    assert result.data["error"]["code"] == "SANDBOX_UNAVAILABLE"
    assert result.data["message"]["content"][0]["isError"] is True


def test_readme_02_title_interleaves_between_tool_call_and_result() -> None:
    kinds = _types("02-tool-call.jsonl")
    call, result = kinds.index("tool/call"), kinds.index("tool/result")
    assert "session/title" in kinds[call:result]


def test_readme_03_auto_compaction_brackets() -> None:
    session = restore("03-auto-compaction.jsonl")
    starts = [e for e in session.events if e.type == "compaction/start"]
    ends = [e for e in session.events if e.type == "compaction/end"]
    summaries = [e for e in session.events if e.type == "compaction/summary"]
    assert (len(starts), len(ends), len(summaries)) == (7, 7, 3)
    assert all(isinstance(s.data["turn"], int) for s in starts)  # in-turn (automatic) brackets
    failed = [e for e in ends if "error" in e.data]
    assert len(failed) == 4 and all("summary is not smaller" in e.data["error"] for e in failed)
    assert session.surface.replace_generation == 3


def test_readme_03_manual_compact_is_standalone() -> None:
    session = restore("03-manual-compact.jsonl")
    (start,) = [e for e in session.events if e.type == "compaction/start"]
    assert start.data["turn"] is None and "sourceCommandId" in start.data
    (done,) = [e for e in session.events if e.type == "command/done"]
    assert done.data["kind"] == "success"


@pytest.mark.parametrize("name", ["04-killed-mid-stream.jsonl", "04-killed-during-tool.jsonl"])
def test_readme_04_killed_runs_leave_an_open_turn(name: str) -> None:
    kinds = _types(name)
    assert kinds.count("turn/start") == 1 and "turn/end" not in kinds
    assert harness.repair_closers(list(restore(name).events)[:-1])


def test_readme_05_resume_keeps_the_killed_bytes_as_a_prefix() -> None:
    killed = (FIXTURES / "04-killed-mid-stream.jsonl").read_bytes()
    resumed = (FIXTURES / "05-resumed-after-kill-mid-stream.jsonl").read_bytes()
    assert resumed.startswith(killed)
