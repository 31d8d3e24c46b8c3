"""Record shapes a differential against dsh's loader found harness reading wrongly (issue 12 items 1, 2, 6).

* An event whose ``type`` is an array or an object reached a set lookup (the packed-row
  tag, the retired and known vocabularies) and raised an untyped ``TypeError`` from
  every reader: ``read_session_file``, ``SessionStore.load`` on JSONL and SQLite, and
  ``list()``. dsh refuses it as an unknown event type; so does harness now, file untouched.
* A packed row whose ``turn``, ``step`` or ``index`` is not a number is an unparsable
  record for dsh (``validateRunData``); harness expanded it, so it loaded a log dsh
  refuses and committed a repair on it that dsh could not read back.
* A packed row's ``seq0``, ``time0`` and ``dt`` are read as dsh reads them
  (``Number.isSafeInteger``): an integral float (``2.0``, ``-0.0``) is that integer,
  as FORMAT asks readers to accept integral floats.
* A ``turn/start``, ``step/start`` or ``tool/call`` with null data anywhere in the log:
  dsh's crash-repair scan reads a field of each and refuses the session; harness accepted
  it (and ``Session.append`` wrote a null ``turn/start``/``step/start``).
* A ``sourceEventSeqs`` entry or a replace ``start``/``end`` of ``-0.0`` is seq 0 for dsh;
  harness refused the log.
* A message event without a ``data`` key raised ``KeyError`` from the legacy pass; it is
  a malformed message (``CorruptSession``), as dsh says.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

import harness
from harness.errors import CorruptSession, InvalidEvent, UnsupportedFormat
from harness.events.packed import PackedRowError, expand_row
from harness.stores.jsonl import JsonlBackend, read_session_file
from harness.stores.jsonl.paths import Compression, Layout
from harness.stores.jsonl.reader import parse_log
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore
from tests.legacy_cases import HEADER as LEGACY_HEADER
from tests.legacy_cases import current_user, ev, jsonl
from tests.stores.test_deep_and_unparsable import (
    CWD,
    MODES,
    SID,
    _sqlite_session,
    load,
    log_bytes,
    opening,
    place,
    run,
)

LEGACY_SID = "null-data-1"


def write_legacy(root: Path, events: list[dict[str, Any]]) -> Path:
    path = Path(Layout(root, "none").log_path(LEGACY_HEADER["cwd"], LEGACY_SID))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(jsonl(events, LEGACY_SID), encoding="utf-8")
    return path


NOT_STRINGS = {"array": b"[]", "object": b'{"a":1}', "array-of-turn-end": b'["turn/end"]'}


def typed_line(seq: int, kind: bytes, *, ignorable: bool = False) -> bytes:
    flag = b',"ignorable":true' if ignorable else b""
    return b'{"type":%s,"seq":%d,"time":%d,"data":{}%s}' % (kind, seq, 1000 + seq, flag)


@pytest.mark.parametrize("compression", MODES)
@pytest.mark.parametrize("shape", sorted(NOT_STRINGS))
def test_an_event_type_that_is_not_a_string_is_refused_as_unknown_not_a_traceback(
    tmp_path: Path, compression: Compression, shape: str
) -> None:
    content = log_bytes([*opening(), typed_line(2, NOT_STRINGS[shape])], compression)
    path = place(tmp_path, content, compression)
    with pytest.raises(UnsupportedFormat, match=r"event type .* at seq 2"):
        read_session_file(str(path))
    with pytest.raises(UnsupportedFormat, match=r"event type .* at seq 2"):
        run(load(tmp_path, compression))
    assert path.read_bytes() == content

    async def listed() -> Any:
        async with SessionStore(JsonlBackend(tmp_path, compression)) as store:
            return await store.list()

    assert [info.id for info in run(listed())] == [SID]


@pytest.mark.parametrize("shape", sorted(NOT_STRINGS))
def test_an_ignorable_event_whose_type_is_not_a_string_is_a_typed_refusal(tmp_path: Path, shape: str) -> None:
    content = log_bytes([*opening(), typed_line(2, NOT_STRINGS[shape], ignorable=True)], "none")
    path = place(tmp_path, content, "none")
    with pytest.raises((CorruptSession, UnsupportedFormat)):
        run(load(tmp_path, "none"))
    assert path.read_bytes() == content


@pytest.mark.parametrize("shape", sorted(NOT_STRINGS))
def test_sqlite_refuses_a_row_whose_type_is_not_a_string(tmp_path: Path, shape: str) -> None:
    db = tmp_path / "s.db"
    _sqlite_session(db)
    with sqlite3.connect(db, isolation_level=None) as conn:
        line = typed_line(1, NOT_STRINGS[shape]).decode()
        conn.execute("UPDATE events SET line = ? WHERE seq = 1", (line,))

    async def go() -> Any:
        async with SessionStore(SqliteBackend(db)) as store:
            return await store.load(SID)

    with pytest.raises(UnsupportedFormat, match="at seq 1"):
        run(go())


def text_row(data: bytes, *, seq0: bytes = b"2", time0: bytes = b"1002") -> bytes:
    return b'{"type":"text-chunks","seq0":%s,"time0":%s,"data":%s}' % (seq0, time0, data)


def turn_end(seq: int) -> bytes:
    return b'{"type":"turn/end","seq":%d,"time":%d,"data":{"turn":2,"reason":{"kind":"completed"}}}' % (
        seq,
        1000 + seq,
    )


TURN_TWO = [
    b'{"type":"turn/start","seq":0,"time":1000,"data":{"turn":2}}',
    b'{"type":"step/start","seq":1,"time":1001,"data":{"turn":2,"step":1}}',
]
BAD_NUMBERS = {
    "step-array": b'{"turn":2,"step":[],"index":0,"dt":[0,0],"texts":["a","b","c"]}',
    "turn-string": b'{"turn":"2","step":1,"index":0,"dt":[0,0],"texts":["a","b","c"]}',
    "index-null": b'{"turn":2,"step":1,"index":null,"dt":[0,0],"texts":["a","b","c"]}',
    "index-bool": b'{"turn":2,"step":1,"index":true,"dt":[0,0],"texts":["a","b","c"]}',
}


@pytest.mark.parametrize("shape", sorted(BAD_NUMBERS))
def test_a_packed_row_whose_turn_step_or_index_is_not_a_number_is_unparsable(shape: str) -> None:
    with pytest.raises(PackedRowError, match="turn, step and index must be numbers"):
        expand_row(orjson.loads(text_row(BAD_NUMBERS[shape])))


@pytest.mark.parametrize("compression", MODES)
@pytest.mark.parametrize("shape", sorted(BAD_NUMBERS))
def test_a_bad_packed_row_before_a_turn_end_is_corruption_and_untouched(
    tmp_path: Path, compression: Compression, shape: str
) -> None:
    """dsh: an unparsable record followed by a committed ``turn/end`` is corruption."""
    lines = [*TURN_TWO, text_row(BAD_NUMBERS[shape]), turn_end(5)]
    content = log_bytes(lines, compression)
    path = place(tmp_path, content, compression)
    with pytest.raises(CorruptSession, match="unparsable committed event"):
        parse_log(content, compression)
    with pytest.raises(CorruptSession, match="unparsable committed event"):
        run(load(tmp_path, compression))
    assert path.read_bytes() == content


def test_a_bad_packed_row_as_the_last_line_is_a_torn_tail_as_in_dsh(tmp_path: Path) -> None:
    content = log_bytes([*TURN_TWO, text_row(BAD_NUMBERS["step-array"])], "none")
    scan = parse_log(content, "none")
    assert scan.torn is not None and len(scan.events) == 2


def test_a_packed_row_reads_integral_floats_as_their_integers(tmp_path: Path) -> None:
    data = b'{"turn":2,"step":1,"index":0,"dt":[-0.0,3.0],"texts":["a","b","c"]}'
    row = text_row(data, seq0=b"2.0", time0=b"1002.0")
    lines = [*TURN_TWO, row, turn_end(5)]
    content = log_bytes(lines, "none")
    place(tmp_path, content, "none")
    session = run(load(tmp_path, "none"))
    chunks = [event for event in session.events if event.type == "assistant/chunk"]
    assert [(event.seq, event.time) for event in chunks] == [(2, 1002), (3, 1002), (4, 1005)]
    assert [event.data["chunk"]["text"] for event in chunks] == ["a", "b", "c"]


# ---- null data where dsh's crash-repair scan reads a field ---------------------------------

NULL_SCANNED = ["turn/start", "step/start", "tool/call"]


def null_data_log(kind: str) -> list[dict[str, Any]]:
    """A closed turn holding ``kind`` with null data, then a second closed turn."""
    opened = [ev("turn/start", {"turn": 1}), ev("step/start", {"turn": 1, "step": 1})]
    null = ev(kind, None)
    closed = [
        ev("step/end", {"turn": 1, "step": 1}),
        ev("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    second = [ev("turn/start", {"turn": 2}), ev("turn/end", {"turn": 2, "reason": {"kind": "completed"}})]
    return [*opened, null, *closed, *second]


@pytest.mark.parametrize("kind", NULL_SCANNED)
def test_null_data_where_dshs_repair_scan_reads_a_field_is_corruption(tmp_path: Path, kind: str) -> None:
    """dsh reads data.turn / data.step / data.callId of every such event in the log (a
    TypeError it reports as corruption); harness accepted the log."""
    path = write_legacy(tmp_path, null_data_log(kind))
    before = path.read_bytes()
    with pytest.raises(CorruptSession, match=f"{kind} at seq 2 has null data"):
        read_session_file(str(path))

    async def go() -> Any:
        async with SessionStore(JsonlBackend(tmp_path, "none")) as store:
            return await store.load(LEGACY_SID)

    with pytest.raises(CorruptSession, match="has null data"):
        run(go())
    assert path.read_bytes() == before


@pytest.mark.parametrize("kind", ["turn/start", "step/start"])
def test_append_refuses_null_data_that_dsh_could_not_restore(kind: str) -> None:
    session = harness.Session.create()
    if kind == "step/start":
        session.append("turn/start", {"turn": 1})
    count = len(session.events)
    with pytest.raises(InvalidEvent, match=f"{kind} data must not be null"):
        session.append(kind, None)
    assert len(session.events) == count


def test_a_negative_zero_source_seq_is_read_as_zero(tmp_path: Path) -> None:
    """dsh's ``Number.isSafeInteger(-0) && -0 >= 0`` holds: a stored ``sourceEventSeqs``
    entry ``-0.0`` cites seq 0, as ``"time": -0.0`` is time 0 (harness refused the log)."""

    async def build() -> None:
        async with SessionStore(JsonlBackend(tmp_path, "none")) as store:
            session = await store.create(id=SID, cwd=CWD)
            session.append("turn/start", {"turn": 1})
            session.append("step/start", {"turn": 1, "step": 1})
            chunk = {"type": "text-delta", "index": 0, "text": "hi"}
            session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": chunk})
            message = harness.assistant_message("hi", provider="p", model="m")
            data = {"turn": 1, "step": 1, "message": message}
            session.append("assistant/message", data, surface_op="append", source_event_seqs=[0, 2])
            await store.flush(session)

    run(build())
    path = Path(Layout(tmp_path, "none").log_path(CWD, SID))
    stored = path.read_bytes()
    assert b'"sourceEventSeqs":[0,2]' in stored
    path.write_bytes(stored.replace(b'"sourceEventSeqs":[0,2]', b'"sourceEventSeqs":[-0.0,2]'))
    session = read_session_file(str(path))
    assert session.events[3].source_event_seqs == (0, 2)
    assert run(load(tmp_path, "none")).events[3].source_event_seqs == (0, 2)


@pytest.mark.parametrize("op", [{"start": -0.0, "end": 1}, {"start": 0, "end": -0.0}], ids=["start", "end"])
def test_a_negative_zero_replace_bound_is_read_as_zero(tmp_path: Path, op: dict[str, Any]) -> None:
    """dsh's event-seq rule takes ``-0.0`` for a replace's start or end too."""
    sources = [0, 1] if op["end"] == 1 else [0]
    events = [
        ev("user/message", current_user("u-0"), surfaceOp="append"),
        ev("user/message", current_user("u-1"), surfaceOp="append"),
        ev("user/message", current_user("u-2"), surfaceOp={"op": "replace", **op}, sourceEventSeqs=sources),
    ]
    path = write_legacy(tmp_path, events)
    session = read_session_file(str(path))
    expected = ["u-2"] if op["end"] == 1 else ["u-2", "u-1"]
    assert [message.id for message in session.derive_messages()] == expected
    assert session.events[2].to_json()["surfaceOp"] == {"op": "replace", "start": 0, "end": op["end"] or 0}


@pytest.mark.parametrize("kind", ["user/message", "assistant/message", "tool/result"])
def test_a_message_event_without_data_is_corruption_not_a_key_error(tmp_path: Path, kind: str) -> None:
    """dsh: "lacks an identified message"; harness raised KeyError('data') from its legacy pass."""
    events = [
        ev("turn/start", {"turn": 1}),
        {"type": kind, "surfaceOp": "append"},
        ev("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    path = write_legacy(tmp_path, events)
    before = path.read_bytes()
    with pytest.raises(CorruptSession, match=f"{kind} at seq 1"):
        read_session_file(str(path))
    assert path.read_bytes() == before
