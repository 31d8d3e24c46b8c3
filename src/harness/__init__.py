"""harness: durable, auditable, event-sourced sessions for LLM agents.

The core is ``Session``: an append-only log of immutable ``Event`` values and the
model-visible Surface folded from it. See ``docs/architecture.md``.

Every public name is importable from here (``from harness import SessionStore``): the
core (events, messages, surface, session) and the errors of ``harness.errors`` are
imported with the package; the names of storage, tools, providers, compaction, recovery,
the queries and the agent loop on first use, so ``import harness`` loads none of ``psycopg``,
``openai``, ``zstandard``, ``rich`` or ``typer``. Each subpackage exports its own names
too (``harness.stores.SessionStore``), and ``harness.__all__`` is the union of theirs: a
name added to a subpackage's ``__all__`` is a name of ``harness``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# The subpackages whose names load on first use: importing one only reads its lists.
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
from harness._lazy import lazy_exports
from harness.errors import *  # noqa: F403
from harness.events import *  # noqa: F403
from harness.messages import *  # noqa: F403
from harness.session import *  # noqa: F403
from harness.surface import *  # noqa: F403

if TYPE_CHECKING:  # what type checkers and IDEs read for the names that load on first use
    from harness.agent import *  # noqa: F403
    from harness.compaction import *  # noqa: F403
    from harness.providers import *  # noqa: F403
    from harness.query import *  # noqa: F403
    from harness.recovery import *  # noqa: F403
    from harness.search import *  # noqa: F403
    from harness.stores import *  # noqa: F403
    from harness.telemetry import *  # noqa: F403
    from harness.tools import *  # noqa: F403

__version__ = "0.1.0"

__all__ = ["__version__"]
__all__ += _errors.__all__
__all__ += _events.__all__
__all__ += _messages.__all__
__all__ += _session.__all__
__all__ += _surface.__all__
__all__ += _agent.__all__
__all__ += _compaction.__all__
__all__ += _providers.__all__
__all__ += _query.__all__
__all__ += _recovery.__all__
__all__ += _search.__all__
__all__ += _stores.__all__
__all__ += _telemetry.__all__
__all__ += _tools.__all__

_LAZY_PACKAGES = (_agent, _compaction, _providers, _query, _recovery, _search, _stores, _telemetry, _tools)

if not TYPE_CHECKING:  # at run time each name is imported on first use (PEP 562)
    __all__ = list(dict.fromkeys(__all__))  # compaction, query and telemetry re-export their errors
    __getattr__, __dir__ = lazy_exports(
        __name__, globals(), {package.__name__: package.__all__ for package in _LAZY_PACKAGES}
    )
