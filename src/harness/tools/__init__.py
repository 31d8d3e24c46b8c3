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

from harness._lazy import exported_names, lazy_exports

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.tools.base import Tool as Tool
    from harness.tools.base import ToolContext as ToolContext
    from harness.tools.base import ToolError as ToolError
    from harness.tools.base import ToolOutcome as ToolOutcome
    from harness.tools.base import ToolSpec as ToolSpec
    from harness.tools.edit_file import EditFile as EditFile
    from harness.tools.grep import Grep as Grep
    from harness.tools.list_dir import ListDir as ListDir
    from harness.tools.mcp.config import McpServerConfig as McpServerConfig
    from harness.tools.mcp.config import find_mcp_config as find_mcp_config
    from harness.tools.mcp.config import load_mcp_config as load_mcp_config
    from harness.tools.mcp.hub import McpHub as McpHub
    from harness.tools.mcp.records import MCP_CONNECT as MCP_CONNECT
    from harness.tools.mcp.records import McpServerState as McpServerState
    from harness.tools.mcp.tool import McpTool as McpTool
    from harness.tools.read_file import ReadFile as ReadFile
    from harness.tools.records import FileAccess as FileAccess
    from harness.tools.records import background_pids as background_pids
    from harness.tools.records import file_accesses as file_accesses
    from harness.tools.registry import DuplicateTool as DuplicateTool
    from harness.tools.registry import InvalidToolSpec as InvalidToolSpec
    from harness.tools.registry import ToolRegistry as ToolRegistry
    from harness.tools.registry import default_registry as default_registry
    from harness.tools.registry import default_tools as default_tools
    from harness.tools.session_search import SESSION_SEARCH as SESSION_SEARCH
    from harness.tools.session_search import SessionSearch as SessionSearch
    from harness.tools.shell import RunShell as RunShell
    from harness.tools.todo_write import TodoWrite as TodoWrite
    from harness.tools.workspace import Workspace as Workspace
    from harness.tools.workspace import file_sha256 as file_sha256
    from harness.tools.write_file import WriteFile as WriteFile

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

if not TYPE_CHECKING:  # at run time: the table's names, each imported on first use (PEP 562)
    __all__ = exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
