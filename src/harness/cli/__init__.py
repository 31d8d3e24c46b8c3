"""The ``harness`` command line."""

from __future__ import annotations

from harness.cli import agent_commands as agent_commands  # registers run, chat, resume, export
from harness.cli.app import app, main

__all__ = ["app", "main"]
