"""Many writers on few sessions, with SIGKILLs and takeovers: one linear history each.

Four worker processes (``many_writers.py``) load or create random sessions out of eight, some
with ``take_over``, and run turns in them; every 0.2–1 s the test stops a random worker, with
SIGKILL or (three times in ten) SIGINT, as Ctrl-C does, and starts another; now and then it
also starts a real ``harness run --session ID --wait 5`` child (against a local fake provider)
and Ctrl-Cs it during its turn. Then a fresh store loads every session and checks, against the journals:

* it loads, and its turns are closed (no turn left open, no tool call without a result);
* one linear history: each ownership's events form one unbroken run (no event of a writer
  after another took over from it, no fork), and no event twice;
* every flush that returned is in it, in order;
* every crash repair closed the turn of a writer that was killed (``owner-gone``) or taken
  over (``taken-over``), never one a Ctrl-C'd writer or CLI run left: that one closed its own
  turn (``aborted``) and let the session go;
* every CLI run completed, was refused (exit 5), was Ctrl-C'd (130) or was taken over and said
  its turn was not stored (1); none crashed.

``HARNESS_TORTURE_S`` sets the seconds of writing per backend (default 12). The counts are
printed (``-s``) and added to the suite's closing line (``many-writer …``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.cli.ownership import EXIT_IN_USE
from harness.errors import SessionInUse
from harness.events.event import Event
from harness.stores.faults import DelegatingBackend
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from tests.stores.faults.counts import COUNTS
from tests.stores.many_writers import WORK, open_backend, work
from tests.stores.pg import fresh_schema, run, server_up

WORKERS = 4
SESSIONS = [f"s{i}" for i in range(8)]
SECONDS = float(os.environ.get("HARNESS_TORTURE_S", "10"))
PG_TTL = 1.5
CLI_KEY = "sk-test-many-writers"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["jsonl-none", "jsonl-zstd", "sqlite", "dsh-sqlite", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    kind = request.param
    if kind.startswith("jsonl"):
        yield f"jsonl:{kind.removeprefix('jsonl-')}:{tmp_path / 'root'}"
    elif kind == "sqlite":
        yield f"sqlite:{tmp_path / 'sessions.db'}"
    elif kind == "dsh-sqlite":
        yield f"dsh:{tmp_path / 'dsh.sqlite'}"
    else:
        from tests.stores.pg import server_dsn

        if not server_up():
            server_dsn()  # skips, or fails under CI=true
        for schema in fresh_schema():
            yield f"postgres:{schema.name}:{PG_TTL}:{schema.dsn}"


def spawn(spec: str, journal: Path, seed: int, seconds: float) -> subprocess.Popen[bytes]:
    args = [spec, str(journal), str(seed), f"{seconds:.2f}", *SESSIONS]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.stores.many_writers", *args],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def cli_store(spec: str) -> list[str]:
    """The root options that open the store of ``spec`` for a ``harness`` command."""
    kind, _, rest = spec.partition(":")
    if kind == "jsonl":
        compression, _, root = rest.partition(":")
        return ["--store", root, "--compression", compression]
    if kind in ("sqlite", "dsh"):
        return ["--store", f"sqlite:{rest}"]
    schema, _, rest = rest.partition(":")
    dsn = rest.partition(":")[2]
    return ["--store", f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"]


class _Run:
    def __init__(self, child: subprocess.Popen[str], delay: float) -> None:
        self.child = child
        self.delay = delay  # how long into its turn the Ctrl-C comes
        self.turn_at: float | None = None
        self.interrupted = False


class Cli:
    """``harness run --session`` children, Ctrl-C'd (SIGINT) at a random point of their turn."""

    def __init__(self, spec: str, workspace: Path, server: FakeDeepSeek) -> None:
        self.spec = spec
        self.workspace = workspace
        self.server = server
        self.env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        self.env.update(DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=CLI_KEY)
        self.running: list[_Run] = []
        self.results: list[tuple[int, str]] = []
        self.started = 0
        self._asked = 0  # the server's requests when the running child started

    def _requests(self) -> int:
        return sum(1 for request in self.server.requests if request.method == "POST")

    def start(self, rng: random.Random) -> None:
        self.started += 1
        sid = rng.choice(SESSIONS)
        task = f"task cli-{self.started}"
        args = [*cli_store(self.spec), "run", "--session", sid, task, "--wait", "5", "-w"]
        child = subprocess.Popen(
            [sys.executable, "-m", "harness", *args, str(self.workspace)],
            cwd=REPO,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._asked = self._requests()
        self.running.append(_Run(child, rng.uniform(0.0, 0.4)))

    def tick(self) -> None:
        """Ctrl-C a child a moment into its turn (once its model request was made: a person
        presses Ctrl-C while the answer streams); collect the children that ended."""
        for child in list(self.running):
            if child.child.poll() is None:
                if child.turn_at is None:
                    if self._requests() > self._asked:
                        child.turn_at = time.monotonic()
                elif not child.interrupted and time.monotonic() >= child.turn_at + child.delay:
                    child.child.send_signal(signal.SIGINT)
                    child.interrupted = True
                continue
            self.running.remove(child)
            self._collect(child)

    def _collect(self, ended: _Run) -> None:
        output, _ = ended.child.communicate(timeout=60)
        self.results.append((ended.child.returncode, output))

    def finish(self) -> Counter[str]:
        for child in self.running:
            self._collect(child)
        self.running.clear()
        names = {
            0: "CLI runs completed",
            1: "CLI runs taken over",
            EXIT_IN_USE: "CLI runs refused in use (exit 5)",
            130: "CLI runs Ctrl-C'd",
        }
        counts: Counter[str] = Counter()
        for code, output in self.results:
            assert "Traceback" not in output, output[-3000:]
            # completed, taken over (its turn not stored), in use, or Ctrl-C: nothing else
            assert code in names, (code, output[-3000:])
            if code == 1:
                assert "taken over by" in output and "not stored" in output, output[-3000:]
            counts[names[code]] += 1
        return counts


def drive(
    spec: str, journals: Path, rng: random.Random, interrupted: set[int], cli: Cli | None = None
) -> dict[int, float]:
    """Run the workers for ``SECONDS``, stopping one at random now and then: SIGKILL (the kill
    times are returned) or SIGINT (its pid is added to ``interrupted``); with ``cli``, start a
    ``harness run`` child now and then too, Ctrl-C'd a moment later."""
    journals.mkdir()
    start = time.monotonic()
    live: list[subprocess.Popen[bytes]] = []
    killed: dict[int, float] = {}
    seed = 0

    def start_one() -> None:
        nonlocal seed
        seed += 1
        left = SECONDS - (time.monotonic() - start)
        live.append(spawn(spec, journals / f"w{seed}.jsonl", rng.randrange(1 << 30) + seed, left))

    for _ in range(WORKERS):
        start_one()
    next_kill = time.monotonic() + rng.uniform(0.2, 1.0)
    while time.monotonic() - start < SECONDS:
        time.sleep(0.02)
        if cli is not None:
            cli.tick()
            # The first soon, the rest now and then (a CLI child takes a second or two to start).
            chance = 1.0 if cli.started == 0 else 0.05
            if not cli.running and SECONDS - (time.monotonic() - start) > 3.0 and rng.random() < chance:
                cli.start(rng)
        if time.monotonic() >= next_kill and live:
            victim = live.pop(rng.randrange(len(live)))
            if rng.random() < 0.3:  # Ctrl-C: it ends its turn and lets the session go
                victim.send_signal(signal.SIGINT)
                _, err = victim.communicate(timeout=60)
                # 130: it let go on the way out; -SIGINT: it was still starting (importing)
                assert victim.returncode in (0, 130, -signal.SIGINT), err.decode(errors="replace")[-3000:]
                interrupted.add(victim.pid)
            else:
                victim.send_signal(signal.SIGKILL)
                killed[victim.pid] = time.time()
                victim.wait()
            if SECONDS - (time.monotonic() - start) > 1.0:
                start_one()
            next_kill = time.monotonic() + rng.uniform(0.2, 1.0)
    for worker in live:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err.decode(errors="replace")[-3000:]
    return killed


def read_journals(journals: Path) -> list[dict[str, Any]]:
    records = []
    for path in journals.iterdir():
        for line in path.read_text().splitlines():
            records.append(json.loads(line))
    return sorted(records, key=lambda r: r["t"])


def episode_of(event: Event) -> str | None:
    """The episode (``pid-count``) an event was written in, for the events that say."""
    data = event.data
    if event.type == WORK:
        return str(data["k"])
    if event.type == "user/message":
        text = data["content"][0]["text"]
        return text.removeprefix("task ") if text.startswith("task ") else None
    if event.type == "tool/call":
        return "-".join(str(data["callId"]).split("-")[1:3])
    return None


def check_session(
    events: list[Event], sid: str, records: list[dict[str, Any]], killed: dict[int, float]
) -> Counter[str]:
    counts: Counter[str] = Counter()
    assert [event.seq for event in events] == list(range(len(events)))
    # One linear history: each episode's events form one run.
    finished: set[str] = set()
    current: str | None = None
    for event in events:
        k = episode_of(event)
        if k is None or k == current:
            continue
        assert k not in finished, f"{sid}: episode {k} wrote again at seq {event.seq} after another's events"
        if current is not None:
            finished.add(current)
        current = k
    # Every returned flush is stored, in order, once.
    work: dict[str, list[int]] = defaultdict(list)
    for event in events:
        if event.type == WORK:
            work[str(event.data["k"])].append(int(event.data["n"]))
    for k, ns in work.items():
        assert ns == list(range(1, len(ns) + 1)), f"{sid}: episode {k} holds {ns}"
    upto: dict[str, int] = {}
    for record in records:
        if record["e"] == "flushed" and record["s"] == sid:
            upto[record["k"]] = max(upto.get(record["k"], 0), record["upto"])
            counts["flushes"] += 1
    for k, n in upto.items():
        assert len(work.get(k, [])) >= n, f"{sid}: episode {k} flushed up to {n}, stored {work.get(k)}"
    # Crash repairs: each closes the turn of a writer that was killed or taken over.
    takers_asked = [r for r in records if r["e"] == "attempt" and r["s"] == sid]
    fenced = {r["k"] for r in records if r["e"] == "lost" and r["s"] == sid}
    for index, event in enumerate(events):
        if event.type != "harness/repair":
            continue
        counts["repairs"] += 1
        note = event.data
        opened = max(i for i in range(index) if events[i].type == "turn/start")
        owner_k = next(k for k in map(episode_of, events[opened:index]) if k is not None)
        assert note["closedTurn"] == events[opened].data["turn"]
        if owner_k.startswith("cli-"):  # a CLI run is never killed: only a takeover repairs its turn
            assert note["reason"] == "taken-over", (sid, note, owner_k)
            counts["repairs of taken-over CLI runs"] += 1
            continue
        pid = int(owner_k.split("-")[0])
        # The turn's writer died or was fenced off; the record names the last owner before the
        # repairer (the turn's writer, or an owner that was itself cut short before writing).
        assert pid in killed or owner_k in fenced, f"{sid}: a live writer's turn repaired at {event.seq}"
        previous = note["previousOwner"]
        if note["reason"] == "owner-gone":
            assert previous is None or previous["pid"] in killed, (sid, note)
            counts["repairs of killed writers"] += 1
        else:
            assert note["reason"] == "taken-over", note
            # A repairer asked to take over; it may have been killed before it recorded owning.
            repairer = note["repairedBy"]["pid"]
            assert any(r["take"] and r["pid"] == repairer for r in takers_asked), note
            counts["repairs of taken-over writers"] += 1
        types = [e.type for e in events[opened:index]]
        assert types[-1] == "turn/end" and events[index - 1].data["reason"]["kind"] == "interrupted"
    # Nothing left open, every call answered.
    assert harness.repair_closers(events) == []
    calls = {e.data["callId"] for e in events if e.type == "tool/call"}
    answered = {e.data["message"]["source"]["callId"] for e in events if e.type == "tool/result"}
    assert calls <= answered, f"{sid}: calls without a result {calls - answered}"
    return counts


def test_many_writers_keep_one_linear_history(spec: str, tmp_path: Path) -> None:
    rng = random.Random(f"many-writers-{spec.split(':')[0]}-{spec.split(':')[1]}")
    interrupted: set[int] = set()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    replies = [Reply.text([f"w{i} " for i in range(20)], delay_s=0.1) for _ in range(200)]
    with FakeDeepSeek(replies, api_key=CLI_KEY) as server:
        cli = Cli(spec, workspace, server)
        killed = drive(spec, tmp_path / "journals", rng, interrupted, cli)
        cli_counts = cli.finish()
    records = read_journals(tmp_path / "journals")
    counts: Counter[str] = Counter(kills=len(killed), **{"Ctrl-C (SIGINT)": len(interrupted)})
    counts.update(cli_counts)
    for record in records:
        names = {
            "attempt": "attempts",
            "refused": "SessionInUse refusals",
            "lost": "fenced writers",
            "lost-loading": "taken over while loading",
            "interrupted": "turns ended by Ctrl-C",
        }
        counts[names.get(record["e"], "")] += 1
        if record["e"] == "own" and record["take"]:
            counts["takeovers"] += 1
    del counts[""]

    async def verify() -> None:
        store = SessionStore(open_backend(spec))
        try:
            for sid in SESSIONS:
                deadline = time.monotonic() + 4 * PG_TTL + 10
                while True:
                    try:
                        session = await store.load(sid)  # a killed owner's lease runs out first
                        break
                    except SessionInUse:
                        assert time.monotonic() < deadline, f"{sid} stays in use after every writer ended"
                        await asyncio.sleep(0.2)
                stored = list(session.events)[: session.first_live_seq]
                counts.update(check_session(stored, sid, records, killed))
                await store.release(session)
        finally:
            await store.close()

    run(verify())
    assert counts["attempts"] > 50 and counts["kills"] >= 3 and counts["flushes"] > 50, counts
    assert counts["takeovers"] > 0 and counts["SessionInUse refusals"] > 0, counts
    assert counts["repairs"] > 0, counts
    assert sum(n for name, n in counts.items() if name.startswith("CLI runs")) >= 1, counts
    COUNTS.update({f"many-writer {name}": value for name, value in counts.items()})
    label = spec.split(":")[0] + (f" {spec.split(':')[1]}" if spec.startswith("jsonl") else "")
    print(f"\nmany writers on {label}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


class _Shared(DelegatingBackend):
    """One memory backend shared by the in-process workers: a worker's store closing it does
    not close it for the others."""

    async def close(self) -> None:
        return None


def test_many_stores_on_one_memory_backend(tmp_path: Path) -> None:
    """The memory backend serves one process: its writers are stores, and a writer stops by
    being cancelled (as Ctrl-C cancels a run), never by dying. Four tasks, each with its own
    store, on eight sessions; every 0.2-1 s a random one is cancelled and another started."""
    rng = random.Random("many-writers-memory")
    journals = tmp_path / "journals"
    journals.mkdir()
    backend = MemoryBackend()

    async def go() -> Counter[str]:
        tasks: list[asyncio.Task[None]] = []
        start = time.monotonic()
        workers = 0

        def start_one() -> None:
            nonlocal workers
            workers += 1
            left = SECONDS - (time.monotonic() - start)
            args = (str(journals / f"w{workers}.jsonl"), rng.randrange(1 << 30), left, SESSIONS, workers)
            tasks.append(asyncio.ensure_future(work(_Shared(backend), *args)))

        for _ in range(WORKERS):
            start_one()
        cancelled = 0
        while time.monotonic() - start < SECONDS:
            await asyncio.sleep(rng.uniform(0.2, 1.0))
            victim = tasks.pop(rng.randrange(len(tasks)))
            victim.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await victim
            cancelled += 1
            if SECONDS - (time.monotonic() - start) > 1.0:
                start_one()
        await asyncio.gather(*tasks)
        records = read_journals(journals)
        counts: Counter[str] = Counter(cancelled=cancelled)
        store = SessionStore(backend)
        for sid in SESSIONS:
            session = await store.load(sid)  # nobody owns it any more
            stored = list(session.events)[: session.first_live_seq]
            counts.update(check_session(stored, sid, records, {}))
            await store.release(session)
        await store.close()
        counts["attempts"] = sum(r["e"] == "attempt" for r in records)
        counts["SessionInUse refusals"] = sum(r["e"] == "refused" for r in records)
        counts["takeovers"] = sum(r["e"] == "own" and r["take"] for r in records)
        return counts

    counts = asyncio.run(go())
    assert counts["attempts"] > 50 and counts["flushes"] > 50 and counts["cancelled"] >= 3, counts
    assert counts["takeovers"] > 0 and counts["SessionInUse refusals"] > 0, counts
    assert counts["repairs of killed writers"] == 0  # nobody died: only takeovers repair
    COUNTS.update({f"many-writer {name}": value for name, value in counts.items()})
    print("\nmany writers on memory: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
