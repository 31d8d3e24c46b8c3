"""LangGraph's official checkpointer conformance suite (``langgraph-checkpoint-conformance``,
pinned in the ``test`` extra) against ``AsyncHarnessSaver`` on JSONL and SQLite, and against
the sync ``HarnessSaver`` (through its async bridge) on JSONL.

Every base capability must pass, and so must every extended one the savers implement (all
three: ``copy_thread``, ``prune``, ``delete_for_runs``); a capability the suite skipped would
fail here too. The report is printed (``pytest -s``) and quoted in docs/integrations/langgraph.md.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import AsyncGenerator
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES, BASE_CAPABILITIES

from harness.integrations.langgraph import AsyncHarnessSaver, HarnessSaver
from harness.stores.store import SessionStore
from tests.integrations.langgraph.support import BACKENDS

CASES = [("AsyncHarnessSaver", "jsonl"), ("AsyncHarnessSaver", "sqlite"), ("HarnessSaver", "jsonl")]


@pytest.mark.asyncio
@pytest.mark.parametrize(("saver_name", "backend"), CASES, ids=[f"{s}-{b}" for s, b in CASES])
async def test_conformance_suite_passes_every_capability(saver_name: str, backend: str) -> None:
    with tempfile.TemporaryDirectory(prefix="langgraph-conformance-") as tmp:
        roots = iter(range(100))

        @checkpointer_test(name=f"{saver_name} on {backend}")
        async def factory() -> AsyncGenerator[BaseCheckpointSaver[int], None]:
            root = Path(tmp) / str(next(roots))  # a fresh store for each capability
            store = SessionStore(BACKENDS[backend](root))
            if saver_name == "HarnessSaver":
                saver = HarnessSaver(store)
                yield saver
                saver.close()
            else:
                yield AsyncHarnessSaver(store)
                await store.close()

        report = await validate(factory)
    printed = io.StringIO()
    with redirect_stdout(printed):
        report.print_report()
    counts = {name: result["tests_passed"] for name, result in report.to_dict()["results"].items()}
    print(printed.getvalue(), f"tests passed per capability: {counts}")
    assert report.passed_all_base(), printed.getvalue()
    for capability in ALL_CAPABILITIES:
        result = report.results[capability.value]
        assert result.detected, f"{capability.value} was not detected"
        assert result.passed, f"{capability.value}: {result.failures}"
    assert {c.value for c in BASE_CAPABILITIES} <= set(report.results)
