"""The semantic text of an event: the words a person, or the model, searches a log for.

``event_text(event)`` is the one extraction that the text filter, the full-text index and the
viewer share, so a hit in one is a hit in all. It reads:

* messages (``user/message``, ``assistant/message``, ``tool/result``): the text of their
  blocks: ``text``, ``reasoning``, a ``tool-call``'s name and arguments, a ``tool-result``'s
  inner blocks; a tool result's error name and code too;
* ``tool/call``: the tool's name and its arguments;
* ``todo/write``: each item's content and status;
* approvals: the tool and reason asked about, the outcome decided, the policy set;
* failures: a turn that did not complete (its kind, an error's message and code), an
  ``llm/retry``'s failure, a compaction that ended with an error;
* ``recovery/check`` (a world check): each finding's kind, severity, summary and action;
* ``session/title``: the title.

Everything else gives ``""``: structural events (turn and step boundaries, a completed
turn's end), raw stream chunks (``assistant/chunk``: the message that follows carries their
text once), request headers and contexts, compaction summaries (the checkpoint message
carries the same text), and types this version does not know. Parts are stripped and joined
by newlines. Data of an unexpected shape contributes what can be read and never raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from harness.events.event import Event
from harness.events.json import loads
from harness.events.types import EVENT_TYPES, Aspect, Hooks

__all__ = ["TEXT_TYPES", "event_text"]

_EXTRACTORS: Final[Hooks[Callable[[list[str], Mapping[str, Any]], None]]] = Hooks(Aspect.TEXT)
"""Each text type's extractor: it appends the event's words to ``parts``."""


def _strings(parts: list[str], *values: object) -> None:
    for value in values:
        if isinstance(value, str):
            parts.append(value)


def _blocks(parts: list[str], content: object, depth: int = 0) -> None:
    if not isinstance(content, list) or depth > 8:  # tool results nest blocks; a hostile log nests deep
        return
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" or kind == "reasoning":
            _strings(parts, block.get("text"))
        elif kind == "tool-call":
            _strings(parts, block.get("name"), block.get("arguments"))
        elif kind == "tool-result":
            _blocks(parts, block.get("content"), depth + 1)
        else:  # a block harness has no type for (an adapter's): the name it gives
            _strings(parts, block.get("name"))


def _message(parts: list[str], message: object) -> None:
    if isinstance(message, Mapping):
        _blocks(parts, message.get("content"))


@_EXTRACTORS.register("user/message")
def _user_message(parts: list[str], data: Mapping[str, Any]) -> None:
    _message(parts, data)


@_EXTRACTORS.register("assistant/message")
def _assistant_message(parts: list[str], data: Mapping[str, Any]) -> None:
    _message(parts, data.get("message"))


@_EXTRACTORS.register("tool/result")
def _tool_result(parts: list[str], data: Mapping[str, Any]) -> None:
    _message(parts, data.get("message"))
    error = data.get("error")
    if isinstance(error, Mapping):
        _strings(parts, error.get("name"), error.get("code"))


@_EXTRACTORS.register("tool/call")
def _tool_call(parts: list[str], data: Mapping[str, Any]) -> None:
    _strings(parts, data.get("name"), data.get("arguments"))


@_EXTRACTORS.register("todo/write")
def _todo_write(parts: list[str], data: Mapping[str, Any]) -> None:
    todos = data.get("todos")
    if isinstance(todos, list):
        for todo in todos:
            if isinstance(todo, Mapping):
                _strings(parts, todo.get("content"), todo.get("status"))


@_EXTRACTORS.register("approval/asked")
def _approval_asked(parts: list[str], data: Mapping[str, Any]) -> None:
    _strings(parts, data.get("toolName"), data.get("reason"))


@_EXTRACTORS.register("approval/decided")
def _approval_decided(parts: list[str], data: Mapping[str, Any]) -> None:
    _strings(parts, data.get("outcome"))


@_EXTRACTORS.register("approval/policy")
def _approval_policy(parts: list[str], data: Mapping[str, Any]) -> None:
    _strings(parts, data.get("policy"))


def _failure(parts: list[str], failure: object) -> None:
    if isinstance(failure, Mapping):
        _strings(parts, failure.get("message"), failure.get("code"))


@_EXTRACTORS.register("turn/end")
def _turn_end(parts: list[str], data: Mapping[str, Any]) -> None:
    reason = data.get("reason")
    if not isinstance(reason, Mapping) or reason.get("kind") == "completed":
        return
    _strings(parts, reason.get("kind"))
    _failure(parts, reason.get("error"))
    inner = reason.get("reason")  # aborted: {kind: user | parent | hook (+ reason) | ...}
    if isinstance(inner, Mapping):
        _strings(parts, inner.get("kind"), inner.get("reason"))


@_EXTRACTORS.register("llm/retry")
def _llm_retry(parts: list[str], data: Mapping[str, Any]) -> None:
    _failure(parts, data.get("failure"))


@_EXTRACTORS.register("compaction/end")
def _compaction_end(parts: list[str], data: Mapping[str, Any]) -> None:
    _strings(parts, data.get("error"))


@_EXTRACTORS.register("recovery/check")
def _recovery_check(parts: list[str], data: Mapping[str, Any]) -> None:
    findings = data.get("findings")
    if isinstance(findings, list):
        for finding in findings:
            if isinstance(finding, Mapping):
                _strings(
                    parts,
                    finding.get("kind"),
                    finding.get("severity"),
                    finding.get("summary"),
                    finding.get("action"),
                )


@_EXTRACTORS.register("session/title")
def _session_title(parts: list[str], data: Mapping[str, Any]) -> None:
    _strings(parts, data.get("title"))



TEXT_TYPES: Final = frozenset(n for n, e in EVENT_TYPES.items() if e.has(Aspect.TEXT))
"""The event types that can have semantic text; every other type's text is ``""``."""


def event_text(event: Event) -> str:
    """The semantic text of ``event`` (see the module doc): ``""`` when it has none."""
    extract = _EXTRACTORS.get(event.type)
    if extract is None:
        return ""
    try:
        data = loads(event.data_json)
    except ValueError:  # bytes no valid event holds; an index must not stop at them
        return ""
    if not isinstance(data, Mapping):
        return ""
    parts: list[str] = []
    extract(parts, data)
    return "\n".join(stripped for part in parts if (stripped := part.strip()))
