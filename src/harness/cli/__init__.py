"""The ``harness`` command line."""

from __future__ import annotations

from harness.cli import agent_commands as agent_commands  # registers run, chat, resume, export
from harness.cli import compaction_commands as compaction_commands  # registers compact, eval-compaction
from harness.cli import delete_command as delete_command  # registers delete
from harness.cli import mcp_commands as mcp_commands  # registers mcp list
from harness.cli import query_commands as query_commands  # registers trace, show, request, lineage
from harness.cli import search_commands as search_commands  # registers search, index
from harness.cli import serve_command as serve_command  # registers serve (the viewer)
from harness.cli.app import app, main

__all__ = ["app", "main"]
