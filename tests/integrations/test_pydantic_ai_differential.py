"""Every store scenario runs on pydantic-ai's ``InMemoryConversationStore`` and on
``HarnessConversationStore`` over each harness backend (memory, a JSONL root, an SQLite file,
PostgreSQL), and the two must observe exactly the same results: a differential test of our
store against the reference implementation of the interface."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.testing.samples import run
from tests.integrations.pydantic_ai_scenarios import SCENARIOS
from tests.integrations.pydantic_ai_support import Observed, harness_store, make_backend, reference_store
from tests.stores.pg import backend_schema

BACKENDS = ["memory", "jsonl", "sqlite", "postgres"]


@pytest.fixture
def pg_schema(request: pytest.FixtureRequest) -> Iterator[tuple[str, str] | None]:
    yield from backend_schema(request)


async def _observe_reference(name: str) -> list[tuple[str, object]]:
    seen = Observed()
    async with reference_store() as store:
        await SCENARIOS[name](store, seen)
    return seen.log


async def _observe_ours(
    name: str, backend: str, tmp: Path, pg: tuple[str, str] | None
) -> list[tuple[str, object]]:
    seen = Observed()
    async with harness_store(make_backend(backend, tmp, pg)) as store:
        await SCENARIOS[name](store, seen)
    return seen.log


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_matches_the_reference(
    name: str, backend: str, tmp_path: Path, pg_schema: tuple[str, str] | None
) -> None:
    expected = run(_observe_reference(name))
    got = run(_observe_ours(name, backend, tmp_path, pg_schema))
    assert expected, "a scenario must observe something"
    assert got == expected
