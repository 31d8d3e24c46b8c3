"""Prints the fault suite's figures (faults injected, kills, crash states checked) after the run."""

from __future__ import annotations

import pytest

from tests.stores.faults.counts import COUNTS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if COUNTS:
        figures = ", ".join(f"{name} {count}" for name, count in sorted(COUNTS.items()))
        terminalreporter.write_line(f"fault suite: {figures}")
