"""Storage: ``SessionStore`` makes sessions durable over a backend (SPEC §4, FORMAT §7.4, §9–10).

The store API is async: ``await store.create()``, ``await store.load(id)``, ``await
store.flush(session)``. Backends: ``JsonlBackend`` (DeepSeek Harness's files, plain or zstd),
``SqliteBackend``, ``DshSqliteBackend`` (dsh's own SQLite databases, schema 17),
``PostgresBackend`` (fenced leases, live tail; imports ``psycopg``) and ``MemoryBackend``.
``open_store(spec)`` opens the store a spec names (the one door: ``harness.stores.open``);
``read_session_file`` reads one JSONL session file without a store; ``copy_sessions`` copies
sessions between backends; ``open_sqlite_backend`` opens either SQLite layout.

Every name is imported on first use, so ``import harness.stores`` loads no backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.stores.backend import Backend, ReadProgress, SessionInfo, StoredLog, TornTail, WireStream
    from harness.stores.dsh_sqlite import DshSqliteBackend, open_sqlite_backend
    from harness.stores.jsonl import (
        JsonlBackend,
        decode_segment,
        encode_segment,
        project_key,
        read_session_file,
        root_compression,
    )
    from harness.stores.jsonl.paths import Compression
    from harness.stores.leases import Lease, LeasingBackend, TailingBackend
    from harness.stores.memory import MemoryBackend
    from harness.stores.open import (
        Scheme,
        StoreSpec,
        known_schemes,
        open_backend,
        open_store,
        parse_store_spec,
        register_scheme,
    )
    from harness.stores.postgres import PostgresBackend
    from harness.stores.sqlite import SqliteBackend
    from harness.stores.store import Progress, SessionStore
    from harness.stores.transfer import CopiedSession, copy_sessions

__all__ = [
    "Backend",
    "Compression",
    "CopiedSession",
    "DshSqliteBackend",
    "JsonlBackend",
    "Lease",
    "LeasingBackend",
    "MemoryBackend",
    "PostgresBackend",
    "Progress",
    "ReadProgress",
    "Scheme",
    "SessionInfo",
    "SessionStore",
    "SqliteBackend",
    "StoreSpec",
    "StoredLog",
    "TailingBackend",
    "TornTail",
    "WireStream",
    "copy_sessions",
    "decode_segment",
    "encode_segment",
    "known_schemes",
    "open_backend",
    "open_sqlite_backend",
    "open_store",
    "parse_store_spec",
    "project_key",
    "read_session_file",
    "register_scheme",
    "root_compression",
]

_EXPORTS = {
    "harness.stores.backend": (
        "Backend",
        "ReadProgress",
        "SessionInfo",
        "StoredLog",
        "TornTail",
        "WireStream",
    ),
    "harness.stores.dsh_sqlite": ("DshSqliteBackend", "open_sqlite_backend"),
    "harness.stores.jsonl": (
        "JsonlBackend",
        "decode_segment",
        "encode_segment",
        "project_key",
        "read_session_file",
        "root_compression",
    ),
    "harness.stores.jsonl.paths": ("Compression",),
    "harness.stores.leases": ("Lease", "LeasingBackend", "TailingBackend"),
    "harness.stores.memory": ("MemoryBackend",),
    "harness.stores.open": (
        "Scheme",
        "StoreSpec",
        "known_schemes",
        "open_backend",
        "open_store",
        "parse_store_spec",
        "register_scheme",
    ),
    "harness.stores.postgres": ("PostgresBackend",),
    "harness.stores.sqlite": ("SqliteBackend",),
    "harness.stores.store": ("Progress", "SessionStore"),
    "harness.stores.transfer": ("CopiedSession", "copy_sessions"),
}

if not TYPE_CHECKING:  # at run time each name is imported on first use (PEP 562)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
