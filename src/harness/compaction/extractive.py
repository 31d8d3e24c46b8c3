"""``ExtractiveSummarizer``: an offline, deterministic digest (no model).

It copies rather than paraphrases, under the same section headings the model summarizer uses:

* **Primary Request and Intent** — the head of the first request and of the latest ones;
* **Key Technical Concepts** — the tools used and how often, the decisions taken (sentences
  with let's go with, we decided, instead of, 决定, statt, en lugar de, 決めました ...), and the
  identifiers and values named (backticked spans, ticket ids, versions, hashes, snake_case
  names, UPPER_CASE constants, numbers with units);
* **Files and Code** — every file path seen (user text, tool arguments, tool output; POSIX,
  Windows, ``s3://`` and the like), with the tools that touched it;
* **Errors and Fixes** — failed tool calls and error lines found in tool output (in several
  languages: Error, panic, BackOff, Fehler, 错误, エラー ...);
* **Pending Jobs** — the open items of the latest ``todo/write``, then the open tasks the user
  stated in words (remember to, don't forget, before we finish, 记得, denk daran, acuérdate,
  忘れずに ...);
* **Current Work** — the last assistant conclusion, the heads of the replies before it, the
  latest tool calls with the head of their results, and the short ``label: value`` lines of
  every tool output (measurements, digests, settings, counts);
* **Next Step** — the todo in progress (else the first pending one);
* **Critical Context** — the user's constraints, verbatim (must, never, off-limits, hold off,
  不要, 千万别, auf keinen Fall, no toques, 絶対 ...).

The phrasing rules live in ``harness.compaction.cues``. A checkpoint inside the span (an
earlier compaction) is merged: its bullets seed each section. The digest is fitted to about
half of the span's price by dropping detail in a fixed order (fewer and shorter items level
by level), so the same span always gives the same text; the last level caps every list, so
the digest stays bounded whatever the span holds. Credentials (API keys, tokens, private
keys, ``password=`` values) are replaced by ``[redacted]`` everywhere in it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from harness.compaction.checkpoint import is_checkpoint_message, summary_text_of
from harness.compaction.cues import (
    CONSTRAINT,
    DECISION,
    ERROR_LINE,
    IDENTIFIER,
    PATH,
    QUANTITY,
    SALIENT_LINE,
    SENTENCE,
    TASK,
    redact,
)
from harness.compaction.llm import SECTION_HEADINGS
from harness.compaction.meter import price_blocks
from harness.compaction.summarizer import Summary, SummaryRequest
from harness.events.json import loads
from harness.messages.model import Message
from harness.session.session import Session

__all__ = ["ExtractiveSummarizer"]

_WS: Final = re.compile(r"\s+")


class _Level(NamedTuple):
    """How much of each kind of fact one level of detail keeps (counts and characters)."""

    request_head: int
    argument_head: int
    result_head: int
    conclusion_head: int
    calls_kept: int
    error_lines: int
    requests_kept: int
    sentences_kept: int
    sentence_chars: int
    paths_kept: int
    errors_kept: int
    salient_calls: int
    identifiers_kept: int
    replies_kept: int
    reply_head: int
    prior_kept: int
    todos_kept: int


_LEVELS: Final = (
    _Level(400, 160, 240, 800, 64, 3, 40, 40, 300, 200, 48, 64, 64, 24, 200, 12, 30),
    _Level(240, 120, 160, 500, 32, 2, 24, 30, 240, 120, 32, 32, 48, 12, 160, 6, 20),
    _Level(160, 80, 100, 300, 16, 1, 12, 20, 200, 60, 16, 16, 32, 6, 120, 3, 12),
    _Level(100, 60, 60, 200, 8, 1, 6, 12, 160, 30, 8, 8, 16, 3, 100, 2, 8),
    _Level(60, 40, 0, 120, 0, 1, 3, 6, 120, 15, 4, 0, 8, 0, 0, 2, 4),
)
_LINE_CHARS: Final = 200
"""The longest an error line, an output line, a path or a merged bullet is copied."""
_SALIENT_PER_CALL: Final = 3


def _flat(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _cut(text: str, limit: int) -> str:
    """``text`` flattened, credentials redacted (before the cut, so that no cut leaves a
    credential's head that no longer looks like one), in at most ``limit`` characters."""
    text = _flat(redact(text))
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
        self.tasks: list[str] = []
        self.decisions: list[str] = []
        self.identifiers: dict[str, None] = {}
        self.paths: dict[str, list[str]] = {}
        self.calls: list[_Call] = []
        self.errors: list[tuple[str, list[str]]] = []
        self.replies: list[str] = []
        self.todos: list[tuple[str, str]] = []

    def path(self, path: str, how: str | None = None) -> None:
        path = path.rstrip(".,:;")
        if len(path) < 3 or path.startswith(("http", "//")) or not any(ch.isalpha() for ch in path):
            return  # a URL, or a fraction or a ratio (``0/1`` in a READY column)
        if "://" in path and not path.startswith(("s3:", "gs:", "az:", "abfs:", "hdfs:", "file:")):
            return
        tools = self.paths.setdefault(path, [])
        if how is not None and how not in tools:
            tools.append(how)

    def scan_paths(self, text: str, how: str | None = None) -> None:
        for match in PATH.finditer(text):
            self.path(match.group(0), how)

    def scan_identifiers(self, text: str) -> None:
        for match in IDENTIFIER.finditer(text):
            token = match.group(1) or match.group(0)
            if len(token) >= 3:
                self.identifiers.setdefault(token.strip(), None)
        for match in QUANTITY.finditer(text):
            self.identifiers.setdefault(match.group(0), None)

    def sentences(self, text: str, *, decisions_only: bool = False) -> None:
        """Sort ``text``'s sentences into constraints, open tasks and decisions (each sentence
        once, in that order of precedence)."""
        for sentence in SENTENCE.split(text):
            if not sentence or not sentence.strip():
                continue
            if decisions_only:
                if DECISION.search(sentence):
                    self.decisions.append(_flat(sentence))
            elif _is_constraint(sentence):
                self.constraints.append(_flat(sentence))
            elif TASK.search(sentence):
                self.tasks.append(_flat(sentence))
            elif DECISION.search(sentence):
                self.decisions.append(_flat(sentence))


def _is_constraint(sentence: str) -> bool:
    """A constraint cue outside every task cue ("don't" in "don't forget" makes a task)."""
    tasks = [match.span() for match in TASK.finditer(sentence)]
    return any(
        not any(start <= match.start() < end for start, end in tasks)
        for match in CONSTRAINT.finditer(sentence)
    )


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
            facts.replies.append(text)
            facts.scan_paths(text)
            facts.scan_identifiers(text)
            facts.sentences(text, decisions_only=True)
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
        lines = [line for line in text.splitlines() if ERROR_LINE.search(line)]
        if call.error and not lines and text.strip():
            lines = [text.strip().splitlines()[0]]
        if lines or call.error:
            facts.errors.append((call.name, lines))
    text = _texts(blocks)
    if not text.strip():
        return
    facts.requests.append(text)
    facts.scan_paths(text)
    facts.scan_identifiers(text)
    facts.sentences(text)


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
        facts.scan_identifiers(value)


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _ends(items: Sequence[str], keep: int) -> list[str]:
    """At most ``keep`` of ``items``: the first half and the latest, in their order."""
    if len(items) <= keep:
        return list(items)
    if keep <= 0:
        return []
    head = keep // 2
    return [*items[:head], *items[len(items) - (keep - head) :]]


def _salient(text: str) -> list[str]:
    """The short ``label: value`` / ``NAME = value`` lines of a tool output (not error lines,
    which the errors section keeps)."""
    out: list[str] = []
    for match in SALIENT_LINE.finditer(text):
        line = match.group(0).strip()
        if line and not ERROR_LINE.search(line) and line not in out:
            out.append(line)
            if len(out) == _SALIENT_PER_CALL:
                break
    return out


def _render(facts: _Facts, level: int) -> str:
    at = _LEVELS[level]
    sections: dict[str, list[str]] = {
        heading: [f"- {_cut(bullet.removeprefix('- '), _LINE_CHARS)}" for bullet in facts.prior[heading]][
            -at.prior_kept :
        ]
        for heading in SECTION_HEADINGS
    }
    primary, concepts, files, errors, pending, current, next_step, critical = SECTION_HEADINGS

    requests = facts.requests
    if len(requests) > at.requests_kept:
        requests = [requests[0], *requests[len(requests) - at.requests_kept + 1 :]]
    sections[primary] += [f"- {_cut(text, at.request_head)}" for text in requests]
    counts = Counter(call.name for call in facts.calls)
    if counts:
        used = ", ".join(f"{name} ×{n}" for name, n in sorted(counts.items()))
        sections[concepts].append(f"- tools used: {_cut(used, 2 * _LINE_CHARS)}")
    decided = _ends(_dedupe(facts.decisions), at.sentences_kept)
    sections[concepts] += [f"- decided: {_cut(text, at.sentence_chars)}" for text in decided]
    named = _ends([_cut(token, 80) for token in facts.identifiers], at.identifiers_kept)
    if named:
        sections[concepts].append("- named: " + "; ".join(named))
    paths = _ends(list(facts.paths), at.paths_kept)
    for path in paths:
        tools = facts.paths[path]
        sections[files].append(f"- {_cut(path, _LINE_CHARS)}" + (f" ({', '.join(tools)})" if tools else ""))
    for name, lines in facts.errors[-at.errors_kept :]:
        shown = "; ".join(_cut(line, _LINE_CHARS) for line in lines[: at.error_lines])
        sections[errors].append(f"- {name} failed" + (f": {shown}" if shown else ""))
    open_todos = [(status, text) for status, text in facts.todos if status != "completed"]
    kept_todos = open_todos[: at.todos_kept]
    sections[pending] += [f"- [{status}] {_cut(text, 300)}" for status, text in kept_todos]
    asked = _ends(_dedupe(facts.tasks), at.sentences_kept)
    sections[pending] += [f"- (asked) {_cut(text, at.sentence_chars)}" for text in asked]
    if facts.replies:
        sections[current].append(f"- last assistant reply: {_cut(facts.replies[-1], at.conclusion_head)}")
        last = _flat(facts.replies[-1])
        earlier = _ends(facts.replies[:-1], at.replies_kept) if at.reply_head else []
        for text in earlier:
            head = _cut(text, at.reply_head)
            if head.removesuffix("…") not in last:  # a reply the last one repeats adds nothing
                sections[current].append(f"- earlier reply: {head}")
    if at.calls_kept:
        for call in facts.calls[-at.calls_kept :]:
            line = f"- {call.name}({_cut(call.arguments, at.argument_head)})"
            if call.result is not None and at.result_head:
                line += (" → error: " if call.error else " → ") + (
                    _cut(call.result, at.result_head) or "(no output)"
                )
            sections[current].append(line)
    outputs = [
        f"- {call.name} output: " + "; ".join(_cut(line, _LINE_CHARS) for line in lines)
        for call in facts.calls
        if call.result and (lines := _salient(call.result))
    ]
    sections[current] += _ends(outputs, at.salient_calls)
    doing = [text for status, text in open_todos if status == "in_progress"] or [t for _, t in open_todos]
    if doing:
        sections[next_step].append(f"- {_cut(doing[0], 300)}")
    kept = _ends(_dedupe(facts.constraints), at.sentences_kept)
    sections[critical] += [f"- {_cut(text, at.sentence_chars)}" for text in kept]

    parts: list[str] = []
    for heading in SECTION_HEADINGS:
        bullets = _dedupe(sections[heading])
        parts.append(heading)
        parts.extend(bullets or ["(none)"])
        parts.append("")
    return redact("\n".join(parts).strip() + "\n")


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
        for level in range(len(_LEVELS)):
            text = _render(facts, level)
            if price_blocks([{"type": "text", "text": text}]) <= budget:
                break
        return text

    async def summarize(self, request: SummaryRequest) -> Summary:
        """The digest of ``request.messages`` (deterministic, offline)."""
        return Summary(texts=(self.digest(request),), provider=self.provider, model=self.model)
