"""How ``--help`` shows options: a flag reads as a flag, a value as a word.

Typer labels every parameter with its Python type (``--yes <bool>``, ``--root <str>``), so a
flag looks as if it took a value. ``HarnessGroup`` (the ``harness`` app's group class) gives
each option of the app and of every command a plain label instead: nothing for a flag, the
option's ``metavar`` (``DIR``, ``URL``) or a word for its kind (``TEXT``, ``N``) for a value,
and nothing after a positional argument's name. It also joins the lines of each paragraph of a
command's help (``_reflow``): Typer keeps the single line breaks of a docstring's later
paragraphs, so text wrapped for the source printed ragged at a terminal's width.
"""

from __future__ import annotations

import inspect
from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

__all__ = ["HarnessGroup"]

_WORDS = {"str": "TEXT", "int": "N", "float": "NUMBER", "bool": "BOOLEAN", "Path": "PATH"}


def _word(label: str) -> str:
    """``<str>`` → ``TEXT``, ``<list[int]>`` → ``N`` (a repeatable option takes one each time)."""
    bare = label.strip("<>")
    if bare.startswith("list[") and bare.endswith("]"):
        bare = bare[len("list[") : -1]
    return _WORDS.get(bare, bare.upper())


def _reflow(text: str | None) -> str | None:
    """``text`` with each paragraph's lines joined by spaces, so the terminal wraps it. A
    paragraph that opens with ``\\b`` keeps its line breaks (click's convention), and what
    follows a ``\\f`` (help that is not shown) is left as it is."""
    if not text:
        return text
    shown, cut, hidden = inspect.cleandoc(text).partition("\f")
    paragraphs = [
        paragraph if paragraph.startswith("\b") else " ".join(line.strip() for line in paragraph.splitlines())
        for paragraph in shown.split("\n\n")
    ]
    return "\n\n".join(paragraphs) + cut + hidden


def _reflowed(command: Any) -> Any:
    """``command`` (and a group's commands) with ``_reflow``-ed help."""
    command.help = _reflow(command.help)
    for sub in getattr(command, "commands", {}).values():
        sub.help = _reflow(sub.help)
    return command


class _PlainOption(TyperOption):
    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        if self.metavar is not None:
            return self.metavar
        return _word(str(self.display_type(ctx)))


class _PlainArgument(TyperArgument):
    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # the argument's name (its metavar) already says what it is


def _plain(params: list[Any]) -> list[Any]:
    for param in params:
        if type(param) is TyperOption:
            param.__class__ = _PlainOption
        elif type(param) is TyperArgument:
            param.__class__ = _PlainArgument
    return params


class _PlainCommand(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _plain(super().get_params(ctx))


class HarnessGroup(TyperGroup):
    """The ``harness`` group: options and arguments shown with plain labels (module doc)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain(super().get_params(ctx))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if type(command) is TyperCommand:
            command.__class__ = _PlainCommand
        return None if command is None else _reflowed(command)

