"""DeepSeek Harness's own SQLite session databases (schema 17): ``DshSqliteBackend``.

``open_sqlite_backend(path)`` picks ``SqliteBackend`` or ``DshSqliteBackend`` by the file's
application id. See ``docs/dsh-sqlite.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.stores.dsh_sqlite.backend import DshSqliteBackend
    from harness.stores.dsh_sqlite.detect import open_sqlite_backend, sqlite_layout
    from harness.stores.dsh_sqlite.schema import APPLICATION_ID, SCHEMA_VERSION

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "DshSqliteBackend", "open_sqlite_backend", "sqlite_layout"]

_EXPORTS = {
    "harness.stores.dsh_sqlite.backend": ("DshSqliteBackend",),
    "harness.stores.dsh_sqlite.detect": ("open_sqlite_backend", "sqlite_layout"),
    "harness.stores.dsh_sqlite.schema": ("APPLICATION_ID", "SCHEMA_VERSION"),
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
