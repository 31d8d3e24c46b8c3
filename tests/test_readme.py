"""The README's Python is run as written, so it cannot rot (issue 12, item 8).

Each fenced ``python`` block runs in a fresh interpreter, in an empty working directory.
Every ``print(...)`` in a block states what it prints in a comment, on its own line or on the
next: ``print(len(x))  # 3``. The block's output must be exactly those lines, in order (so the
prints of a block run in the order they are written)."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The fenced python blocks of ``text``, each with the README line its code starts on."""
    return [(text.count("\n", 0, match.start(1)) + 1, match.group(1)) for match in FENCE.finditer(text)]


def expected_output(code: str) -> list[str]:
    """What the block's comments say its prints print, in source order."""
    comments = {
        token.start[0]: token.string.removeprefix("#").strip()
        for token in tokenize.generate_tokens(io.StringIO(code).readline)
        if token.type == tokenize.COMMENT
    }
    lines = code.splitlines()
    expected: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "print"
        ):
            end = node.end_lineno or node.lineno
            nxt = lines[end].strip() if end < len(lines) else ""
            if end in comments:
                comment = comments[end]
            elif nxt.startswith("#"):
                comment = comments[end + 1]
            else:
                raise AssertionError(f"line {node.lineno}: a print without the output it prints")
            expected.append((node.lineno, comment))
    return [text for _line, text in sorted(expected)]


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_has_python_to_run() -> None:
    assert len(BLOCKS) >= 2
    assert any("open_store" in code and "store.flush" in code for _line, code in BLOCKS)


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_a_readme_block_runs_and_prints_what_it_says(line: int, code: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"README.md:{line}: the block failed\n{done.stderr}"
    assert done.stdout.splitlines() == expected_output(code), f"README.md:{line}"


def test_the_expectations_are_read_from_the_comments() -> None:
    code = "x = 1\nprint(x)  # 1\nif x:\n    print(x + 1,\n          x)\n    # 2 1\n"
    assert expected_output(code) == ["1", "2 1"]
    with pytest.raises(AssertionError, match="without the output"):
        expected_output("print(1)\nx = 2\n")
