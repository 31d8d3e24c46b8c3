"""read_file: numbered windows of text, hashes of the whole file, clear refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.tools.read_file import ReadFile

from .helpers import refusal, run, sha


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside.txt").write_text("secret\n")
    return workspace


def test_numbered_lines_and_meta(root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\r\nthree")
    outcome = run(ReadFile(), {"path": "a.txt"}, root)
    assert not outcome.is_error
    assert outcome.text == "     1\tone\n     2\ttwo\n     3\tthree"
    assert outcome.meta == {"files": [{"path": "a.txt", "sha256": sha(root / "a.txt"), "access": "read"}]}


def test_absolute_path_inside_and_link_records_the_real_path(root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("b\n")
    os.symlink("sub/b.txt", root / "alias.txt")
    outcome = run(ReadFile(), {"path": str(root / "alias.txt")}, root)
    assert outcome.meta is not None
    assert outcome.meta["files"][0]["path"] == "sub/b.txt"


def test_window_and_footer(root: Path) -> None:
    (root / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    outcome = run(ReadFile(), {"path": "long.txt", "offset": 3, "limit": 2}, root)
    assert outcome.text.splitlines()[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "[Lines 3–4 of 10 shown. Call read_file with offset=5 to read on.]" in outcome.text
    tail = run(ReadFile(), {"path": "long.txt", "offset": 9}, root)
    assert tail.text.endswith("[Lines 9–10 of 10 shown.]")
    default = run(ReadFile(default_limit=4), {"path": "long.txt"}, root)
    assert "offset=5" in default.text
    # The hash covers the whole file whatever window was shown.
    assert outcome.meta == default.meta


def test_output_and_line_caps(root: Path) -> None:
    (root / "wide.txt").write_text("x" * 50 + "\n" + "".join(f"{n:04}\n" for n in range(200)))
    tool = ReadFile(max_line_chars=10, max_output_chars=100)
    outcome = run(tool, {"path": "wide.txt"}, root)
    body, _, note = outcome.text.partition("\n\n")
    assert body.splitlines()[0] == "     1\t" + "x" * 10 + " [… line cut: 40 more characters]"
    assert len(body) <= 100
    shown_last = int(body.splitlines()[-1].split("\t")[0])
    assert f"offset={shown_last + 1}" in note


def test_empty_and_not_utf8(root: Path) -> None:
    (root / "empty.txt").write_bytes(b"")
    assert run(ReadFile(), {"path": "empty.txt"}, root).text == "(empty.txt is empty.)"
    (root / "latin.txt").write_bytes(b"caf\xe9\n")
    outcome = run(ReadFile(), {"path": "latin.txt"}, root)
    assert "caf\ufffd" in outcome.text
    assert "not valid UTF-8" in outcome.text


def test_refusals(root: Path) -> None:
    (root / "bin.dat").write_bytes(b"\x7fELF\x00\x01\x02")
    (root / "dir").mkdir()
    (root / "a.txt").write_text("a\n")
    assert "binary" in refusal(ReadFile(), {"path": "bin.dat"}, root, "BINARY_FILE").message
    refusal(ReadFile(), {"path": "missing.txt"}, root, "NOT_FOUND")
    assert "list_dir" in refusal(ReadFile(), {"path": "dir"}, root, "IS_A_DIRECTORY").message
    refusal(ReadFile(max_file_bytes=1), {"path": "a.txt"}, root, "FILE_TOO_LARGE")
    assert (
        "past the end"
        in refusal(ReadFile(), {"path": "a.txt", "offset": 5}, root, "INVALID_ARGUMENTS").message
    )
    for bad in (
        {},
        {"path": "a.txt", "offset": 0},
        {"path": "a.txt", "limit": "3"},
        {"path": "a.txt", "x": 1},
    ):
        refusal(ReadFile(), bad, root, "INVALID_ARGUMENTS")


def test_escapes(root: Path) -> None:
    os.symlink("../outside.txt", root / "leak.txt")
    for path in ("../outside.txt", str(root.parent / "outside.txt"), "leak.txt"):
        refusal(ReadFile(), {"path": path}, root, "PATH_ESCAPE")
