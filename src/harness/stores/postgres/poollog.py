"""psycopg_pool's log records, sent through harness's logger as one line each.

During an outage the pool logs a warning per failed connection attempt and per discarded
connection on the ``psycopg.pool`` logger; with no logging configured those went raw to
stderr, several lines at a time. ``route_pool_logs`` (called when a backend opens its pool)
re-emits them on ``harness.stores.postgres`` with whitespace folded to one line, and stops
their propagation, so an application's harness logging settings govern them too.
"""

from __future__ import annotations

import logging
from typing import Final

__all__ = ["one_line", "route_pool_logs"]

POOL_LOGGER: Final = "psycopg.pool"
log = logging.getLogger("harness.stores.postgres")


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) folded to one space."""
    return " ".join(text.split())


class _Forward(logging.Handler):
    """Re-emits a pool record on harness's logger, on one line."""

    def emit(self, record: logging.LogRecord) -> None:
        if log.isEnabledFor(record.levelno):
            log.log(record.levelno, "connection pool: %s", one_line(record.getMessage()))


def route_pool_logs() -> None:
    """Send ``psycopg.pool``'s records through harness's logger (idempotent)."""
    pool_log = logging.getLogger(POOL_LOGGER)
    if not any(isinstance(handler, _Forward) for handler in pool_log.handlers):
        pool_log.addHandler(_Forward())
        pool_log.propagate = False
