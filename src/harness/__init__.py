"""harness: durable, auditable, event-sourced sessions for LLM agents.

The core is ``Session``: an append-only log of immutable ``Event`` values and the
model-visible Surface folded from it. See ``docs/architecture.md``.

``harness`` exports the core (``harness.__all__``, at most 160 names): the session and its
companions (``harness.session``), events and messages with their builders
(``harness.events``, ``harness.messages``), the Surface (``harness.surface``), the whole
error tree (``harness.errors``), the store (``SessionStore``, ``open_store``, ``StoreSpec``,
the five backends and ``SessionInfo``) and the agent (``Agent``, its settings, approvals and
outcome). Everything else is imported from its subpackage, which exports its own names:
``harness.query``, ``harness.compaction``, ``harness.recovery``, ``harness.search``,
``harness.telemetry``, ``harness.tools``, ``harness.providers``, and the rest of
``harness.stores`` and ``harness.agent``.

The core packages are imported with ``harness``; the other subpackages too, but each imports
its names on first use (so do the store and agent names here), so ``import harness`` loads
none of ``psycopg``, ``openai``, ``zstandard``, ``rich`` or ``typer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import harness.agent as _agent
import harness.compaction as _compaction
import harness.errors as _errors
import harness.events as _events
import harness.messages as _messages
import harness.providers as _providers
import harness.query as _query
import harness.recovery as _recovery
import harness.search as _search
import harness.session as _session
import harness.stores as _stores
import harness.surface as _surface
import harness.telemetry as _telemetry
import harness.tools as _tools
from harness._lazy import exported_names, lazy_exports
from harness.errors import *  # noqa: F403
from harness.events import *  # noqa: F403
from harness.messages import *  # noqa: F403
from harness.session import *  # noqa: F403
from harness.surface import *  # noqa: F403

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.agent import Agent as Agent
    from harness.agent import AgentSettings as AgentSettings
    from harness.agent import ApprovalOutcome as ApprovalOutcome
    from harness.agent import ApprovalRequest as ApprovalRequest
    from harness.agent import Approver as Approver
    from harness.agent import FixedApprover as FixedApprover
    from harness.agent import TurnOutcome as TurnOutcome
    from harness.stores import DshSqliteBackend as DshSqliteBackend
    from harness.stores import JsonlBackend as JsonlBackend
    from harness.stores import MemoryBackend as MemoryBackend
    from harness.stores import PostgresBackend as PostgresBackend
    from harness.stores import SessionInfo as SessionInfo
    from harness.stores import SessionStore as SessionStore
    from harness.stores import SqliteBackend as SqliteBackend
    from harness.stores import StoreSpec as StoreSpec
    from harness.stores import open_store as open_store

__version__ = "0.1.0"

_CORE = (_errors, _events, _messages, _session, _surface)
"""The core packages, whole: each name of theirs is a name of ``harness``."""

_SUBPACKAGES = (
    *_CORE,
    _agent,
    _compaction,
    _providers,
    _query,
    _recovery,
    _search,
    _stores,
    _telemetry,
    _tools,
)
"""Every subpackage loads with ``harness`` (the others read only their tables), so
``harness.query.page`` works after ``import harness``."""

_EXPORTS = {
    "harness.stores": (
        "SessionStore",
        "open_store",
        "StoreSpec",
        "SessionInfo",
        "JsonlBackend",
        "SqliteBackend",
        "DshSqliteBackend",
        "PostgresBackend",
        "MemoryBackend",
    ),
    "harness.agent": (
        "Agent",
        "AgentSettings",
        "Approver",
        "ApprovalRequest",
        "ApprovalOutcome",
        "FixedApprover",
        "TurnOutcome",
    ),
}
"""The other names of ``harness``, imported on first use (the stores and the agent pull heavy
modules): each is also a name of its subpackage."""

if not TYPE_CHECKING:  # at run time: the core's names, then the table's, each loaded on first use (PEP 562)
    __all__ = ["__version__", *exported_names({package.__name__: package.__all__ for package in _CORE})]
    __all__ += exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
