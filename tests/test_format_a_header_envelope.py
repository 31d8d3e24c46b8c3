"""FORMAT §13 group A (cases 1–12): session header and event envelope, in-memory core.

Cases 4, 5, 6, 7 and 11 are partly rules of the JSONL/persistence layer (header *line*,
``SessionFormatUnsupportedError``, load-time refusal of unknown types). Here we test
the part the core owns: ``validate_header`` (FORMAT §1, §7.1) and ``Session.from_restore``
(FORMAT §7.2). The storage halves belong to the storage test suite.
"""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from harness import (
    InvalidEvent,
    InvalidHeader,
    InvalidSeed,
    Session,
    SessionHeader,
    encode_event,
)
from harness.session.header import validate_header

SID = "s"
HEADER: dict[str, Any] = {"version": 0, "id": SID, "createdAt": 1}
CLOCK_MS = 4242


def _clock() -> int:
    return CLOCK_MS


def _header(**changes: Any) -> dict[str, Any]:
    return {**HEADER, **changes}


def _restore(seed: list[dict[str, Any]], header: object = HEADER, session_id: str = SID) -> Session:
    return Session.from_restore(session_id, seed, cast(Any, header), clock=_clock)


def _seed_error(seed: list[dict[str, Any]], header: object = HEADER, session_id: str = SID) -> InvalidSeed:
    with pytest.raises(InvalidSeed) as info:
        _restore(seed, header, session_id)
    assert type(info.value) is InvalidSeed
    return info.value


def _header_error(raw: object, session_id: str | None = None) -> InvalidHeader:
    with pytest.raises(InvalidHeader) as info:
        validate_header(raw, session_id)
    assert type(info.value) is InvalidHeader
    return info.value


def _wire(event: object) -> Any:
    """The event as it would be written and read back (plain dicts and lists)."""
    from harness import Event

    assert isinstance(event, Event)
    return json.loads(encode_event(event))


def _turn_start(seq: int, turn: int = 1) -> dict[str, Any]:
    return {"type": "turn/start", "seq": seq, "time": 1, "data": {"turn": turn}}


# ---- case 1 ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 42, -1, "0", None, True, 0.5])
def test_a01_header_version_refused(version: object) -> None:
    """1. Header `version:1` → version error."""
    err = _seed_error([], _header(version=version))
    assert err.index is None
    assert err.rule == "header"
    assert "invalid session header" in str(err)
    assert "unsupported session format version" in str(err)

    direct = _header_error(_header(version=version))
    assert "unsupported session format version" in str(direct)

    with pytest.raises(InvalidHeader, match="unsupported session format version"):
        Session.create(_header(version=version))


@pytest.mark.parametrize("header", [None, 1, [], "session", [HEADER]], ids=repr)
def test_a01_restore_header_not_plain_record(header: object) -> None:
    """1. Restore header `null`/`1`/`[]` → "not a plain JSON record"."""
    err = _seed_error([], header)
    assert err.index is None
    assert err.rule == "header"
    assert "not a plain JSON record" in str(err)

    direct = _header_error(header)
    assert "not a plain JSON record" in str(direct)


@pytest.mark.parametrize("version", [0, 0.0])
def test_a01_version_zero_accepted(version: object) -> None:
    """1. (valid counterpart) version 0 is the one supported version."""
    session = _restore([], _header(version=version))
    assert session.header.version == 0
    assert type(session.header.version) is int
    assert session.id == SID
    assert validate_header(_header(version=version)).to_json() == HEADER


# ---- case 2 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("createdAt", "123"),
        ("cwd", "relative"),
        ("cwd", 1),
        ("parentSession", 1),
        ("seedLength", 0.5),
        ("seedLength", -1),
        ("seedLength", "1"),
    ],
)
def test_a02_header_field_error(field: str, value: object) -> None:
    """2. Header `createdAt:"123"`, `cwd:"relative"`, `cwd:1`, `parentSession:1`, `seedLength` `0.5`/`-1`/`"1"` → the matching field error."""  # noqa: E501
    err = _seed_error([], _header(**{field: value}))
    assert err.index is None
    assert err.rule == "header"
    assert "invalid session header" in str(err)
    assert field in str(err)

    direct = _header_error(_header(**{field: value}))
    assert field in str(direct)


def test_a02_header_fields_valid_counterpart() -> None:
    """2. (valid counterpart) well-typed optional header fields are accepted and kept."""
    raw = _header(cwd="/home/ana/proj", parentSession="p-1", seedLength=3.0, createdAt=1767225600000.0)
    session = _restore([], raw)
    header = session.header
    assert header.cwd == "/home/ana/proj"
    assert header.parent_session == "p-1"
    assert header.seed_length == 3 and type(header.seed_length) is int
    assert header.created_at == 1767225600000 and type(header.created_at) is int
    assert header.to_json() == {
        "version": 0,
        "id": SID,
        "createdAt": 1767225600000,
        "cwd": "/home/ana/proj",
        "parentSession": "p-1",
        "seedLength": 3,
    }


# ---- case 3 ------------------------------------------------------------------------------


def test_a03_header_id_mismatch() -> None:
    """3. Header id ≠ session id → "does not match session id"."""
    err = _seed_error([], HEADER, session_id="other")
    assert err.index is None
    assert err.rule == "header"
    assert "does not match session id" in str(err)

    direct = _header_error(HEADER, "other")
    assert "does not match session id" in str(direct)


def test_a03_header_id_match_accepted() -> None:
    """3. (valid counterpart) header id equal to the session id is accepted."""
    assert _restore([], HEADER, session_id=SID).id == SID
    assert validate_header(HEADER, SID).id == SID


# ---- case 4 (core part; the JSONL refusal needs the storage layer) ------------------------


def test_a04_version_refused_before_shape_checks() -> None:
    """4. Header `{"type":"session","version":42,"id":"x"}` (no createdAt) → version refusal (core part)."""
    raw = {"type": "session", "version": 42, "id": "x"}
    direct = _header_error(raw)
    assert "unsupported session format version" in str(direct)
    assert "createdAt" not in str(direct)

    err = _seed_error([], raw, session_id="x")
    assert err.rule == "header"
    assert "unsupported session format version" in str(err)
    assert "createdAt" not in str(err)


# ---- case 5 (core part) ------------------------------------------------------------------


def test_a05_header_value_not_a_record() -> None:
    """5. Header line `42` → not a session header (core part: "not a plain JSON record")."""
    assert "not a plain JSON record" in str(_header_error(42))
    err = _seed_error([], 42)
    assert err.index is None and err.rule == "header"
    assert "not a plain JSON record" in str(err)


@pytest.mark.parametrize(
    "raw",
    [
        {"version": 42, "id": 123},
        {"version": -1, "id": "x", "createdAt": 1},
        {"version": -1, "id": "x"},
    ],
    ids=["v42-id123", "v-1", "v-1-no-createdAt"],
)
def test_a05_version_refused_before_id(raw: dict[str, Any]) -> None:
    """5. `version:42, id:123` → version refusal; `version:-1` → version refusal (core part)."""
    direct = _header_error(raw)
    assert "unsupported session format version" in str(direct)
    assert " id " not in str(direct)


# ---- case 6 (core part: validate_header; the header LINE rules need storage) ------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("delegationDepth", -0.0),
        ("delegationDepth", 1.5),
        ("delegationDepth", "1"),
        ("delegationDepth", -1),
        ("delegationDepth", True),
        ("createdAt", -0.0),
        ("createdAt", 1.5),
        ("createdAt", -1),
        ("createdAt", 2**53),
        ("createdAt", None),
        ("agentPreset", 7),
    ],
    ids=repr,
)
def test_a06_header_bad_numbers_and_preset(field: str, value: object) -> None:
    """6. `delegationDepth` `-0`/`1.5`/`"1"`/`-1`; `createdAt` `-0`/`1.5`/`-1`/2^53; `agentPreset:7` → error."""  # noqa: E501
    direct = _header_error(_header(**{field: value}))
    assert field in str(direct)

    err = _seed_error([], _header(**{field: value}))
    assert err.index is None and err.rule == "header"
    assert field in str(err)


def test_a06_created_at_missing_refused() -> None:
    """6. `createdAt` is required in memory as well."""
    raw = {"version": 0, "id": SID}
    assert "createdAt" in str(_header_error(raw))


def test_a06_agent_preset_minimal_round_trips() -> None:
    """6. `agentPreset:"minimal"` round-trips."""
    raw = _header(delegationDepth=0, agentPreset="minimal")
    header = validate_header(raw)
    assert header.agent_preset == "minimal"
    assert header.to_json() == raw
    line = header.to_json(line=True)
    assert line == {"type": "session", **raw}
    assert list(line) == ["type", "version", "id", "createdAt", "delegationDepth", "agentPreset"]
    assert validate_header(line) == header

    session = _restore([], raw)
    assert session.header.agent_preset == "minimal"
    assert session.header.to_json() == raw


@pytest.mark.parametrize("depth", [0, 2, 3.0, 2**53 - 1])
def test_a06_delegation_depth_valid(depth: float) -> None:
    """6. (valid counterpart) a non-negative safe-integer `delegationDepth` is accepted as an int."""
    header = validate_header(_header(delegationDepth=depth))
    assert header.delegation_depth == int(depth)
    assert type(header.delegation_depth) is int


def test_a06_delegation_depth_optional_in_memory() -> None:
    """6. `delegationDepth` is optional in memory (absent = 0) but always written on the header line."""
    header = validate_header(HEADER)
    assert header.delegation_depth is None
    assert header.to_json() == HEADER
    assert header.to_json(line=True) == {"type": "session", **HEADER, "delegationDepth": 0}


def test_a06_header_line_writer_order() -> None:
    """6. The header line uses the writer order of FORMAT §1."""
    raw = {
        "agentPreset": "minimal",
        "delegationDepth": 1,
        "origin": "subagent",
        "seedLength": 2,
        "parentSession": "p",
        "cwd": "/w",
        "createdAt": 5,
        "id": SID,
        "version": 0,
    }
    line = validate_header(raw).to_json(line=True)
    assert list(line) == [
        "type",
        "version",
        "id",
        "createdAt",
        "cwd",
        "parentSession",
        "seedLength",
        "origin",
        "delegationDepth",
        "agentPreset",
    ]
    assert isinstance(SessionHeader.new(id="n", created_at=1), SessionHeader)


# ---- case 7 ------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["approvalPolicy", "sandboxMode"])
def test_a07_header_retired_field_refused(field: str) -> None:
    """7. Header line with `approvalPolicy` → rejected (core part: `validate_header`)."""
    direct = _header_error(_header(**{field: "never"}))
    assert field in str(direct)
    assert "retired" in str(direct)

    err = _seed_error([], _header(**{field: "never"}))
    assert err.index is None and err.rule == "header"
    assert field in str(err)


def test_a07_unknown_header_keys_dropped() -> None:
    """7. (counterpart, FORMAT §1) other unknown header keys are dropped on parse."""
    header = validate_header(_header(futureKey={"a": 1}, type="session"))
    assert header.to_json() == HEADER


# ---- case 8 ------------------------------------------------------------------------------

_BAD_ENVELOPES: list[tuple[str, dict[str, Any]]] = [
    ("extra-key", {"type": "plugin/event", "seq": 0, "time": 1, "data": None, "extra": 1}),
    ("type-1", {"type": 1, "seq": 0, "time": 1, "data": None}),
    ("seq-str", {"type": "plugin/event", "seq": "0", "time": 1, "data": None}),
    ("seq-0.5", {"type": "plugin/event", "seq": 0.5, "time": 1, "data": None}),
    ("seq--1", {"type": "plugin/event", "seq": -1, "time": 1, "data": None}),
    ("seq-bool", {"type": "plugin/event", "seq": False, "time": 1, "data": None}),
    ("seq-missing", {"type": "plugin/event", "time": 1, "data": None}),
    ("time-str", {"type": "plugin/event", "seq": 0, "time": "1", "data": None}),
    ("time-0.5", {"type": "plugin/event", "seq": 0, "time": 0.5, "data": None}),
    ("no-data", {"type": "plugin/event", "seq": 0, "time": 1}),
    ("ignorable-false", {"type": "plugin/event", "seq": 0, "time": 1, "data": None, "ignorable": False}),
    ("ignorable-yes", {"type": "plugin/event", "seq": 0, "time": 1, "data": None, "ignorable": "yes"}),
    ("ignorable-1", {"type": "plugin/event", "seq": 0, "time": 1, "data": None, "ignorable": 1}),
]


@pytest.mark.parametrize("position", [0, 1])
@pytest.mark.parametrize(("label", "bad"), _BAD_ENVELOPES, ids=[label for label, _ in _BAD_ENVELOPES])
def test_a08_event_envelope_refused(label: str, bad: dict[str, Any], position: int) -> None:
    """8. Event with an extra key, `type:1`, `seq` `"0"`/`0.5`/`-1`, `time` `"1"`/`0.5`, no `data`, `ignorable` `false`/`"yes"` → "invalid event envelope"."""  # noqa: E501
    seed = [_turn_start(seq) for seq in range(position)] + [bad]
    err = _seed_error(seed)
    assert err.index == position
    assert err.rule == "envelope"
    assert f"seed event at index {position} has an invalid event envelope" in str(err)


def test_a08_envelope_integral_floats_and_negative_time_accepted() -> None:
    """8. (valid counterpart) integral floats are read as safe ints; `time` may be negative."""
    session = _restore(
        [
            {"type": "turn/start", "seq": 0.0, "time": 1000.0, "data": {"turn": 1}},
            {"type": "turn/end", "seq": 1, "time": -5, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        ]
    )
    first, second = session.events[0], session.events[1]
    assert (first.seq, first.time) == (0, 1000)
    assert type(first.seq) is int and type(first.time) is int
    assert second.time == -5
    assert encode_event(first) == b'{"type":"turn/start","seq":0,"time":1000,"data":{"turn":1}}'


@pytest.mark.parametrize("kind", [1, "", None])
def test_a08_append_bad_type_refused(kind: object) -> None:
    """8. (append side) a non-string or empty `type` is refused and the log is unchanged."""
    session = Session.create(HEADER, clock=_clock)
    session.append("turn/start", {"turn": 1})
    with pytest.raises(InvalidEvent, match="type") as info:
        session.append(cast(Any, kind), {})
    assert type(info.value) is InvalidEvent
    assert len(session.events) == 1


@pytest.mark.parametrize("ignorable", ["yes", 1, None])
def test_a08_append_bad_ignorable_refused(ignorable: object) -> None:
    """8. (append side) `ignorable` other than a bool is refused and the log is unchanged."""
    session = Session.create(HEADER, clock=_clock)
    with pytest.raises(InvalidEvent, match="ignorable") as info:
        session.append("plugin/event", None, ignorable=cast(Any, ignorable))
    assert type(info.value) is InvalidEvent
    assert len(session.events) == 0


# ---- case 9 ------------------------------------------------------------------------------


def test_a09_plugin_event_null_data_kept_verbatim() -> None:
    """9. `{"type":"plugin/event","seq":0,"time":1,"data":null}` seeded → kept verbatim."""
    raw = {"type": "plugin/event", "seq": 0, "time": 1, "data": None}
    session = _restore([raw])
    event = session.events[0]
    assert event.type == "plugin/event"
    assert event.data is None
    assert event.surface_op is None and event.source_event_seqs is None and event.ignorable is False
    assert _wire(event) == raw
    assert encode_event(event) == b'{"type":"plugin/event","seq":0,"time":1,"data":null}'
    # the restore appends its end-seed after the seed
    assert len(session.events) == 2
    assert session.first_live_seq == 1
    assert _wire(session.events[1]) == {"type": "session/end-seed", "seq": 1, "time": CLOCK_MS, "data": {}}


# ---- case 10 -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["future/informational", "turn/start"])
def test_a10_ignorable_true_preserved(kind: str) -> None:
    """10. `ignorable:true` → accepted and preserved."""
    raw = {"type": kind, "seq": 0, "time": 1, "data": {"turn": 1}, "ignorable": True}
    session = _restore([raw])
    event = session.events[0]
    assert event.ignorable is True
    assert _wire(event) == raw
    assert encode_event(event).endswith(b',"ignorable":true}')


# ---- case 11 (core part: persistence load refusal needs the storage layer) --------------


@pytest.mark.parametrize("ignorable", [False, True])
def test_a11_unknown_type_accepted_in_memory(ignorable: bool) -> None:
    """11. Load with `future/event` (not ignorable) → refusal is a persistence rule; in-memory seeding accepts it."""  # noqa: E501
    raw: dict[str, Any] = {"type": "future/event", "seq": 0, "time": 1, "data": {"x": [1, 2]}}
    if ignorable:
        raw["ignorable"] = True
    session = _restore([raw])
    event = session.events[0]
    assert event.type == "future/event"
    assert event.ignorable is ignorable
    assert _wire(event) == raw


def test_a11_unknown_type_accepted_by_append() -> None:
    """11. (FORMAT §2) appends accept unknown types."""
    session = Session.create(HEADER, clock=_clock)
    event = session.append("future/event", {"x": 1})
    assert event.type == "future/event"
    assert event.ignorable is False
    assert len(session.events) == 1


# ---- case 12 -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seqs", "bad_index"),
    [([0, 5], 1), ([1], 0), ([0, 0], 1), ([0, 2, 3], 1), ([0, 1, 1], 2)],
    ids=repr,
)
def test_a12_seed_seq_not_contiguous(seqs: list[int], bad_index: int) -> None:
    """12. Seed seqs `0, 5` → contiguity error."""
    seed = [{"type": "plugin/event", "seq": seq, "time": 1, "data": None} for seq in seqs]
    err = _seed_error(seed)
    assert err.index == bad_index
    assert err.rule == "contiguity"
    assert "seed must be contiguous from 0" in str(err)


def test_a12_contiguity_checked_before_surface_step() -> None:
    """12. (order, FORMAT §7.2) seq contiguity (step 7) is checked before the surface step (8)."""
    message = {"id": "u-1", "role": "user", "content": [], "source": {"kind": "user"}}
    seed = [_turn_start(0), {"type": "user/message", "seq": 5, "time": 1, "data": message}]
    err = _seed_error(seed)
    assert err.index == 1
    assert err.rule == "contiguity"


def test_a12_contiguous_seed_accepted() -> None:
    """12. (valid counterpart) seqs 0, 1, 2 restore; the end-seed follows at 3."""
    seed = [{"type": "plugin/event", "seq": seq, "time": 1, "data": seq} for seq in range(3)]
    session = _restore(seed)
    assert [e.seq for e in session.events] == [0, 1, 2, 3]
    assert [_wire(e) for e in session.events[:3]] == seed
    assert session.events[3].type == "session/end-seed"
    assert session.first_live_seq == 3
