"""Simulated power loss for JSONL (``crashfs``: the ALICE approach, its model and limits there).

A workload (publish, appends, one append whose fsync and rollback fail and is then adopted by
the resync) runs through a recording ``FileOps``; for every point of it, every crash state
the persistence model allows is written out and opened by a fresh backend, which must:

* report no corruption (``CorruptSession``/``UnsupportedFormat``) for any of them;
* hold at least the events of every call that had returned (a returned append, or the
  resync that adopted the unknown batch), and only events appended, in order;
* after ``SessionStore.load`` (which cuts a torn tail and commits closers), read cleanly.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest

from harness.errors import OutcomeUnknown, SessionNotFound
from harness.events.event import Event
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.paths import Compression
from harness.stores.store import SessionStore
from harness.testing.samples import header, run, wire
from tests.stores.faults.counts import COUNTS
from tests.stores.faults.crashfs import Recording, RecordingOps, crash_states, write_tree
from tests.stores.faults.writer import turn_events

SID = "power"


def events_of(turns: range) -> list[Event]:
    out: list[Event] = []
    for turn in turns:
        for kind, data, op in turn_events(turn):
            out.append(Event.create(kind, len(out), 1000 + len(out), data, surface_op=op))  # type: ignore[arg-type]
    return out


class FailOnce(RecordingOps):
    """Records; the ``fail_sync``-th file sync fails (EIO, nothing synced) and so do the
    ftruncates of that append's rollback."""

    def __init__(self, recording: Recording, fail_sync: int) -> None:
        super().__init__(recording)
        self.syncs = 0
        self.fail_sync = fail_sync
        self.failing = False

    def fsync(self, fd: int, *, directory: bool = False) -> None:
        if not directory:
            self.syncs += 1
            if self.syncs == self.fail_sync:
                self.failing = True
                raise OSError(errno.EIO, "Input/output error (injected fsync)")
        super().fsync(fd, directory=directory)

    def ftruncate(self, fd: int, size: int) -> None:
        if self.failing:
            self.failing = False
            raise OSError(errno.EIO, "Input/output error (injected ftruncate)")
        super().ftruncate(fd, size)


def workload(base: Path, compression: Compression, events: list[Event]) -> Recording:
    recording = Recording()

    async def main() -> None:
        backend = JsonlBackend(base / "root", compression, threaded=False)
        backend._os = FailOnce(recording, fail_sync=4)  # the 4th file sync: the third append
        await backend.create(header(SID, cwd="/w"))
        batches = [events[0:8], events[8:12], events[12:16], events[16:24], events[24:32]]
        for batch in batches:
            try:
                await backend.append(SID, batch)
            except OutcomeUnknown:
                assert await backend.stored_length(SID) == batch[-1].seq + 1  # adopted by the resync
            recording.returned.append((len(recording.ops), batch[-1].seq + 1))
        await backend.close()

    run(main())
    return recording


def check_state(root: Path, compression: Compression, durable: int, events: list[Event]) -> None:
    async def main() -> None:
        backend = JsonlBackend(root, compression, threaded=False)
        try:
            log = await backend.read_exact(SID)
        except SessionNotFound:
            assert durable == 0, f"a returned publish vanished ({durable} events durable)"
            return
        stored = log.events
        assert len(stored) >= durable, f"{durable} events were durable, {len(stored)} survived"
        assert stored == wire(events)[: len(stored)], "an event that was not appended"
        async with SessionStore(JsonlBackend(root, compression, threaded=False)) as store:
            session = await store.load(SID)  # cuts a torn tail, commits closers
            assert len(session.events) >= len(stored)
        again = await JsonlBackend(root, compression, threaded=False).read_exact(SID)
        assert again.torn is None

    run(main())


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_every_crash_state_keeps_the_promise(tmp_path: Path, compression: Compression) -> None:
    events = events_of(range(1, 5))
    base = tmp_path / "work"
    base.mkdir()
    recording = workload(base, compression, events)
    kinds = {op.kind for op in recording.ops}
    assert {"write", "sync", "link", "unlink", "mkdir"} <= kinds, kinds
    checked = 0
    scratch = tmp_path / "state"
    for crash in range(len(recording.ops) + 1):
        durable = recording.durable_at(crash)
        for tree in crash_states(recording, crash):
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            write_tree(tree, base, scratch)
            try:
                check_state(scratch / "root", compression, durable, events)
            except AssertionError as error:
                last = recording.ops[crash - 1].kind if crash else "nothing"
                raise AssertionError(f"crash after op {crash} ({last}): {error}") from error
            checked += 1
    COUNTS["crash states checked"] += checked
    print(f"[power loss {compression}] {len(recording.ops)} ops, {checked} crash states checked")
    assert checked > len(recording.ops)
