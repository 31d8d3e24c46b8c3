"""The ``harness`` command line."""

from __future__ import annotations

from harness.cli.app import app, main

__all__ = ["app", "main"]
