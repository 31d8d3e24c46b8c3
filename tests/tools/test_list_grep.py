"""list_dir and grep: sorted, confined, capped, skipping what they should."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.tools.grep import Grep
from harness.tools.list_dir import ListDir

from .helpers import refusal, run


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / ".git" / "objects").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.py").write_text("needle outside\n")
    (workspace / "b.txt").write_text("Needle one\nnothing\n")
    (workspace / "a.py").write_text("x = 'needle'\r\n")
    (workspace / "src" / "pkg" / "mod.py").write_text("first\nneedle here\n")
    (workspace / "src" / "data.bin").write_bytes(b"needle\x00\x00")
    (workspace / ".git" / "HEAD").write_text("needle in git\n")
    (workspace / ".git" / "objects" / "x").write_text("x")
    os.symlink("../outside", workspace / "out_dir")
    os.symlink("../outside/secret.py", workspace / "out_file.py")
    os.symlink("b.txt", workspace / "in_file.txt")
    return workspace


def test_list_dir_depth_one(root: Path) -> None:
    outcome = run(ListDir(), {}, root)
    assert outcome.text.splitlines() == [
        ".git/",
        "a.py",
        "b.txt",
        "in_file.txt -> b.txt",
        "out_dir -> ../outside",
        "out_file.py -> ../outside/secret.py",
        "src/",
    ]
    assert outcome.meta is None


def test_list_dir_deeper_skips_git_and_links(root: Path) -> None:
    outcome = run(ListDir(), {"path": ".", "depth": 5}, root)
    lines = outcome.text.splitlines()
    assert lines[-4:] == ["src/", "src/data.bin", "src/pkg/", "src/pkg/mod.py"]
    assert ".git/HEAD" not in lines and not any("secret" in line.split(" -> ")[0] for line in lines)
    assert run(ListDir(), {"path": "src", "depth": 2}, root).text.splitlines() == [
        "src/data.bin",
        "src/pkg/",
        "src/pkg/mod.py",
    ]


def test_list_dir_cap_and_refusals(root: Path) -> None:
    capped = run(ListDir(max_entries=3), {"depth": 3}, root)
    assert capped.text.splitlines()[:3] == [".git/", "a.py", "b.txt"]
    assert "stopped after 3 entries" in capped.text
    (root / "empty").mkdir()
    assert run(ListDir(), {"path": "empty"}, root).text == "(empty is empty.)"
    refusal(ListDir(), {"path": "a.py"}, root, "NOT_A_DIRECTORY")
    refusal(ListDir(), {"path": "nope"}, root, "NOT_FOUND")
    refusal(ListDir(), {"depth": 0}, root, "INVALID_ARGUMENTS")
    for path in ("..", "out_dir", str(root.parent / "outside")):
        refusal(ListDir(), {"path": path}, root, "PATH_ESCAPE")


def test_grep_finds_text_only_inside(root: Path) -> None:
    outcome = run(Grep(), {"pattern": "needle"}, root)
    assert outcome.text.splitlines()[:2] == ["a.py:1:x = 'needle'", "src/pkg/mod.py:2:needle here"]
    assert "Files skipped: 1 binary, 1 linked from outside the workspace." in outcome.text
    insensitive = run(Grep(), {"pattern": "needle", "ignore_case": True}, root)
    assert insensitive.text.splitlines()[:4] == [
        "a.py:1:x = 'needle'",
        "b.txt:1:Needle one",
        "in_file.txt:1:Needle one",
        "src/pkg/mod.py:2:needle here",
    ]


def test_grep_path_and_glob(root: Path) -> None:
    assert run(Grep(), {"pattern": "needle", "glob": "*.py"}, root).text.splitlines()[:2] == [
        "a.py:1:x = 'needle'",
        "src/pkg/mod.py:2:needle here",
    ]
    assert run(Grep(), {"pattern": "needle", "glob": "src/*.py"}, root).text.splitlines()[0] == (
        "src/pkg/mod.py:2:needle here"
    )
    assert (
        run(Grep(), {"pattern": "^first$", "path": "src/pkg/mod.py"}, root).text == "src/pkg/mod.py:1:first"
    )
    none = run(Grep(), {"pattern": "absent"}, root)
    assert not none.is_error and none.text.startswith("No matches for 'absent' in .")


def test_grep_caps(root: Path) -> None:
    (root / "many.txt").write_text("hit " + "y" * 50 + "\n" + "hit\n" * 20)
    outcome = run(Grep(max_matches=5, max_line_chars=10), {"pattern": "hit", "path": "many.txt"}, root)
    lines = outcome.text.splitlines()
    assert lines[0] == "many.txt:1:hit yyyyyy [… cut]"
    assert len([line for line in lines if line.startswith("many.txt:")]) == 5
    assert "Stopped after 5 matches" in outcome.text
    big = run(Grep(max_file_bytes=10), {"pattern": "needle", "path": "src"}, root)
    assert "over 10 bytes" in big.text


def test_grep_refusals(root: Path) -> None:
    assert (
        "not a valid regular expression"
        in refusal(Grep(), {"pattern": "("}, root, "INVALID_ARGUMENTS").message
    )
    refusal(Grep(), {"pattern": ""}, root, "INVALID_ARGUMENTS")
    refusal(Grep(), {"pattern": "x", "path": "missing"}, root, "NOT_FOUND")
    refusal(Grep(), {"pattern": "x", "path": "src/data.bin"}, root, "BINARY_FILE")
    for path in ("..", "out_dir", "out_file.py"):
        refusal(Grep(), {"pattern": "needle", "path": path}, root, "PATH_ESCAPE")
