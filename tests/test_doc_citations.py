"""Every ``FORMAT §N`` and ``SPEC §N`` the code, the tests and the docs cite resolves inside the
repo: ``docs/format.md`` (the on-disk format) and ``docs/spec.md`` (the Session contract) each
have a heading carrying the number."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = {"FORMAT": REPO / "docs" / "format.md", "SPEC": REPO / "docs" / "spec.md"}
CITATION = re.compile(r"\b(FORMAT|SPEC) §(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#+ .*?§(\d+(?:\.\d+)*)\b")


def citations() -> dict[tuple[str, str], list[str]]:
    """Each cited (document, section), with where it is cited."""
    found: dict[tuple[str, str], list[str]] = {}
    code = [*(REPO / "src").rglob("*.py"), *(REPO / "tests").rglob("*.py")]
    for path in [*code, *(REPO / "docs").rglob("*.md"), REPO / "README.md"]:
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            for match in CITATION.finditer(line):
                where = f"{path.relative_to(REPO)}:{number}"
                found.setdefault((match.group(1), match.group(2)), []).append(where)
    return found


def headings(path: Path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {m.group(1) for line in lines if (m := HEADING.match(line))}


def test_every_citation_resolves_to_a_heading() -> None:
    cited = citations()
    assert len(cited) > 30  # the check is looking at the real citations
    sections = {name: headings(path) for name, path in DOCS.items()}
    missing = {
        f"{name} §{number}": places[:3]
        for (name, number), places in sorted(cited.items())
        if number not in sections[name]
    }
    assert not missing, f"cited sections with no heading in docs/format.md or docs/spec.md: {missing}"


@pytest.mark.parametrize("name", sorted(DOCS))
def test_the_documents_hold_no_python_blocks(name: str) -> None:
    # every python block in docs/ runs in the tests; these two documents hold none
    assert "```python" not in DOCS[name].read_text(encoding="utf-8")
