"""Tools the agent can call: the ``Tool`` protocol, the registry, the workspace and the built-ins.

``base`` holds the protocol; ``workspace`` confines paths to the root; ``registry`` lists
tools and builds the default set; ``records`` writes and reads the ``meta`` shapes cold
recovery relies on. Each built-in lives in its own module (``read_file``, ``write_file``,
``edit_file``, ``list_dir``, ``grep``, ``shell``, ``todo_write``, ``session_search``: the
agent's recall of its own log and its fork ancestors', offered by the CLI; ``recall_text`` holds
the text pieces of its answers). ``mcp/`` holds the MCP client tools (the ``[mcp]`` extra).

"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.tools.base import Tool, ToolContext, ToolError, ToolOutcome, ToolSpec
    from harness.tools.edit_file import EditFile
    from harness.tools.grep import Grep
    from harness.tools.list_dir import ListDir
    from harness.tools.mcp.config import McpServerConfig, find_mcp_config, load_mcp_config
    from harness.tools.mcp.hub import McpHub
    from harness.tools.mcp.records import MCP_CONNECT, McpServerState
    from harness.tools.mcp.tool import McpTool
    from harness.tools.read_file import ReadFile
    from harness.tools.records import FileAccess, background_pids, file_accesses
    from harness.tools.registry import (
        DuplicateTool,
        InvalidToolSpec,
        ToolRegistry,
        default_registry,
        default_tools,
    )
    from harness.tools.session_search import SESSION_SEARCH, SessionSearch
    from harness.tools.shell import RunShell
    from harness.tools.todo_write import TodoWrite
    from harness.tools.workspace import Workspace, file_sha256
    from harness.tools.write_file import WriteFile

__all__ = [
    "MCP_CONNECT",
    "SESSION_SEARCH",
    "DuplicateTool",
    "EditFile",
    "FileAccess",
    "Grep",
    "InvalidToolSpec",
    "ListDir",
    "McpHub",
    "McpServerConfig",
    "McpServerState",
    "McpTool",
    "ReadFile",
    "RunShell",
    "SessionSearch",
    "TodoWrite",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutcome",
    "ToolRegistry",
    "ToolSpec",
    "Workspace",
    "WriteFile",
    "background_pids",
    "default_registry",
    "default_tools",
    "file_accesses",
    "file_sha256",
    "find_mcp_config",
    "load_mcp_config",
]

_EXPORTS = {
    "harness.tools.base": ("Tool", "ToolContext", "ToolError", "ToolOutcome", "ToolSpec"),
    "harness.tools.edit_file": ("EditFile",),
    "harness.tools.grep": ("Grep",),
    "harness.tools.list_dir": ("ListDir",),
    "harness.tools.mcp.config": ("McpServerConfig", "find_mcp_config", "load_mcp_config"),
    "harness.tools.mcp.hub": ("McpHub",),
    "harness.tools.mcp.records": ("MCP_CONNECT", "McpServerState"),
    "harness.tools.mcp.tool": ("McpTool",),
    "harness.tools.read_file": ("ReadFile",),
    "harness.tools.records": ("FileAccess", "background_pids", "file_accesses"),
    "harness.tools.registry": (
        "DuplicateTool",
        "InvalidToolSpec",
        "ToolRegistry",
        "default_registry",
        "default_tools",
    ),
    "harness.tools.session_search": ("SESSION_SEARCH", "SessionSearch"),
    "harness.tools.shell": ("RunShell",),
    "harness.tools.todo_write": ("TodoWrite",),
    "harness.tools.workspace": ("Workspace", "file_sha256"),
    "harness.tools.write_file": ("WriteFile",),
}

if not TYPE_CHECKING:  # at run time each name is imported on first use (PEP 562)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
