"""Every python block in docs/ is a whole program that runs as written (issue 35, deliverable 5).

The test is parametrised over the ```` ```python ```` blocks found in ``docs/**/*.md``, so a block
added later runs too; none is skipped. Each runs in a fresh interpreter, in an empty working
directory, with nothing but the venv: a block that needs a model uses a scripted one
(``harness.testing``, or the framework's own test model), a block that needs a server starts it.

Every ``print(...)`` states what it prints, in comments: on its own line (one output line), or,
when that line has no comment, in the comment lines right below it (one output line each, for a
print in a loop). The block's output must be exactly those lines, in order.
"""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
OPENING = re.compile(r"^```[ \t]*([\w+-]*)", re.MULTILINE)
PYTHON_NAMES = {"py", "python3", "py3", "pycon", "ipython"}  # spellings the test would not find


def python_blocks() -> list[tuple[str, str]]:
    """Every fenced python block under docs/, as (``path:line`` of its first code line, code)."""
    blocks = []
    for path in sorted(DOCS.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start(1)) + 1
            blocks.append((f"{path.relative_to(REPO)}:{line}", match.group(1)))
    return blocks


def expected_output(code: str) -> list[str]:
    """What the block's comments say its prints print, in source order."""
    comments = {
        token.start[0]: token.string.removeprefix("#").strip()
        for token in tokenize.generate_tokens(io.StringIO(code).readline)
        if token.type == tokenize.COMMENT
    }
    lines = code.splitlines()
    expected: list[tuple[int, list[str]]] = []
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "print"
        ):
            end = node.end_lineno or node.lineno
            if end in comments:
                expected.append((node.lineno, [comments[end]]))
                continue
            below: list[str] = []
            number = end + 1
            while number <= len(lines) and lines[number - 1].strip().startswith("#"):
                below.append(comments[number])
                number += 1
            if not below:
                raise AssertionError(f"line {node.lineno}: a print without the output it prints")
            expected.append((node.lineno, below))
    return [text for _line, texts in sorted(expected) for text in texts]


BLOCKS = python_blocks()


def test_the_docs_have_python_to_run() -> None:
    assert len(BLOCKS) >= 11
    assert {where.split(":")[0] for where, _ in BLOCKS} >= {
        "docs/integrations/adk.md",
        "docs/integrations/langgraph.md",
        "docs/integrations/openai-agents.md",
        "docs/integrations/pydantic-ai.md",
    }


def test_every_python_fence_is_spelled_python() -> None:
    # a block fenced ```py would never run here: python blocks are fenced ```python
    odd = [
        f"{path.relative_to(REPO)}: ```{match.group(1)}"
        for path in sorted(DOCS.rglob("*.md"))
        for match in OPENING.finditer(path.read_text(encoding="utf-8"))
        if match.group(1).lower() in PYTHON_NAMES
    ]
    assert not odd


@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_a_docs_block_runs_and_prints_what_it_says(where: str, code: str, tmp_path: Path) -> None:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("OTEL_", "HARNESS_"))
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**environment, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"{where}: the block failed\n{done.stderr}"
    assert done.stdout.splitlines() == expected_output(code), f"{where}\n{done.stderr}"


def test_the_expectations_are_read_from_the_comments() -> None:
    code = (
        "x = 1\nprint(x)  # 1\nif x:\n    print(x + 1,\n          x)\n    # 2 1\n"
        "for y in (3, 4):\n    print(y)\n# 3\n# 4\nz = 5\n"
    )
    assert expected_output(code) == ["1", "2 1", "3", "4"]
    with pytest.raises(AssertionError, match="without the output"):
        expected_output("print(1)\nx = 2\n")
