"""The names MCP tools are offered under: ``mcp__<server>__<tool>``.

DeepSeek and OpenAI take function names of 1-64 letters, digits, ``_`` and ``-``
(``ToolRegistry`` enforces the same). A tool name with any other character has it replaced
by ``_``; a name that would be longer than 64 characters, or that another tool already
took, is cut and ends in ``_`` and 8 hex digits of a hash of the server and tool names, so
the same tool gets the same name every time it is listed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container
from typing import Final

__all__ = ["MAX_NAME", "PREFIX", "exposed_name"]

PREFIX: Final = "mcp__"
MAX_NAME: Final = 64
_OTHER = re.compile(r"[^A-Za-z0-9_-]")


def exposed_name(server: str, tool: str, taken: Container[str] = ()) -> str:
    """The name the model sees for ``tool`` of ``server`` (see the module doc)."""
    name = f"{PREFIX}{server}__{_OTHER.sub('_', tool)}"
    if len(name) <= MAX_NAME and name not in taken and name == f"{PREFIX}{server}__{tool}":
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode("utf-8", "surrogatepass")).hexdigest()
    for start in range(0, len(digest) - 8 + 1, 8):
        suffix = f"_{digest[start : start + 8]}"
        candidate = name[: MAX_NAME - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
    raise ValueError(f"no free name for tool {tool!r} of MCP server {server!r}")
