"""Command lines for CLI children that a test interrupts with SIGINT.

A child inherits an ignored SIGINT (a shell's background job, some test runners'
workers), and a Python started so never raises KeyboardInterrupt: the test's Ctrl-C
would do nothing. These commands put Python's own SIGINT handler back first.
"""

from __future__ import annotations

import sys

_RESTORE = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "

HARNESS_CLI = [sys.executable, "-c", _RESTORE + "from harness.cli import main; main()"]
"""``harness`` as a child that Ctrl-C interrupts whatever SIGINT disposition it inherits."""

_RUN_MODULE = "import runpy; runpy.run_module('harness', run_name='__main__')"
HARNESS_MODULE = [sys.executable, "-c", _RESTORE + _RUN_MODULE]
"""``python -m harness`` likewise."""
