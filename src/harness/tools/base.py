"""The tool protocol (SPEC §6, FORMAT §4 ``tool/call`` / ``tool/result``).

A tool has a spec the model sees (name, description, JSON-schema parameters), says
whether it changes the world (then, under approval policy ``ask``, the loop asks before
running it) and whether it must run alone (``exclusive``) or may run beside other
parallel-safe calls of the same step. ``run`` gets the parsed arguments and a
``ToolContext`` and returns a ``ToolOutcome``; it raises ``ToolError`` for a refusal
the model should see (bad arguments, a path outside the workspace, a timeout), which
the loop turns into an error result. Any other exception is a bug of the tool and is
also reported to the model as an error result (code ``TOOL_CRASHED``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import msgspec

from harness.events.event import Event

if TYPE_CHECKING:
    from harness.query.line import SessionReader
    from harness.session.header import SessionHeader

__all__ = ["Tool", "ToolContext", "ToolError", "ToolOutcome", "ToolSpec"]


class ToolSpec(msgspec.Struct, frozen=True):
    """What the model is told about a tool (``EpochHeader.tools`` entries)."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


class ToolOutcome(msgspec.Struct, frozen=True):
    """A tool's result: the text the model reads, whether it is an error, and opaque
    ``meta`` JSON recorded in the ``tool/result`` event (file tools record content hashes:
    ``{"files": [{"path", "sha256", "access": "read"|"write"}]}``, ``sha256`` null when the
    file does not exist)."""

    text: str
    is_error: bool = False
    meta: dict[str, Any] | None = None


class ToolError(Exception):
    """A refusal the model should read (``code`` names it, e.g. ``PATH_ESCAPE``).

    ``meta`` is optional JSON for the ``tool/result`` event, as ``ToolOutcome.meta``: a
    refusal that still left facts behind carries them (``run_shell`` on ``TIMEOUT`` or
    ``CANCELLED`` records its command, exit status and any background pids). The loop
    should copy it into the result's ``meta`` when it is not None.
    """

    def __init__(self, code: str, message: str, *, meta: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.meta = meta


class ToolContext:
    """What a running tool may use: the workspace root, a cancel signal, ``record``
    to append a log-only event (``todo_write`` records ``todo/write``) and ``events``, a
    read-only view of the running session's own log (``session_search`` reads it; empty
    when the caller gives none). ``header`` is that session's header (its id and fork
    parent) and ``sessions`` a read-only handle on the store it lives in, through which
    ``session_search`` reaches the session's fork ancestors (``None``: none reachable)."""

    __slots__ = ("call_id", "cancel", "events", "header", "record", "root", "sessions")

    def __init__(
        self,
        root: Path,
        *,
        call_id: str = "",
        cancel: asyncio.Event | None = None,
        record: Callable[[str, Mapping[str, Any]], None] | None = None,
        events: Sequence[Event] = (),
        header: SessionHeader | None = None,
        sessions: SessionReader | None = None,
    ) -> None:
        self.root = root
        self.call_id = call_id
        self.cancel = cancel or asyncio.Event()
        self.record = record or (lambda kind, data: None)
        self.events = events
        self.header = header
        self.sessions = sessions


@runtime_checkable
class Tool(Protocol):
    """A callable tool (see the module doc)."""

    @property
    def spec(self) -> ToolSpec: ...

    @property
    def changes_world(self) -> bool:
        """True for tools that write files or run commands: approval applies."""
        ...

    @property
    def exclusive(self) -> bool:
        """True when the call must run alone (no other call of the step beside it)."""
        ...

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome: ...
