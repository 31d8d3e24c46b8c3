"""Bounded open (issue 28): how a session's open grows with its history, in one run.

Each row opens a stored session in a fresh Python process (cold: nothing cached, so the
memory figures belong to that one open) and prints, for a session of 1,000 events and one
of 100,000 events with the same shape and about the same Surface, the open's time and peak
memory and their ratios large / small, next to the issue's targets. Nothing is asserted:
machines are shared and noisy; compare the ratios of one run, not absolute figures.

Rows, per backend (JSONL plain, JSONL zstd, SQLite, and PostgreSQL when a server answers):

* ``load``: ``SessionStore.load`` (take ownership, restore, attach): what ``resume``, the
  adapters and a server pay to open a session. Target: large / small ≤ 2× in time and in
  peak memory (today ``load`` is the full restore, so the ratio is about the history ratio);
* ``inspect``: ``SessionStore.inspect`` (read, decode, validate every event, fold the
  Surface): the full restore ``load`` is compared to. Target once the bounded open exists:
  the full restore / ``load`` ≥ 50× at the large size (≈ 1× today). Should ``inspect``
  itself become bounded, this row must move to whatever still folds the whole log.

and, on plain JSONL, sessions written through the adapters, read by a fresh store:

* ``openai get_items(50)``: ``HarnessSession(id, store).get_items(limit=50)`` (the OpenAI
  Agents SDK adapter; it loads the session first);
* ``adk get_session(50)``: ``HarnessSessionService(store).get_session(...,
  config=GetSessionConfig(num_recent_events=50))`` (Google ADK);

each with target "flat in history length" (large / small ≤ 2×), or a "skipped: extra not
installed" row when the extra's package does not import.

The sessions: agent-shaped turns (user message; steps of streamed text chunks, an assistant
message citing them, a tool call and its result of a few KB with a long tail; todos and
approvals now and then) averaging about 1 KB of wire JSON per event, so 100,000 events are
about 100 MB of events like the issue's session; every ``--compact-every`` (10) turns the
long tool results are pruned and a manual compaction with harness's offline
``ExtractiveSummarizer`` folds the head of the Surface into a checkpoint, so the Surface
stays a few dozen nodes whatever the history. Both sessions stop half-way between two
compactions (the same tail). They are built once into ``--cache`` (default
``/tmp/harness-bench-open``; ``--rebuild`` forces it) with batched appends and one flush per
turn into plain JSONL, then copied (one batched write per 5,000 events, events unchanged)
into the zstd root and the SQLite file; PostgreSQL gets a fresh schema per run
(``postgresql://root@127.0.0.1:5432/test`` or ``HARNESS_DATABASE_URL``), dropped at the end.

How each figure is taken (``--runs`` processes per time figure, 5, the median shown; one per
tracemalloc figure, whose peak is the same to the byte from run to run; the runs of all rows
interleaved so a slow spell lands on all of them): a fresh ``python`` opens the store
with ``harness.stores.open_store(spec)``, first opens a small warm-up session of the same
shape in that store (imports, connection pool and lazy code paths are then paid: the
measured open is the open itself), collects garbage, then times one open:

* time: wall-clock seconds of the open alone, in its own process (no tracing);
* RSS Δ: in that same process, the peak RSS during the open minus the RSS just before it
  (what the open took from the OS at its peak, allocator and arenas included): ``VmHWM``
  after the open, reset to the current RSS just before it (``/proc/self/clear_refs``), less
  ``VmRSS`` before. Not ``ru_maxrss``: Linux carries it over ``exec`` from the parent, so a
  child of a big bench process reports the parent's peak (NaN where the reset is refused);
* peak: in a separate process (tracing slows the open), ``tracemalloc``'s peak during the
  open: the Python heap the open needed at once, and "held", what it still holds after it
  (in the JSON). Read the memory target off this column: the RSS Δ of a small open can be
  below its heap peak, the allocator reusing what the warm-up freed.

A probe that fails (a broken import while others edit the tree) turns its row into a
"failed:" row; the other rows go on. ``--profile`` prints instead the cProfile of one
``load`` of the large plain-JSONL session (harness's top 25 functions by cumulative time,
then the top 15 by own time). ``--quick``: 1,000 vs 10,000 events, 3 runs per time figure.
``--json PATH`` also writes every figure and every sample (``-`` for stdout).

Run: ``.venv/bin/python bench/open.py [--quick] [--json out.json] [--no-postgres] [--rebuild]
[--profile]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import harness
from harness.compaction import ExtractiveSummarizer, PrunerConfig, compact_now, prune_tool_results
from harness.events.json import ACCELERATED
from harness.stores import open_backend, open_store
from harness.stores.backend import Backend, read_whole
from harness.stores.store import SessionStore, restore_stored

CACHE = Path(os.environ.get("HARNESS_BENCH_OPEN_CACHE", "/tmp/harness-bench-open"))
GENERATOR = 4  # bump when the sessions' shape changes: the cache is rebuilt
PROVIDER = "deepseek-official"
MODEL = "deepseek-v4-flash"
TOOLS = [
    {"name": "run_shell", "description": "Run a shell command.", "parameters": {"type": "object"}},
    {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}},
]
PRUNER = PrunerConfig(threshold_chars=1200, head_chars=400, tail_chars=200)
RETAIN_TOKENS = 2_000
WARMUP = "warmup"
AGENT_IDS = {"small": "agent-small", "large": "agent-large"}
OPENAI_IDS = {"small": "openai-small", "large": "openai-large"}
ADK_APP, ADK_USER = "bench", "user"
ADK_IDS = {"small": "adk-small", "large": "adk-large"}
COPY_BATCH = 5_000
_VOCABULARY = (
    "the of to and a in is it you that he was for on are with as his they be at one have this from "
    "or had by word but what some we can out other were all there when up use your how said an each "
    "she which do their time if will way about many then them write would like so these her long "
    "make thing see him two has look more day could go come did number sound no most people my over "
    "know water than call first who may down side been now find any new work part take get place made "
    "live where after back little only round man year came show every good me give our under name "
    "function module return value error config parse request session store event seq surface index "
    "buffer offset snapshot compaction header token stream chunk tool result call schema limit"
)
WORDS = tuple(_VOCABULARY.split())


@dataclass
class Sizes:
    small: int = 1_000
    large: int = 100_000
    runs: int = 5  # processes per time figure (median)
    memory_runs: int = 1  # processes per tracemalloc figure: its peak is the same to the byte run to run
    compact_every: int = 10

    @staticmethod
    def make(quick: bool) -> Sizes:
        return Sizes(1_000, 10_000, 3) if quick else Sizes()


# --------------------------------------------------------------------------- the agent session


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def _tool_output(rng: random.Random, turn: int) -> str:
    """A grep- or file-shaped output: median ~9 KB, mean ~16 KB, a long tail to ~70 KB."""
    lines = min(900, max(2, int(rng.lognormvariate(4.8, 1.1))))
    path = f"src/pkg/module_{rng.randint(1, 400)}.py"
    return "".join(
        f"{path}:{line + 1}:     {_words(rng, 3, 9)} = item_{rng.randint(1, 999)}({turn})\n"
        for line in range(lines)
    )


def agent_turn(session: harness.Session, rng: random.Random, turn: int, calls: list[int]) -> None:
    """One turn: a user message, then 1-4 steps of streamed text, a tool call and its result."""
    session.append("turn/start", {"turn": turn})
    steps = rng.randint(1, 4)
    for step in range(1, steps + 1):
        session.append("step/start", {"turn": turn, "step": step})
        if step == 1:
            text = f"Turn {turn}: {_words(rng, 20, 300)}. Look at module_{rng.randint(1, 400)}."
            session.append("user/message", harness.user_message(text), surface_op="append")
        if turn == 1 and step == 1:
            header = harness.EpochHeader.build(
                provider=PROVIDER, model=MODEL, system="You are a careful coding agent.", tools=TOOLS
            )
            session.append("request/header", {"header": dict(header.raw), "reason": "initial"})
            session.append(
                "request/context", {"provider": PROVIDER, "model": MODEL, "contextWindow": 1_000_000}
            )
        pieces = [_words(rng, 4, 16) + " " for _ in range(rng.randint(3, 16))]
        chunks = [
            session.append(
                "assistant/chunk",
                {"turn": turn, "step": step, "chunk": {"type": "text-delta", "index": 0, "text": piece}},
            ).seq
            for piece in pieces
        ]
        blocks = [harness.text_block("".join(pieces))]
        last = step == steps
        call_id = ""
        arguments = ""
        name = "run_shell" if rng.random() < 0.6 else "read_file"
        if not last:
            calls[0] += 1
            call_id = f"call-{calls[0]}"
            arguments = json.dumps(
                {"command": f"grep -rn item_{rng.randint(1, 999)} src/pkg"}
                if name == "run_shell"
                else {"path": f"src/pkg/module_{rng.randint(1, 400)}.py"}
            )
            blocks.append(harness.tool_call_block(call_id, name, arguments))
        message = harness.assistant_message(blocks, provider=PROVIDER, model=MODEL)
        session.append(
            "assistant/message",
            {
                "turn": turn,
                "step": step,
                "message": message,
                "usage": {"inputTokens": 12_000 + 40 * turn, "outputTokens": 140, "cacheReadTokens": 9_000},
            },
            surface_op="append",
            source_event_seqs=chunks,
        )
        if not last:
            call = session.append(
                "tool/call",
                {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": arguments},
            )
            if rng.random() < 0.05:
                session.append("approval/asked", {"id": f"ap-{call_id}", "toolName": name, "callId": call_id})
                session.append("approval/decided", {"id": f"ap-{call_id}", "outcome": "allowed-once"})
            session.append(
                "tool/result",
                {
                    "turn": turn,
                    "step": step,
                    "message": harness.tool_result_message(call_id, _tool_output(rng, turn)),
                },
                surface_op="append",
                source_event_seqs=[call.seq],
            )
        if rng.random() < 0.1:
            session.append("todo/write", {"todos": [{"content": f"check item_{turn}", "status": "pending"}]})
        session.append("step/end", {"turn": turn, "step": step})
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


async def build_agent(store: SessionStore, session_id: str, target: int, compact_every: int) -> None:
    """An agent-shaped session of at least ``target`` events, ending half-way between two
    compactions; one flush per turn (batched appends), each compaction flushed by itself."""
    rng = random.Random(f"{session_id}-{target}")
    session = await store.create(id=session_id)
    summarizer = ExtractiveSummarizer()
    calls = [0]
    turn = 0
    while True:
        turn += 1
        agent_turn(session, rng, turn, calls)
        if turn % compact_every == 0:
            prune_tool_results(session, PRUNER)
            await compact_now(session, summarizer, checkpoint=store.flush, retain_tokens=RETAIN_TOKENS)
        await store.flush(session)
        if len(session.events) >= target and turn % compact_every == compact_every // 2:
            break
    await store.release(session)


async def copy_batched(source: Backend, target: Backend, session_id: str) -> int:
    """``copy_sessions``'s copy (restore with full validation, then the events unchanged),
    written in batches of ``COPY_BATCH`` events (one append per batch: no 100 MB statement)."""
    log = await read_whole(source, session_id)
    session, _ = restore_stored(session_id, log)
    events = list(session.events[: len(log.events)])
    await target.create(log.header)
    for offset in range(0, len(events), COPY_BATCH):
        await target.append(session_id, events[offset : offset + COPY_BATCH])
    return len(events)


# ----------------------------------------------------------------------------- adapter sessions


def openai_items(index: int, rng: random.Random) -> list[dict[str, Any]]:
    """One exchange in Responses input items: a user message, a function call, its output and
    the assistant's answer (each stored with its verbatim item: ~1 KB of wire per event)."""
    call_id = f"call_{index}"
    return [
        {"type": "message", "role": "user", "content": f"Question {index}: {_words(rng, 10, 60)}?"},
        {
            "type": "function_call",
            "call_id": call_id,
            "id": f"fc_{index}",
            "name": "run_shell",
            "arguments": json.dumps({"command": f"grep -rn item_{rng.randint(1, 999)} src/pkg"}),
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": call_id, "output": _tool_output(rng, index)[:1200]},
        {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{index}",
            "status": "completed",
            "content": [{"type": "output_text", "text": _words(rng, 40, 120), "annotations": []}],
        },
    ]


async def build_openai(store: SessionStore, session_id: str, target: int) -> None:
    from harness.integrations.openai_agents import HarnessSession

    rng = random.Random(session_id)
    session = HarnessSession(session_id, store, durable=False)
    items: list[dict[str, Any]] = []
    index = 0
    while index * 4 < target:
        items.extend(openai_items(index, rng))
        index += 1
        if len(items) >= 1_000:
            await session.add_items(items)  # type: ignore[arg-type]
            await session.flush()
            items = []
    if items:
        await session.add_items(items)  # type: ignore[arg-type]
    await session.flush()
    await store.release(await session.session())


def adk_events(index: int, rng: random.Random) -> list[Any]:
    """One exchange as ADK events: the user's text, a function call, its response, the answer."""
    from google.adk.events import Event
    from google.genai import types

    stamp = 1_750_000_000.0 + index
    call = types.FunctionCall(id=f"fc-{index}", name="run_shell", args={"command": f"grep item_{index}"})
    response = types.FunctionResponse(
        id=f"fc-{index}", name="run_shell", response={"output": _tool_output(rng, index)[:900]}
    )
    return [
        Event(
            author="user",
            invocation_id=f"inv-{index}",
            timestamp=stamp,
            content=types.Content(role="user", parts=[types.Part(text=_words(rng, 10, 60))]),
        ),
        Event(
            author="coder",
            invocation_id=f"inv-{index}",
            timestamp=stamp + 0.1,
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
        ),
        Event(
            author="coder",
            invocation_id=f"inv-{index}",
            timestamp=stamp + 0.2,
            content=types.Content(role="user", parts=[types.Part(function_response=response)]),
        ),
        Event(
            author="coder",
            invocation_id=f"inv-{index}",
            timestamp=stamp + 0.3,
            content=types.Content(role="model", parts=[types.Part(text=_words(rng, 40, 120))]),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=1200, candidates_token_count=140, cached_content_token_count=640
            ),
        ),
    ]


async def build_adk(store: SessionStore, session_id: str, target: int) -> None:
    """An ADK session: ``create_session``, then the events ``append_event`` would write
    (``event_payload``: the same harness events), appended in batches with one flush per
    1,000 (``append_event`` flushes each one: 100,000 durable writes would take long)."""
    from harness.integrations.adk import HarnessSessionService
    from harness.integrations.adk.events import event_payload
    from harness.integrations.adk.state import session_log_id

    rng = random.Random(session_id)
    service = HarnessSessionService(store)
    await service.create_session(app_name=ADK_APP, user_id=ADK_USER, session_id=session_id)
    await service.close()
    live = await store.load(session_log_id(ADK_APP, ADK_USER, session_id))
    stamps: dict[int, float] = {}
    index = 0
    while index * 4 < target:
        for event in adk_events(index, rng):
            payload, wire = event_payload(event, live.surface.nodes, stamps)
            appended = live.append(
                payload.type, payload.data, surface_op=payload.op, source_event_seqs=payload.cites
            )
            stamps[appended.seq] = float(wire["timestamp"])
        index += 1
        if index % 250 == 0:
            await store.flush(live)
    await store.release(live)


def extra_missing(extra: str) -> str | None:
    """Why the adapter of ``extra`` cannot run here (its package does not import), or None."""
    module = {"openai-agents": "agents", "adk": "google.adk"}[extra]
    try:
        __import__(module)
    except ImportError as error:
        return f"skipped: extra not installed ([{extra}]: {error})"
    return None


# ------------------------------------------------------------------------------------ the cache


def spec_of(root: Path, backend: str) -> str:
    return {
        "jsonl": f"jsonl:{root / 'jsonl'}",
        "jsonl-zstd": f"jsonl:{root / 'zstd'}",
        "sqlite": f"sqlite:{root / 'sessions.db'}",
        "adapters": f"jsonl:{root / 'adapters'}",
    }[backend]


def _marker(sizes: Sizes) -> dict[str, Any]:
    return {
        "generator": GENERATOR,
        "small": sizes.small,
        "large": sizes.large,
        "compact_every": sizes.compact_every,
        "extras": [extra for extra in ("openai-agents", "adk") if extra_missing(extra) is None],
    }


async def _build_agents(sizes: Sizes, root: Path) -> None:
    async with open_store(spec_of(root, "jsonl"), compression="none", write_window_s=3600) as store:
        await build_agent(store, WARMUP, 150, sizes.compact_every)
        for size in ("small", "large"):
            started = time.perf_counter()
            await build_agent(store, AGENT_IDS[size], getattr(sizes, size), sizes.compact_every)
            print(f"  built {AGENT_IDS[size]} in {time.perf_counter() - started:.1f} s", flush=True)
        await settle(store, [WARMUP, *AGENT_IDS.values()])
    source = open_backend(spec_of(root, "jsonl"))
    copies: tuple[tuple[str, dict[str, Any]], ...] = (("jsonl-zstd", {"compression": "zstd"}), ("sqlite", {}))
    for name, options in copies:
        started = time.perf_counter()
        target = open_backend(spec_of(root, name), **options)
        for session_id in (WARMUP, *AGENT_IDS.values()):
            await copy_batched(source, target, session_id)
        await target.close()
        print(f"  copied into {name} in {time.perf_counter() - started:.1f} s", flush=True)
    await source.close()


async def _build_adapters(sizes: Sizes, root: Path, extras: list[str]) -> None:
    async with open_store(spec_of(root, "adapters"), compression="none", write_window_s=3600) as store:
        if "openai-agents" in extras:
            started = time.perf_counter()
            await build_openai(store, f"openai-{WARMUP}", 100)
            for size in ("small", "large"):
                await build_openai(store, OPENAI_IDS[size], getattr(sizes, size))
            print(f"  built the openai-agents sessions in {time.perf_counter() - started:.1f} s", flush=True)
        if "adk" in extras:
            started = time.perf_counter()
            await build_adk(store, f"adk-{WARMUP}", 100)
            for size in ("small", "large"):
                await build_adk(store, ADK_IDS[size], getattr(sizes, size))
            print(f"  built the adk sessions in {time.perf_counter() - started:.1f} s", flush=True)
        ids = [*OPENAI_IDS.values(), f"openai-{WARMUP}"] if "openai-agents" in extras else []
        if "adk" in extras:
            from harness.integrations.adk.state import session_log_id

            ids += [session_log_id(ADK_APP, ADK_USER, name) for name in (*ADK_IDS.values(), f"adk-{WARMUP}")]
        await settle(store, ids)


async def settle(store: SessionStore, ids: list[str]) -> None:
    """Load and release each session once: the first load after a build commits the
    ``session/end-seed`` every restore appends, so the measured opens write nothing."""
    for session_id in ids:
        await store.release(await store.load(session_id))


def ensure_cache(sizes: Sizes, cache: Path, rebuild: bool) -> tuple[Path, float]:
    """The cache root for ``sizes`` (built when absent or stale) and the seconds building took."""
    marker = _marker(sizes)
    root = cache / f"g{GENERATOR}-{sizes.small}-{sizes.large}-c{sizes.compact_every}"
    done = root / "done.json"
    if not rebuild and done.exists() and json.loads(done.read_text()) == marker:
        return root, 0.0
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    print(f"building the sessions into {root} (once; reused by later runs)", flush=True)
    started = time.perf_counter()
    asyncio.run(_build_agents(sizes, root))
    asyncio.run(_build_adapters(sizes, root, marker["extras"]))
    done.write_text(json.dumps(marker))
    return root, time.perf_counter() - started


async def _postgres_copy(root: Path, spec: str) -> None:
    source = open_backend(spec_of(root, "jsonl"))
    target = open_backend(spec)
    try:
        for session_id in (WARMUP, *AGENT_IDS.values()):
            await copy_batched(source, target, session_id)
    finally:
        await target.close()
        await source.close()


async def describe(spec: str, session_id: str) -> dict[str, Any]:
    """What the session is: events, wire bytes, Surface nodes and bytes, compactions."""
    async with open_store(spec, create=False) as store:
        session = await store.inspect(session_id)
        events = session.events
        wire = sum(len(event.encode()) + 1 for event in events)
        nodes = session.surface.nodes
        return {
            "events": len(events),
            "wire_mb": wire / 1e6,
            "surface_nodes": len(nodes),
            "surface_kb": sum(len(events[seq].encode()) + 1 for seq in nodes) / 1e3,
            "compactions": sum(1 for event in events if event.type == "compaction/end"),
        }


def stored_mb(root: Path, backend: str) -> float | None:
    path = Path(spec_of(root, backend).split(":", 1)[1])
    if path.is_file():
        return path.stat().st_size / 1e6
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6
    return None


# ------------------------------------------------------------------------- the probe (a process)


def _status(key: str) -> int:
    """A ``/proc/self/status`` figure in bytes (``VmRSS``: resident now; ``VmHWM``: its peak)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise LookupError(key)


def _reset_peak_rss() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux ≥ 4.0: ``5`` to ``/proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


FIGURES = ("seconds", "peak", "held", "rss_delta", "traced_seconds")
Opener = Callable[[SessionStore, str], Awaitable[Any]]


async def _load(store: SessionStore, session_id: str) -> Any:
    return await store.load(session_id)


async def _inspect(store: SessionStore, session_id: str) -> Any:
    return await store.inspect(session_id)


async def _openai(store: SessionStore, session_id: str) -> Any:
    from harness.integrations.openai_agents import HarnessSession

    items = await HarnessSession(session_id, store).get_items(limit=50)
    assert 0 < len(items) <= 50, len(items)
    return items


async def _adk(store: SessionStore, session_id: str) -> Any:
    from google.adk.sessions.base_session_service import GetSessionConfig

    from harness.integrations.adk import HarnessSessionService

    service = HarnessSessionService(store)
    got = await service.get_session(
        app_name=ADK_APP,
        user_id=ADK_USER,
        session_id=session_id,
        config=GetSessionConfig(num_recent_events=50),
    )
    assert got is not None and len(got.events) == 50, got
    return got


OPS: dict[str, Opener] = {"load": _load, "inspect": _inspect, "openai": _openai, "adk": _adk}


async def probe(spec: str, op: str, session_id: str, warmup: str, traced: bool) -> dict[str, float]:
    """One open in this process: warm-up open first, then the measured one (see the module doc)."""
    opener = OPS[op]
    async with open_store(spec, create=False) as store:
        warm = await opener(store, warmup)
        if op == "load":
            await store.release(warm)
        del warm
        gc.collect()
        reset = _reset_peak_rss()
        before = _status("VmRSS")
        if traced:
            tracemalloc.start()
        started = time.perf_counter()
        opened = await opener(store, session_id)
        seconds = time.perf_counter() - started
        if traced:  # its time is the traced open's: kept apart, never mixed with the real ones
            held, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            figures = {"traced_seconds": seconds, "peak": float(peak), "held": float(held)}
        else:
            peak_rss = float(max(0, _status("VmHWM") - before)) if reset else float("nan")
            figures = {"seconds": seconds, "rss_delta": peak_rss}
        del opened
    return figures


class ProbeFailed(Exception):
    """A probe process failed: ``reason`` is the last line of its stderr."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def run_probe(spec: str, op: str, session_id: str, warmup: str, traced: bool) -> dict[str, float]:
    """``probe`` in a fresh Python process (the figures come back as one JSON line)."""
    command = [sys.executable, __file__, "--probe", json.dumps([spec, op, session_id, warmup, traced])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise ProbeFailed(lines[-1], f"probe {op} {session_id} on {spec} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


# ----------------------------------------------------------------------------------- the table


@dataclass
class Case:
    """One printed row: an open of the small and the large session on one backend."""

    backend: str
    what: str
    op: str
    spec: str
    ids: dict[str, str]
    warmup: str
    target: str
    events: dict[str, int] = field(default_factory=dict)
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    skipped: str | None = None

    def add(self, size: str, figures: dict[str, float]) -> None:
        into = self.samples.setdefault(size, {})
        for key, value in figures.items():
            into.setdefault(key, []).append(value)

    def median(self, size: str, key: str) -> float:
        values = self.samples.get(size, {}).get(key)
        return statistics.median(values) if values else float("nan")

    def ratio(self, key: str) -> float:
        return self.median("large", key) / self.median("small", key)


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.2f} s"


def _mb(value: float) -> str:
    if value != value:  # NaN: not measured
        return "-"
    return f"{value / 1e6:.1f} MB" if value >= 1e5 else f"{value / 1e3:.0f} kB"


def print_table(cases: list[Case], sizes: Sizes) -> None:
    small, large = f"{sizes.small // 1000}k", f"{sizes.large // 1000}k"
    rate = f"{large}/{small}"
    head = (
        f"{'backend':<10} {'open':<22} {'events ' + small:>9} {large:>8} │ "
        f"{'time ' + small:>10} {large:>9} {rate:>8} │ {'peak ' + small:>10} {large:>9} {rate:>8} │ "
        f"{'RSS Δ ' + small:>10} {large:>9} {rate:>8} │ target (time, peak)"
    )
    print("\n" + head)
    print("─" * len(head))
    for case in cases:
        if case.skipped:
            print(f"{case.backend:<10} {case.what:<22} {case.skipped}")
            continue
        cells = [f"{case.backend:<10} {case.what:<22} {case.events['small']:>9,} {case.events['large']:>8,}"]
        for key, show in (("seconds", _time), ("peak", _mb), ("rss_delta", _mb)):
            cells.append(
                f"{show(case.median('small', key)):>10} {show(case.median('large', key)):>9} "
                f"{case.ratio(key):>7.1f}×"
            )
        verdict = "(the full restore)"
        if case.target:
            met = all(case.ratio(key) <= 2.0 for key in ("seconds", "peak"))
            verdict = f"{case.target}  {'ok' if met else 'MISS'}"
        cells.append(verdict)
        print(" │ ".join(cells))
    by_backend: dict[str, dict[str, Case]] = {}
    for case in cases:
        if not case.skipped:
            by_backend.setdefault(case.backend, {})[case.op] = case
    print(f"\nfull restore / open at {large}: inspect / load, in time and in peak [target: time ≥ 50×]")
    for backend, ops in by_backend.items():
        if "load" in ops and "inspect" in ops:
            full, opened = ops["inspect"], ops["load"]
            ratio = full.median("large", "seconds") / opened.median("large", "seconds")
            peak = full.median("large", "peak") / opened.median("large", "peak")
            print(
                f"  {backend:<10} time {ratio:5.2f}×  peak {peak:5.2f}×  {'ok' if ratio >= 50 else 'MISS'}"
                f"  (load {_time(opened.median('large', 'seconds'))}, "
                f"inspect {_time(full.median('large', 'seconds'))})"
            )


# ------------------------------------------------------------------------------------- profile


def profile_load(spec: str, session_id: str, warmup: str) -> None:
    import cProfile
    import pstats

    async def go() -> None:
        async with open_store(spec, create=False) as store:
            await store.release(await store.load(warmup))
            gc.collect()
            profiler = cProfile.Profile()
            profiler.enable()
            session = await store.load(session_id)
            profiler.disable()
            print(f"cProfile of one SessionStore.load of {len(session.events):,} events ({spec})")
            stats = pstats.Stats(profiler)
            stats.sort_stats("cumulative").print_stats(r"harness/", 25)  # harness's own functions
            stats.sort_stats("tottime").print_stats(15)

    asyncio.run(go())


# ---------------------------------------------------------------------------------------- main


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--probe":
        spec, op, session_id, warmup, traced = json.loads(sys.argv[2])
        print(json.dumps(asyncio.run(probe(spec, op, session_id, warmup, traced))))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1k vs 10k events, fewer runs (a smoke run)")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON ('-' for stdout)")
    parser.add_argument("--no-postgres", action="store_true", help="leave the PostgreSQL rows out")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"where the sessions are kept ({CACHE})")
    parser.add_argument("--rebuild", action="store_true", help="build the cached sessions again")
    parser.add_argument("--runs", type=int, help="processes per time figure (default 5, --quick 3)")
    parser.add_argument("--profile", action="store_true", help="cProfile one load of the large JSONL session")
    args = parser.parse_args()
    sizes = Sizes.make(args.quick)
    if args.runs:
        sizes.runs = max(1, args.runs)
    print(
        f"{platform.node() or 'machine'}: {os.cpu_count()} cores, Python {platform.python_version()}"
        + f", C walk {'on' if ACCELERATED else 'off'}"
        + (" (--quick)" if args.quick else ""),
        flush=True,
    )
    root, built = ensure_cache(sizes, args.cache, args.rebuild)
    if built:
        print(f"built the cached sessions in {built:.1f} s", flush=True)
    if args.profile:
        profile_load(spec_of(root, "jsonl"), AGENT_IDS["large"], WARMUP)
        return

    from storage import Postgres  # bench/ is on sys.path when run as a script

    specs = {name: spec_of(root, name) for name in ("jsonl", "jsonl-zstd", "sqlite")}
    postgres = None if args.no_postgres else Postgres.find()
    if postgres is not None:
        postgres.prefix = "open_"  # our own schema on the shared server, dropped at the end
        schema = postgres.schema(root / f"pg-{os.getpid()}-{time.time_ns()}")
        separator = "&" if "?" in postgres.dsn else "?"
        specs["postgres"] = f"{postgres.dsn}{separator}schema={schema}"
    try:
        if postgres is not None:
            started = time.perf_counter()
            asyncio.run(_postgres_copy(root, specs["postgres"]))
            seconds = time.perf_counter() - started
            print(f"copied the sessions into PostgreSQL schema {schema} in {seconds:.1f} s")
        cases = _cases(specs, root)
        shape = asyncio.run(describe(specs["jsonl"], AGENT_IDS["large"]))
        small_shape = asyncio.run(describe(specs["jsonl"], AGENT_IDS["small"]))
        for label, described in (("small", small_shape), ("large", shape)):
            per_event = described["wire_mb"] * 1e3 / described["events"]
            print(
                f"agent session ({label}): {described['events']:,} events, "
                f"{described['wire_mb']:.1f} MB of wire JSON ({per_event:.2f} kB/event), "
                f"{described['compactions']} compactions; Surface {described['surface_nodes']} nodes, "
                f"{described['surface_kb']:.0f} kB"
            )
        stored = {name: stored_mb(root, name) for name in ("jsonl", "jsonl-zstd", "sqlite")}
        print(
            "stored (both sessions and the warm-up): "
            + ", ".join(f"{name} {mb:.1f} MB" for name, mb in stored.items() if mb is not None)
        )
        started = time.perf_counter()
        measure(cases, sizes)
        measured = time.perf_counter() - started
    finally:
        if postgres is not None:
            postgres.drop()
    print_table(cases, sizes)
    print(
        f"\n(measured in {measured:.0f} s; {sizes.runs} processes per time figure, {sizes.memory_runs} per "
        "memory figure, medians; shared machine: compare ratios, not absolute figures)"
    )
    if args.json:
        out: dict[str, Any] = {
            "python": platform.python_version(),
            "cores": os.cpu_count(),
            "accelerated": ACCELERATED,
            "commit": _commit(),
            "quick": args.quick,
            "sizes": asdict(sizes),
            "session": {"small": small_shape, "large": shape},
            "rows": [
                {
                    "backend": case.backend,
                    "what": case.what,
                    "skipped": case.skipped,
                    "events": case.events,
                    "median": {
                        size: {key: _number(case.median(size, key)) for key in FIGURES}
                        for size in ("small", "large")
                    },
                    "ratio": {key: _number(case.ratio(key)) for key in ("seconds", "peak", "rss_delta")}
                    if not case.skipped
                    else None,
                    "samples": case.samples,
                    "target": case.target,
                }
                for case in cases
            ],
        }
        text = json.dumps(out, indent=2, ensure_ascii=False)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(args.json).write_text(text + "\n")


def _number(value: float) -> float | None:
    """``value``, or None for NaN (not measured): JSON has no NaN."""
    return None if value != value else value


def _cases(specs: dict[str, str], root: Path) -> list[Case]:
    cases: list[Case] = []
    for backend, spec in specs.items():
        cases.append(Case(backend, "load (open)", "load", spec, AGENT_IDS, WARMUP, "≤ 2×"))
        cases.append(Case(backend, "inspect (full restore)", "inspect", spec, AGENT_IDS, WARMUP, ""))
    adapters = spec_of(root, "adapters")
    for extra, what, op, ids, warmup in (
        ("openai-agents", "openai get_items(50)", "openai", OPENAI_IDS, f"openai-{WARMUP}"),
        ("adk", "adk get_session(50)", "adk", ADK_IDS, f"adk-{WARMUP}"),
    ):
        case = Case("jsonl", what, op, adapters, ids, warmup, "flat: ≤ 2×")
        case.skipped = extra_missing(extra)
        cases.append(case)
    return cases


def measure(cases: list[Case], sizes: Sizes) -> None:
    """Every figure, runs interleaved across rows and sizes."""
    live = [case for case in cases if not case.skipped]
    for case in live:
        for size in ("small", "large"):
            case.events[size] = asyncio.run(_event_count(case, size))
    for attempt in range(max(sizes.runs, sizes.memory_runs)):
        for case in live:
            for size in ("small", "large"):
                for traced in (False, True):
                    if case.skipped or attempt >= (sizes.memory_runs if traced else sizes.runs):
                        continue
                    try:
                        case.add(size, run_probe(case.spec, case.op, case.ids[size], case.warmup, traced))
                    except ProbeFailed as failed:  # the row says so; the others go on
                        print(failed, flush=True)
                        case.skipped = f"failed: {failed.reason}"
        print(f"  round {attempt + 1} of {max(sizes.runs, sizes.memory_runs)} done", flush=True)


async def _event_count(case: Case, size: str) -> int:
    session_id = case.ids[size]
    if case.op == "adk":
        from harness.integrations.adk.state import session_log_id

        session_id = session_log_id(ADK_APP, ADK_USER, session_id)
    async with open_store(case.spec, create=False) as store:
        return await store.backend.stored_length(session_id)


def _commit() -> str | None:
    """The checkout's commit (None outside a git checkout)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except OSError:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


if __name__ == "__main__":
    main()
