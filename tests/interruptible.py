"""Command lines for CLI children that a test interrupts with SIGINT.

A child inherits an ignored SIGINT (a shell's background job, some test runners'
workers), and a Python started so never raises KeyboardInterrupt: the test's Ctrl-C
would do nothing. These commands put Python's own SIGINT handler back first.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

_RESTORE = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "

HARNESS_CLI = [sys.executable, "-c", _RESTORE + "from harness.cli import main; main()"]
"""``harness`` as a child that Ctrl-C interrupts whatever SIGINT disposition it inherits."""

_RUN_MODULE = "import runpy; runpy.run_module('harness', run_name='__main__')"
HARNESS_MODULE = [sys.executable, "-c", _RESTORE + _RUN_MODULE]
"""``python -m harness`` likewise."""


class ChildLines:
    """The complete lines a child writes to its stdout pipe, read as they come."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.lines: list[bytes] = []
        self._buffer = b""

    def until(self, total: int, timeout: float = 60.0) -> list[bytes]:
        """Read until ``total`` lines have come (the test fails after ``timeout`` seconds, or
        when the child closes its stdout first, with its stderr)."""
        stdout = self.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + timeout
        while len(self.lines) < total:
            assert time.monotonic() < deadline, f"the child printed {len(self.lines)} of {total} lines"
            ready, _, _ = select.select([stdout], [], [], 0.1)
            if not ready:
                continue
            data = os.read(stdout.fileno(), 65536)
            if not data:
                errors = self.process.stderr.read().decode() if self.process.stderr else ""
                raise AssertionError(f"the child closed its stdout early: {errors}")
            self._buffer += data
            *complete, self._buffer = self._buffer.split(b"\n")
            self.lines.extend(complete)
        return self.lines
