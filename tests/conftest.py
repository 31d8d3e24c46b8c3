"""Suite-wide hooks: the fault suite's figures (faults injected, kills, crash states checked),
printed after the run, summed over the pytest-xdist workers when the run is distributed; and
the longest tests collected first, so that a distributed run does not end waiting on one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.stores.faults.counts import COUNTS

_KEY = "harness_fault_counts"


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # an xdist worker: hand its figures to the controller
        output[_KEY] = dict(COUNTS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """The controller's side of a distributed run: add a finished worker's figures."""
    COUNTS.update(getattr(node, "workeroutput", {}).get(_KEY, {}))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if COUNTS:
        figures = ", ".join(f"{name} {count}" for name, count in sorted(COUNTS.items()))
        terminalreporter.write_line(f"fault suite: {figures}")


# Tests that take tens of seconds each (real processes, real timeouts): started first, the
# short ones fill the other workers meanwhile.
_LONG_FIRST = (
    "tests/stores/test_many_writers.py",
    "tests/stores/faults/test_postgres_partitions.py",
    "tests/stores/faults/",
    "tests/recovery/test_killed_run.py",
    "tests/test_docs_code.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        for index, prefix in enumerate(_LONG_FIRST):
            if item.nodeid.startswith(prefix):
                return index
        return len(_LONG_FIRST)

    items.sort(key=rank)  # stable: the order within each group is kept
