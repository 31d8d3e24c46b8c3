"""MCP client tools (docs/mcp.md): servers configured in the common ``mcpServers`` file,
connected through the official ``mcp`` SDK (the ``[mcp]`` extra), their tools offered to
the model as ``mcp__<server>__<tool>``.

``config`` reads the file; ``names`` makes the offered names; ``records`` writes and reads
the log-only ``mcp/connect`` event; ``connection`` is one server's connection, ``tool`` one
of its tools, ``hub`` all of a run's servers. Only ``connection`` (and what imports it:
``tool``, ``hub``) loads the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.tools.mcp.config import (
        WORKSPACE_CONFIG,
        McpServerConfig,
        find_mcp_config,
        load_mcp_config,
        parse_mcp_config,
    )
    from harness.tools.mcp.connection import McpConnection
    from harness.tools.mcp.hub import McpHub
    from harness.tools.mcp.names import exposed_name
    from harness.tools.mcp.records import (
        MCP_CONNECT,
        McpServerState,
        McpToolRecord,
        read_connect,
        tool_fingerprint,
    )
    from harness.tools.mcp.tool import McpTool, result_outcome

__all__ = [
    "MCP_CONNECT",
    "WORKSPACE_CONFIG",
    "McpConnection",
    "McpHub",
    "McpServerConfig",
    "McpServerState",
    "McpTool",
    "McpToolRecord",
    "exposed_name",
    "find_mcp_config",
    "load_mcp_config",
    "parse_mcp_config",
    "read_connect",
    "result_outcome",
    "tool_fingerprint",
]

_EXPORTS = {
    "harness.tools.mcp.config": (
        "WORKSPACE_CONFIG",
        "McpServerConfig",
        "find_mcp_config",
        "load_mcp_config",
        "parse_mcp_config",
    ),
    "harness.tools.mcp.connection": ("McpConnection",),
    "harness.tools.mcp.hub": ("McpHub",),
    "harness.tools.mcp.names": ("exposed_name",),
    "harness.tools.mcp.records": (
        "MCP_CONNECT",
        "McpServerState",
        "McpToolRecord",
        "read_connect",
        "tool_fingerprint",
    ),
    "harness.tools.mcp.tool": ("McpTool", "result_outcome"),
}

if not TYPE_CHECKING:  # at run time each name is imported on first use (PEP 562)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
