"""The demo's MCP server (``python -m harness.demos.mcp_server``): ``workspace-facts``, one
read-only tool over stdio, written with the SDK's server API. It needs the ``[mcp]`` extra."""

from __future__ import annotations

from pathlib import Path

__all__ = ["main"]


def line_count(path: str) -> int:
    """The number of lines of a text file in the workspace (the server's working directory)."""
    root = Path.cwd().resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        raise ValueError(f"{path} is not a file in the workspace")
    return len(target.read_text(encoding="utf-8").splitlines())


def main() -> None:
    """Serve over stdio until stdin closes."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server: MCPServer = MCPServer("workspace-facts", version="1.0", log_level="CRITICAL")
    server.add_tool(line_count, annotations=ToolAnnotations(read_only_hint=True))
    server.run()


if __name__ == "__main__":
    main()
