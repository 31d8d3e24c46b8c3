"""Fixtures of the ADK adapter's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.stores.pg import backend_schema


@pytest.fixture
def pg_schema(request: pytest.FixtureRequest) -> Iterator[tuple[str, str] | None]:
    """A fresh PostgreSQL schema for a ``postgres`` parameter (dropped after), else None."""
    yield from backend_schema(request, "adk")
