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

from harness._lazy import exported_names, lazy_exports

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.tools.mcp.config import WORKSPACE_CONFIG as WORKSPACE_CONFIG
    from harness.tools.mcp.config import McpServerConfig as McpServerConfig
    from harness.tools.mcp.config import find_mcp_config as find_mcp_config
    from harness.tools.mcp.config import load_mcp_config as load_mcp_config
    from harness.tools.mcp.config import parse_mcp_config as parse_mcp_config
    from harness.tools.mcp.connection import McpConnection as McpConnection
    from harness.tools.mcp.hub import McpHub as McpHub
    from harness.tools.mcp.names import exposed_name as exposed_name
    from harness.tools.mcp.records import MCP_CONNECT as MCP_CONNECT
    from harness.tools.mcp.records import McpServerState as McpServerState
    from harness.tools.mcp.records import McpToolRecord as McpToolRecord
    from harness.tools.mcp.records import read_connect as read_connect
    from harness.tools.mcp.records import tool_fingerprint as tool_fingerprint
    from harness.tools.mcp.tool import McpTool as McpTool
    from harness.tools.mcp.tool import result_outcome as result_outcome

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

if not TYPE_CHECKING:  # at run time: the table's names, each imported on first use (PEP 562)
    __all__ = exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
