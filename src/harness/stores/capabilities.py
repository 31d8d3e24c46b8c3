"""What a backend can do beyond ``Backend``, declared by the backend itself.

Code above ``stores/`` asks these questions, never a backend's class, so a new backend
is reached everywhere by declaring what it has:

* ``SessionFiles``: each session is a file under one local directory (a JSONL root).
  Readers may stat the files themselves (``session_files``) and open a fresh view that
  caches nothing (``reopen``).
* ``DatabaseFile``: every session is in one local database file (SQLite, either layout).
* ``SqlSchema``: sessions live in a schema of a database server, where the layers above
  may keep tables of their own (``run_sql``; PostgreSQL).
* ``tail_wakes_on_commit``: a live tail woken by each commit (PostgreSQL's ``NOTIFY``)
  rather than by polling (JSONL, SQLite).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from harness.stores.backend import Backend
from harness.stores.leases import TailingBackend

__all__ = ["DatabaseFile", "SessionFiles", "SqlSchema", "tail_wakes_on_commit"]

T = TypeVar("T")


@runtime_checkable
class SessionFiles(Protocol):
    """A backend that keeps each session in its own file under ``root``."""

    @property
    def root(self) -> str:
        """The directory the session files live under."""
        ...

    def session_files(self) -> Iterator[tuple[str, str]]:
        """``(session id, path)`` of every session's log file."""
        ...

    def reopen(self) -> Backend:
        """A new backend over the same files, with nothing learned by this one cached."""
        ...


@runtime_checkable
class DatabaseFile(Protocol):
    """A backend that keeps every session in one local database file at ``path``."""

    @property
    def path(self) -> Path:
        """The database file."""
        ...


@runtime_checkable
class SqlSchema(Protocol):
    """A backend in a schema of a database server that the layers above may add tables to."""

    @property
    def schema(self) -> str:
        """The schema's name."""
        ...

    @property
    def location(self) -> str:
        """Where the database is, for messages (never a password)."""
        ...

    async def run_sql(self, fn: Callable[[Any], Awaitable[T]], action: str, *, write: bool = False) -> T:
        """Run ``fn`` on a connection of the backend's pool, errors translated."""
        ...


def tail_wakes_on_commit(backend: object) -> bool:
    """True when ``backend`` has a live tail woken by each commit, not by polling."""
    return isinstance(backend, TailingBackend) and getattr(backend, "tail_polls", True) is False
