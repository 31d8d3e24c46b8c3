"""The tools an agent offers, by name, in a fixed order; and the built-in set.

``specs()`` is what goes into ``EpochHeader.tools``: ``[{name, description, parameters}]``
in registration order (FORMAT §4 compares tools in order, so the order is part of the
request). Iterating a registry yields its tools in that order, so it can be passed where
a ``Sequence[Tool]``-like iterable is wanted (``list(registry)``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator
from typing import Any

from harness.errors import HarnessError
from harness.tools.base import Tool
from harness.tools.edit_file import EditFile
from harness.tools.grep import Grep
from harness.tools.list_dir import ListDir
from harness.tools.read_file import ReadFile
from harness.tools.shell import RunShell
from harness.tools.todo_write import TodoWrite
from harness.tools.write_file import WriteFile

__all__ = ["DuplicateTool", "InvalidToolSpec", "ToolRegistry", "default_registry", "default_tools"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class DuplicateTool(HarnessError, ValueError):
    """A tool was registered under a name that is already taken."""


class InvalidToolSpec(HarnessError, ValueError):
    """A tool whose spec cannot be offered to a model: a bad name, or parameters that are
    not a JSON-schema object (still a ``ValueError``, as it always was)."""


class ToolRegistry:
    """Tools by name, kept in registration order."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        """Register each of ``tools`` in order."""
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add ``tool``; ``DuplicateTool`` when its name is taken, ``InvalidToolSpec`` when the
        name is not 1–64 characters of letters, digits, ``_`` and ``-`` or the parameters
        are not a JSON-schema object."""
        name = tool.spec.name
        if not _NAME.match(name):
            raise InvalidToolSpec(f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'")
        if tool.spec.parameters.get("type") != "object":
            raise InvalidToolSpec(f"tool {name!r}: parameters must be a JSON schema with type 'object'")
        if name in self._tools:
            raise DuplicateTool(f"a tool named {name!r} is already registered")
        self._tools[name] = tool

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        """``[{name, description, parameters}]`` in registration order (deep copies)."""
        return [copy.deepcopy(tool.spec.to_json()) for tool in self._tools.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __repr__(self) -> str:
        return f"ToolRegistry({self.names()!r})"


def default_tools() -> list[Tool]:
    """Fresh instances of the built-in tools, in the order they are offered."""
    return [ReadFile(), WriteFile(), EditFile(), ListDir(), Grep(), RunShell(), TodoWrite()]


def default_registry() -> ToolRegistry:
    """A registry holding ``default_tools()``."""
    return ToolRegistry(default_tools())
