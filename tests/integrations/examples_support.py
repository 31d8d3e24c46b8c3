"""Runs one of ``examples/`` as a user would: its own process, the session root as its
argument, the output read as text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Final

EXAMPLES: Final = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, root: Path, *, timeout: float, columns: int | None = None) -> str:
    """The standard output of ``examples/<name> <root>``, which must exit 0 within ``timeout``
    seconds (``columns`` sets ``COLUMNS`` for the CLI output it prints)."""
    env = None if columns is None else {**os.environ, "COLUMNS": str(columns)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), str(root)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
