"""One readable line per event, for ``harness log``, ``harness tail`` and the viewer.

Every known event type has its own wording; anything else is shown as ``key=value``
pairs with nested values as compact JSON. Never a Python repr: event data is frozen
(``FrozenDict``/``FrozenList``), and its ``repr`` is noise to an auditor. Failures
(a failed tool, a turn ended by an error, a failed compaction, a retried request)
say their message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from harness.events.event import Event
from harness.events.json import dumps
from harness.events.types import Aspect, Hooks

__all__ = ["event_summary", "is_failure", "message_text", "plural", "retry_line", "short", "value_text"]


def short(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    if width < 1:
        return ""
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def plural(count: int, word: str, many: str | None = None) -> str:
    """``"1 closer"``, ``"3 closers"`` (``many`` for an irregular plural)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def value_text(value: Any) -> str:
    """A JSON value as a reader writes it: strings bare, the rest as compact JSON."""
    if isinstance(value, str):
        return value
    try:  # harness's own encoder: it has no depth limit of its own
        return dumps(value).decode()
    except (TypeError, ValueError):  # not JSON (cannot happen for event data): still no repr
        return str(value)


def _blocks(message: Any) -> Sequence[Any]:
    content = message.get("content") if isinstance(message, Mapping) else None
    return content if isinstance(content, list | tuple) else ()


def _result_text(block: Mapping[str, Any]) -> str:
    return " ".join(
        str(part.get("text", "")) if part.get("type") == "text" else f"({part.get('type')})"
        for part in _blocks(block)
        if isinstance(part, Mapping)
    )


def message_text(message: Any) -> str:
    """The content of a message as one plain line: text, ``thinking:`` reasoning,
    ``→ name args`` tool calls, tool results (``error:`` when they failed)."""
    parts: list[str] = []
    for block in _blocks(message):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "reasoning":
            parts.append(f"thinking: {block.get('text', '')}")
        elif kind == "tool-call":
            parts.append(f"→ {block.get('name')} {block.get('arguments', '')}")
        elif kind == "tool-result":
            parts.append(("error: " if block.get("isError") is True else "") + _result_text(block))
        else:  # a block harness has no type for (an adapter's): its kind, and the name it gives
            name = block.get("name")
            parts.append(f"({kind} {name})" if isinstance(name, str) and name else f"({kind})")
    return " ".join(parts)


def _pairs(data: Mapping[str, Any], skip: frozenset[str] = frozenset()) -> str:
    return ", ".join(f"{key}={value_text(value)}" for key, value in data.items() if key not in skip)


def _failure_text(failure: Any) -> str:
    """``CODE: message`` of an error object (``LlmFailure``, a tool error identity)."""
    if not isinstance(failure, Mapping):
        return value_text(failure) if failure is not None else ""
    code = failure.get("code")
    message = failure.get("message")
    if code is None:
        return value_text(message) if message is not None else _pairs(failure)
    if message is None:
        return str(code)
    text = value_text(message)
    return text if text.startswith(str(code)) else f"{code}: {text}"


def _turn_end(data: Mapping[str, Any]) -> str:
    reason = data.get("reason")
    head = f"turn {value_text(data.get('turn'))}"
    if not isinstance(reason, Mapping):
        return f"{head} {value_text(reason)}"
    kind = reason.get("kind")
    text = f"{head} {value_text(kind)}"
    if kind == "error":
        return f"{text}: {_failure_text(reason.get('error'))}"
    if kind == "aborted":
        why = reason.get("reason")
        label = why.get("kind") if isinstance(why, Mapping) else why
        return f"{text} ({value_text(label)})" if label is not None else text
    rest = _pairs(reason, frozenset({"kind"}))
    return f"{text} ({rest})" if rest else text


def _tool_result(data: Mapping[str, Any]) -> str:
    message = data.get("message")
    text = message_text(message)
    error = data.get("error")
    if isinstance(error, Mapping):
        code = error.get("code") or error.get("name")
        body = text[len("error: ") :] if text.startswith("error: ") else text
        return f"error {value_text(code)}: {body}" if code is not None else f"error: {body}"
    return text


def _chunk(data: Mapping[str, Any]) -> str:
    chunk = data.get("chunk")
    if not isinstance(chunk, Mapping):
        return value_text(chunk)
    kind = chunk.get("type")
    if kind in ("text-delta", "reasoning-delta"):
        return f"{kind} {value_text(chunk.get('text', ''))}"
    if kind == "tool-call-delta":
        name = f" {chunk['name']}" if "name" in chunk else ""
        return f"{kind} {value_text(chunk.get('id'))}{name} {value_text(chunk.get('argumentsDelta', ''))}"
    if kind == "block-start":
        return f"block-start {value_text(chunk.get('blockType'))}"
    if kind == "block-end":
        block = chunk.get("block")
        name = f" {block.get('name')}" if isinstance(block, Mapping) and "name" in block else ""
        label = block.get("type") if isinstance(block, Mapping) else block
        return f"block-end {value_text(label)}{name}"
    if kind == "finish":
        reason = chunk.get("reason")
        if not isinstance(reason, Mapping):
            return f"finish {value_text(reason)}"
        text = f"finish {value_text(reason.get('kind'))}"
        failure = reason.get("failure")  # an error or aborted finish: what failed
        return f"{text}: {_failure_text(failure)}" if failure is not None else text
    if kind == "usage":
        return f"usage {_usage(chunk.get('usage'))}"
    return _pairs(chunk)


def _usage(usage: Any) -> str:
    if not isinstance(usage, Mapping):
        return value_text(usage)
    names = {"inputTokens": "in", "outputTokens": "out", "cacheReadTokens": "cache"}
    return " ".join(f"{names.get(key, key)} {value_text(value)}" for key, value in usage.items())


def _assistant(data: Mapping[str, Any]) -> str:
    text = message_text(data.get("message")) or "(empty)"
    return f"(interrupted) {text}" if data.get("interrupted") is True else text


def _user(data: Mapping[str, Any]) -> str:
    source = data.get("source")
    text = message_text(data)
    if isinstance(source, Mapping) and source.get("kind") == "plugin":
        return f"[{value_text(source.get('plugin'))}] {text}"
    return text


def _request_header(data: Mapping[str, Any]) -> str:
    header = data.get("header")
    header = header if isinstance(header, Mapping) else {}
    config = header.get("config")
    config = config if isinstance(config, Mapping) else {}
    route = f"{value_text(config.get('provider'))}/{value_text(config.get('model'))}"
    text = f"{value_text(data.get('reason'))}: {route}"
    if "reasoningEffort" in config:
        text += f", effort {value_text(config['reasoningEffort'])}"
    tools = header.get("tools")
    if isinstance(tools, list | tuple) and tools:
        text += ", " + plural(len(tools), "tool")
    return text


def _request_context(data: Mapping[str, Any]) -> str:
    text = f"{value_text(data.get('provider'))}/{value_text(data.get('model'))}"
    window = data.get("contextWindow")
    return f"{text}, context window {window:,}" if type(window) is int else text


def _compaction_id(data: Mapping[str, Any]) -> str:
    ident = data.get("compactionId")
    return f" [{ident[:8]}]" if isinstance(ident, str) and ident else ""


def _compaction_start(data: Mapping[str, Any]) -> str:
    turn = data.get("turn")
    return ("manual" if turn is None else f"turn {value_text(turn)}") + _compaction_id(data)


def _compaction_end(data: Mapping[str, Any]) -> str:
    error = data.get("error")
    text = "done" if error is None else f"failed: {value_text(error)}"
    return text + _compaction_id(data)


def _nodes(data: Mapping[str, Any]) -> str:
    seqs = data.get("shadowedSeqs")
    count = plural(len(seqs), "node") if isinstance(seqs, list | tuple) else "? nodes"
    tokens = data.get("shadowedTokenCount")
    return f"{count}, {plural(tokens, 'token')}" if type(tokens) is int else count


def _compaction_summary(data: Mapping[str, Any]) -> str:
    route = f"{value_text(data.get('provider'))}/{value_text(data.get('model'))}"
    return f"{_nodes(data)} by {route}: {value_text(data.get('summary', ''))}"


def _todos(data: Mapping[str, Any]) -> str:
    todos = data.get("todos")
    if not isinstance(todos, list | tuple):
        return _pairs(data)
    counts: dict[str, int] = {}
    for todo in todos:
        status = todo.get("status") if isinstance(todo, Mapping) else None
        counts[str(status)] = counts.get(str(status), 0) + 1
    detail = ", ".join(f"{count} {status.replace('_', ' ')}" for status, count in counts.items())
    return plural(len(todos), "todo") + (f": {detail}" if detail else "")


def _baseline(data: Mapping[str, Any]) -> str:
    git = data.get("git")
    if isinstance(git, Mapping):
        head = git.get("head")
        state = f"git {head[:12] if isinstance(head, str) else value_text(head)}"
        state += " (dirty)" if git.get("dirty") is True else ""
    else:
        state = "no git"
    return f"{value_text(data.get('root'))}, {state}"


def _recovery_check(data: Mapping[str, Any]) -> str:
    findings = data.get("findings")
    findings = findings if isinstance(findings, list | tuple) else ()
    kinds = [str(f.get("kind")) for f in findings if isinstance(f, Mapping)]
    head = "blocking" if data.get("blocking") is True else "not blocking"
    return f"{head}: {plural(len(findings), 'finding')}" + (f" ({', '.join(kinds)})" if kinds else "")


def _retry(data: Mapping[str, Any]) -> str:
    """The line ``harness run`` showed when it waited, with the failure's message."""
    line = retry_line(data)
    failure = data.get("failure")
    message = failure.get("message") if isinstance(failure, Mapping) else None
    if isinstance(message, str) and message and " ".join(message.split())[:40] not in line:
        line += f" — {message}"
    return line


def _approval_asked(data: Mapping[str, Any]) -> str:
    text = value_text(data.get("toolName"))
    if "callId" in data:
        text += f" (call {value_text(data['callId'])})"
    if "reason" in data:
        text += f": {value_text(data['reason'])}"
    return text


_OUTCOMES: Final = {
    "allowed-once": "allowed once",
    "rejected": "rejected: the call was not run",
    "cancelled": "cancelled: the call was not run",
    "unavailable": "unavailable (no one could be asked): the call was not run",
}


def _turn_step(data: Mapping[str, Any]) -> str:
    return " ".join(f"{key} {value_text(data[key])}" for key in ("turn", "step") if key in data)


_SUMMARIES: Final[Hooks[Callable[[Mapping[str, Any]], str]]] = Hooks(Aspect.SUMMARY)
for _name, _hook in {
    "user/message": _user,
    "assistant/message": _assistant,
    "assistant/chunk": _chunk,
    "tool/result": _tool_result,
    "tool/call": lambda d: f"{value_text(d.get('name'))} {value_text(d.get('arguments', ''))}",
    "turn/start": _turn_step,
    "step/start": _turn_step,
    "step/end": _turn_step,
    "turn/end": _turn_end,
    "request/header": _request_header,
    "request/context": _request_context,
    "session/title": lambda d: value_text(d.get("title")),
    "session/end-seed": lambda d: "end of the loaded prefix" + (f" ({_pairs(d)})" if d else ""),
    "approval/asked": _approval_asked,
    "approval/decided": lambda d: _OUTCOMES.get(str(d.get("outcome")), value_text(d.get("outcome"))),
    "approval/policy": lambda d: f"policy {value_text(d.get('policy'))}",
    "compaction/start": _compaction_start,
    "compaction/summary": _compaction_summary,
    "compaction/end": _compaction_end,
    "compaction/prune": lambda d: f"pruned {_nodes(d)}",
    "todo/write": _todos,
    "workspace/baseline": _baseline,
    "recovery/check": _recovery_check,
    "llm/retry": _retry,
    "llm/retry-started": lambda d: f"retry {value_text(d.get('retry'))} started",
}.items():
    _SUMMARIES.register(_name)(_hook)


def event_summary(event: Event, width: int = 60) -> str:
    """What ``event`` says, on one line of at most ``width`` characters."""
    data = event.data
    if not isinstance(data, Mapping):
        return short(value_text(data), width)
    render = _SUMMARIES.get(event.type)
    try:
        text = render(data) if render is not None else _pairs(data)
    except (AttributeError, KeyError, TypeError, ValueError):  # an odd shape: show the data itself
        text = _pairs(data)
    return short(text, width)


def _tool_failed(data: Mapping[str, Any]) -> bool:
    blocks = _blocks(data.get("message"))
    return "error" in data or any(isinstance(b, Mapping) and b.get("isError") is True for b in blocks)


def _turn_failed(data: Mapping[str, Any]) -> bool:
    reason = data.get("reason")
    return isinstance(reason, Mapping) and reason.get("kind") in ("error", "interrupted")


def _chunk_failed(data: Mapping[str, Any]) -> bool:
    chunk = data.get("chunk")
    reason = chunk.get("reason") if isinstance(chunk, Mapping) else None
    return isinstance(reason, Mapping) and reason.get("kind") == "error"


_FAILURES: Final[Hooks[Callable[[Mapping[str, Any]], bool]]] = Hooks(Aspect.FAILURE)
for _name, _failed in {
    "tool/result": _tool_failed,
    "turn/end": _turn_failed,
    "compaction/end": lambda d: d.get("error") is not None,
    "recovery/check": lambda d: d.get("blocking") is True,
    "approval/decided": lambda d: d.get("outcome") != "allowed-once",
    "assistant/chunk": _chunk_failed,
    "llm/retry": lambda d: True,
}.items():
    _FAILURES.register(_name)(_failed)


def is_failure(event: Event) -> bool:
    """True for an event that records something going wrong (shown in red)."""
    failed = _FAILURES.get(event.type)
    data = event.data
    return failed is not None and isinstance(data, Mapping) and failed(data)


_RETRY_LABELS = {
    "RATE_LIMIT": "rate limited",
    "SERVER": "server error",
    "TRANSPORT": "connection failed",
    "TIMEOUT": "timed out",
    "EMPTY_RESPONSE": "empty response",
}


def retry_line(data: Mapping[str, Any]) -> str:
    """One line for an ``llm/retry`` record, e.g. ``rate limited (HTTP 429), retrying in 2 s…
    (retry 1 of 3)``; a failure without an HTTP status shows its message instead."""
    failure = data.get("failure")
    failure = failure if isinstance(failure, Mapping) else {}
    code = str(failure.get("code", "UNKNOWN"))
    label = _RETRY_LABELS.get(code, code)
    status = failure.get("status")
    if type(status) is int:
        label += f" (HTTP {status})"
    elif failure.get("message"):
        label += f": {_squeeze(str(failure['message']), 160)}"
    delay = data.get("delayMs")
    if isinstance(delay, int | float) and not isinstance(delay, bool):
        wait = f"{delay / 1000:.3g} s"
    else:
        wait = "a moment"
    count = f"retry {data.get('retry')}"
    if "maxRetries" in data:
        count += f" of {data.get('maxRetries')}"
    return f"{label}, retrying in {wait}… ({count})"


def _squeeze(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
