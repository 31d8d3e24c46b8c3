"""Text from the user or from a session prints literally in every CLI command: an id, a
path, a title, a message or a model name holding rich markup (``[red]``, ``[/]``) is never
interpreted, and a stray closing tag never becomes a ``MarkupError`` traceback (review of
issue 12 items 10-12)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

import harness
from harness.cli import app
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore

MARKUP_IDS = ("[/]", "[bold red]x", "a[/red]b", "tail\\")


def invoke(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--store", str(root), *args], env={"COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("ident", MARKUP_IDS)
@pytest.mark.parametrize(
    "command",
    [["log"], ["surface"], ["verify"], ["export"], ["check"], ["compact"], ["run", "--session"]],
)
def test_an_unknown_id_holding_markup_is_named_as_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], ident: str
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-unused")
    args = [*command, ident] + (["do it"] if command[0] == "run" else [])
    code, _, err = invoke(tmp_path, *args)
    assert code in (1, 2), err
    assert "Traceback" not in err and "MarkupError" not in err
    assert ident in err, err  # the id as typed, nothing swallowed as a style


@pytest.fixture
def root(tmp_path: Path) -> Path:
    async def build() -> None:
        store = SessionStore(JsonlBackend(tmp_path))
        session = await store.create(id="s-[red]1[/]", cwd="/srv/[/]proj")
        session.append("turn/start", {"turn": 1})
        message = harness.user_message("fix [bold]it[/bold] [/] now")
        session.append("user/message", message, surface_op="append")
        session.append("session/title", {"title": "Title [/] [red]"})
        session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
        await store.close()

    asyncio.run(build())
    return tmp_path


def test_session_content_prints_literally(root: Path) -> None:
    code, out, err = invoke(root, "sessions")
    assert code == 0, err
    assert "s-[red]1[/]" in out and "Title [/] [red]" in out and "/srv/[/]proj" in out
    code, out, err = invoke(root, "log", "s-[red]1[/]")
    assert code == 0, err
    assert "fix [bold]it[/bold] [/] now" in out and "Title [/] [red]" in out
    code, out, err = invoke(root, "surface", "s-[red]1[/]")
    assert code == 0, err
    assert "fix [bold]it[/bold] [/] now" in out
    code, out, err = invoke(root, "verify", "s-[red]1[/]")
    assert code == 0, err
    assert "s-[red]1[/]" in out


def test_chat_names_a_model_holding_markup_as_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-unused")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = CliRunner().invoke(
        app,
        ["--store", str(tmp_path / "s"), "chat", "-w", str(workspace), "--model", "m[/]"],
        input="/exit\n",
    )
    assert result.exit_code == 0, repr(result.exception)
    assert "· m[/] ·" in result.stdout


@pytest.mark.parametrize("command", ["log", "surface"])
def test_a_markup_id_on_a_terminal_loads_behind_a_bar_without_a_traceback(
    tmp_path: Path, command: str
) -> None:
    """The loading bar drew its label as markup: on a terminal (FORCE_COLOR makes rich treat
    the output as one) ``harness log '[/]'`` died with a MarkupError traceback."""
    result = CliRunner().invoke(
        app, ["--store", str(tmp_path), command, "[x]y[/]"], env={"FORCE_COLOR": "1", "COLUMNS": "100"}
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (1, 2) and "[x]y[/]" in result.stderr


@pytest.mark.parametrize("command", ["log", "surface"])
@pytest.mark.parametrize("target", ["missing.jsonl", "./nope", "logs/x.jsonl.zstd"])
def test_log_and_surface_say_a_missing_file_is_missing(tmp_path: Path, command: str, target: str) -> None:
    """As ``verify PATH`` does: not "no stored session 'missing.jsonl' under ~/.local/…"."""
    code, _, err = invoke(tmp_path, command, target)
    assert code == 2, err
    assert f"no such file: {target}" in err and "under" not in err
