"""The meta shapes the tools record, and the tolerant readers cold recovery uses."""

from __future__ import annotations

from harness.events.json import check_json
from harness.tools.records import (
    FileAccess,
    background_pids,
    file_accesses,
    read_meta,
    shell_meta,
    write_meta,
)


def test_builders_give_the_documented_shapes() -> None:
    assert read_meta("a.txt", "ab") == {"files": [{"path": "a.txt", "sha256": "ab", "access": "read"}]}
    assert write_meta("a.txt", None, "cd") == {
        "files": [{"path": "a.txt", "sha256": "cd", "before": None, "access": "write"}]
    }
    assert shell_meta("ls", ".", exit_code=0, timed_out=False) == {
        "command": "ls",
        "exitCode": 0,
        "timedOut": False,
        "cwd": ".",
    }
    full = shell_meta("x", "sub", exit_code=None, timed_out=True, signal=9, cancelled=True, background=[5, 6])
    assert full == {
        "command": "x",
        "exitCode": None,
        "timedOut": True,
        "cwd": "sub",
        "signal": 9,
        "cancelled": True,
        "background": [5, 6],
    }
    for meta in (read_meta("a", "b"), write_meta("a", "b", "c"), full):
        check_json(meta)


def test_readers_round_trip_and_skip_junk() -> None:
    assert file_accesses(read_meta("a.txt", "ab")) == [FileAccess("a.txt", "ab", "read")]
    assert file_accesses(write_meta("b", None, "cd")) == [FileAccess("b", "cd", "write", None)]
    junk = {
        "files": [
            1,
            {"path": 2, "access": "read"},
            {"path": "x", "access": "exec"},
            {"path": "y", "sha256": 3, "access": "read"},
            {"path": "ok", "sha256": None, "access": "write", "before": "z"},
        ]
    }
    assert file_accesses(junk) == [FileAccess("ok", None, "write", "z")]
    assert file_accesses(None) == file_accesses({"files": "abc"}) == []
    assert background_pids(shell_meta("x", ".", exit_code=0, timed_out=False, background=[7])) == [7]
    assert background_pids({"background": [True, -1, "3", 8]}) == [8]
    assert background_pids({"background": "12"}) == background_pids([]) == []
