"""``ExtractiveSummarizer``: an offline, deterministic digest (no model).

It copies rather than paraphrases, under the same section headings the model summarizer uses:

* **Primary Request and Intent** — the head of every user request;
* **Key Technical Concepts** — the tools used and how often;
* **Files and Code** — every file path seen (user text, tool arguments, tool output), with the
  tools that touched it;
* **Errors and Fixes** — failed tool calls and error lines found in tool output;
* **Pending Jobs** — the open items of the latest ``todo/write``;
* **Current Work** — the last assistant conclusion and the latest tool calls with the head of
  their results;
* **Next Step** — the todo in progress (else the first pending one);
* **Critical Context** — the user's constraints, verbatim (sentences with must, never, always,
  do not, only, keep, avoid ...).

A checkpoint inside the span (an earlier compaction) is merged: its bullets seed each section.
The digest is fitted to about half of the span's price by dropping detail in a fixed order
(older tool calls first, then shorter heads), so the same span always gives the same text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness.compaction.checkpoint import is_checkpoint_message, summary_text_of
from harness.compaction.llm import SECTION_HEADINGS
from harness.compaction.meter import price_blocks
from harness.compaction.summarizer import Summary, SummaryRequest
from harness.events.json import loads
from harness.messages.model import Message
from harness.session.session import Session

__all__ = ["ExtractiveSummarizer"]

_CONSTRAINT = re.compile(
    r"\b(must|mustn't|never|always|do not|don't|does not|should|shouldn't|only|avoid|keep|make sure|"
    r"required?|requirement|prefer|forbidden|not allowed|without|at most|at least|no more than)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_PATH = re.compile(
    r"(?<![\w@:/.~-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*[\w]"
    r"|(?<![\w/.-])[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|md|json|jsonl|toml|yaml|yml|txt|cfg|ini|rs|go|java|c|h|"
    r"cpp|hpp|sh|sql|html|css|lock|zst|zstd)\b"
)
_ERROR_LINE = re.compile(
    r"(Traceback|Error\b|Error:|error:|ERROR|FAILED|FAIL:|Exception|exit (status|code) [1-9]|"
    r"No such file|not found|denied|refused)"
)
_WS = re.compile(r"\s+")

_HEADS: Final = (
    # (request head, tool arguments, result head, conclusion, tool calls kept, error lines per result)
    (400, 160, 240, 800, 64, 3),
    (240, 120, 160, 500, 32, 2),
    (160, 80, 100, 300, 16, 1),
    (100, 60, 60, 200, 8, 1),
    (60, 40, 0, 120, 0, 1),
)


def _flat(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _cut(text: str, limit: int) -> str:
    text = _flat(text)
    if limit <= 0:
        return ""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _texts(blocks: Sequence[Any]) -> str:
    return "\n".join(
        block.get("text", "")
        for block in blocks
        if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )


class _Call:
    __slots__ = ("arguments", "error", "name", "result")

    def __init__(self, name: str, arguments: str) -> None:
        self.name = name
        self.arguments = arguments
        self.result: str | None = None
        self.error = False


class _Facts:
    """What the span says, gathered once; rendered at several levels of detail."""

    def __init__(self) -> None:
        self.prior: dict[str, list[str]] = {heading: [] for heading in SECTION_HEADINGS}
        self.requests: list[str] = []
        self.constraints: list[str] = []
        self.paths: dict[str, list[str]] = {}
        self.calls: list[_Call] = []
        self.errors: list[tuple[str, list[str]]] = []
        self.conclusion = ""
        self.todos: list[tuple[str, str]] = []

    def path(self, path: str, how: str | None = None) -> None:
        path = path.rstrip(".,:;")
        if len(path) < 3 or path.startswith(("http", "//")) or "://" in path:
            return
        tools = self.paths.setdefault(path, [])
        if how is not None and how not in tools:
            tools.append(how)

    def scan_paths(self, text: str, how: str | None = None) -> None:
        for match in _PATH.finditer(text):
            self.path(match.group(0), how)


def _prior_sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("## "):
            current = sections.setdefault(stripped, [])
        elif current is not None and stripped and stripped != "- (none)" and stripped != "(none)":
            current.append(stripped if stripped.startswith("-") else f"- {stripped}")
    return sections


def _latest_todos(session: Session) -> list[tuple[str, str]]:
    events = session.events
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type != "todo/write":
            continue
        data = event.data
        todos = data.get("todos") if isinstance(data, Mapping) else None
        out: list[tuple[str, str]] = []
        for item in todos if isinstance(todos, list | tuple) else ():
            if isinstance(item, Mapping) and isinstance(item.get("content"), str):
                out.append((str(item.get("status", "pending")), item["content"]))
        return out
    return []


def _gather(request: SummaryRequest) -> _Facts:
    facts = _Facts()
    calls: dict[str, _Call] = {}
    for message in request.messages:
        _gather_message(facts, calls, message)
    facts.todos = _latest_todos(request.session)
    return facts


def _gather_message(facts: _Facts, calls: dict[str, _Call], message: Message) -> None:
    raw = message.raw
    content = raw.get("content")
    blocks: Sequence[Any] = content if isinstance(content, list | tuple) else ()
    if message.role == "assistant":
        text = _texts(blocks)
        if text.strip():
            facts.conclusion = text
            facts.scan_paths(text)
        for block in blocks:
            if isinstance(block, Mapping) and block.get("type") == "tool-call":
                call = _Call(str(block.get("name", "")), str(block.get("arguments", "")))
                calls[str(block.get("id", ""))] = call
                facts.calls.append(call)
                _call_paths(facts, call)
        return
    if is_checkpoint_message(raw):
        for heading, bullets in _prior_sections(summary_text_of(raw)).items():
            if heading in facts.prior:
                facts.prior[heading].extend(bullets)
        return
    results = [b for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool-result"]
    for block in results:
        inner = block.get("content")
        text = _texts(inner if isinstance(inner, list | tuple) else ())
        found = calls.get(str(block.get("toolCallId", "")))
        call = found or _Call("unknown tool", "")
        if found is None:
            facts.calls.append(call)
        call.result = text
        call.error = block.get("isError") is True
        facts.scan_paths(text)
        lines = [line for line in text.splitlines() if _ERROR_LINE.search(line)]
        if call.error and not lines and text.strip():
            lines = [text.strip().splitlines()[0]]
        if lines or call.error:
            facts.errors.append((call.name, lines))
    text = _texts(blocks)
    if not text.strip():
        return
    facts.requests.append(text)
    facts.scan_paths(text)
    for sentence in _SENTENCE.split(text):
        if _CONSTRAINT.search(sentence) and sentence.strip():
            facts.constraints.append(_flat(sentence))


def _call_paths(facts: _Facts, call: _Call) -> None:
    try:
        arguments = loads(call.arguments) if call.arguments else {}
    except ValueError:
        facts.scan_paths(call.arguments, call.name)
        return
    values: list[str] = []
    if isinstance(arguments, Mapping):
        for key, value in arguments.items():
            if isinstance(value, str) and key in (
                "path",
                "file",
                "file_path",
                "filename",
                "dir",
                "directory",
            ):
                facts.path(value, call.name)
            elif isinstance(value, str):
                values.append(value)
    for value in values:
        facts.scan_paths(value, call.name)


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _render(facts: _Facts, level: int) -> str:
    request_head, argument_head, result_head, conclusion_head, calls_kept, error_lines = _HEADS[level]
    prior_kept = max(2, 12 >> level)
    sections: dict[str, list[str]] = {
        heading: list(facts.prior[heading][-prior_kept:]) for heading in SECTION_HEADINGS
    }
    primary, concepts, files, errors, pending, current, next_step, critical = SECTION_HEADINGS

    sections[primary] += [f"- {_cut(text, request_head)}" for text in facts.requests]
    counts = Counter(call.name for call in facts.calls)
    if counts:
        sections[concepts].append(
            "- tools used: " + ", ".join(f"{name} ×{n}" for name, n in sorted(counts.items()))
        )
    for path, tools in facts.paths.items():
        sections[files].append(f"- {path}" + (f" ({', '.join(tools)})" if tools else ""))
    for name, lines in facts.errors:
        shown = "; ".join(_cut(line, 200) for line in lines[:error_lines])
        sections[errors].append(f"- {name} failed" + (f": {shown}" if shown else ""))
    open_todos = [(status, text) for status, text in facts.todos if status != "completed"]
    sections[pending] += [f"- [{status}] {_cut(text, 300)}" for status, text in open_todos]
    if facts.conclusion:
        sections[current].append(f"- last assistant reply: {_cut(facts.conclusion, conclusion_head)}")
    if calls_kept:
        for call in facts.calls[-calls_kept:]:
            line = f"- {call.name}({_cut(call.arguments, argument_head)})"
            if call.result is not None and result_head:
                line += (" → error: " if call.error else " → ") + (
                    _cut(call.result, result_head) or "(no output)"
                )
            sections[current].append(line)
    doing = [text for status, text in open_todos if status == "in_progress"] or [t for _, t in open_todos]
    if doing:
        sections[next_step].append(f"- {_cut(doing[0], 300)}")
    sections[critical] += [f"- {constraint}" for constraint in facts.constraints]

    parts: list[str] = []
    for heading in SECTION_HEADINGS:
        bullets = _dedupe(sections[heading])
        parts.append(heading)
        parts.extend(bullets or ["(none)"])
        parts.append("")
    return "\n".join(parts).strip() + "\n"


class ExtractiveSummarizer:
    """A deterministic ``Summarizer`` that needs no model (see the module doc).

    ``budget_ratio``: the digest aims at most at this share of the span's price (it may go
    over on a tiny span; the transaction then refuses a summary that is not smaller).
    """

    provider: Final = "harness"
    model: Final = "extractive-v1"

    def __init__(self, *, budget_ratio: float = 0.5) -> None:
        if not 0 < budget_ratio <= 1:
            raise ValueError("budget_ratio must be in (0, 1]")
        self.budget_ratio = budget_ratio

    def __repr__(self) -> str:
        return f"ExtractiveSummarizer(budget_ratio={self.budget_ratio})"

    def digest(self, request: SummaryRequest) -> str:
        """The digest text for ``request`` (what ``summarize`` returns, synchronously)."""
        facts = _gather(request)
        budget = max(64, int(request.tokens * self.budget_ratio))
        text = ""
        for level in range(len(_HEADS)):
            text = _render(facts, level)
            if price_blocks([{"type": "text", "text": text}]) <= budget:
                break
        return text

    async def summarize(self, request: SummaryRequest) -> Summary:
        """The digest of ``request.messages`` (deterministic, offline)."""
        return Summary(texts=(self.digest(request),), provider=self.provider, model=self.model)
