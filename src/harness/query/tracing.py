"""``trace(source, seq)``: everything one event is tied to, in both directions.

* **Sources**: the ``sourceEventSeqs`` it records, in their order, and, inversely, the later
  events that cite it (``cited_by``). For an ``assistant/message`` the ``assistant/chunk``
  events among its sources are its stream (``chunks``).
* **Replacement**: the nodes it replaced when it is a replacing event (``replaced``); when it
  was shadowed, the replacing seqs from the one that took it out to the last one
  (``replacement_chain``: a checkpoint can itself be compacted later), the compaction whose
  checkpoint took it out (``shadowing``: start, summary, checkpoint, end, and the span the
  checkpoint stands for) or the ``compaction/prune`` that announced its replacement (``prune``).
* **Its own compaction** (``bracket``): for a ``compaction/*`` event or a checkpoint, the
  bracket it belongs to.
* **Tool chains** (``tools``): for an assistant message, each tool call it made; for a
  ``tool/call``, ``tool/result`` or approval, the one chain it is part of: the requesting
  message, the ``tool/call``, each approval asked and decided, every result (the original and
  any pruned replacement).
* **Where it sits**: its turn and step.

Tool chains are linked in log order: an assistant message opens a chain per call id, the
``tool/call``, ``approval/asked`` and ``tool/result`` with that id that follow join it (a
result through its ``sourceEventSeqs`` when it cites its call, which is authoritative), an
``approval/decided`` joins its asked by approval id. A call id used again later (the
assembler's ``call-<index>`` fallback repeats across steps) opens a new chain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from harness.events.event import Event
from harness.query.index import QueryIndex, QuerySource, data_of, index_of
from harness.query.records import CompactionBracket, EventRecord, Span

__all__ = ["Approval", "ToolChain", "Trace", "trace"]


class Approval(msgspec.Struct, frozen=True, kw_only=True):
    """One ``approval/asked`` (``id``, its seq) and the ``approval/decided`` that answered it
    (``None`` while pending)."""

    id: str
    asked: int
    decided: int | None = None
    outcome: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "asked": self.asked, "decided": self.decided, "outcome": self.outcome}


class ToolChain(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call from request to result: the ``assistant/message`` that asked for it
    (``request``), its ``tool/call``, its approvals and its ``tool/result`` events (the
    original first, then each replacement of it). A seq is ``None`` for a step the log lacks."""

    call_id: str | None
    name: str | None = None
    request: int | None = None
    call: int | None = None
    approvals: tuple[Approval, ...] = ()
    results: tuple[int, ...] = ()

    @property
    def seqs(self) -> tuple[int, ...]:
        """Every event of the chain, in log order."""
        found = [seq for seq in (self.request, self.call) if seq is not None]
        for approval in self.approvals:
            found.append(approval.asked)
            if approval.decided is not None:
                found.append(approval.decided)
        return tuple(sorted({*found, *self.results}))

    def to_json(self) -> dict[str, Any]:
        return {
            "callId": self.call_id,
            "name": self.name,
            "request": self.request,
            "call": self.call,
            "approvals": [approval.to_json() for approval in self.approvals],
            "results": list(self.results),
        }


class Trace(msgspec.Struct, frozen=True, kw_only=True):
    """The relations of one event (see the module doc)."""

    record: EventRecord
    sources: tuple[int, ...] = ()
    chunks: tuple[int, ...] = ()
    cited_by: tuple[int, ...] = ()
    replaced: tuple[int, ...] = ()
    replacement_chain: tuple[int, ...] = ()
    shadowing: CompactionBracket | None = None
    prune: int | None = None
    bracket: CompactionBracket | None = None
    tools: tuple[ToolChain, ...] = ()
    turn: Span | None = None
    step: Span | None = None

    @property
    def seq(self) -> int:
        return self.record.seq

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the record without the event's body)."""
        return {
            "record": self.record.to_json(event=False),
            "sources": list(self.sources),
            "chunks": list(self.chunks),
            "citedBy": list(self.cited_by),
            "replaced": list(self.replaced),
            "replacementChain": list(self.replacement_chain),
            "shadowing": self.shadowing.to_json() if self.shadowing else None,
            "prune": self.prune,
            "bracket": self.bracket.to_json() if self.bracket else None,
            "tools": [chain.to_json() for chain in self.tools],
            "turn": self.turn.to_json() if self.turn else None,
            "step": self.step.to_json() if self.step else None,
        }


# ---- the relations built on first use -------------------------------------------------------


def _citations(index: QueryIndex) -> dict[int, list[int]]:
    cited_by: dict[int, list[int]] = {}
    events = index.events
    for seq in range(len(index)):
        for source in events[seq].source_event_seqs or ():
            cited_by.setdefault(source, []).append(seq)
    return cited_by


def _bracket_members(index: QueryIndex) -> dict[int, str]:
    return {seq: bracket.compaction_id for bracket in index.brackets for seq in bracket.seqs}


class _Draft:
    __slots__ = ("approvals", "call", "call_id", "name", "request", "results")

    def __init__(self, call_id: str | None, name: str | None = None, request: int | None = None) -> None:
        self.call_id = call_id
        self.name = name
        self.request = request
        self.call: int | None = None
        self.approvals: list[list[Any]] = []  # [id, asked, decided, outcome]
        self.results: list[int] = []

    def freeze(self) -> ToolChain:
        return ToolChain(
            call_id=self.call_id,
            name=self.name,
            request=self.request,
            call=self.call,
            approvals=tuple(Approval(id=i, asked=a, decided=d, outcome=o) for i, a, d, o in self.approvals),
            results=tuple(self.results),
        )


_TOOL_TYPES = frozenset(
    {"assistant/message", "tool/call", "tool/result", "approval/asked", "approval/decided"}
)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _result_call_id(data: Mapping[str, Any]) -> str | None:
    message = data.get("message")
    if not isinstance(message, Mapping):
        return None
    source = message.get("source")
    if isinstance(source, Mapping) and _str(source.get("callId")):
        return _str(source.get("callId"))
    content = message.get("content")
    if isinstance(content, list) and content and isinstance(content[0], Mapping):
        return _str(content[0].get("toolCallId"))
    return None


def _tool_chains(index: QueryIndex) -> dict[int, tuple[ToolChain, ...]]:
    """Every event of a tool chain -> its chains (several for a message making several calls)."""
    events: Sequence[Event] = index.events
    drafts: list[_Draft] = []
    open_by_id: dict[str, _Draft] = {}
    member: dict[int, list[_Draft]] = {}
    approvals: dict[str, list[Any]] = {}

    def chain_for(call_id: str | None, seq: int) -> _Draft:
        draft = open_by_id.get(call_id) if call_id is not None else None
        if draft is None:
            draft = _Draft(call_id)
            drafts.append(draft)
            if call_id is not None:
                open_by_id[call_id] = draft
        return draft

    for seq in range(len(index)):
        event = events[seq]
        kind = event.type
        if kind not in _TOOL_TYPES:
            continue
        data = data_of(event)
        if kind == "assistant/message":
            message = data.get("message")
            content = message.get("content") if isinstance(message, Mapping) else None
            for block in content if isinstance(content, list) else ():
                if isinstance(block, Mapping) and block.get("type") == "tool-call":
                    draft = _Draft(_str(block.get("id")), _str(block.get("name")), seq)
                    drafts.append(draft)
                    if draft.call_id is not None:
                        open_by_id[draft.call_id] = draft
                    member.setdefault(seq, []).append(draft)
        elif kind == "tool/call":
            call_id = _str(data.get("callId"))
            draft = chain_for(call_id, seq)
            if draft.call is not None:  # a second call with one id: a chain of its own
                draft = _Draft(call_id)
                drafts.append(draft)
                if call_id is not None:
                    open_by_id[call_id] = draft
            draft.call = seq
            draft.name = draft.name or _str(data.get("name"))
            member.setdefault(seq, []).append(draft)
        elif kind == "approval/asked":
            call_id = _str(data.get("callId"))
            draft = chain_for(call_id, seq)
            draft.name = draft.name or _str(data.get("toolName"))
            entry: list[Any] = [_str(data.get("id")) or "", seq, None, None]
            draft.approvals.append(entry)
            if entry[0]:
                approvals[entry[0]] = [entry, draft]
            member.setdefault(seq, []).append(draft)
        elif kind == "approval/decided":
            found = approvals.get(_str(data.get("id")) or "")
            if found is not None and found[0][2] is None:
                entry, draft = found
                entry[2], entry[3] = seq, _str(data.get("outcome"))
                member.setdefault(seq, []).append(draft)
        else:  # tool/result
            cited = event.source_event_seqs or ()
            linked = None
            if cited and events[cited[0]].type in ("tool/call", "tool/result"):
                linked = member.get(cited[0])  # a result cites its call; a pruned one, the result
            draft = linked[0] if linked else chain_for(_result_call_id(data), seq)
            draft.results.append(seq)
            member.setdefault(seq, []).append(draft)

    frozen = {id(draft): draft.freeze() for draft in drafts}
    return {seq: tuple(frozen[id(draft)] for draft in chains) for seq, chains in member.items()}


def trace(source: QuerySource, seq: int) -> Trace:
    """The relations of the event at ``seq`` (``EventNotFound`` if there is none)."""
    index = index_of(source)
    record = index.record(seq)
    event = record.event
    events = index.events
    sources = tuple(event.source_event_seqs or ())
    chunks = (
        tuple(s for s in sources if 0 <= s < len(index) and events[s].type == "assistant/chunk")
        if event.type == "assistant/message"
        else ()
    )
    cited_by = tuple(index.relation("citations", _citations).get(seq, ()))
    replacement = index.replacement(seq)
    chain: list[int] = []
    by = index.shadowed_by(seq)
    while by is not None:  # each seq is shadowed at most once, by a later seq: this ends
        chain.append(by)
        by = index.shadowed_by(by)
    first = chain[0] if chain else None
    members: dict[int, str] = index.relation("brackets", _bracket_members)
    own = members.get(seq)
    tools: dict[int, tuple[ToolChain, ...]] = index.relation("tools", _tool_chains)
    return Trace(
        record=record,
        sources=sources,
        chunks=chunks,
        cited_by=cited_by,
        replaced=replacement.shadowed_seqs if replacement is not None else (),
        replacement_chain=tuple(chain),
        shadowing=index.compaction_of_replacement(first) if first is not None else None,
        prune=index.prune_of(first) if first is not None else None,
        bracket=index.bracket(own) if own is not None else None,
        tools=tools.get(seq, ()),
        turn=index.turn_span(seq),
        step=index.step_span(seq),
    )
