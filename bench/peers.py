"""Durable session storage: ours next to the peers users compare us with, in one run.

Every figure below is measured by this script, in the same process and on the same
machine, with the same assistant message (the ~900-byte payload of
``core.message_data``; each system stores it in its own record shape, whose size
is printed). Ratios are "their time / our time" for the same work: above 1 means
ours is faster. Nothing is asserted; machines are shared and noisy (see
shared/PEERS.md for figures measured earlier on this machine class).

Ours, through the public API (``SessionStore`` over ``JsonlBackend(compression="none")``
and ``SqliteBackend``), each write durable when ``flush`` returns:

* one assistant/message event appended, then ``flush`` (durable per event), for
  1,000 events: median µs per event, events/s, the median cost near step
  100 and near the last step, and the stored size at the end;
* 100 events appended, then one ``flush``: µs per event (median over batches);
* ``inspect`` (read, decode, full validation) of a 10k and a 100k-event session:
  seconds (best of 2) and MB/s of event wire bytes.

Peers (each skipped, with a printed line saying why, when it is not installed:
``pip install '.[bench]'``, or ``make bench-peers``):

* OpenAI Agents SDK ``SQLiteSession`` on a file: ``add_items`` with 1 item per call
  and with 100 items per call (µs per item, items/s) and ``get_items()`` of a
  session of 100k items (seconds, MB/s of the stored JSON); then the same calls on
  our ``HarnessSession`` (``bench/agents_session.py``), with their time / ours;
* Google ADK ``DatabaseSessionService`` on a SQLite file (``sqlite+aiosqlite``):
  durable ``append_event`` over a 10k-event session (median and mean µs) and
  ``get_session`` of those 10k events; then the same calls on our
  ``HarnessSessionService`` (``bench/adk_service.py``), with their time / ours;
* LangGraph ``StateGraph(MessagesState)`` compiled with ``SqliteSaver``: one step
  is one ``invoke`` on the same thread whose single node adds one AIMessage
  (``durability="sync"``); ms per step near step 100 and near step 1,000 and
  the database size at 1,000 steps. Ours is compared with the same loop of one
  durable event per step, and the same graph runs on our checkpointer, ``HarnessSaver``
  (``bench/langgraph_saver.py``: JSONL, JSONL zstd, SQLite), with the same figures.

"Near step N" is the median of the 20 steps ending at N (fewer for small N).
Sizes are taken after the store or connection is closed (SQLite WAL checkpointed).

Run: ``.venv/bin/python bench/peers.py [--quick] [--only ours|openai|adk|langgraph]``
(``make bench-peers`` installs the peers first). ``--quick`` divides every count by
10 (a smoke run of some seconds); ``--only`` runs our rows and one peer.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import harness
from core import message_data  # bench/ is on sys.path when run as a script
from harness.stores.backend import Backend
from harness.stores.store import SessionStore
from storage import BACKENDS, restore_seconds, tree_size

OURS = ("jsonl", "sqlite")
PEERS = ("openai", "adk", "langgraph")


@dataclass
class Counts:
    steps: int = 1_000  # durable appends one at a time (and LangGraph steps)
    batches: int = 200  # calls of 100 items
    restore: int = 100_000  # items in the large restore (OpenAI get_items, our inspect)
    adk: int = 10_000  # ADK events (also our small inspect)

    @staticmethod
    def make(quick: bool) -> Counts:
        scale = 10 if quick else 1
        return Counts(1_000 // scale, 200 // scale, 100_000 // scale, 10_000 // scale)


@dataclass
class Ours:
    """Our figures per backend, in seconds, for the ratios."""

    per_event: dict[str, float] = field(default_factory=dict)
    per_batched_event: dict[str, float] = field(default_factory=dict)
    near: dict[str, dict[int, float]] = field(default_factory=dict)
    size_at_steps: dict[str, int] = field(default_factory=dict)
    restore: dict[str, dict[int, float]] = field(default_factory=dict)


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def text_of(index: int) -> str:
    """The message text of ``core.message_data`` (what the peers store)."""
    text = message_data(index)["message"]["content"][0]["text"]
    assert isinstance(text, str)
    return text


def near(times: list[float], step: int) -> float:
    """Median of the (up to) 20 step times ending at ``step`` (1-based)."""
    width = max(1, min(20, step // 2))
    return statistics.median(times[step - width : step])


def marks(steps: int) -> tuple[int, int]:
    return (max(1, steps // 10), steps)


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def vs(theirs: float, ours: dict[str, float]) -> str:
    """``their time / our time`` for each of our backends."""
    parts = [f"{theirs / figure:,.1f}× ours {name}" for name, figure in ours.items() if figure > 0]
    return "[" + ", ".join(parts) + "]" if parts else ""


def sqlite_modes(path: Path) -> str:
    """The journal mode of ``path`` and the synchronous level a new connection gets (SQLite's default)."""
    with closing(sqlite3.connect(path)) as conn:
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        level = conn.execute("PRAGMA synchronous").fetchone()[0]
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    return f"journal_mode={journal}, synchronous={names.get(level, level)}"


def header(title: str) -> None:
    print()
    print(title)


# --------------------------------------------------------------------------------------------- ours


def our_event(session: harness.Session, data: dict[str, Any]) -> None:
    session.append("assistant/message", data, surface_op="append", source_event_seqs=[])


async def our_steps(make: Callable[[Path], Backend], root: Path, steps: int) -> tuple[list[float], int]:
    """Per-event times of append + flush, and the stored size after ``steps`` events."""
    store = SessionStore(make(root), write_window_s=3600)
    session = await store.create()
    payloads = [message_data(index) for index in range(steps)]
    times = []
    for data in payloads:
        start = time.perf_counter()
        our_event(session, data)
        await store.flush(session)
        times.append(time.perf_counter() - start)
    await store.close()
    return times, tree_size(root)


async def our_batches(make: Callable[[Path], Backend], root: Path, batches: int) -> list[float]:
    """Per-event times (one sample per batch) of 100 appends then one flush."""
    store = SessionStore(make(root), write_window_s=3600)
    session = await store.create()
    times = []
    for batch in range(batches):
        payloads = [message_data(index) for index in range(batch * 100, batch * 100 + 100)]
        start = time.perf_counter()
        for data in payloads:
            our_event(session, data)
        await store.flush(session)
        times.append((time.perf_counter() - start) / 100)
    await store.close()
    return times


async def our_build(make: Callable[[Path], Backend], root: Path, events: int) -> tuple[str, int]:
    """A session of ``events`` message events (flushed every 1,000); its id and wire bytes."""
    store = SessionStore(make(root), write_window_s=3600)
    session = await store.create()
    for index in range(events):
        our_event(session, message_data(index))
        if (index + 1) % 1000 == 0:
            await store.flush(session)
    await store.flush(session)
    wire = sum(len(event.encode()) + 1 for event in session.events)
    await store.close()
    return session.id, wire


def run_ours(base: Path, counts: Counts) -> Ours:
    ours = Ours()
    line = harness.Session.create().append(
        "assistant/message", message_data(0), surface_op="append", source_event_seqs=[]
    )
    print(
        f"payload: core.message_data, {len(json.dumps(message_data(0), separators=(',', ':')))} bytes of "
        f"JSON, {len(line.encode())} bytes as an event line; JSONL: write + fdatasync per flush; "
        "SQLite: WAL, synchronous=FULL"
    )
    for name in OURS:
        make = BACKENDS[name]
        label = f"ours {name:<6}"
        gc.collect()
        times, size = asyncio.run(our_steps(make, base / f"steps-{name}", counts.steps))
        ours.per_event[name] = statistics.median(times)
        ours.near[name] = {mark: near(times, mark) for mark in marks(counts.steps)}
        ours.size_at_steps[name] = size
        print(
            f"{label} append + flush per event ({counts.steps:,}): median {us(ours.per_event[name])}/event, "
            f"{counts.steps / sum(times):,.0f} events/s; "
            + ", ".join(f"near {mark:,}: {value * 1e3:.3f} ms" for mark, value in ours.near[name].items())
            + f"; stored {size / 1e6:.2f} MB"
        )
        gc.collect()
        batched = asyncio.run(our_batches(make, base / f"batches-{name}", counts.batches))
        ours.per_batched_event[name] = statistics.median(batched)
        print(
            f"{label} 100 appends + one flush ({counts.batches * 100:,} events): "
            f"median {us(ours.per_batched_event[name])}/event, "
            f"{1 / statistics.mean(batched):,.0f} events/s"
        )
        ours.restore[name] = {}
        for events in (counts.adk, counts.restore):
            root = base / f"restore-{name}-{events}"
            session_id, wire = asyncio.run(our_build(make, root, events))
            gc.collect()
            seconds = min(asyncio.run(restore_seconds(make, root, session_id)) for _ in range(2))
            ours.restore[name][events] = seconds
            print(
                f"{label} inspect of {events:,} events ({wire / 1e6:.1f} MB wire, "
                f"{tree_size(root) / 1e6:.1f} MB stored): {seconds:.3f} s, {wire / 1e6 / seconds:,.0f} MB/s"
            )
    return ours


# --------------------------------------------------------------------------------------------- peers


def openai_item(index: int) -> dict[str, Any]:
    """An assistant output message in the Responses input-item shape, with our text."""
    return {
        "type": "message",
        "role": "assistant",
        "id": f"a-{index}",
        "status": "completed",
        "content": [{"type": "output_text", "text": text_of(index), "annotations": []}],
    }


async def openai_batched(base: Path, batches: int) -> list[float]:
    """Per-item times (one sample per call) of ``SQLiteSession.add_items`` with 100 items per call."""
    from agents import SQLiteSession

    from agents_session import timed_batches

    session = SQLiteSession("batched", base / "openai-batched.db")
    try:
        return await timed_batches(session.add_items, openai_item, batches)
    finally:
        session.close()


async def openai_rows(base: Path, counts: Counts, ours: Ours) -> None:
    from agents import SQLiteSession

    print(f"payload: {len(json.dumps(openai_item(0)))} bytes of JSON per item (as SQLiteSession stores it)")

    path = base / "openai-single.db"
    session = SQLiteSession("single", path)
    items = [[openai_item(index)] for index in range(counts.steps)]
    times = []
    for batch in items:
        start = time.perf_counter()
        await session.add_items(batch)
        times.append(time.perf_counter() - start)
    session.close()
    per_item = statistics.median(times)
    theirs = {"single": per_item}
    print(f"(file database, {sqlite_modes(path)})")
    print(
        f"add_items, 1 per call ({counts.steps:,} calls): median {us(per_item)}/item, "
        f"{counts.steps / sum(times):,.0f} items/s  {vs(per_item, ours.per_event)}"
    )

    gc.collect()
    times = await openai_batched(base, counts.batches)
    per_item = statistics.median(times)
    theirs["batched"] = per_item
    print(
        f"add_items, 100 per call ({counts.batches * 100:,} items): median {us(per_item)}/item, "
        f"{1 / statistics.mean(times):,.0f} items/s  {vs(per_item, ours.per_batched_event)}"
    )

    path = base / "openai-large.db"
    session = SQLiteSession("large", path)
    for offset in range(0, counts.restore, 1000):
        await session.add_items([openai_item(index) for index in range(offset, offset + 1000)])
    session.close()
    with closing(sqlite3.connect(path)) as conn:
        row = conn.execute(
            "SELECT count(*), sum(length(CAST(message_data AS BLOB))) FROM agent_messages"
        ).fetchone()
    stored_items, stored_bytes = int(row[0]), int(row[1])
    best = float("inf")
    for _ in range(2):
        gc.collect()
        reader = SQLiteSession("large", path)
        start = time.perf_counter()
        got = await reader.get_items()
        best = min(best, time.perf_counter() - start)
        assert len(got) == stored_items == counts.restore
        del got
        reader.close()
    ours_restore = {name: figures[counts.restore] for name, figures in ours.restore.items()}
    print(
        f"get_items() of {counts.restore:,} items ({stored_bytes / 1e6:.1f} MB of JSON, "
        f"{path.stat().st_size / 1e6:.1f} MB file): {best:.3f} s, {stored_bytes / 1e6 / best:,.0f} MB/s  "
        f"{vs(best, ours_restore)}"
    )
    theirs["get"] = best
    # the same calls through our OpenAI Agents SDK Session (bench/agents_session.py)
    from agents_session import harness_session_rows

    await harness_session_rows(base, openai_item, counts.steps, counts.batches, counts.restore, theirs)


def adk_event(index: int) -> Any:
    from google.adk.events import Event
    from google.genai import types

    return Event(
        author="assistant",
        invocation_id="bench-invocation",
        content=types.Content(role="model", parts=[types.Part(text=text_of(index))]),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1200, candidates_token_count=140, cached_content_token_count=640
        ),
    )


async def adk_rows(base: Path, counts: Counts, ours: Ours) -> None:
    from google.adk.sessions import DatabaseSessionService

    try:
        import aiosqlite  # noqa: F401  (the driver of sqlite+aiosqlite URLs)
        import sqlalchemy.ext.asyncio  # noqa: F401
    except ImportError as error:
        print(
            f"skipped: Google ADK's DatabaseSessionService needs SQLAlchemy's asyncio and aiosqlite ({error})"
        )
        return

    print(f"payload: {len(adk_event(0).model_dump_json(exclude_none=True))} bytes of JSON per Event")
    path = base / "adk.db"
    url = f"sqlite+aiosqlite:///{path}"
    service = DatabaseSessionService(url)
    session = await service.create_session(app_name="bench", user_id="user")
    events = [adk_event(index) for index in range(counts.adk)]
    times = []
    for event in events:
        start = time.perf_counter()
        await service.append_event(session, event)
        times.append(time.perf_counter() - start)
    session_id = session.id
    await service.close()
    del session, events
    with closing(sqlite3.connect(path)) as conn:
        stored = conn.execute("SELECT sum(length(CAST(event_data AS BLOB))) FROM events").fetchone()[0]
    stored_bytes = int(stored or 0)
    median = statistics.median(times)
    print(f"(file database via sqlite+aiosqlite, {sqlite_modes(path)})")
    print(
        f"append_event, durable, {counts.adk:,} events in one session: median {us(median)}, "
        f"mean {us(statistics.mean(times))}, near {counts.adk:,}: {us(near(times, counts.adk))}  "
        f"{vs(median, ours.per_event)}"
    )

    best = float("inf")
    for _ in range(2):
        gc.collect()
        reader = DatabaseSessionService(url)
        await reader.prepare_tables()
        start = time.perf_counter()
        got = await reader.get_session(app_name="bench", user_id="user", session_id=session_id)
        best = min(best, time.perf_counter() - start)
        assert got is not None and len(got.events) == counts.adk
        del got
        await reader.close()
    ours_restore = {name: figures[counts.adk] for name, figures in ours.restore.items()}
    sized = f", {stored_bytes / 1e6 / best:,.1f} MB/s of event JSON" if stored_bytes else ""
    print(
        f"get_session of {counts.adk:,} events ({stored_bytes / 1e6:.1f} MB of event JSON, "
        f"{path.stat().st_size / 1e6:.1f} MB file): {best:.3f} s{sized}  {vs(best, ours_restore)}"
    )
    # the same calls through our BaseSessionService (bench/adk_service.py)
    from adk_service import harness_service_rows

    await harness_service_rows(base, adk_event, counts.adk, {"append": median, "get": best})


def langgraph_rows(base: Path, counts: Counts, ours: Ours) -> None:
    os.environ.setdefault("LANGSMITH_TRACING", "false")  # never try to send traces
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    step = 0

    def respond(state: MessagesState) -> dict[str, Any]:
        nonlocal step
        message = AIMessage(
            content=text_of(step),
            id=f"a-{step}",
            usage_metadata={"input_tokens": 1200, "output_tokens": 140, "total_tokens": 1340},
        )
        step += 1
        return {"messages": [message]}

    builder = StateGraph(MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)

    root = base / "langgraph"
    root.mkdir()
    conn = sqlite3.connect(root / "checkpoints.db", check_same_thread=False)
    try:
        graph = builder.compile(checkpointer=SqliteSaver(conn))
        config: Any = {"configurable": {"thread_id": "bench"}}
        times = []
        for _ in range(counts.steps):
            start = time.perf_counter()
            graph.invoke({"messages": []}, config, durability="sync")
            times.append(time.perf_counter() - start)
        checkpoints = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        messages = len(graph.get_state(config).values["messages"])
    finally:
        conn.close()
    assert messages == counts.steps
    size = tree_size(root)
    modes = sqlite_modes(root / "checkpoints.db")
    print(
        f"(file database, {modes}; {checkpoints:,} checkpoints for {counts.steps:,} steps, "
        "each holding the whole message list)"
    )
    for mark in marks(counts.steps):
        figure = near(times, mark)
        ours_near = {name: figures[mark] for name, figures in ours.near.items()}
        print(f"ms per step near {mark:,}: {figure * 1e3:.2f} ms  {vs(figure, ours_near)}")
    ratios = ", ".join(f"{size / figure:,.0f}× ours {name}" for name, figure in ours.size_at_steps.items())
    print(f"database size at {counts.steps:,} steps: {size / 1e6:,.1f} MB  [{ratios}]")
    # the same graph on our checkpointer, HarnessSaver (bench/langgraph_saver.py)
    from langgraph_saver import harness_saver_rows

    theirs = {mark: near(times, mark) for mark in marks(counts.steps)}
    harness_saver_rows(base, counts.steps, text_of, theirs, size)


PEER_RUNS: dict[str, tuple[str, tuple[str, ...], Callable[[Path, Counts, Ours], None]]] = {
    "openai": (
        "OpenAI Agents SDK SQLiteSession",
        ("openai-agents",),
        lambda base, counts, ours: asyncio.run(openai_rows(base, counts, ours)),
    ),
    "adk": (
        "Google ADK DatabaseSessionService (SQLite)",
        ("google-adk", "sqlalchemy", "aiosqlite"),
        lambda base, counts, ours: asyncio.run(adk_rows(base, counts, ours)),
    ),
    "langgraph": (
        "LangGraph MessagesState + SqliteSaver",
        ("langgraph", "langgraph-checkpoint-sqlite"),
        langgraph_rows,
    ),
}


def run_peer(name: str, base: Path, counts: Counts, ours: Ours) -> bool:
    """Print one peer's rows; ``False`` when it failed (a skip is no failure)."""
    title, packages, run = PEER_RUNS[name]
    header(f"{title} ({', '.join(f'{package} {version(package)}' for package in packages)})")
    root = base / name
    root.mkdir()
    gc.collect()
    try:
        run(root, counts, ours)
    except ImportError as error:
        print(f"skipped: {error} (install the peers with: pip install '.[bench]')")
    except Exception as error:  # one broken peer must not hide the others' rows
        print(f"failed: {type(error).__name__}: {error}")
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="every count divided by 10 (a smoke run)")
    parser.add_argument("--only", choices=("ours", *PEERS), help="our rows and this peer's only")
    args = parser.parse_args()
    counts = Counts.make(args.quick)
    peers = [] if args.only == "ours" else [args.only] if args.only else list(PEERS)

    print(
        f"{platform.node() or 'machine'}: {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}, harness {version('harness-sessions')}"
        + (" (--quick: every count / 10)" if args.quick else "")
    )
    print("ratios in brackets: their time / our time for the same work (above 1: ours is faster)")
    with tempfile.TemporaryDirectory(prefix="harness-peers-") as tmp:
        base = Path(tmp)
        header("ours: SessionStore over JsonlBackend(compression='none') and SqliteBackend")
        ours = run_ours(base / "ours", counts)
        failed = [name for name in peers if not run_peer(name, base, counts, ours)]
    if failed:
        sys.exit(f"peers that failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
