"""A committed line that only our parser could not read is never cut as a torn tail (issue 12.1).

FORMAT §9.6 cuts a terminated line that does not *parse*, the rule for crash debris. A
line that is valid JSON is not debris, whatever orjson's own limits say: nested deeper
than orjson's 1,024 levels, it is read (dsh reads it); when harness cannot hold it
(``"time":1e400`` overflows a double, nesting beyond ``MAX_READ_DEPTH``, bytes that are
JSON only once invalid UTF-8 is replaced) and it is the next committed event, the read
refuses it as ``CorruptSession`` at its byte offset and the file is left as it was.
Each shape is tried in a plain and a zstd log, as the last line and in the middle, and
through the SQLite and PostgreSQL row decoders.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from harness.errors import CorruptSession, UnsupportedFormat
from harness.events.event import Event
from harness.events.json import MAX_READ_DEPTH, dumps
from harness.session.header import SessionHeader
from harness.stores.jsonl import JsonlBackend
from harness.stores.jsonl.frames import encode_frame, scan_frames
from harness.stores.jsonl.paths import Compression, Layout
from harness.stores.jsonl.reader import parse_log
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore
from tests.stores.pg import PgSchema, fresh_schema

T = TypeVar("T")

SID = "deep-1"
CWD = "/work/deep"
HEADER = SessionHeader.new(id=SID, cwd=CWD, created_at=1767225600000)
MODES: list[Compression] = ["none", "zstd"]


def run(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())


def nested(levels: int) -> bytes:
    """JSON text of ``levels`` nested arrays around a 1."""
    return b"[" * levels + b"1" + b"]" * levels


def plugin_line(seq: int, *, data: bytes = b"null", time: bytes | None = None) -> bytes:
    moment = b"%d" % (1000 + seq) if time is None else time
    return b'{"type":"plugin/probe","seq":%d,"time":%s,"data":%s,"ignorable":true}' % (seq, moment, data)


def opening() -> list[bytes]:
    """seq 0–1: a closed turn."""
    return [
        Event.create("turn/start", 0, 1000, {"turn": 1}).encode(),
        Event.create("turn/end", 1, 1001, {"turn": 1, "reason": {"kind": "completed"}}).encode(),
    ]


def after(seq: int) -> bytes:
    return Event.create("turn/start", seq, 1000 + seq, {"turn": 2}).encode()


def header_line() -> bytes:
    return dumps(HEADER.to_json(line=True)) + b"\n"


def log_bytes(lines: list[bytes], compression: Compression, header: bytes | None = None) -> bytes:
    """A log with each event line its own batch (zstd: its own frame)."""
    first = header_line() if header is None else header
    if compression == "none":
        return first + b"".join(line + b"\n" for line in lines)
    return encode_frame(first) + b"".join(encode_frame(line + b"\n") for line in lines)


def place(root: Path, content: bytes, compression: Compression) -> Path:
    path = Path(Layout(root, compression).log_path(CWD, SID))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def offset_of(lines: list[bytes], index: int, compression: Compression) -> int:
    """Where event line ``index`` (its frame, in zstd) starts in ``log_bytes(lines, …)``."""
    if compression == "none":
        return len(header_line()) + sum(len(line) + 1 for line in lines[:index])
    return scan_frames(log_bytes(lines, compression)).frames[index + 1][0]


async def load(root: Path, compression: Compression) -> Any:
    store = SessionStore(JsonlBackend(root, compression))
    try:
        return await store.load(SID)
    finally:
        await store.close()


# ---- valid JSON deeper than orjson writes (254) or reads (1,024): loaded, never cut ---------


@pytest.mark.parametrize("compression", MODES)
@pytest.mark.parametrize("where", ["last", "middle"])
@pytest.mark.parametrize("levels", [300, 1025, 1500, 3000])
def test_a_line_nested_deeper_than_orjson_reads_is_loaded(
    tmp_path: Path, compression: Compression, where: str, levels: int
) -> None:
    deep = plugin_line(2, data=nested(levels))
    lines = [*opening(), deep, *([after(3)] if where == "middle" else [])]
    content = log_bytes(lines, compression)
    path = place(tmp_path, content, compression)
    scan = parse_log(content, compression)
    assert scan.torn is None and len(scan.events) == len(lines)
    session = run(load(tmp_path, compression))
    event = session.events[2]
    assert event.type == "plugin/probe" and event.data_json == nested(levels)
    assert event.encode() == deep  # byte for byte what was stored
    assert path.read_bytes().startswith(content)  # nothing cut (a load appends its end-seed after it)


def test_a_deep_line_with_a_lone_surrogate_is_loaded_byte_for_byte(tmp_path: Path) -> None:
    """orjson refuses both the depth and the lone surrogate escape JavaScript writers emit."""
    deep = plugin_line(2, data=b'{"s":' * 1500 + b'"\\ud800 \\u00e9"' + b"}" * 1500)
    content = log_bytes([*opening(), deep], "none")
    place(tmp_path, content, "none")
    session = run(load(tmp_path, "none"))
    assert session.events[2].encode() == deep.replace(b"\\u00e9", "é".encode())


@pytest.mark.parametrize("compression", MODES)
@pytest.mark.parametrize("where", ["last", "middle"])
def test_a_line_that_parses_but_fails_validation_is_corruption(
    tmp_path: Path, compression: Compression, where: str
) -> None:
    """As in dsh: the line is committed (it parses, its seq is due), restore refuses it."""
    lines = [*opening(), plugin_line(2, time=b'"soon"'), *([after(3)] if where == "middle" else [])]
    content = log_bytes(lines, compression)
    path = place(tmp_path, content, compression)
    assert len(parse_log(content, compression).events) == len(lines)
    with pytest.raises(CorruptSession, match="time must be a safe integer"):
        run(load(tmp_path, compression))
    assert path.read_bytes() == content


# ---- valid JSON harness cannot hold: refused at its offset, the file untouched ---------------

TOO_DEEP = nested(MAX_READ_DEPTH + 1)
UNHOLDABLE = {
    "time-1e400": plugin_line(2, time=b"1e400"),
    "data-1e400": plugin_line(2, data=b'{"x":[1,-1e400]}'),
    "beyond-the-read-limit": plugin_line(2, data=TOO_DEEP),
    "invalid-utf8": plugin_line(2, data=b'"caf\xe9"'),
}


@pytest.mark.parametrize("compression", MODES)
@pytest.mark.parametrize("where", ["last", "middle"])
@pytest.mark.parametrize("shape", sorted(UNHOLDABLE))
def test_a_committed_line_harness_cannot_hold_is_corruption_not_a_torn_tail(
    tmp_path: Path, compression: Compression, where: str, shape: str
) -> None:
    lines = [*opening(), UNHOLDABLE[shape], *([after(3)] if where == "middle" else [])]
    content = log_bytes(lines, compression)
    path = place(tmp_path, content, compression)
    with pytest.raises(CorruptSession, match="committed event at line 4 is JSON harness cannot read") as info:
        parse_log(content, compression)
    assert info.value.offset == offset_of(lines, 2, compression)
    with pytest.raises(CorruptSession, match="cannot read") as loaded:
        run(load(tmp_path, compression))
    assert loaded.value.offset == info.value.offset
    assert path.read_bytes() == content


def test_the_refusal_says_what_harness_cannot_hold() -> None:
    expected = {
        "time-1e400": "number 1e400 is out of a double's range",
        "data-1e400": "number -1e400 is out of a double's range",
        "beyond-the-read-limit": f"nested deeper than {MAX_READ_DEPTH} levels",
        "invalid-utf8": "invalid UTF-8",
    }
    for shape, words in expected.items():
        with pytest.raises(CorruptSession, match=words):
            parse_log(log_bytes([*opening(), UNHOLDABLE[shape]], "none"), "none")


def test_a_torn_frame_recovers_an_unholdable_line_as_corruption(tmp_path: Path) -> None:
    """In the torn last frame of a zstd log, a complete recovered line is committed data too."""
    lines = [*opening(), UNHOLDABLE["time-1e400"] + b"\n" + after(3)]
    content = log_bytes(lines, "zstd")[:-3]  # the last frame loses its checksum: torn
    last = scan_frames(log_bytes(lines, "zstd")).frames[-1][0]
    with pytest.raises(CorruptSession, match="line 4") as info:
        parse_log(content, "zstd")
    assert info.value.offset == last


def test_debris_around_an_unholdable_line_follows_the_format_rules() -> None:
    """Not the next committed event, an unholdable line is what it would be for dsh."""
    base = opening()
    # a seq that overflows is a seq gap (dsh reads Infinity): the torn-tail rule applies
    overflowing_seq = plugin_line(2).replace(b'"seq":2', b'"seq":1e400')
    scan = parse_log(log_bytes([*base, overflowing_seq], "none"), "none")
    assert scan.torn is not None and "seq gap" in scan.torn.detail and len(scan.events) == 2
    # after a torn line, an unholdable line without a turn/end is cut like any other
    debris = b'{"type":"plugin/probe","se'
    scan = parse_log(log_bytes([*base, debris, UNHOLDABLE["data-1e400"]], "none"), "none")
    assert scan.torn is not None and len(scan.events) == 2
    # and one holding a turn/end makes the torn line corruption
    closing = b'{"type":"turn/end","seq":3,"time":1e400,"data":{"turn":1,"reason":{"kind":"completed"}}}'
    with pytest.raises(CorruptSession, match="unparsable committed event at line 4"):
        parse_log(log_bytes([*base, debris, closing], "none"), "none")
    # garbage that is not an event stays a torn tail
    for junk in (b"1e999", b'"\xff"', b"[" * (MAX_READ_DEPTH + 5) + b"]" * (MAX_READ_DEPTH + 5)):
        scan = parse_log(log_bytes([*base, junk], "none"), "none")
        assert scan.torn is not None and len(scan.events) == 2


def test_a_torn_deep_line_is_still_a_torn_tail() -> None:
    """Depth or an overflowing number never makes a line that does not parse look valid."""
    base = opening()
    for torn in (
        plugin_line(2, data=TOO_DEEP)[:-3],
        plugin_line(2, time=b"1e400")[:-1],
        plugin_line(2, data=nested(1500))[:-40],
    ):
        scan = parse_log(log_bytes([*base, torn], "none"), "none")
        assert scan.torn is not None and "unparsable committed event at line 4" in scan.torn.detail


@pytest.mark.parametrize("compression", MODES)
def test_a_deep_header_line_is_read_and_listed(tmp_path: Path, compression: Compression) -> None:
    """dsh ignores a header key it does not know, however deep; the header parser once
    recursed (a traceback from load, verify and list past ~1,000 levels)."""
    deep_header = header_line()[:-2] + b',"x":' + nested(1500) + b"}\n"
    content = log_bytes(opening(), compression, deep_header)
    path = place(tmp_path, content, compression)
    line = HEADER.to_json(line=True)
    assert parse_log(content, compression).header.to_json(line=True) == line
    session = run(load(tmp_path, compression))
    assert session.header.to_json(line=True) == line and len(session.events) == 3
    listed = run(_listed(tmp_path, compression))
    assert [info.id for info in listed] == [SID]
    assert path.read_bytes().startswith(content)
    too_deep = header_line()[:-2] + b',"x":' + TOO_DEEP + b"}\n"
    with pytest.raises(CorruptSession, match=f"nested deeper than {MAX_READ_DEPTH} levels"):
        parse_log(log_bytes(opening(), compression, too_deep), compression)


async def _listed(root: Path, compression: Compression) -> Any:
    backend = JsonlBackend(root, compression)
    try:
        return await backend.list()
    finally:
        await backend.close()


# ---- the streamed restore reads what the exact read reads ----------------------------------


@pytest.mark.parametrize("compression", MODES)
def test_the_streamed_restore_reads_deep_lines_itself(tmp_path: Path, compression: Compression) -> None:
    lines = [*opening(), plugin_line(2, data=nested(2000)), plugin_line(3, data=nested(300))]
    place(tmp_path, log_bytes(lines, compression), compression)

    async def scenario() -> None:
        store = SessionStore(JsonlBackend(tmp_path, compression))
        try:
            log = await store.backend.read(SID)
            assert log.stream is not None
            events = list(log.stream.events())  # raises StreamRejected if it gave up
            assert [dumps(event["data"]) for event in events[2:]] == [nested(2000), nested(300)]
        finally:
            await store.close()

    run(scenario())


def test_adopting_a_session_with_a_deep_event_compares_it_without_recursion(tmp_path: Path) -> None:
    """``adopt`` checks the stored events equal the live ones by JSON (``json_equal``)."""
    lines = [*opening(), plugin_line(2, data=nested(3000))]
    content = log_bytes(lines, "none")
    path = place(tmp_path, content, "none")

    async def scenario() -> None:
        store = SessionStore(JsonlBackend(tmp_path, "none"))
        try:
            session = await store.inspect(SID)
            assert await store.adopt(session) is session
            session.append("turn/start", {"turn": 2})
            await store.flush(session)
        finally:
            await store.close()

    run(scenario())
    assert path.read_bytes().startswith(content) and len(path.read_bytes().splitlines()) > len(lines) + 1


# ---- the database row decoders -------------------------------------------------------------


def _sqlite_session(db: Path) -> None:
    async def go() -> None:
        store = SessionStore(SqliteBackend(db, pack_chunks=False))
        session = await store.create(HEADER)
        session.append("turn/start", {"turn": 1})
        session.append("plugin/probe", None, ignorable=True)
        await store.close()

    run(go())


def _set_line(db: Path, seq: int, line: bytes) -> None:
    with sqlite3.connect(db, isolation_level=None) as conn:
        conn.execute("UPDATE events SET line = ? WHERE seq = ?", (line.decode("utf-8"), seq))


async def _sqlite_load(db: Path) -> Any:
    store = SessionStore(SqliteBackend(db, pack_chunks=False))
    try:
        return await store.load(SID)
    finally:
        await store.close()


def test_sqlite_reads_a_row_nested_deeper_than_orjson_reads(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _sqlite_session(db)
    _set_line(db, 1, plugin_line(1, data=nested(1500)))
    session = run(_sqlite_load(db))
    assert session.events[1].data_json == nested(1500)


@pytest.mark.parametrize("shape", ["time-1e400", "data-1e400", "beyond-the-read-limit"])
def test_sqlite_refuses_a_row_it_cannot_hold_naming_its_seq(tmp_path: Path, shape: str) -> None:
    db = tmp_path / "s.db"
    _sqlite_session(db)
    _set_line(db, 1, UNHOLDABLE[shape].replace(b'"seq":2', b'"seq":1'))
    with pytest.raises(CorruptSession, match="committed event at seq 1 is JSON harness cannot read"):
        run(_sqlite_load(db))


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    yield from fresh_schema()


def test_postgres_reads_deep_rows_and_refuses_ones_it_cannot_hold(pg: PgSchema) -> None:
    async def seed() -> None:
        async with pg.opened() as backend:
            store = SessionStore(backend)
            session = await store.create(HEADER)
            session.append("turn/start", {"turn": 1})
            session.append("plugin/probe", None, ignorable=True)
            await store.close()

    async def load_pg() -> Any:
        async with pg.opened() as backend:
            store = SessionStore(backend)
            try:
                return await store.inspect(SID)
            finally:
                await store.close()

    def set_line(line: bytes) -> None:
        with pg.connect() as conn:
            conn.execute("UPDATE events SET line = %s WHERE seq = 1", (line.decode("utf-8"),))

    run(seed())
    set_line(plugin_line(1, data=nested(1500)))
    assert run(load_pg()).events[1].data_json == nested(1500)
    set_line(UNHOLDABLE["time-1e400"].replace(b'"seq":2', b'"seq":1'))
    with pytest.raises(CorruptSession, match="committed event at seq 1 is JSON harness cannot read"):
        run(load_pg())


@pytest.mark.parametrize(
    ("header", "error", "words"),
    [
        (b'{"type":"session","version":1e400,"id":"deep-1","createdAt":1}', UnsupportedFormat, "newer"),
        (b'{"type":"session","version":0,"id":"deep-1","createdAt":1e400}', CorruptSession, "createdAt"),
    ],
)
def test_sqlite_judges_an_unholdable_header_like_the_jsonl_header_line(
    tmp_path: Path, header: bytes, error: type[Exception], words: str
) -> None:
    """dsh refuses a numeric version other than 0 as unsupported before any other check."""
    db = tmp_path / "s.db"
    _sqlite_session(db)
    with sqlite3.connect(db, isolation_level=None) as conn:
        conn.execute("UPDATE sessions SET header = ?", (header.decode("utf-8"),))
    with pytest.raises(error, match=words):
        run(_sqlite_load(db))
    with pytest.raises(error, match=words):
        parse_log(log_bytes(opening(), "none", header + b"\n"), "none")
