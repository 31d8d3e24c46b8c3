"""What the log records of an MCP server: the log-only ``mcp/connect`` event, and its reader.

``mcp/connect`` is not a DeepSeek Harness type, so it is appended with ``ignorable=True``
(a dsh reader skips it). One is written per configured server each time harness connects
(``harness run``/``chat`` before the first turn, ``harness resume`` after its world check)::

    {"server": "notes", "transport": "stdio" | "http", "endpoint": "server.py",
     "config": "/abs/.mcp.json" | null, "reachable": true,
     "serverInfo": {"name": "notes-server", "version": "1.2.0"} | null,
     "protocolVersion": "2025-11-25" | null,
     "tools": [{"name": "add", "exposedAs": "mcp__notes__add", "sha256": "<hex>",
                "readOnly": true}],
     "error"?: "why it could not be reached"}

``endpoint`` is the URL without user info or query, or the program's file name: no
argument, environment value or header is recorded (any may be a secret). ``sha256`` is the
fingerprint of the tool's definition as listed (``tool_fingerprint``). The reader trusts
nothing: malformed entries are skipped. Nothing here imports the MCP SDK.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

__all__ = ["MCP_CONNECT", "McpServerState", "McpToolRecord", "read_connect", "tool_fingerprint"]

MCP_CONNECT: Final = "mcp/connect"
"""Log-only, ignorable: one server's state at connect (see the module doc)."""

_FINGERPRINTED = ("description", "inputSchema", "outputSchema", "annotations")


def tool_fingerprint(definition: Mapping[str, Any]) -> str:
    """The SHA-256 of a tool definition's description, input and output schemas and
    annotations, as canonical JSON (sorted keys): equal when the tool is the same."""
    part = {key: definition.get(key) for key in _FINGERPRINTED}
    return hashlib.sha256(orjson.dumps(part, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True, slots=True)
class McpToolRecord:
    """One listed tool: its name on the server, the name it is offered under, its
    fingerprint and whether its annotations say it only reads."""

    name: str
    exposed: str
    sha256: str
    read_only: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "exposedAs": self.exposed,
            "sha256": self.sha256,
            "readOnly": self.read_only,
        }


@dataclass(frozen=True, slots=True)
class McpServerState:
    """A server as harness found it (``McpHub``) or as a log recorded it (``read_connect``:
    ``seq`` set)."""

    name: str
    transport: str
    endpoint: str
    reachable: bool
    server_name: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    tools: tuple[McpToolRecord, ...] = ()
    error: str | None = None
    config: str | None = None
    seq: int | None = None

    def tool(self, name: str) -> McpToolRecord | None:
        """The tool the server calls ``name``, or None."""
        return next((tool for tool in self.tools if tool.name == name), None)

    def to_json(self) -> dict[str, Any]:
        """The data of this server's ``mcp/connect`` event."""
        info = None
        if self.server_name is not None or self.server_version is not None:
            info = {"name": self.server_name, "version": self.server_version}
        data: dict[str, Any] = {
            "server": self.name,
            "transport": self.transport,
            "endpoint": self.endpoint,
            "config": self.config,
            "reachable": self.reachable,
            "serverInfo": info,
            "protocolVersion": self.protocol_version,
            "tools": [tool.to_json() for tool in self.tools],
        }
        if self.error is not None:
            data["error"] = self.error
        return data


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _tools(value: Any) -> tuple[McpToolRecord, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return ()
    found = []
    for entry in value:
        if not isinstance(entry, Mapping):
            continue
        name, exposed, digest = (
            _str(entry.get("name")),
            _str(entry.get("exposedAs")),
            _str(entry.get("sha256")),
        )
        if name is not None and exposed is not None and digest is not None:
            found.append(McpToolRecord(name, exposed, digest, entry.get("readOnly") is True))
    return tuple(found)


def read_connect(seq: int, data: Any) -> McpServerState | None:
    """The server state an ``mcp/connect`` event's data records (None when it names no server)."""
    if not isinstance(data, Mapping) or _str(data.get("server")) is None:
        return None
    info = data.get("serverInfo")
    info = info if isinstance(info, Mapping) else {}
    return McpServerState(
        name=data["server"],
        transport=_str(data.get("transport")) or "unknown",
        endpoint=_str(data.get("endpoint")) or "",
        reachable=data.get("reachable") is True,
        server_name=_str(info.get("name")),
        server_version=_str(info.get("version")),
        protocol_version=_str(data.get("protocolVersion")),
        tools=_tools(data.get("tools")),
        error=_str(data.get("error")),
        config=_str(data.get("config")),
        seq=seq,
    )
