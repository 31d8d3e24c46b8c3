"""Tools the agent can call: the ``Tool`` protocol, the registry, the workspace and the built-ins.

``base`` holds the protocol; ``workspace`` confines paths to the root; ``registry`` lists
tools and builds the default set; ``records`` writes and reads the ``meta`` shapes cold
recovery relies on. Each built-in lives in its own module (``read_file``, ``write_file``,
``edit_file``, ``list_dir``, ``grep``, ``shell``, ``todo_write``).
"""

from harness.tools.base import Tool, ToolContext, ToolError, ToolOutcome, ToolSpec
from harness.tools.edit_file import EditFile
from harness.tools.grep import Grep
from harness.tools.list_dir import ListDir
from harness.tools.read_file import ReadFile
from harness.tools.records import FileAccess, background_pids, file_accesses
from harness.tools.registry import DuplicateTool, ToolRegistry, default_registry, default_tools
from harness.tools.shell import RunShell
from harness.tools.todo_write import TodoWrite
from harness.tools.workspace import Workspace, file_sha256
from harness.tools.write_file import WriteFile

__all__ = [
    "DuplicateTool",
    "EditFile",
    "FileAccess",
    "Grep",
    "ListDir",
    "ReadFile",
    "RunShell",
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
]
