"""``--help`` at a normal terminal: flags read as flags, and the command list gives each
command a whole one-line summary (issue 12 items 10-12, review)."""

from __future__ import annotations

import inspect
import re

import pytest
import typer
from typer.testing import CliRunner

from harness.cli import app

COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
WIDTHS = (80, 100)


def help_text(*args: str, width: int) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": str(width), "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_command_is_listed() -> None:
    assert {"log", "sessions", "run", "resume", "verify", "chat", "surface", "export"} <= set(COMMANDS)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_shows_no_python_type_labels(command: str, width: int) -> None:
    """Typer's ``<bool>``/``<str>`` labels made ``--yes <bool>`` look as if it took a value."""
    text = help_text(*([command] if command else []), width=width)
    assert not re.search(r"<(str|bool|int|float|list\[[a-z]+\])>", text), text


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_flags_take_no_value_in_help(command: str, width: int) -> None:
    text = help_text(*([command] if command else []), width=width)
    for line in text.splitlines():
        found = re.search(r"(--json|--yes|--help|--version|--fallback|--llm|--engine)\b(.*)", line)
        if found:
            after = found.group(2).lstrip(" │-y,")
            # The help sentence follows the flag directly: no metavar word in between.
            assert not re.match(r"[A-Z<][A-Za-z_<>\[\]|]*\s{2,}", after), line


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_summary_is_one_whole_sentence(command: str) -> None:
    """The Commands list shows the first paragraph of the help: a hard-wrapped docstring
    broke it mid-sentence ("resumed after a / world check")."""
    group = typer.main.get_command(app)
    help_ = group.commands[command].help or ""  # type: ignore[attr-defined]
    first = inspect.cleandoc(help_).split("\n\n")[0]
    assert "\n" not in first, first
    assert first.endswith("."), first
    assert len(first) <= 100, first  # two lines at most beside the names at 80 columns


@pytest.mark.parametrize("width", WIDTHS)
def test_the_command_list_breaks_no_summary_mid_line(width: int) -> None:
    text = help_text(width=width)
    listing = text[text.index("Commands") :]
    entries: list[str] = []
    for line in listing.splitlines()[1:]:
        body = line.strip("│╰─╯ ")
        if not body:
            continue
        if re.match(r"[a-z][a-z-]+\s{2,}", body):
            entries.append(body)
        elif entries:
            entries[-1] += " " + body
    assert len(entries) == len(COMMANDS)
    for entry in entries:
        assert entry.endswith("."), entry


def _paragraphs(text: str) -> list[list[str]]:
    """The description of a ``--help`` page (between the usage line and the first panel), as
    paragraphs of stripped lines."""
    block = text.split("╭")[0].splitlines()
    usage = next(index for index, line in enumerate(block) if "Usage:" in line)
    paragraphs: list[list[str]] = [[]]
    for line in block[usage + 1 :]:
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [paragraph for paragraph in paragraphs if paragraph]


@pytest.mark.parametrize("command", [(name,) for name in COMMANDS] + [("mcp", "list")], ids=" ".join)
def test_help_paragraphs_wrap_at_the_terminal_width(command: tuple[str, ...]) -> None:
    """Typer keeps the single line breaks of a docstring's later paragraphs: text wrapped for
    the source printed ragged (``Exit 0 when`` / ``nothing blocks,`` / ``1 when ...``). Every
    line of a paragraph but its last now fills most of the 80 columns."""
    for paragraph in _paragraphs(help_text(*command, width=80)):
        short = [line for line in paragraph[:-1] if len(line) < 50]
        assert short == [], paragraph
