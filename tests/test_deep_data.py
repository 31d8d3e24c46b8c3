"""Deep data (issue 12.2): one documented write limit, reading every depth dsh reads.

Writing: event data may nest ``MAX_DEPTH`` (512) arrays/objects; deeper is
``InvalidEventData`` naming the path, never orjson's untyped ``TypeError`` (its encoder
stops at 254 levels). Reading: a stored event nested up to ``MAX_READ_DEPTH`` levels
loads (dsh loads 1,500 and more); deeper is a typed refusal. Every JSON helper works at
any depth it is given (explicit stacks where Python's recursion would stop), and no CLI
command prints a traceback for deep data.
"""

from __future__ import annotations

import json as stdlib_json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import InvalidEventData
from harness.events.json import (
    MAX_DEPTH,
    MAX_READ_DEPTH,
    FrozenDict,
    FrozenList,
    UnrepresentableJson,
    adopt,
    check_json,
    decode_frozen,
    dumps,
    dumps_kept,
    json_equal,
    loads,
    snapshot,
    thaw,
)
from harness.session.header import SessionHeader
from harness.session.session import Session
from harness.stores.jsonl.paths import Layout


def lists(levels: int, inner: Any = 1) -> Any:
    """``levels`` nested lists around ``inner``."""
    value = inner
    for _ in range(levels):
        value = [value]
    return value


def objects(levels: int, inner: Any = 1) -> Any:
    """``levels`` nested ``{"k": …}`` objects around ``inner``."""
    value = inner
    for _ in range(levels):
        value = {"k": value}
    return value


def text_of(levels: int) -> bytes:
    return b'{"k":' * levels + b'[1,"\xc3\xa9",2.5,null,true]' + b"}" * levels


# ---- the codec --------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [254, 255, 300, 1024, 1025, 1500, 5000])
def test_dumps_and_loads_work_at_any_depth_with_orjsons_bytes(levels: int) -> None:
    text = text_of(levels)
    value = loads(text)
    assert dumps(value) == text and dumps_kept(value) == text
    assert dumps(loads(text.decode("utf-8"))) == text


def test_the_deep_encoder_keeps_surrogates_and_frozen_values() -> None:
    value = objects(400, ["\ud800", FrozenList(["x", FrozenDict(a=1)]), 0.1, -5, "é"])
    expected = b'{"k":' * 400 + b'["\\ud800",["x",{"a":1}],0.1,-5,"\xc3\xa9"]' + b"}" * 400
    assert dumps(value) == expected
    with pytest.raises(TypeError):
        dumps(lists(400, object()))
    with pytest.raises(TypeError):
        dumps(lists(400, {1: 2}))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(min_value=0, max_value=1200))
def test_the_fallback_parser_reads_what_orjson_reads(value: Any, levels: int) -> None:
    """Any JSON orjson writes, wrapped ``levels`` deep, decodes to orjson's own reading."""
    from harness.events.jsondeep import parse

    text = orjson.dumps(value)
    ours = parse(text, MAX_READ_DEPTH)
    assert stdlib_json.dumps(ours) == stdlib_json.dumps(orjson.loads(text))
    assert orjson.dumps(ours) == text
    deep = b"[" * levels + text + b"]" * levels
    assert dumps(loads(deep)) == deep


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40) | st.text(alphabet='[]{}",:0123456789.eE+-tfrunlas \\u\t\n', max_size=30))
def test_the_fallback_parser_refuses_what_orjson_refuses(data: bytes | str) -> None:
    from harness.events.jsondeep import parse

    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        expected: Any = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        expected = error
    try:
        ours: Any = parse(raw, MAX_READ_DEPTH)
    except UnrepresentableJson as error:  # valid JSON beyond harness: orjson refuses it too
        assert isinstance(expected, orjson.JSONDecodeError)
        assert str(error).startswith(("number", "invalid UTF-8"))
        return
    except ValueError:
        if not isinstance(expected, orjson.JSONDecodeError):
            raise
        return
    if isinstance(expected, orjson.JSONDecodeError):  # only lone surrogate escapes differ
        assert "surrogate" in str(expected), (raw, ours)
    else:
        assert orjson.dumps(ours) == orjson.dumps(expected)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (b'{"t":1e400}', "number 1e400"),
        (b"[-1E+999]", r"number -1E\+999"),
        (b"1" + b"0" * 400, "number 1000"),
        (b"[" * (MAX_READ_DEPTH + 1) + b"]" * (MAX_READ_DEPTH + 1), f"deeper than {MAX_READ_DEPTH}"),
        (b'{"a":"\xff"}', "invalid UTF-8"),
    ],
)
def test_valid_json_harness_cannot_hold_is_its_own_error(text: bytes, words: str) -> None:
    with pytest.raises(UnrepresentableJson, match=words):
        loads(text)
    with pytest.raises(ValueError, match=r"expected|char"):  # cut short, it is plain malformed
        loads(text[:-1] + b"," if text.endswith(b"}") else text[:-1] + b"[")


def test_loads_reads_the_read_limit_exactly() -> None:
    assert loads(b"[" * MAX_READ_DEPTH + b"]" * MAX_READ_DEPTH) is not None
    with pytest.raises(UnrepresentableJson):
        loads(b'{"k":' * MAX_READ_DEPTH + b"{}" + b"}" * MAX_READ_DEPTH)


# ---- the helpers: no recursion limit on what they are given --------------------------------


def test_frozen_values_thaw_compare_and_print_at_any_depth() -> None:
    text = text_of(3000)
    frozen = decode_frozen(text)
    assert type(frozen) is FrozenDict
    inner: Any = frozen
    for _ in range(3000):
        inner = inner["k"]
    assert type(inner) is FrozenList and inner[1] == "é"
    thawed = thaw(frozen)
    assert type(thawed) is dict and dumps(thawed) == text
    assert json_equal(frozen, thawed) and json_equal(thawed, loads(text))
    assert not json_equal(frozen, loads(text.replace(b"2.5", b"3.5")))
    assert not json_equal(frozen, loads(text.replace(b"true", b"1")))
    shown = repr(frozen)
    assert shown.startswith("FrozenDict({'k': FrozenDict({'k': ") and shown.endswith("])" + "})" * 3000)
    assert (
        repr(FrozenDict(a=FrozenList([1, "x"]), b=None))
        == "FrozenDict({'a': FrozenList([1, 'x']), 'b': None})"
    )
    adopted = adopt(loads(text))
    assert type(adopted) is FrozenDict and dumps(adopted) == text


def test_helpers_work_from_a_deep_call_stack() -> None:
    """A caller already deep in its own stack still gets the right answer."""
    value = lists(MAX_DEPTH - 1)

    def at_depth(remaining: int, work: Callable[[], Any]) -> Any:
        return work() if remaining == 0 else at_depth(remaining - 1, work)

    frame, depth = sys._getframe(), 0
    while frame.f_back is not None:
        frame, depth = frame.f_back, depth + 1
    room = sys.getrecursionlimit() - depth - 100  # far fewer frames left than the data's 511 levels
    check = at_depth(room, lambda: check_json(value))
    assert check is None
    assert at_depth(room, lambda: dumps(snapshot(value))) == dumps(value)
    assert at_depth(room, lambda: json_equal(thaw(decode_frozen(dumps(value))), value))
    with pytest.raises(InvalidEventData, match=r"^data(\[0\]){512}: nested deeper than 512"):
        at_depth(room, lambda: check_json([[value]]))


# ---- writing: one limit, typed -------------------------------------------------------------


def _session() -> Session:
    return Session.create(SessionHeader.new(id="deep", cwd="/w", created_at=1), clock=lambda: 7)


@pytest.mark.parametrize("levels", [253, 254, 255, 300, 510, MAX_DEPTH])
def test_append_accepts_data_up_to_the_write_limit(levels: int) -> None:
    session = _session()
    event = session.append("plugin/deep", objects(levels - 1, []), ignorable=True)
    assert event.data_json == b'{"k":' * (levels - 1) + b"[]" + b"}" * (levels - 1)
    child = session.fork()  # a restore of what was appended refuses nothing
    assert child.events[event.seq].data_json == event.data_json


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 1000, 5000])
def test_append_refuses_deeper_data_naming_the_path(levels: int) -> None:
    session = _session()
    with pytest.raises(InvalidEventData, match=f"nested deeper than {MAX_DEPTH} levels") as info:
        session.append("plugin/deep", {"a": lists(levels - 1)}, ignorable=True)
    assert info.value.path == "data.a" + "[0]" * (MAX_DEPTH - 1)
    assert len(session.events) == 0


# ---- the CLI on deep stored data -----------------------------------------------------------

runner = CliRunner()


def _deep_lines(levels: int) -> list[bytes]:
    """One closed turn whose message, chunk and step events all carry data ``levels`` deep,
    then an ignorable event that is nothing but that depth (the shapes dsh writes and reads)."""
    deep = b"[" * levels + b"]" * levels
    model = b'{"kind":"model","provider":"p","model":"m"}'
    return [
        b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
        b'{"type":"user/message","seq":1,"time":2,"data":{"id":"u1","role":"user","source":{"kind":"user",'
        b'"x":%s},"content":[{"type":"text","text":"hi","meta":%s}]},"surfaceOp":"append"}' % (deep, deep),
        b'{"type":"step/start","seq":2,"time":3,"data":{"turn":1,"step":1}}',
        b'{"type":"assistant/chunk","seq":3,"time":4,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta",'
        b'"index":0,"text":"yo","extra":%s}}}' % deep,
        b'{"type":"assistant/message","seq":4,"time":5,"data":{"turn":1,"step":1,"message":{"id":"a1",'
        b'"role":"assistant","source":%s,"content":[{"type":"text","text":"yo","meta":%s}]}},'
        b'"sourceEventSeqs":[3],"surfaceOp":"append"}' % (model, deep),
        b'{"type":"step/end","seq":5,"time":6,"data":{"turn":1,"step":1,"x":%s}}' % deep,
        b'{"type":"turn/end","seq":6,"time":7,"data":{"turn":1,"reason":{"kind":"completed"}}}',
        b'{"type":"plugin/x","seq":7,"time":8,"data":%s,"ignorable":true}' % deep,
    ]


def _deep_root(root: Path, levels: int) -> tuple[str, Path]:
    """A plain JSONL root holding ``_deep_lines(levels)``: its session id and log path."""
    header = SessionHeader.new(id=f"deep-{levels}", cwd="/w/p", created_at=1767225600000)
    path = Path(Layout(root, "none").log_path("/w/p", header.id))
    path.parent.mkdir(parents=True)
    lines = [dumps(header.to_json(line=True)), *_deep_lines(levels)]
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return header.id, path


@pytest.mark.parametrize("levels", [300, 1500, MAX_READ_DEPTH + 1])
def test_no_cli_read_command_prints_a_traceback_for_deep_data(tmp_path: Path, levels: int) -> None:
    session_id, path = _deep_root(tmp_path, levels)
    before = path.read_bytes()
    readable = levels <= MAX_READ_DEPTH
    for command in (
        ["verify", session_id],
        ["verify", "--json", session_id],
        ["verify", str(path)],
        ["verify", "--json", str(path)],
        ["log", session_id],
        ["log", "--json", session_id],
        ["surface", session_id],
        ["surface", "--json", session_id],
        ["export", session_id],
        ["export", "--format", "openai", session_id],
        ["check", "--workspace", str(tmp_path), session_id],
        ["check", "--json", "--workspace", str(tmp_path), session_id],
        ["sessions"],
        ["sessions", "--json"],
    ):
        result = runner.invoke(app, ["--store", str(tmp_path), "--compression", "none", *command])
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            command,
            result.exception,
        )
        listing = command[0] == "sessions"
        failed = 2 if command[0] == "check" else 1  # check keeps 1 for "a finding blocks"
        assert result.exit_code == (0 if readable or listing else failed), (command, result.output)
        if not readable and not listing:
            assert f"nested deeper than {MAX_READ_DEPTH} levels" in result.output, command
        if "--json" in command and readable:
            loads(result.stdout if command[0] != "log" else result.stdout.splitlines()[-1])  # JSON out
        if readable and command == ["log", "--json", session_id]:
            assert result.stdout.encode().splitlines()[:8] == before.splitlines()[1:]
    assert path.read_bytes() == before  # the read commands write nothing, cut nothing
