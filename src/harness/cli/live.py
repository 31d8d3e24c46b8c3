"""Printing a running agent: a Session observer that shows what happens as it is logged."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape

from harness.events.event import Event
from harness.events.types import Aspect, Hooks
from harness.present.summary import retry_line

__all__ = ["LivePrinter"]

_RESULT_LINES = 6


class LivePrinter:
    """Streams assistant text, and one line per tool call, result, approval, model-request
    retry (``llm/retry``: what failed and how long the wait is) and turn end.

    Subscribe it to a session: ``session.subscribe(LivePrinter(console))``. The turn-end line
    waits for ``stored()``: call it once the flush after the turn returned.
    """

    def __init__(self, console: Console, *, reasoning: bool = False) -> None:
        self.console = console
        self.reasoning = reasoning
        self._mid_line = False
        self._ended: str | None = None

    def _line(self, markup: str) -> None:
        if self._mid_line:
            self.console.print()
            self._mid_line = False
        self.console.print(markup, highlight=False, soft_wrap=True)

    def __call__(self, event: Event) -> None:
        show = _LINES.get(event.type)
        if show is None:
            return
        data = event.data
        if isinstance(data, Mapping):
            show(self, data)

    def _tool_call(self, data: Mapping[str, Any]) -> None:
        arguments = escape(_short(str(data.get("arguments"))))
        self._line(f"[cyan]→ {escape(str(data.get('name')))}[/] {arguments}")

    def _retry(self, data: Mapping[str, Any]) -> None:
        self._line(f"[yellow]{escape(retry_line(data))}[/]")

    def _asked(self, data: Mapping[str, Any]) -> None:
        self._line(f"[yellow]? approval asked for {escape(str(data.get('toolName')))}[/]")

    def _decided(self, data: Mapping[str, Any]) -> None:
        self._line(f"[yellow]  decided: {escape(str(data.get('outcome')))}[/]")

    def _turn_end(self, data: Mapping[str, Any]) -> None:
        reason = data.get("reason")
        label = reason.get("kind") if isinstance(reason, Mapping) else reason
        detail = ""
        if isinstance(reason, Mapping) and isinstance(reason.get("error"), Mapping):
            error = reason["error"]
            detail = f": {error.get('code')} {error.get('message')}"
            if isinstance(wait := error.get("providerRetryAfterMs"), int | float):
                detail += f" (the provider asked for a wait of {wait / 1000:g} s)"
        style = "green" if label == "completed" else "red"
        turn = escape(str(data.get("turn")))
        # Said once the turn is stored (``stored``): a turn whose flush fails never "ended".
        self._ended = f"[{style}]turn {turn} ended: {escape(str(label))}{escape(detail)}[/]"

    def stored(self) -> None:
        """Print the line of the turn that ended, now that it is stored."""
        if self._ended is not None:
            self._line(self._ended)
            self._ended = None

    def _chunk(self, data: Mapping[str, Any]) -> None:
        chunk = data.get("chunk")
        if not isinstance(chunk, Mapping):
            return
        kind = chunk.get("type")
        if kind == "text-delta":
            self.console.print(escape(str(chunk.get("text", ""))), end="", highlight=False, soft_wrap=True)
            self._mid_line = True
        elif kind == "reasoning-delta" and self.reasoning:
            text = escape(str(chunk.get("text", "")))
            self.console.print(f"[dim]{text}[/]", end="", highlight=False, soft_wrap=True)
            self._mid_line = True

    def _result(self, data: Mapping[str, Any]) -> None:
        message = data.get("message")
        text = ""
        failed = False
        if isinstance(message, Mapping):
            for block in message.get("content", ()):
                if isinstance(block, Mapping) and block.get("type") == "tool-result":
                    failed = block.get("isError") is True
                    text = "".join(
                        str(part.get("text", ""))
                        for part in block.get("content", ())
                        if isinstance(part, Mapping)
                    )
        lines = text.splitlines() or [""]
        shown = lines[:_RESULT_LINES]
        if len(lines) > _RESULT_LINES:
            more = len(lines) - _RESULT_LINES
            shown.append(f"… {more} more {'line' if more == 1 else 'lines'}")
        style = "red" if failed else "dim"
        body = "\n".join(f"  {escape(line)}" for line in shown)
        self._line(f"[{style}]{body}[/]")


_LINES: Hooks[Callable[[LivePrinter, Mapping[str, Any]], None]] = Hooks(Aspect.LIVE)
for _name, _show in {
    "assistant/chunk": LivePrinter._chunk,
    "tool/call": LivePrinter._tool_call,
    "tool/result": LivePrinter._result,
    "llm/retry": LivePrinter._retry,
    "approval/asked": LivePrinter._asked,
    "approval/decided": LivePrinter._decided,
    "turn/end": LivePrinter._turn_end,
}.items():
    _LINES.register(_name)(_show)


def _short(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
