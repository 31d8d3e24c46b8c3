"""Load conformance with dsh on legacy records and envelope corner cases (issue 12 item 6).

Every case of ``tests/legacy_cases.py`` carries the verdict dsh's own loader gives
it (checked with /work/dshc/dsh-load.mjs); harness must give the same one through
the exact pipeline (``restore_stored``) and through a JSONL store (the streamed
restore, which hands anything legacy to the exact pipeline), in plain and zstd files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import harness
from harness.errors import CorruptSession, HarnessError, UnsupportedFormat
from harness.events.json import loads
from harness.session.header import validate_header
from harness.stores.backend import StoredLog
from harness.stores.jsonl.frames import encode_frame
from harness.stores.jsonl.paths import Compression
from harness.stores.store import restore_stored
from tests.legacy_cases import CASES, HEADER, SESSION_ID, USER, Case, current_user, ev, jsonl, turn
from tests.stores.test_jsonl_format import place
from tests.stores.test_streamed_restore import both_ways

ERRORS: dict[str, type[HarnessError]] = {"corrupt": CorruptSession, "unsupported": UnsupportedFormat}
CASE_IDS = [case.id for case in CASES]


def stored(events: list[dict[str, Any]]) -> StoredLog:
    """A stored log as a backend hands it over: freshly decoded wire objects."""
    text = jsonl(events)
    wire = [loads(line) for line in text.splitlines()[1:]]
    return StoredLog(validate_header(HEADER), wire, location="/tmp/conform/session.jsonl")


def restored(events: list[dict[str, Any]]) -> harness.Session:
    return restore_stored(SESSION_ID, stored(events))[0]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_exact_pipeline_gives_dshs_verdict(case: Case) -> None:
    if case.verdict == "accept":
        restored(case.events)
    else:
        with pytest.raises(ERRORS[case.verdict]):
            restored(case.events)


def _file(events: list[dict[str, Any]], compression: Compression) -> bytes:
    text = jsonl(events).encode()
    if compression == "none":
        return text
    return b"".join(encode_frame(line + b"\n") for line in text.splitlines())


@pytest.mark.parametrize("compression", ["none", "zstd"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_jsonl_store_gives_dshs_verdict(case: Case, compression: Compression, tmp_path: Path) -> None:
    place(tmp_path, _file(case.events, compression), compression, sid=SESSION_ID, cwd=HEADER["cwd"])
    streamed, exact = both_ways(tmp_path, compression, SESSION_ID)
    assert streamed == exact
    kind = streamed[0]
    expected = "ok" if case.verdict == "accept" else ERRORS[case.verdict].__name__
    assert kind == expected, streamed


# ---- what the accepted legacy shapes become (FORMAT §7.6, the reference's migration) ---------


def test_pre_identity_user_message_keeps_its_other_keys_and_gains_id_then_role() -> None:
    session = restored(
        turn(
            {"turn": 1, "reason": {"kind": "completed"}},
            ev("user/message", {"turn": 1, **USER}, surfaceOp="append"),
        )
    )
    data = harness.thaw(session.events[1].data)
    assert list(data) == ["turn", "content", "source", "id", "role"]
    assert data["id"] == f"legacy-message:{SESSION_ID}:1" and data["role"] == "user"


def test_flat_steering_message_becomes_a_user_message_without_its_turn() -> None:
    session = restored(
        turn(
            {"turn": 1, "reason": {"kind": "completed"}},
            ev("steering/message", {"turn": 1, **USER}, surfaceOp="append"),
        )
    )
    event = session.events[1]
    assert event.type == "user/message"
    assert harness.thaw(event.data) == {**USER, "id": f"legacy-message:{SESSION_ID}:1", "role": "user"}


def test_wrapped_steering_message_is_its_message() -> None:
    session = restored(
        turn(
            {"turn": 1, "reason": {"kind": "completed"}},
            ev("steering/message", {"turn": 1, "message": current_user("s-1")}, surfaceOp="append"),
        )
    )
    assert harness.thaw(session.events[1].data) == current_user("s-1")


def test_legacy_tool_result_rewrite_keeps_the_id_it_replaces() -> None:
    case = next(case for case in CASES if case.id == "tool-result-legacy-rewrite-of-legacy")
    session = restored(case.events)
    first, rewrite = session.events[4].data["message"], session.events[5].data["message"]
    assert first["id"] == f"legacy-message:{SESSION_ID}:4" and rewrite["id"] == first["id"]
    assert harness.thaw(rewrite) == {
        "id": first["id"],
        "role": "user",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "c1",
                "content": [{"type": "text", "text": "ok"}],
                "isError": False,
            }
        ],
        "source": {"kind": "tool", "callId": "c1"},
    }


def test_negative_zero_seq_and_time_read_as_zero() -> None:
    session = restored([{**ev("session/title", {"title": "t"}), "seq": -0.0, "time": -0.0}])
    first = session.events[0]
    assert (first.seq, first.time) == (0, 0) and type(first.time) is int


def test_ignorable_event_with_an_empty_type_is_kept() -> None:
    session = restored([ev("", {"x": 1}, ignorable=True)])
    assert session.events[0].type == "" and session.events[0].ignorable


def test_malformed_legacy_record_names_the_record_and_the_rule() -> None:
    with pytest.raises(
        CorruptSession, match=r"malformed pre-react-loop turn/end at seq 1: .*only turn and reason"
    ):
        restored(turn({"turn": 1, "reason": {"kind": "completed"}, "x": 1}))

