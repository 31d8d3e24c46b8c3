"""The SQLite error translator under faults injected below SQLite by the shim: a disk I/O error
(EIO) and a full disk (ENOSPC), in a write before the ``COMMIT`` (``PersistenceFailed``,
nothing written) and in the ``COMMIT`` itself (``OutcomeUnknown``). The other kinds, provoked
in process, are in ``tests/stores/test_sqlite_errors.py``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.stores.faults.shim import Shim

REPO = Path(__file__).resolve().parents[3]

PROBE = textwrap.dedent(
    """
    import json, sqlite3, sys
    from harness.stores.sqlite_errors import commit, sqlite_errors, transaction

    path, spill = sys.argv[1], sys.argv[2] == "spill"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE t (x)")  # in the rollback journal: the WAL is not written yet
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA cache_size = 1" if spill else "PRAGMA cache_spill = OFF")
    out = {}
    try:
        with sqlite_errors("write", "WHAT failed, nothing written"), transaction(conn, commits=False):
            conn.executemany("INSERT INTO t VALUES (?)", [("x" * 4000,) for _ in range(40 if spill else 1)])
        commit(conn, "WHAT", "AFTER")
        out["raised"] = None
    except Exception as error:
        out["raised"] = type(error).__name__
        out["message"] = str(error)
        out["cause"] = getattr(error.__cause__, "sqlite_errorname", None)
    print(json.dumps(out))
    """
)


def probe(shim: Shim, rules: str, *, spill: bool) -> dict[str, Any]:
    db = shim.path / "db.sqlite"
    shim.match = f"{db}-wal"  # only the write-ahead log fails
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(db), "spill" if spill else "commit"],
        env=shim.env(rules),
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert shim.faults(), "the shim injected nothing"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize(
    ("rules", "cause", "words"),
    [
        ("fsync:1+:EIO,fdatasync:1+:EIO", "SQLITE_IOERR_FSYNC", "disk I/O error"),
        ("write:1+:ENOSPC,pwrite:1+:ENOSPC", "SQLITE_FULL", "no space left on the file system"),
    ],
    ids=["eio", "enospc"],
)
def test_a_failed_commit_is_outcome_unknown(shim: Shim, rules: str, cause: str, words: str) -> None:
    out = probe(shim, rules, spill=False)
    assert out["raised"] == "OutcomeUnknown", out
    assert out["message"].startswith("WHAT: the commit failed (") and out["message"].endswith("; AFTER"), out
    assert words in out["message"] and out["cause"] == cause, out


def test_a_full_disk_before_the_commit_is_persistence_failed(shim: Shim) -> None:
    out = probe(shim, "write:1+:ENOSPC,pwrite:1+:ENOSPC", spill=True)  # a cache spill writes the WAL
    assert out["raised"] == "PersistenceFailed", out
    assert out["message"] == (
        "WHAT failed, nothing written: database or disk is full: no space left on the file system"
    ), out
    assert out["cause"] == "SQLITE_FULL", out
