"""Every ADK scenario (``scenarios.py``, written from ADK's documented behaviour) runs on ADK's own
``InMemorySessionService`` and on ``HarnessSessionService`` over each harness backend (memory, a
JSONL root, an SQLite file, PostgreSQL); the two must observe exactly the same results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.testing.samples import run
from tests.integrations.adk.scenarios import SCENARIOS, Seen
from tests.integrations.adk.support import BACKENDS, service_on


async def _observe(name: str, kind: str, tmp: Path, pg: tuple[str, str] | None) -> list[tuple[str, Any]]:
    seen = Seen()
    async with service_on(kind, tmp, pg) as service:
        await SCENARIOS[name](service, seen)
    return seen.log


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_matches_in_memory_session_service(
    name: str, backend: str, tmp_path: Path, pg_schema: tuple[str, str] | None
) -> None:
    expected = run(_observe(name, "reference", tmp_path, None))
    got = run(_observe(name, backend, tmp_path, pg_schema))
    assert expected, "a scenario must observe something"
    assert got == expected
