"""``harness surface`` on a real terminal width (issue 12 item 10, review): one line per
message at 80, 100 and 200 columns; the source column no longer eats the width so the
content wraps one word per line; session text prints literally (no rich markup)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import harness
from harness.cli import app
from harness.cli.render import messages_table
from harness.messages.model import Message
from tests.test_fixtures_dsh import FIXTURES

WIDTHS = (80, 100, 200)
PLUGIN = "@deepseek-ai/dsh-system-prompt"
LONG = "Current runtime context. " * 20


def messages() -> list[Message]:
    raw = [
        harness.user_message("Read the notes [red]file[/] please"),
        harness.user_message(LONG, source={"kind": "plugin", "plugin": PLUGIN}),
        harness.assistant_message("Done: " + "word " * 60, provider="deepseek-official", model="m"),
    ]
    return [Message(m) for m in raw]


def render(width: int) -> list[str]:
    screen = io.StringIO()
    Console(file=screen, width=width, color_system=None).print(messages_table(messages(), width))
    return screen.getvalue().splitlines()


@pytest.mark.parametrize("width", WIDTHS)
def test_each_message_is_one_line_that_fits(width: int) -> None:
    lines = render(width)
    assert len(lines) == 2 + 3, lines  # header, rule, one line per message
    assert all(len(line) <= width for line in lines), lines
    header = lines[0].split()
    assert header == ["#", "role", "source", "content"]
    rows = lines[2:]
    for index, row in enumerate(rows):
        assert row.split()[0] == str(index)
    content_at = lines[0].index("content")
    assert content_at <= (45 if width < 120 else 60), lines[0]  # the content keeps most of the width
    assert all(len(row.rstrip()) - content_at >= min(width - content_at, 30) for row in rows[1:])


@pytest.mark.parametrize("width", WIDTHS)
def test_the_plugin_source_is_named_at_every_width(width: int) -> None:
    text = "\n".join(render(width))
    assert ("plugin:" + PLUGIN if width >= 120 else "plugin:dsh-system-prompt") in text


def test_message_text_prints_literally() -> None:
    assert "Read the notes [red]file[/] please" in "\n".join(render(200))


@pytest.mark.parametrize("width", WIDTHS)
def test_harness_surface_of_a_dsh_file_fits(width: int) -> None:
    path = Path(FIXTURES) / "02-tool-call.jsonl"
    result = CliRunner().invoke(app, ["surface", str(path)], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "5 nodes, replace generation 0, 5 messages"
    assert len(lines) == 1 + 2 + 5, result.stdout
    assert all(len(line.rstrip()) <= width for line in lines)
