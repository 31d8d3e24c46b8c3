"""The bytes a durable write stores are pinned (issue 17's write-path work changed none).

A fixed mix of events (text, reasoning and tool-call chunk runs, runs cut by other
events, by a seq the caller chose and by the flush boundary, messages with Surface
operations, ignorable events, escapes and lone surrogates, a title) is written
through ``SessionStore`` in batches, and what each backend holds afterwards is
compared with digests taken on the tree before that work (commit 16baaa9): the JSONL
file bytes, plain and zstd, and every SQLite row. A change to packing, encoding or the
write path that alters one stored byte fails here.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.events.event import Event
from harness.session.header import SessionHeader
from harness.session.session import Session
from harness.stores.backend import Backend
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.sqlite import SqliteBackend, _sql_text
from harness.stores.store import SessionStore

_CREATED = 1_767_225_600_000


def _text(kind: str, index: int, text: str, turn: int = 1, step: int = 1) -> dict[str, Any]:
    return {"turn": turn, "step": step, "chunk": {"type": kind, "index": index, "text": text}}


def _tool(index: int, call_id: str, piece: str, name: str | None = None) -> dict[str, Any]:
    chunk: dict[str, Any] = {"type": "tool-call-delta", "index": index, "id": call_id}
    if name is not None:
        chunk["name"] = name
    chunk["argumentsDelta"] = piece
    return {"turn": 1, "step": 2, "chunk": chunk}


def _message(index: int) -> dict[str, Any]:
    return {
        "turn": 1,
        "step": index + 1,
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": f'answer {index}: é \U0001f600 \\ " \n' + "lorem " * index}],
            "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"},
            "id": f"a-{index}",
        },
    }


_PIECES = ["Hel", "lo ", "", 'a"b', "\\", "\n", "\u2028", "\ud800", "\x00", "é\U0001f600", "x" * 40]


def write_mix(session: Session) -> Iterator[None]:
    """Append the pinned mix to ``session``, yielding where a batch ends (the caller flushes)."""
    append = session.append
    for round_ in range(6):
        append("turn/start", {"turn": round_ + 1})
        for index in range(23 + round_ * 7):  # a long text run
            append("assistant/chunk", _text("text-delta", 0, _PIECES[index % len(_PIECES)] + str(index)))
        append("assistant/chunk", _text("text-delta", 1, "other index"))  # 1-member run
        for index in range(2):  # a 2-member run: written verbatim
            append("assistant/chunk", _text("reasoning-delta", 0, f"think {index}"))
        for index in range(5):
            append("assistant/chunk", _text("reasoning-delta", 0, f"deep {index}", step=2))
        for index in range(4):
            append("assistant/chunk", _tool(0, "call-1", '{"a":' if index == 0 else str(index), "bash"))
        for index in range(4):
            append("assistant/chunk", _tool(1, 'c"2', _PIECES[index]))
        # Another key order, an ignorable chunk and a float turn: none of them packs.
        append(
            "assistant/chunk",
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "text": "k", "index": 0}},
        )
        append("assistant/chunk", _text("text-delta", 0, "ignorable"), ignorable=True)
        append(
            "assistant/chunk",
            {"turn": 1.5, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "f"}},
        )
        append("assistant/message", _message(round_), surface_op="append", source_event_seqs=[])
        if round_ == 3:
            append("session/title", {"title": "pinned \ud800 title"})
        for index in range(9):  # a run the flush cuts in two
            append("assistant/chunk", _text("text-delta", 2, f"cut {index}"))
            if index == 4:
                yield
        append("turn/end", {"turn": round_ + 1})
        yield
    for index in range(1030):  # longer than SQLite's 1,024 members of one packed row
        append("assistant/chunk", _text("text-delta", 0, f"w{index} "))
    yield


async def _write(backend: Backend) -> None:
    ticks = iter(range(_CREATED, _CREATED + 10**7, 7))
    store = SessionStore(backend, write_window_s=3600, clock=lambda: next(ticks))
    session = await store.create(id="pinned-session", cwd="/work/pinned")
    for _ in write_mix(session):
        await store.flush(session)
    await store.close()


def _sqlite_dump(path: Path) -> bytes:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT session_id, seq, type, time, line FROM events ORDER BY seq").fetchall()
        sessions = conn.execute("SELECT * FROM sessions").fetchall()
    finally:
        conn.close()
    return repr((rows, sessions)).encode()


# sha256 of what each backend stores, taken at commit 16baaa9 (before the write-path work).
PINNED = {
    "jsonl": "6c2b6681b22e4cf7257fa9903851baf8424ae645dd41dd91dd3bcb4b2bbdba98",
    "jsonl-zstd": "03dfbeb1ddef0698b51fa44662c59ddea3aeb2bcb9a4fdee4d37ac5cf82f823b",
    "sqlite": "7755338b37391fefd6d495207836d05e6e2b42c53460b1b30be3f9674f4acc63",
}


def stored_bytes(kind: str, root: Path) -> bytes:
    if kind == "sqlite":
        asyncio.run(_write(SqliteBackend(root / "s.db")))
        return _sqlite_dump(root / "s.db")
    backend = JsonlBackend(root, compression="zstd" if kind == "jsonl-zstd" else "none")
    asyncio.run(_write(backend))
    (path,) = [p for p in root.rglob("session.jsonl*") if p.is_file()]
    return path.read_bytes()


@pytest.mark.parametrize("kind", sorted(PINNED))
def test_stored_bytes_are_pinned(kind: str, tmp_path: Path) -> None:
    assert hashlib.sha256(stored_bytes(kind, tmp_path)).hexdigest() == PINNED[kind]


def test_sqlite_type_column_of_any_event_type(tmp_path: Path) -> None:
    """The ``type`` column holds ``_sql_text`` of each row's type, whichever path built it:
    ASCII, other Unicode, a lone surrogate (a BLOB), a ``str`` subclass, packed row names."""

    class Kind(str):
        pass

    kinds: list[str] = ["turn/start", "x/é", "x/\ud800", Kind("x/sub"), Kind("x/\udfff"), "assistant/chunk"]

    async def scenario() -> list[tuple[Any, ...]]:
        backend = SqliteBackend(tmp_path / "k.db")
        await backend.create(SessionHeader.new(id="k", created_at=_CREATED))
        events = [Event(kind, seq, 5, b"{}") for seq, kind in enumerate(kinds)]
        text = b'{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}'
        events += [Event("assistant/chunk", len(events) + i, 6, text) for i in range(3)]
        await backend.append("k", events)
        await backend.close()
        conn = sqlite3.connect(tmp_path / "k.db")
        try:
            return conn.execute("SELECT seq, type, typeof(type) FROM events ORDER BY seq").fetchall()
        finally:
            conn.close()

    stored = [(seq, _sql_text(kind)) for seq, kind in enumerate(kinds)]
    expected = [(seq, value, "blob" if isinstance(value, bytes) else "text") for seq, value in stored]
    assert [kind for _, _, kind in expected].count("blob") == 2
    assert asyncio.run(scenario()) == [*expected, (len(kinds), "text-chunks", "text")]
