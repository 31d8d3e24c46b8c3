"""The shim itself: each operation fails as told (EIO or ENOSPC, on the Nth call, with or
without making the call first), only for files under its path, and it sits below SQLite too."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.stores.faults.counts import COUNTS
from tests.stores.faults.shim import Shim

PROBE = textwrap.dedent(
    """
    import errno, json, os, sys
    inside, outside = sys.argv[1], sys.argv[2]
    out = {}

    def attempt(name, call):
        try:
            call()
            out[name] = "ok"
        except OSError as error:
            out[name] = errno.errorcode[error.errno]

    for where, base in (("in", inside), ("out", outside)):
        path = os.path.join(base, "f")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        attempt(where + " write1", lambda: os.write(fd, b"first"))
        attempt(where + " write2", lambda: os.write(fd, b"second"))
        attempt(where + " pwrite", lambda: os.pwrite(fd, b"P", 0))
        attempt(where + " fsync", lambda: os.fsync(fd))
        attempt(where + " fdatasync", lambda: os.fdatasync(fd))
        attempt(where + " ftruncate", lambda: os.ftruncate(fd, 3))
        os.close(fd)
        out[where + " content"] = open(path, "rb").read().decode()
        attempt(where + " rename", lambda: os.rename(path, path + ".renamed"))
        out[where + " renamed"] = os.path.exists(path + ".renamed")
        attempt(where + " link", lambda: os.link(path + ".renamed", path + ".linked"))
        out[where + " linked"] = os.path.exists(path + ".linked")
    print(json.dumps(out))
    """
)


def test_each_operation_fails_as_told_and_only_under_the_path(shim: Shim) -> None:
    outside = shim.path.parent / "elsewhere"
    outside.mkdir()
    rules = (
        "write:2:ENOSPC,pwrite:1:EIO:after,fsync:1:EIO,fdatasync:1:EIO:after,ftruncate:1:ENOSPC,"
        "rename:1:EIO:after,link:1:EIO"
    )
    shim.match = str(shim.path)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(shim.path), str(outside)],
        env=shim.env(rules),
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(done.stdout)
    assert out["in write1"] == "ok" and out["in write2"] == "ENOSPC"  # the 2nd write only
    assert out["in pwrite"] == "EIO"  # made, then reported failed: "P" landed
    assert out["in fsync"] == "EIO" and out["in fdatasync"] == "EIO"
    assert out["in ftruncate"] == "ENOSPC"  # not made: the file keeps its 5 bytes
    assert out["in content"] == "Pirst"
    assert out["in rename"] == "EIO" and out["in renamed"] is True  # made, reported failed
    assert out["in link"] == "EIO" and out["in linked"] is False  # not made
    for name in ("write1", "write2", "pwrite", "fsync", "fdatasync", "ftruncate", "rename", "link"):
        assert out[f"out {name}"] == "ok", name  # other files pass straight through
    assert out["out content"] == "Pir" and out["out renamed"] and out["out linked"]
    COUNTS["faults injected"] += len(shim.faults())
    assert [fault[0] for fault in shim.faults()] == [
        "write",
        "pwrite",
        "fsync",
        "fdatasync",
        "ftruncate",
        "rename",
        "link",
    ]


def test_sqlite_calls_go_through_the_shim(shim: Shim) -> None:
    """libsqlite3 calls fdatasync and pwrite64 through libc: the trace sees them on the WAL."""
    script = (
        "import sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1] + '/x.db', isolation_level=None)\n"
        "db.execute('PRAGMA journal_mode = WAL'); db.execute('PRAGMA synchronous = FULL')\n"
        "db.execute('CREATE TABLE t (x)'); db.execute('INSERT INTO t VALUES (1)')\n"
    )
    env = shim.env() | {"HFAULT_TRACE": "1"}
    subprocess.run([sys.executable, "-c", script, str(shim.path)], env=env, check=True)
    seen = {(fault[0], fault[4].rsplit("/", 1)[-1]) for fault in shim.faults()}
    assert ("fdatasync", "x.db-wal") in seen and ("pwrite", "x.db-wal") in seen, seen
