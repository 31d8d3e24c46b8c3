"""``todo_write``: the model's working plan, recorded as a ``todo/write`` event.

Each call carries the whole list (the last one wins, FORMAT §4); the tool validates it
and calls ``context.record("todo/write", {"todos": [{"content", "status"}, ...]})``.
It changes nothing outside the log, so it needs no approval, but it is exclusive: two
lists written in the same step would race for "last".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.tools.base import ToolContext, ToolOutcome, ToolSpec
from harness.tools.schema import check_arguments

__all__ = ["STATUSES", "TodoWrite"]

STATUSES = ("pending", "in_progress", "completed")
"""The statuses a todo item may have."""

_MARKS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}

_DESCRIPTION = (
    "Keep a short plan for the task as a todo list. Each call replaces the whole list, so "
    "always send every item, each with its status: pending, in_progress (the one being "
    "worked on now) or completed. Update it as work progresses; send an empty list to clear it."
)


class TodoWrite:
    """The ``todo_write`` tool (no approval, exclusive); see the module doc."""

    changes_world = False
    exclusive = True

    def __init__(self, *, max_items: int = 100, max_item_chars: int = 2000) -> None:
        """``max_items`` caps the list, ``max_item_chars`` each item's text."""
        self.spec = ToolSpec(
            name="todo_write",
            description=_DESCRIPTION,
            parameters={
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "maxItems": max_items,
                        "description": "The complete list, in order.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "content": {
                                    "type": "string",
                                    "minLength": 1,
                                    "maxLength": max_item_chars,
                                    "description": "What to do.",
                                },
                                "status": {"type": "string", "enum": list(STATUSES)},
                            },
                            "required": ["content", "status"],
                            "additionalProperties": False,
                        },
                    }
                },
                "required": ["todos"],
                "additionalProperties": False,
            },
        )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        """Validate the list and record it."""
        args = check_arguments(self.spec.name, self.spec.parameters, arguments)
        todos = [{"content": item["content"], "status": item["status"]} for item in args["todos"]]
        context.record("todo/write", {"todos": todos})
        if not todos:
            return ToolOutcome("The todo list is now empty.")
        counts = {status: sum(1 for item in todos if item["status"] == status) for status in STATUSES}
        noun = "item" if len(todos) == 1 else "items"
        summary = (
            f"Todo list saved: {len(todos)} {noun} ({counts['completed']} completed, "
            f"{counts['in_progress']} in progress, {counts['pending']} pending)."
        )
        lines = [f"{_MARKS[item['status']]} {item['content']}" for item in todos]
        return ToolOutcome(summary + "\n" + "\n".join(lines))
