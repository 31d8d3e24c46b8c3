"""The event-type registry: one entry per event type harness knows (FORMAT §2, §4, §5).

Each ``EventType`` says what the type records, its role in a session (a Surface node, a
bracket, a stream chunk or a log-only record), where it comes from (dsh's vocabulary,
harness's own ignorable types, or retired) and which *aspects* it has: semantic text for
search, its own one-line summary, a failure predicate, a telemetry projection and a line in
the live printer. The modules that dispatch on type keep one ``Hooks`` table per aspect.
A hook registered for a type the registry lacks, or for an aspect its entry does not
declare, fails at import; a declared aspect without a hook fails
``tests/test_event_types.py``. Adding a type is one entry here, then its hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final, Generic, TypeVar

__all__ = ["EVENT_TYPES", "Aspect", "EventType", "Hooks", "Origin", "Role", "event_type"]


class Role(StrEnum):
    """What an event is to the session."""

    SURFACE = "surface"
    """A Surface node: the model sees it; it carries a surface op (FORMAT §6)."""
    BRACKET = "bracket"
    """Opens or closes a turn, a step or a compaction transaction."""
    STREAM = "stream"
    """A raw piece of a model's stream; the message that follows carries it whole."""
    RECORD = "record"
    """A log-only fact: a header, an approval, a retry, a title, a check."""


class Origin(StrEnum):
    """Who defines the type."""

    DSH = "dsh"
    """In dsh's vocabulary: any dsh reader loads it (FORMAT §2)."""
    HARNESS = "harness"
    """harness's own: always written ``ignorable`` so that dsh skips it."""
    RETIRED = "retired"
    """A legacy type refused on load and on append (FORMAT §7.6)."""
    UPGRADED = "upgraded"
    """A legacy type that loading rewrites into a current one (FORMAT §7.6)."""


class Aspect(StrEnum):
    """What a type may have beyond its data; each aspect is one ``Hooks`` table."""

    TEXT = "text"
    """Words to search for (``harness.query.text``)."""
    SUMMARY = "summary"
    """Its own one-line wording in ``harness log``, ``tail`` and the viewer (``harness.present``)."""
    FAILURE = "failure"
    """It can record something going wrong: shown in red (``harness.present``)."""
    TELEMETRY = "telemetry"
    """It opens, closes or annotates an OpenTelemetry span (``harness.telemetry``)."""
    LIVE = "live"
    """``harness run`` prints it as it happens (``harness.cli.live``)."""


@dataclass(frozen=True, slots=True)
class EventType:
    """One event type: its name, role, origin, a line on what it records, and its aspects."""

    name: str
    role: Role
    origin: Origin
    doc: str
    aspects: frozenset[Aspect]

    def has(self, aspect: Aspect) -> bool:
        """True when this type declares ``aspect``."""
        return aspect in self.aspects


def _entries() -> dict[str, EventType]:
    table: dict[str, EventType] = {}

    def add(name: str, role: Role, aspects: str, doc: str, origin: Origin = Origin.DSH) -> None:
        table[name] = EventType(name, role, origin, doc, frozenset(Aspect(a) for a in aspects.split()))

    surface, bracket, stream, record = Role.SURFACE, Role.BRACKET, Role.STREAM, Role.RECORD
    # The conversation the model sees (FORMAT §4).
    add("user/message", surface, "text summary telemetry", "A user message (or a compaction checkpoint).")
    add("assistant/message", surface, "text summary telemetry", "The model's assembled answer of a step.")
    add("tool/result", surface, "text summary failure telemetry live", "The answer to one tool call.")
    add("assistant/chunk", stream, "summary failure telemetry live", "One streamed piece of a model answer.")
    add("tool/call", record, "text summary telemetry live", "A tool call about to run: id, name, arguments.")
    # Turns and steps.
    add("turn/start", bracket, "summary telemetry", "A turn began.")
    add("turn/end", bracket, "text summary failure telemetry live", "A turn ended, and why.")
    add("step/start", bracket, "summary telemetry", "A step (one model request and its tools) began.")
    add("step/end", bracket, "summary telemetry", "A step ended.")
    # What the model was asked with.
    add("request/header", record, "summary telemetry", "The request header in force: system, tools, config.")
    add("request/context", record, "summary telemetry", "The provider, model and context window in force.")
    add("llm/retry", record, "text summary failure telemetry live", "A model request failed; a retry waits.")
    add("llm/retry-started", record, "summary telemetry", "A scheduled retry began.")
    # Approvals.
    add("approval/asked", record, "text summary telemetry live", "A tool call waits for a person's approval.")
    add("approval/decided", record, "text summary failure telemetry live", "The answer to an approval.")
    add("approval/policy", record, "text summary", "The session's approval policy was set.")
    # Compaction (FORMAT §11).
    add("compaction/start", bracket, "summary telemetry", "A compaction transaction began.")
    add("compaction/summary", record, "summary telemetry", "The summary replacing a range of Surface nodes.")
    add("compaction/prune", record, "summary telemetry", "Surface nodes dropped without a summary.")
    add("compaction/end", bracket, "text summary failure telemetry", "A compaction ended (and its error).")
    # The session itself.
    add("session/title", record, "text summary", "The session's title.")
    add("session/end-seed", record, "summary", "The end of a seeded or forked prefix (FORMAT §7.3).")
    add("todo/write", record, "text summary", "The whole todo list, as the agent last wrote it.")
    # dsh's other records, named as dsh names them: harness loads, keeps and shows them as
    # key=value pairs, and does not write them.
    for name, doc in (
        ("agent-preset/selected", "dsh: an agent preset was chosen."),
        ("agent/inbox/spliced", "dsh: messages from an agent's inbox entered the turn."),
        ("command/run", "dsh: a slash command ran."),
        ("command/done", "dsh: a slash command finished."),
        ("feedback/record", "dsh: the user's feedback on an answer."),
        ("goal/change", "dsh: the session's goal changed."),
        ("hook/invoked", "dsh: a hook ran."),
        ("hook/result", "dsh: what a hook returned."),
        ("permission/preset", "dsh: a permission preset was chosen."),
        ("plan/mode", "dsh: plan mode was switched."),
        ("sandbox/mode", "dsh: the sandbox mode was switched."),
        ("schedule/change", "dsh: a schedule changed."),
        ("session/title-llm-request", "dsh: the model request that named the session."),
        ("subagent/descriptor", "dsh: a sub-agent was described."),
        ("team/member", "dsh: a team member was added or changed."),
        ("team/message/queued", "dsh: a message to a team member was queued."),
        ("team/message/delivered", "dsh: a queued team message was delivered."),
        ("team/task", "dsh: a team task changed."),
        ("tool-workflow/run-start", "dsh: a tool workflow run began."),
        ("tool-workflow/run-end", "dsh: a tool workflow run ended."),
        ("tool-workflow/agent-start", "dsh: an agent of a tool workflow began."),
        ("tool-workflow/agent-end", "dsh: an agent of a tool workflow ended."),
        ("tool/code-dispatch-start", "dsh: a code-dispatch tool began."),
        ("tool/code-dispatch", "dsh: a code-dispatch tool's record."),
        ("web/deepseek-search-llm-request", "dsh: the model request behind a web search."),
    ):
        add(name, record, "", doc)
    # harness's own, written ignorable (FORMAT §5).
    own = Origin.HARNESS
    add("workspace/baseline", record, "summary", "The workspace's state at a turn's start.", own)
    add("recovery/check", record, "text summary failure telemetry", "A world check and its findings.", own)
    add("harness/repair", record, "", "Whose open turn a crash repair closed, by whom, and why.", own)
    add("mcp/connect", record, "", "One MCP server's state when it connected.", own)
    for name, doc in (  # the framework adapters' records (harness.integrations)
        ("adk/session", "ADK: the record that opens a session's log."),
        ("adk/state", "ADK: one app- or user-state delta."),
        ("langgraph/thread", "LangGraph: the record that opens a thread's log."),
        ("langgraph/checkpoint", "LangGraph: one checkpoint."),
        ("langgraph/writes", "LangGraph: a task's pending writes."),
        ("langgraph/prune", "LangGraph: checkpoints pruned."),
        ("langgraph/deleted", "LangGraph: the thread was deleted."),
        ("pydantic-ai/conversation", "pydantic-ai adapter: a conversation's opening record."),
        ("pydantic-ai/entry", "pydantic-ai adapter: one history entry."),
        ("pydantic-ai/record", "pydantic-ai adapter: one stored state record."),
        ("pydantic-ai/deleted", "pydantic-ai adapter: a state record deleted."),
        ("pydantic-ai/moved", "pydantic-ai adapter: a state record moved."),
        ("pydantic-ai/abandoned", "pydantic-ai adapter: an abandoned segment."),
    ):
        add(name, record, "", doc, own)
    # Retired: a reader refuses them (FORMAT §7.6).
    add("request/header-delta", record, "", "Retired: a partial header change.", Origin.RETIRED)
    add("mode/set", record, "", "Retired: a mode switch.", Origin.RETIRED)
    add(
        "steering/message",
        record,
        "",
        "Legacy: a steering message, loaded as a user message.",
        Origin.UPGRADED,
    )
    return table


EVENT_TYPES: Final[Mapping[str, EventType]] = MappingProxyType(_entries())
"""Every type harness knows, by name."""


def event_type(name: str) -> EventType | None:
    """The registry's entry for ``name``, or None for a type harness does not know."""
    return EVENT_TYPES.get(name)


H = TypeVar("H", bound=Callable[..., object])

_TABLES: dict[Aspect, Hooks[Callable[..., object]]] = {}


class Hooks(Generic[H]):
    """One aspect's hooks by event type: the dispatch table of the module that owns the aspect.

    ``register`` refuses a type the registry does not know or whose entry does not declare the
    aspect; ``missing`` names the declared types that have no hook yet.
    """

    def __init__(self, aspect: Aspect) -> None:
        if aspect in _TABLES:
            raise ValueError(f"the {aspect} aspect already has its table")
        self.aspect = aspect
        self._hooks: dict[str, H] = {}
        _TABLES[aspect] = self  # type: ignore[assignment]  # one table per aspect, any hook type

    def register(self, *names: str) -> Callable[[H], H]:
        """A decorator: ``hook`` is this aspect's hook for each of ``names``."""
        for name in names:
            entry = EVENT_TYPES.get(name)
            if entry is None:
                raise KeyError(f"{name!r} is not in the event-type registry (harness/events/types.py)")
            if not entry.has(self.aspect):
                raise ValueError(
                    f"{name!r} does not declare the {self.aspect} aspect (harness/events/types.py)"
                )

        def add(hook: H) -> H:
            for name in names:
                self._hooks[name] = hook
            return hook

        return add

    def get(self, name: str) -> H | None:
        """The hook for type ``name``, or None."""
        return self._hooks.get(name)

    def types(self) -> frozenset[str]:
        """The types that have a hook."""
        return frozenset(self._hooks)

    def missing(self) -> list[str]:
        """The types whose entry declares this aspect and that have no hook, sorted."""
        return sorted(n for n, e in EVENT_TYPES.items() if e.has(self.aspect) and n not in self._hooks)


def hook_tables() -> Mapping[Aspect, Hooks[Callable[..., object]]]:
    """The aspect tables created so far (one per imported dispatching module)."""
    return MappingProxyType(_TABLES)
