"""The view models of the session page, built from ``harness.query`` (never a fold of our own).

Each function takes a restored ``Session`` and returns plain values the templates render:
rows of the Event Log (a bounded page of ``EventRecord``s, chunk runs collapsed), the Surface
at a seq (``surface_at``), the exact request at a point (``request_before``/``request_at``),
an event's detail (``trace``), the compactions (``QueryIndex.brackets``), the world checks
and the crash repairs. Text is returned as text: the templates escape it (autoescape).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from harness.compaction.meter import price_node
from harness.errors import InvalidQuery
from harness.events.event import Event
from harness.events.json import dumps, thaw
from harness.present.summary import event_summary, is_failure
from harness.query import (
    EventFilter,
    EventRecord,
    QueryIndex,
    Trace,
    index_of,
    page,
    request_at,
    request_before,
    surface_at,
    trace,
)
from harness.query.text import event_text
from harness.session.session import Session

__all__ = [
    "PAGE",
    "CompactionView",
    "LogPage",
    "Row",
    "SurfaceView",
    "compactions",
    "crash_repairs",
    "event_detail",
    "log_page",
    "request_view",
    "surface_view",
    "world_checks",
]

PAGE: Final = 200
"""Events per page of the log pane."""

SURFACE_PAGE: Final = 400
"""Surface nodes shown per page of the Surface pane."""

TEXT_CAP: Final = 20_000
"""The most characters of one event's text or JSON a detail shows (the rest: the raw export)."""

REQUEST_CAP: Final = 400_000
"""The most characters of a request body shown inline."""

_REPAIR_CODES: Final = frozenset({"TOOL_OUTCOME_UNKNOWN", "TOOL_NOT_STARTED"})


def _data(event: Event) -> Mapping[str, Any]:
    data = event.data
    return data if isinstance(data, Mapping) else {}


def _cap(text: str, most: int) -> tuple[str, int]:
    """``text`` cut to ``most`` characters, and how many were cut."""
    return (text, 0) if len(text) <= most else (text[:most], len(text) - most)


def is_repair(event: Event) -> bool:
    """Whether ``event`` is a crash repair closer (FORMAT §8): an interrupted tool's synthetic
    result or the ``turn/end`` of an interrupted turn."""
    data = _data(event)
    if event.type == "tool/result":
        error = data.get("error")
        return isinstance(error, Mapping) and error.get("code") in _REPAIR_CODES
    if event.type == "turn/end":
        reason = data.get("reason")
        return isinstance(reason, Mapping) and reason.get("kind") == "interrupted"
    return False


@dataclass
class Row:
    """One line of the Event Log pane."""

    seq: int
    type: str
    time: int
    classification: str
    turn: int | None
    step: int | None
    shadowed_by: int | None
    compaction_id: str | None
    summary: str
    failure: bool
    repair: bool
    unstored: bool
    chunks: list[Row] = field(default_factory=list)

    @property
    def family(self) -> str:
        return self.type.partition("/")[0]


def _row(record: EventRecord, stored_length: int) -> Row:
    event = record.event
    return Row(
        seq=record.seq,
        type=record.type,
        time=record.time,
        classification=record.classification,
        turn=record.turn,
        step=record.step,
        shadowed_by=record.shadowed_by,
        compaction_id=record.compaction_id,
        summary=event_summary(event, 160),
        failure=is_failure(event),
        repair=is_repair(event),
        unstored=record.seq >= stored_length,
    )


@dataclass
class LogPage:
    """A page of the log pane: rows (a run of chunks folded into one row), where it starts,
    the start of the page before (``None`` at the top) and the cursor of the next one."""

    rows: list[Row]
    first: int | None
    last: int | None
    previous_start: int | None
    next_cursor: str | None
    length: int
    matched: int


def parse_filter(
    types: Sequence[str] = (), classes: Sequence[str] = (), text: str | None = None
) -> EventFilter:
    """The log pane's filter from its query parameters (``InvalidQuery`` for a bad one)."""
    return EventFilter(
        types=tuple(t for t in types if t),
        classifications=tuple(c for c in classes if c),  # type: ignore[misc]
        text=(text,) if text and text.strip() else (),
    )


def log_page(
    session: Session,
    stored_length: int,
    *,
    start: int = 0,
    cursor: str | None = None,
    where: EventFilter | None = None,
    limit: int = PAGE,
) -> LogPage:
    """One bounded page of the log (``harness.query.page``), chunks folded into runs."""
    index = index_of(session)
    found = page(index, where=where, start=start if cursor is None else 0, limit=limit, cursor=cursor)
    rows: list[Row] = []
    for record in found.records:
        row = _row(record, stored_length)
        if row.type == "assistant/chunk":
            last = rows[-1] if rows else None
            if (
                last is not None
                and last.type == "assistant/chunk"
                and last.seq + len(last.chunks) == row.seq - 1
            ):
                last.chunks.append(row)
                continue
        rows.append(row)
    first = found.records[0].seq if found.records else None
    previous: int | None = None
    if first is not None and first > 0:
        previous = _page_start_before(index, where, first, limit)
    return LogPage(
        rows=rows,
        first=first,
        last=found.records[-1].seq if found.records else None,
        previous_start=previous,
        next_cursor=found.next_cursor,
        length=found.length,
        matched=len(found.records),
    )


def _page_start_before(index: QueryIndex, where: EventFilter | None, first: int, limit: int) -> int | None:
    """The start of the page that ends right before seq ``first`` (``None``: nothing before)."""
    from harness.query import matching_seqs

    if where is None or where.empty:
        return max(0, first - limit) if first > 0 else None
    earliest: int | None = None
    for count, seq in enumerate(matching_seqs(index, where, start=first - 1, reverse=True), 1):
        earliest = seq
        if count >= limit:
            break
    return earliest


def page_start_for(seq: int, limit: int = PAGE) -> int:
    """Where the page showing ``seq`` starts: ``seq`` near its top, a few events above it."""
    return max(0, seq - 20)


@dataclass
class Node:
    """One Surface node in the Surface pane."""

    seq: int
    type: str
    role: str
    tokens: int
    summary: str
    related: list[int]
    checkpoint: bool
    failure: bool


@dataclass
class SurfaceView:
    """The Surface right after ``at``: its nodes (a page of them), their token price."""

    at: int
    generation: int
    count: int
    tokens: int
    nodes: list[Node]
    offset: int
    more: bool


def _role(event: Event) -> str:
    message = _data(event).get("message")
    role = message.get("role") if isinstance(message, Mapping) else None
    return role if isinstance(role, str) else event.type


def surface_view(session: Session, at: int, offset: int = 0, limit: int = SURFACE_PAGE) -> SurfaceView:
    """The Surface right after event ``at`` (``surface_at``), nodes ``offset`` on."""
    index = index_of(session)
    # right after the last event the Surface is the index's own fold (already made for the
    # classification): the page at "now" needs no time-travel fold
    fold = index.fold if at == len(index) - 1 else surface_at(session, at)
    events = session.events
    nodes = fold.nodes
    tokens = sum(price_node(events[seq]) for seq in nodes)
    shown: list[Node] = []
    replacements = {r.seq: r for r in fold.replacements}
    for seq in nodes[offset : offset + limit]:
        event = events[seq]
        related = [seq, *(event.source_event_seqs or ())]
        replacement = replacements.get(seq)
        if replacement is not None:
            related.extend(replacement.shadowed_seqs[:200])
        shown.append(
            Node(
                seq=seq,
                type=event.type,
                role=_role(event),
                tokens=price_node(event),
                summary=event_summary(event, 200),
                related=sorted({s for s in related if 0 <= s < len(index)}),
                checkpoint=replacement is not None and event.type == "user/message",
                failure=is_failure(event),
            )
        )
    return SurfaceView(
        at=at,
        generation=fold.replace_generation,
        count=len(nodes),
        tokens=tokens,
        nodes=shown,
        offset=offset,
        more=offset + limit < len(nodes),
    )


@dataclass
class RequestView:
    """The request in force right after ``at``: built at request point ``point`` (``None``
    with ``problem`` when no request was sent by then)."""

    at: int
    point: int | None
    body: str
    cut: int
    messages: int
    problem: str | None


_PROVIDERS: dict[str, Any] = {}
_PROVIDERS_LOCK = threading.Lock()


def _provider(route: str) -> Any:
    """One provider per route, made once and kept: it only serializes (its client never sends,
    so it is never closed), and making one costs the ``openai`` client's setup."""
    with _PROVIDERS_LOCK:
        provider = _PROVIDERS.get(route)
        if provider is None:
            from harness.providers.deepseek import DeepSeekProvider, OpenAICompatibleProvider

            kind = OpenAICompatibleProvider if route == "openai-compatible" else DeepSeekProvider
            provider = _PROVIDERS[route] = kind(
                kind.default_base_url, api_key="unused: nothing is sent", route=route
            )
        return provider


def request_body(options: Any) -> dict[str, Any]:
    """The chat-completions body the provider serializes ``options`` to (as ``harness request``
    shows it: the header's route picks the provider; nothing is sent)."""
    body: dict[str, Any] = _provider(options.header.provider).request_body(options)
    return body


def request_view(session: Session, at: int) -> RequestView:
    """The exact request behind event ``at``: ``request_before`` then ``request_at``."""
    try:
        point = request_before(session, at)
        options = request_at(session, point)
        body = request_body(options)
    except InvalidQuery as error:
        return RequestView(at=at, point=None, body="", cut=0, messages=0, problem=str(error))
    except Exception as error:  # a request the provider refuses to express (RequestRefused)
        return RequestView(at=at, point=None, body="", cut=0, messages=0, problem=f"not expressible: {error}")
    text = _pretty(body)
    shown, cut = _cap(text, REQUEST_CAP)
    return RequestView(
        at=at, point=point, body=shown, cut=cut, messages=len(body.get("messages", ())), problem=None
    )


def _pretty(value: Any) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (RecursionError, ValueError, TypeError):
        return dumps(value).decode("utf-8", "replace")


@dataclass
class Detail:
    """An event's detail: its record, wire JSON, semantic text and trace."""

    row: Row
    wire: str
    wire_cut: int
    text: str
    text_cut: int
    trace: Trace
    chains: list[dict[str, Any]]
    related: list[int]


def event_detail(session: Session, seq: int, stored_length: int) -> Detail:
    """The detail pane of one event (``EventNotFound`` past the log)."""
    index = index_of(session)
    record = index.record(seq)
    found = trace(index, seq)
    wire, wire_cut = _cap(_pretty(record.event.to_json()), TEXT_CAP)
    text, text_cut = _cap(event_text(record.event), TEXT_CAP)
    events = session.events
    chains = []
    for chain in found.tools:
        call = events[chain.call] if chain.call is not None else None
        arguments = _data(call).get("arguments") if call is not None else None
        chains.append(
            {
                "chain": chain,
                "arguments": _cap(value_json(arguments), 4000)[0] if arguments is not None else None,
                "results": [
                    (seq_, event_summary(events[seq_], 300), is_failure(events[seq_]))
                    for seq_ in chain.results
                ],
            }
        )
    related = sorted(
        {seq, *found.sources, *found.cited_by, *found.replaced[:200], *found.replacement_chain}
        | {s for chain in found.tools for s in chain.seqs}
        | set(found.bracket.seqs if found.bracket else ())
    )
    return Detail(
        row=_row(record, stored_length),
        wire=wire,
        wire_cut=wire_cut,
        text=text,
        text_cut=text_cut,
        trace=found,
        chains=chains,
        related=related,
    )


def value_json(value: Any) -> str:
    """A value as readable text: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return _pretty(thaw(value))


@dataclass
class CompactionView:
    """One compaction drawn as a range: what it shadowed, its summary and checkpoint, the
    tokens of the span it replaced (``shadowedTokenCount``) and of its checkpoint, or the error
    of a failed attempt."""

    compaction_id: str
    turn: int | None
    start: int | None
    summary: int | None
    checkpoint: int | None
    end: int | None
    error: str | None
    replaced: int
    first_replaced: int | None
    last_replaced: int | None
    shadowed_tokens: int | None
    summary_text: str
    checkpoint_text: str
    tokens_before: int | None
    tokens_after: int | None


def surface_tokens(session: Session, seq: int) -> int:
    """The price of the Surface right after ``seq`` (the compaction meter's per-node price)."""
    events = session.events
    return sum(price_node(events[s]) for s in surface_at(session, seq).nodes)


def compactions(session: Session) -> list[CompactionView]:
    """Every compaction the log records, in the order they started."""
    index = index_of(session)
    events = session.events
    out = []
    for bracket in index.brackets:
        summary_data = _data(events[bracket.summary]) if bracket.summary is not None else {}
        summary_text = summary_data.get("summary")
        tokens = summary_data.get("shadowedTokenCount")
        # the span's price as the compaction measured it, and its checkpoint's (FORMAT §11.4)
        before = tokens if isinstance(tokens, int) else None
        after = price_node(events[bracket.checkpoint]) if bracket.checkpoint is not None else None
        out.append(
            CompactionView(
                compaction_id=bracket.compaction_id,
                turn=bracket.turn,
                start=bracket.start,
                summary=bracket.summary,
                checkpoint=bracket.checkpoint,
                end=bracket.end,
                error=bracket.error,
                replaced=len(bracket.replaced),
                first_replaced=bracket.replaced[0] if bracket.replaced else None,
                last_replaced=bracket.replaced[-1] if bracket.replaced else None,
                shadowed_tokens=tokens if isinstance(tokens, int) else None,
                summary_text=_cap(summary_text, TEXT_CAP)[0] if isinstance(summary_text, str) else "",
                checkpoint_text=(
                    _cap(event_text(events[bracket.checkpoint]), TEXT_CAP)[0]
                    if bracket.checkpoint is not None
                    else ""
                ),
                tokens_before=before,
                tokens_after=after,
            )
        )
    return out


@dataclass
class CheckView:
    """One ``recovery/check`` event as its report table."""

    seq: int
    blocking: bool
    counts: dict[str, int]
    findings: list[dict[str, str]]
    skipped: list[tuple[str, str]]
    workspace: str


def world_checks(session: Session) -> list[CheckView]:
    """Every world check the log records, as report tables."""
    out = []
    for event in session.events:
        if event.type != "recovery/check":
            continue
        data = thaw(_data(event))
        findings = data.get("findings") if isinstance(data.get("findings"), list) else []
        rows = []
        for item in findings:
            if isinstance(item, dict):
                rows.append(
                    {key: value_json(item.get(key, "")) for key in ("severity", "kind", "summary", "action")}
                )
        skipped = data.get("skipped") if isinstance(data.get("skipped"), dict) else {}
        counts = data.get("counts") if isinstance(data.get("counts"), dict) else {}
        out.append(
            CheckView(
                seq=event.seq,
                blocking=data.get("blocking") is True,
                counts={str(k): v for k, v in counts.items() if isinstance(v, int)},
                findings=rows,
                skipped=[(str(k), value_json(v)) for k, v in skipped.items()],
                workspace=str(data.get("workspace", "")),
            )
        )
    return out


def crash_repairs(session: Session, stored_length: int) -> list[Row]:
    """The crash repair closers in the log, and those a load would add (``unstored``)."""
    index = index_of(session)
    kinds = ("tool/result", "turn/end")
    return [
        _row(index.record(e.seq), stored_length) for e in session.events if e.type in kinds and is_repair(e)
    ]


def counts(session: Session) -> dict[str, int]:
    """Events per classification."""
    return {str(name): count for name, count in index_of(session).counts().items()}
