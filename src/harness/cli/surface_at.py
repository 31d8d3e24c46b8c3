"""``harness surface ID --at SEQ``: the Surface and the model history right after an event, by
``surface_at``/``messages_at`` (the fold every append and restore runs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from harness.cli.render import messages_table, plural
from harness.events.json import thaw
from harness.query import messages_at, surface_at
from harness.session.session import Session

__all__ = ["show_surface_at"]


def show_surface_at(session: Session, seq: int, as_json: bool, print_json: Callable[[Any], None]) -> None:
    """Print the Surface right after ``seq``: ``surface --json``'s document with ``at`` added,
    or its node count, replace generation and messages. ``InvalidQuery`` for a seq outside the
    log (the caller turns it into one line)."""
    fold = surface_at(session, seq)
    messages = messages_at(session, seq)
    if as_json:
        print_json(
            {
                "at": seq,
                "nodes": list(fold.nodes),
                "replaceGeneration": fold.replace_generation,
                "messages": [thaw(m.raw) for m in messages],
            }
        )
        return
    console = Console(highlight=False)
    console.print(
        Text(
            f"right after seq {seq}: {plural(len(fold.nodes), 'node')}, replace generation "
            f"{fold.replace_generation}, {plural(len(messages), 'message')}"
        )
    )
    console.print(messages_table(messages))
