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

from harness._lazy import exported_names, lazy_exports

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.stores.backend import Backend as Backend
    from harness.stores.backend import ReadProgress as ReadProgress
    from harness.stores.backend import SessionInfo as SessionInfo
    from harness.stores.backend import StoredLog as StoredLog
    from harness.stores.backend import TornTail as TornTail
    from harness.stores.backend import WireStream as WireStream
    from harness.stores.dsh_sqlite import DshSqliteBackend as DshSqliteBackend
    from harness.stores.dsh_sqlite import open_sqlite_backend as open_sqlite_backend
    from harness.stores.jsonl import JsonlBackend as JsonlBackend
    from harness.stores.jsonl import decode_segment as decode_segment
    from harness.stores.jsonl import encode_segment as encode_segment
    from harness.stores.jsonl import project_key as project_key
    from harness.stores.jsonl import read_session_file as read_session_file
    from harness.stores.jsonl import root_compression as root_compression
    from harness.stores.jsonl.paths import Compression as Compression
    from harness.stores.leases import Lease as Lease
    from harness.stores.leases import LeasingBackend as LeasingBackend
    from harness.stores.leases import TailingBackend as TailingBackend
    from harness.stores.memory import MemoryBackend as MemoryBackend
    from harness.stores.open import Scheme as Scheme
    from harness.stores.open import StoreSpec as StoreSpec
    from harness.stores.open import known_schemes as known_schemes
    from harness.stores.open import open_backend as open_backend
    from harness.stores.open import open_store as open_store
    from harness.stores.open import parse_store_spec as parse_store_spec
    from harness.stores.open import register_scheme as register_scheme
    from harness.stores.postgres import PostgresBackend as PostgresBackend
    from harness.stores.sqlite import SqliteBackend as SqliteBackend
    from harness.stores.store import Progress as Progress
    from harness.stores.store import SessionStore as SessionStore
    from harness.stores.transfer import CopiedSession as CopiedSession
    from harness.stores.transfer import copy_sessions as copy_sessions

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

if not TYPE_CHECKING:  # at run time: the table's names, each imported on first use (PEP 562)
    __all__ = exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
