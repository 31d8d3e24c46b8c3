"""``McpHub``: the configured MCP servers of one run, connected together, and their tools.

::

    async with McpHub(load_mcp_config(".mcp.json"), cwd=workspace, taken=builtin_names) as hub:
        hub.record(session)                    # one log-only mcp/connect per server
        agent = Agent(session, provider, [*builtins, *hub.tools], ...)

Servers are connected concurrently. One that cannot be started or reached does not stop the
others: its state says why (``reachable`` false, ``error``) and it offers no tools. A tool
whose input schema is not a JSON-schema object is left out (it could not be offered to the
model). ``taken`` are names already in use (the built-in tools): an MCP tool never shadows one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.errors import McpConnectError
from harness.events.event import Event
from harness.session.session import Session
from harness.tools.base import ToolError
from harness.tools.mcp.config import McpServerConfig
from harness.tools.mcp.connection import McpConnection
from harness.tools.mcp.names import exposed_name
from harness.tools.mcp.records import MCP_CONNECT, McpServerState, McpToolRecord, tool_fingerprint
from harness.tools.mcp.tool import McpTool

__all__ = ["McpHub"]

logger = logging.getLogger("harness.tools.mcp")


class McpHub:
    """The connections to ``servers`` (see the module doc). ``config`` is the path of the
    file they came from (recorded, so that a resume can find it again)."""

    def __init__(
        self,
        servers: Sequence[McpServerConfig],
        *,
        cwd: Path | None = None,
        config: str | None = None,
        taken: Iterable[str] = (),
    ) -> None:
        self.servers = tuple(servers)
        self._cwd = cwd
        self._config = config
        self._taken = set(taken)
        self._connections: list[McpConnection] = []
        self.states: list[McpServerState] = []
        self.tools: list[McpTool] = []

    async def __aenter__(self) -> McpHub:
        await self.connect()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()

    async def connect(self) -> None:
        """Connect every server and list its tools (``states`` and ``tools`` are filled in)."""
        connections = [McpConnection(server, cwd=self._cwd) for server in self.servers]
        self._connections = connections
        found = await asyncio.gather(*(self._open(connection) for connection in connections))
        taken = set(self._taken)
        self.states, self.tools = [], []
        for connection, (state, definitions) in zip(connections, found, strict=True):
            records: list[McpToolRecord] = []
            for definition in definitions:
                exposed = exposed_name(connection.config.name, str(definition["name"]), taken)
                taken.add(exposed)
                tool = McpTool(connection, definition, exposed)
                records.append(
                    McpToolRecord(tool.tool, exposed, tool_fingerprint(definition), tool.read_only)
                )
                self.tools.append(tool)
            self.states.append(replace(state, tools=tuple(records)))

    async def _open(self, connection: McpConnection) -> tuple[McpServerState, list[dict[str, Any]]]:
        config = connection.config
        base = McpServerState(config.name, config.transport, config.endpoint, False, config=self._config)
        try:
            await connection.connect()
            definitions = await connection.list_tools()
        except (McpConnectError, ToolError) as error:
            text = str(error) if isinstance(error, McpConnectError) else error.message
            logger.info("%s", text)  # the state holds it; the CLI prints it once
            await connection.aclose()
            return replace(base, error=text), []
        name, version = connection.server_info
        state = replace(
            base,
            reachable=True,
            server_name=name,
            server_version=version,
            protocol_version=connection.protocol_version,
        )
        usable = []
        for definition in definitions:
            schema = definition.get("inputSchema")
            if (
                isinstance(definition.get("name"), str)
                and isinstance(schema, Mapping)
                and (schema.get("type", "object") == "object")
            ):
                usable.append(definition)
            else:
                logger.warning(
                    "MCP server %s: tool %r has no object input schema; left out",
                    config.name,
                    definition.get("name"),
                )
        return state, usable

    def record(self, session: Session) -> list[Event]:
        """Append one log-only ``mcp/connect`` per server (``ignorable``)."""
        return [session.append(MCP_CONNECT, state.to_json(), ignorable=True) for state in self.states]

    def state(self, server: str) -> McpServerState | None:
        """The state of the server named ``server``, or None when it is not configured."""
        return next((state for state in self.states if state.name == server), None)

    async def aclose(self) -> None:
        """Close every connection (stdio servers are stopped)."""
        connections, self._connections = self._connections, []
        await asyncio.gather(*(connection.aclose() for connection in connections), return_exceptions=True)
