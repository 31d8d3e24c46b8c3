"""The store's durability promises under faults injected below the library, with kills.

For JSONL (plain, zstd), SQLite and the dsh-layout SQLite backend, each run starts the
writer (``writer.py``) in a subprocess under the shim with one fault
scenario (a failing or lying fsync/fdatasync, ftruncate, write, pwrite or link, EIO or
ENOSPC, on a seeded random call), lets it go on for a seeded random number of reports after
the first failed flush, then SIGKILLs it. A fresh process (this one, no shim) then reads
the log and checks:

* every event of every returned flush is there (``ok N``: at least N events);
* nothing the writer did not append, in its order (each event equals the one appended);
* no duplicates (seqs contiguous from 0, each turn once);
* the batch of a failed or interrupted flush is there whole or not at all: the stored
  length is the last returned flush's or one of the lengths a later flush tried to make
  durable (a plain JSONL log killed mid-write may keep a prefix of a batch's lines: a write
  to a page-cache file can be cut by SIGKILL);
* our own failed write never turns into a ``SessionConflict``;
* the log then loads, and a new writer appends to it and flushes.

Runs are few and small (the suite's time budget); the seeds, scenarios and kill points are
printed with ``-s`` and the totals at the end of the run.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import harness
from harness.events.json import dumps, loads
from harness.stores.backend import read_whole
from harness.stores.store import SessionStore
from harness.testing.samples import run
from tests.stores.faults.counts import COUNTS
from tests.stores.faults.shim import Shim
from tests.stores.faults.writer import SESSION_ID, make_backend, turn_events

REPO = Path(__file__).resolve().parents[3]
TURNS = 6
PER_TURN = len(turn_events(1))
EXPECTED = [(kind, loads(dumps(data))) for turn in range(1, TURNS + 2) for kind, data, _ in turn_events(turn)]

# (name, rules with {n}: the seeded call number, (low, high) to draw it from)
JSONL_SCENARIOS = [
    ("fdatasync EIO, rollback ftruncate EIO", "fdatasync:{n}:EIO,ftruncate:1:EIO", (2, 5)),
    ("fdatasync EIO, rollback fdatasync EIO", "fdatasync:{n}:EIO,fdatasync:{m}:EIO", (2, 5)),
    ("fdatasync reports EIO after syncing", "fdatasync:{n}:EIO:after", (1, 5)),
    ("write lands then reports EIO, rollback fails", "write:{n}:EIO:after,ftruncate:1:EIO", (2, 5)),
    ("write ENOSPC", "write:{n}:ENOSPC", (1, 5)),
    ("directory fsync EIO after the link", "fsync:3:EIO", (1, 1)),
    ("link made then reported EIO", "link:1:EIO:after", (1, 1)),
]
SQLITE_SCENARIOS = [  # on the -wal file
    ("WAL fdatasync EIO", "fdatasync:{n}:EIO", (1, 5)),
    ("WAL fdatasync reports EIO after syncing", "fdatasync:{n}:EIO:after", (1, 5)),
    ("WAL pwrite ENOSPC", "pwrite:{n}:ENOSPC", (1, 30)),
    ("WAL pwrite lands then reports EIO", "pwrite:{n}:EIO:after", (1, 30)),
]


@dataclass
class Outcome:
    reports: list[str] = field(default_factory=list)
    killed_after: str = ""


def drive(process: subprocess.Popen[bytes], rng: random.Random) -> Outcome:
    """Read the writer's reports; SIGKILL it a seeded number of reports (0-3) after its first
    failed flush, plus up to 3 ms (or once it is done)."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    outcome = Outcome()
    after_fault = rng.randint(0, 3)
    delay = rng.uniform(0.0, 0.003)
    buffer = b""
    seen_fault: int | None = None
    kill_at: float | None = None
    deadline = time.monotonic() + 30.0
    try:
        while kill_at is None or time.monotonic() < kill_at:
            if time.monotonic() > deadline:
                raise AssertionError(f"the writer stalled: {outcome.reports}")
            wait = 0.05 if kill_at is None else max(0.0, kill_at - time.monotonic())
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AssertionError(f"the writer died before it was killed: {outcome.reports}")
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                text = line.decode()
                outcome.reports.append(text)
                if text.startswith("err") and seen_fault is None:
                    seen_fault = len(outcome.reports)
                since = None if seen_fault is None else len(outcome.reports) - seen_fault
                due = text == "done" or (since is not None and since >= after_fault)
                if due and kill_at is None:
                    kill_at = time.monotonic() + delay
                    outcome.killed_after = text
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        rest = process.stdout.read()
        process.stdout.close()
    outcome.reports.extend(line.decode() for line in (buffer + rest).split(b"\n") if line)
    return outcome


def allowed_lengths(reports: list[str]) -> tuple[int, set[int], int]:
    """(last returned flush, the lengths a later flush may have made durable, most appended)."""
    last_ok = 0
    tried: set[int] = set()
    appended = 0
    for report in reports:
        word, _, rest = report.partition(" ")
        if word == "ok":
            last_ok = int(rest)
            tried = set()
        elif word == "appended":
            appended = int(rest)
            tried.add(appended)
    return last_ok, tried, appended


def check(kind: str, root: Path, outcome: Outcome) -> int:
    """The promises after one run (see the module doc); the stored length."""
    reports = outcome.reports
    assert not [r for r in reports if r.startswith("err SessionConflict")], reports
    typed = {"PersistenceFailed", "OutcomeUnknown"}
    assert not [r for r in reports if r.startswith("err") and r.split()[1] not in typed], reports
    backend = make_backend(kind, root)
    try:
        stored = run(read_whole(backend, SESSION_ID)).events
    except harness.errors.SessionNotFound:
        stored = []
    finally:
        run(backend.close())
    length = len(stored)
    last_ok, tried, appended = allowed_lengths(reports)
    where = f"{kind}: stored {length}, reports {reports}"
    assert length >= last_ok, f"a returned flush lost events: {where}"
    assert length <= appended, f"more than was appended: {where}"
    if kind == "jsonl-none":
        assert length == last_ok or last_ok < length <= max(tried), where
    else:
        assert length == last_ok or length in tried, f"a part of a batch: {where}"
    assert [event["seq"] for event in stored] == list(range(length)), where
    assert [(event["type"], event["data"]) for event in stored] == EXPECTED[:length], where
    return length


def go_on(kind: str, root: Path) -> None:
    """A new writer loads the log (repairing an open turn) and appends a turn durably."""

    async def main() -> int:
        async with SessionStore(make_backend(kind, root)) as store:
            try:
                session = await store.load(SESSION_ID)
            except harness.errors.SessionNotFound:
                session = await store.create(id=SESSION_ID)
            session.append("turn/start", {"turn": TURNS + 1})
            session.append("turn/end", {"turn": TURNS + 1, "reason": {"kind": "completed"}})
            await store.flush(session)
            return len(session.events)

    length = run(main())
    backend = make_backend(kind, root)
    try:
        assert len(run(read_whole(backend, SESSION_ID)).events) == length
    finally:
        run(backend.close())


def scenarios(kind: str) -> list[tuple[str, str, tuple[int, int]]]:
    return SQLITE_SCENARIOS if kind.endswith("sqlite") else JSONL_SCENARIOS


WAL = {"sqlite": "sessions.db-wal", "dsh-sqlite": "sessions.sqlite-wal"}


@pytest.mark.parametrize("kind", ["jsonl-none", "jsonl-zstd", "sqlite", "dsh-sqlite"])
def test_durability_promises_hold_under_faults_below_the_library(
    kind: str, shim: Shim, tmp_path: Path
) -> None:
    seed = f"faults-{kind}"
    rng = random.Random(seed)
    injected = 0
    for index, (name, rules, (low, high)) in enumerate(scenarios(kind)):
        root = shim.path / f"run{index}"
        root.mkdir()
        n = rng.randint(low, high)
        rule = rules.format(n=n, m=n + 1)
        shim.match = str(root / WAL[kind]) if kind in WAL else str(root)
        shim.arm("")  # the writer arms its rule once its store is open
        before = len(shim.faults())
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.stores.faults.writer", kind, str(root), str(TURNS)],
            env=shim.env() | {"HFAULT_ARM": rule},
            cwd=REPO,
            stdout=subprocess.PIPE,
        )
        outcome = drive(process, rng)
        faults = len(shim.faults()) - before
        injected += faults
        length = check(kind, root, outcome)
        go_on(kind, root)
        COUNTS["kills"] += 1
        print(
            f"[{seed}] {name} ({rule}): {faults} faults, killed after {outcome.killed_after!r}, "
            f"{length} events stored"
        )
    COUNTS["faults injected"] += injected
    COUNTS["fault runs"] += len(scenarios(kind))
    assert injected >= len(scenarios(kind)) - 1, "the shim injected (almost) nothing"
