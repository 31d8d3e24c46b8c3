"""A pytest plugin for the OpenAI Agents SDK's own test suite: its session helper becomes ours.

Loaded with ``-p harness_peer_shim`` by ``test_peer_suite.py`` when it runs the SDK's tests
from the downloaded sdist. It installs a module ``tests.utils.simple_session`` before the SDK's
tests import theirs, whose ``SimpleListSession``, ``CountingSession`` and
``IdStrippingSession`` have the SDK helper's constructors and attributes but are
``HarnessSession`` subclasses over a durable JSONL store (each instance its own root). The
SDK's file of that name is never imported, so every test that used the in-memory list runs on
harness.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import pytest

from harness.integrations.openai_agents import HarnessSession
from harness.integrations.openai_agents.session import _current_items
from harness.session.session import Session
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.memory import MemoryBackend
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore

_ROOT = tempfile.mkdtemp(prefix="harness-peer-")
_COUNTER = itertools.count()
_USED: set[str] = set()  # node ids of the tests that made one of our sessions
_OUTCOMES: dict[str, str] = {}
_CURRENT: list[str] = []


def _store() -> SessionStore:
    if _CURRENT:
        _USED.add(_CURRENT[-1])
    root = os.path.join(_ROOT, f"store-{next(_COUNTER)}")
    return SessionStore(JsonlBackend(root, compression="none", threaded=False))


class SimpleListSession(HarnessSession):
    """The SDK helper's constructor (``session_id``, ``history``) over a harness store.

    The helper is a plain ``Session``; so is this stand-in: ``HarnessSession.run_compaction``
    is hidden, since a compaction-aware session takes other runner paths (the SDK's tests of
    those wrap the helper in their ``OpenAIResponsesCompactionSession``)."""

    run_compaction = None  # type: ignore[assignment]

    def __init__(self, session_id: str = "test", history: list[Any] | None = None) -> None:
        super().__init__(session_id, _store())
        self._history: list[Any] | None = list(history) if history else None
        # the SDK helper's opt-in for stores that reassign ids (the runner reads it)
        self._ignore_ids_for_matching = False

    async def _seed(self) -> None:
        if self._history:
            history, self._history = self._history, None
            await HarnessSession.add_items(self, history)  # as given, like the helper

    async def session(self, *, writing: bool = True) -> Session:
        await self._seed()
        return await super().session(writing=writing)

    async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> Any:
        await self._seed()
        return await super().get_items(limit, wrapper=wrapper)

    async def add_items(self, items: list[Any], *, wrapper: Any = None) -> None:
        await self._seed()
        await super().add_items(items, wrapper=wrapper)

    async def pop_item(self, *, wrapper: Any = None) -> Any:
        await self._seed()
        return await super().pop_item(wrapper=wrapper)

    async def clear_session(self, *, wrapper: Any = None) -> None:
        await self._seed()
        await super().clear_session(wrapper=wrapper)

    @property
    def saved_items(self) -> list[Any]:
        """The current items, read synchronously (the SDK helper exposes its list)."""
        view = self._shared.view
        if view is None:
            return list(self._history or [])
        return _current_items(view, None)

    @property
    def _items(self) -> list[Any]:
        """The helper's internal list, read by some SDK tests: the same current items."""
        return self.saved_items


class CountingSession(SimpleListSession):
    """Counts ``pop_item`` calls, as the SDK helper of that name does (rewind tests)."""

    def __init__(self, session_id: str = "test", history: list[Any] | None = None) -> None:
        super().__init__(session_id=session_id, history=history)
        self.pop_calls = 0

    async def pop_item(self, *, wrapper: Any = None) -> Any:
        self.pop_calls += 1
        return await super().pop_item(wrapper=wrapper)


class IdStrippingSession(CountingSession):
    """Drops each item's ``id`` on add, as hosted stores that mint their own ids do."""

    def __init__(self, session_id: str = "test", history: list[Any] | None = None) -> None:
        super().__init__(session_id=session_id, history=history)
        self._ignore_ids_for_matching = True

    async def add_items(self, items: list[Any], *, wrapper: Any = None) -> None:
        stripped: list[Any] = [
            {k: v for k, v in item.items() if k != "id"} if isinstance(item, dict) else item for item in items
        ]
        await super().add_items(stripped, wrapper=wrapper)


class SQLiteStandIn(HarnessSession):
    """``SQLiteSession``'s constructor over harness's own SQLite backend (``:memory:``: a
    memory backend), for the SDK's protocol tests that are written against ``SQLiteSession``."""

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
    ) -> None:
        if _CURRENT:
            _USED.add(_CURRENT[-1])
        memory = str(db_path) == ":memory:"
        backend: Any = MemoryBackend() if memory else SqliteBackend(Path(db_path).with_suffix(".harness.db"))
        super().__init__(session_id, SessionStore(backend), session_settings=session_settings)
        self.db_path = db_path

    def close(self) -> None:  # type: ignore[override]  # SQLiteSession's is synchronous
        """``SQLiteSession.close``: every add already returned durable and let go; nothing to do."""


# the tests/memory files whose ``SQLiteSession`` is pointed at ours
SQLITE_FILES = ("tests/memory/test_session.py", "tests/memory/test_session_limit.py")


def _install() -> None:
    module = types.ModuleType("tests.utils.simple_session")
    module.__doc__ = "harness's stand-in for the SDK's test session helper (harness_peer_shim)."
    for cls in (SimpleListSession, CountingSession, IdStrippingSession):
        setattr(module, cls.__name__, cls)
    module.__dict__["HARNESS_SHIM"] = True
    sys.modules["tests.utils.simple_session"] = module


_install()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and item.path.as_posix().endswith(SQLITE_FILES):
            module.SQLiteSession = SQLiteStandIn


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _CURRENT.append(item.nodeid)
    try:
        yield
    finally:
        _CURRENT.pop()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep one outcome per test: the call's, or ``error`` / ``skipped`` from setup or teardown."""
    outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
    if report.when == "call":
        _OUTCOMES[report.nodeid] = outcome
    elif report.outcome != "passed":
        _OUTCOMES[report.nodeid] = "error" if report.outcome == "failed" else outcome


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Write ``{node id: [outcome, used our session]}`` to ``$HARNESS_PEER_REPORT``."""
    path = os.environ.get("HARNESS_PEER_REPORT")
    if path:
        report = {nodeid: [outcome, nodeid in _USED] for nodeid, outcome in sorted(_OUTCOMES.items())}
        with open(path, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=0)
