"""The PostgreSQL backend: many workers on many machines, fenced leases, live tail.

See ``harness.stores.postgres.backend`` for the design and ``migrations`` for the schema.
"""

from __future__ import annotations

from harness.stores.postgres.backend import DEFAULT_SCHEMA, PostgresBackend
from harness.stores.postgres.migrations import SCHEMA_VERSION

__all__ = ["DEFAULT_SCHEMA", "SCHEMA_VERSION", "PostgresBackend"]
