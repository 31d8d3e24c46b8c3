"""``DshSqliteBackend`` under a real failing fdatasync (the shim): a failed commit is
``OutcomeUnknown``, the retry resyncs from the logical tail, and every event is stored once."""

from __future__ import annotations

from harness.testing.samples import run
from tests.stores.faults.shim import Shim
from tests.stores.faults.test_outcome_unknown import expected_events, fresh_read, writer


def test_dsh_sqlite_wal_fdatasync_eio_is_unknown_and_resynced(shim: Shim) -> None:
    # The 3rd sync of the WAL falls in the second flush's commit (counted: the schema is made in
    # rollback-journal mode, before dsh's switch to WAL, and the first flush takes two).
    shim.match = str(shim.path / "sessions.sqlite-wal")
    lines = writer(shim, "dsh-sqlite", "fdatasync:3:EIO", turns=3)
    (fault,) = shim.faults()
    assert fault[0] == "fdatasync" and fault[4].endswith("sessions.sqlite-wal"), fault
    assert lines[:3] == ["appended 8", "ok 8", "appended 16"]
    assert lines[3].startswith("err OutcomeUnknown 8 ") and "outcome unknown" in lines[3], lines[3]
    assert lines[4:] == ["appended 24", "ok 24", "done"]
    stored = run(fresh_read("dsh-sqlite", shim.path))
    assert [(event["type"], event["data"]) for event in stored] == expected_events(3)
