"""write_file and edit_file: confined writes, before/after hashes, exact-match edits."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from harness.tools.base import ToolError
from harness.tools.edit_file import EditFile
from harness.tools.write_file import WriteFile

from .helpers import refusal, run, sha, snapshot


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "target.txt").write_text("untouched\n")
    return root, outside


def test_write_creates_with_parents(world: tuple[Path, Path]) -> None:
    root, _ = world
    outcome = run(WriteFile(), {"path": "a/b/new.txt", "content": "hello\nworld\n"}, root)
    target = root / "a" / "b" / "new.txt"
    assert target.read_text() == "hello\nworld\n"
    assert outcome.text == "Created a/b/new.txt (12 bytes, 2 lines)."
    assert outcome.meta == {
        "files": [{"path": "a/b/new.txt", "sha256": sha(target), "before": None, "access": "write"}]
    }


def test_write_overwrites_and_keeps_mode(world: tuple[Path, Path]) -> None:
    root, _ = world
    target = root / "run.sh"
    target.write_text("old\n")
    target.chmod(0o750)
    before = sha(target)
    outcome = run(WriteFile(), {"path": "run.sh", "content": "new"}, root)
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert outcome.text.startswith("Overwrote run.sh")
    assert outcome.meta == {
        "files": [{"path": "run.sh", "sha256": sha(target), "before": before, "access": "write"}]
    }
    assert [p.name for p in root.iterdir()] == ["run.sh"]  # no temporary file left behind


def test_write_same_content_changes_nothing(world: tuple[Path, Path]) -> None:
    root, _ = world
    target = root / "same.txt"
    target.write_text("x")
    mtime = target.stat().st_mtime_ns
    outcome = run(WriteFile(), {"path": "same.txt", "content": "x"}, root)
    assert "nothing was changed" in outcome.text
    assert target.stat().st_mtime_ns == mtime
    assert outcome.meta is not None and outcome.meta["files"][0]["before"] == sha(target)


def test_write_refusals(world: tuple[Path, Path]) -> None:
    root, _ = world
    (root / "dir").mkdir()
    (root / "file").write_text("f")
    refusal(WriteFile(), {"path": "dir", "content": "x"}, root, "IS_A_DIRECTORY")
    refusal(WriteFile(), {"path": "file/below.txt", "content": "x"}, root, "NOT_A_DIRECTORY")
    refusal(WriteFile(), {"path": "x.txt"}, root, "INVALID_ARGUMENTS")
    refusal(WriteFile(), {"path": "x.txt", "content": 5}, root, "INVALID_ARGUMENTS")
    refusal(WriteFile(), {"path": "x.txt", "content": "\ud800"}, root, "INVALID_ARGUMENTS")
    refusal(WriteFile(max_bytes=3), {"path": "x.txt", "content": "four"}, root, "INVALID_ARGUMENTS")
    assert not (root / "x.txt").exists()


def test_write_escapes_touch_nothing_outside(world: tuple[Path, Path]) -> None:
    root, outside = world
    os.symlink("../outside", root / "linkdir")
    os.symlink("../outside/target.txt", root / "linkfile")
    os.symlink("../outside/fresh.txt", root / "dangling")
    before_outside, before_root = snapshot(outside), snapshot(root)
    paths = [
        "../outside/target.txt",
        "../escaped.txt",
        str(outside / "target.txt"),
        "linkdir/target.txt",
        "linkdir/new/deeper.txt",
        "linkfile",
        "dangling",
    ]
    for path in paths:
        error = refusal(WriteFile(), {"path": path, "content": "pwned"}, root, "PATH_ESCAPE")
        assert repr(path) in error.message
        refusal(EditFile(), {"path": path, "old": "untouched", "new": "pwned"}, root, "PATH_ESCAPE")
    assert snapshot(outside) == before_outside
    assert snapshot(root) == before_root
    assert not (root.parent / "escaped.txt").exists()


def test_edit_replaces_once_and_records_hashes(world: tuple[Path, Path]) -> None:
    root, _ = world
    target = root / "code.py"
    target.write_text("a = 1\nb = 2\nc = 3\n")
    before = sha(target)
    outcome = run(EditFile(), {"path": "code.py", "old": "b = 2", "new": "b = 20\nb2 = 21"}, root)
    assert target.read_text() == "a = 1\nb = 20\nb2 = 21\nc = 3\n"
    assert outcome.text == "Replaced 1 occurrence in code.py (the new text starts on line 2)."
    assert outcome.meta == {
        "files": [{"path": "code.py", "sha256": sha(target), "before": before, "access": "write"}]
    }


def test_edit_ambiguity_and_replace_all(world: tuple[Path, Path]) -> None:
    root, _ = world
    target = root / "dup.txt"
    target.write_text("x\ny\nx\ny\nx\n")
    error = refusal(EditFile(), {"path": "dup.txt", "old": "x", "new": "z"}, root, "AMBIGUOUS_MATCH")
    assert "3 times" in error.message and "lines 1, 3, 5" in error.message
    assert target.read_text() == "x\ny\nx\ny\nx\n"
    outcome = run(EditFile(), {"path": "dup.txt", "old": "x\n", "new": "", "replace_all": True}, root)
    assert target.read_text() == "y\ny\n"
    assert outcome.text.startswith("Replaced 3 occurrences in dup.txt")


def test_edit_refusals(world: tuple[Path, Path]) -> None:
    root, _ = world
    (root / "t.txt").write_text("    indented\n")
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (root / "bin").write_bytes(b"\x00\x01")
    (root / "latin.txt").write_bytes(b"caf\xe9")
    assert (
        "indentation"
        in refusal(EditFile(), {"path": "t.txt", "old": "indented\n ", "new": "x"}, root, "NO_MATCH").message
    )
    assert (
        "CRLF"
        in refusal(EditFile(), {"path": "crlf.txt", "old": "one\ntwo", "new": "x"}, root, "NO_MATCH").message
    )
    refusal(EditFile(), {"path": "t.txt", "old": "absent", "new": "x"}, root, "NO_MATCH")
    refusal(EditFile(), {"path": "t.txt", "old": "indented", "new": "indented"}, root, "INVALID_ARGUMENTS")
    refusal(EditFile(), {"path": "t.txt", "old": "", "new": "x"}, root, "INVALID_ARGUMENTS")
    refusal(EditFile(), {"path": "bin", "old": "a", "new": "b"}, root, "BINARY_FILE")
    refusal(EditFile(), {"path": "latin.txt", "old": "caf", "new": "b"}, root, "NOT_UTF8")
    refusal(EditFile(), {"path": "missing.txt", "old": "a", "new": "b"}, root, "NOT_FOUND")
    assert (root / "t.txt").read_text() == "    indented\n"


@pytest.fixture(scope="module")
def edit_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("edit")


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet="ab\n", max_size=30),
    old=st.text(alphabet="ab\n", min_size=1, max_size=3),
    new=st.text(alphabet="abc\n", max_size=3),
    replace_all=st.booleans(),
)
def test_edit_follows_str_replace(edit_root: Path, text: str, old: str, new: str, replace_all: bool) -> None:
    target = edit_root / "f.txt"
    target.write_text(text, newline="")
    arguments = {"path": "f.txt", "old": old, "new": new, "replace_all": replace_all}
    count = text.count(old)
    try:
        outcome = run(EditFile(), arguments, edit_root)
    except ToolError as error:
        if old == new:
            assert error.code == "INVALID_ARGUMENTS"
        elif count == 0:
            assert error.code == "NO_MATCH"
        else:
            assert count > 1 and not replace_all and error.code == "AMBIGUOUS_MATCH"
        assert target.read_bytes() == text.encode()
        return
    expected = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    assert target.read_bytes() == expected.encode()
    assert outcome.meta is not None
    assert outcome.meta["files"][0]["sha256"] == sha(target)


def test_write_counts_one_line_and_one_byte_in_the_singular(world: tuple[Path, Path]) -> None:
    root, _ = world
    assert run(WriteFile(), {"path": "one.txt", "content": "x"}, root).text == (
        "Created one.txt (1 byte, 1 line)."
    )
