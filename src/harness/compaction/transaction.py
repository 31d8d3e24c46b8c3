"""``compact``: the locked Surface transaction (FORMAT §11.4, SPEC §5).

In order:

1. validate the region (``InvalidRegion``) and the lock: a live ``compaction/start`` →
   ``CompactionBusy``; ``automatic`` needs an open turn (its number owns the bracket),
   ``manual`` needs none (``CompactionBusy`` otherwise; owner ``null``). Nothing is written
   when any of this fails;
2. append ``compaction/start`` (the lock) and make it durable with ``checkpoint``;
3. price the span (``shadowedTokenCount``);
4. summarize (async; ``cancel`` aborts it; other events may be appended meanwhile);
5. refuse a checkpoint message whose price is not below the span's;
6. check stability — ``automatic``: the whole Surface is unchanged; ``manual``: the same span
   is still current with the same nodes (appends elsewhere are fine); a turn boundary
   inside the bracket counts as a change;
7. append ``compaction/summary`` and then the checkpoint ``user/message`` replacing the span,
   citing ``[startSeq, summarySeq, *shadowedSeqs]``;
8. append ``compaction/end`` and make the bracket durable with ``checkpoint``.

Any failure in 2–7 appends one ``compaction/end`` whose ``error`` is the error chain (messages
joined by ``": "``), makes it durable, then raises by phase: ``CompactionCancelled`` (cancel
wins over everything, after cleanup and the flush), ``CommitFailed``, ``CompactionChanged``,
``SummaryFailed``, or ``CompactionPersistenceFailed`` when only a flush failed. When even the
closing append fails the start stays unmatched (the durable busy signal) and nothing is flushed.
A caller's task cancellation (``asyncio.CancelledError``) also closes the bracket and flushes,
then propagates unchanged.

Durability with write-behind: the start, summary, checkpoint and end are appended in that
order and a store writes events in seq order, so the summary and the checkpoint can never be
stored without their start.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeAlias, TypeVar

import msgspec

from harness.compaction.checkpoint import checkpoint_message
from harness.compaction.meter import DEFAULT_METER, TokenMeter, price_message
from harness.compaction.region import Region, check_region
from harness.compaction.state import live_compaction_start, open_turn
from harness.compaction.summarizer import Summarizer, Summary, SummaryRequest
from harness.errors import (
    CommitFailed,
    CompactionBusy,
    CompactionCancelled,
    CompactionChanged,
    CompactionError,
    CompactionPersistenceFailed,
    SummaryFailed,
)
from harness.events.event import Event, Replace
from harness.messages.model import Message
from harness.messages.request import EpochHeader
from harness.session.request import fold_request_header
from harness.session.session import Session
from harness.surface.projection import project
from harness.tools.session_search import SESSION_SEARCH

__all__ = ["Checkpoint", "CompactionResult", "Mode", "compact", "error_chain"]

Mode: TypeAlias = Literal["automatic", "manual"]
Checkpoint: TypeAlias = Callable[[Session], Awaitable[None]]
"""Makes the session durable (the agent passes ``store.flush``)."""

_T = TypeVar("_T")


class CompactionResult(msgspec.Struct, frozen=True, kw_only=True):
    """A committed compaction: its id and owner, the seqs of its four events, the span it
    replaced and what that saved."""

    compaction_id: str
    turn: int | None
    start_seq: int
    summary_seq: int
    checkpoint_seq: int
    end_seq: int
    shadowed_start: int
    shadowed_end: int
    shadowed_seqs: tuple[int, ...]
    shadowed_tokens: int
    checkpoint_tokens: int
    summary: str
    provider: str
    model: str


def error_chain(error: BaseException) -> str:
    """The messages of ``error`` and its causes, joined by ``": "`` (an empty message is the type)."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current) or type(current).__name__
        if not parts or not parts[-1].endswith(text):  # a message that already quotes its cause
            parts.append(text)
        current = current.__cause__
    return ": ".join(parts)


class _Cancelled(Exception):
    """The cancel event was set while waiting."""


async def _abortable(work: Awaitable[_T], cancel: asyncio.Event | None) -> _T:
    """Await ``work``; if ``cancel`` is set first, cancel it and raise ``_Cancelled``."""
    task: asyncio.Future[_T] = asyncio.ensure_future(work)
    if cancel is None:
        return await task
    waiter: asyncio.Future[bool] = asyncio.ensure_future(cancel.wait())
    pending: set[asyncio.Future[Any]] = {task, waiter}
    try:
        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not waiter.done():
            waiter.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled() or (cancel.is_set() and not (task.done() and task.exception() is None)):
        raise _Cancelled()
    return task.result()


def _recall_tool(header: EpochHeader | None) -> str | None:
    """``session_search`` when the request header in force offers the model that tool (the
    checkpoint then says older details can be looked up with it), else None."""
    if header is None:
        return None
    offered = any(isinstance(tool, Mapping) and tool.get("name") == SESSION_SEARCH for tool in header.tools)
    return SESSION_SEARCH if offered else None


def _summary_data(
    compaction_id: str,
    source_command_id: str | None,
    summary: Summary,
    region: Region,
) -> dict[str, Any]:
    data: dict[str, Any] = {"compactionId": compaction_id}
    if source_command_id is not None:
        data["sourceCommandId"] = source_command_id
    data["summary"] = summary.text
    if summary.raw_output is not None:
        data["rawOutput"] = [dict(block) for block in summary.raw_output]
        if summary.llm_stream_call:
            data["llmStreamCall"] = True
    data["shadowedRange"] = {"start": region.start, "end": region.end}
    data["shadowedSeqs"] = list(region.seqs)
    data["shadowedTokenCount"] = region.tokens
    data["provider"] = summary.provider
    data["model"] = summary.model
    if summary.max_tokens is not None:
        data["maxTokens"] = summary.max_tokens
    if summary.usage is not None:
        data["usage"] = summary.usage.to_json()
    return data


def _bracket(compaction_id: str, source_command_id: str | None, turn: int | None) -> dict[str, Any]:
    data: dict[str, Any] = {"compactionId": compaction_id}
    if source_command_id is not None:
        data["sourceCommandId"] = source_command_id
    data["turn"] = turn
    return data


def _check_stable(
    session: Session,
    meter: TokenMeter,
    mode: Mode,
    region: Region,
    nodes_before: tuple[int, ...],
    start_seq: int,
) -> None:
    events = session.events
    for seq in range(start_seq + 1, len(events)):
        if events[seq].type in ("turn/start", "turn/end"):
            raise CompactionChanged("session surface changed: a turn boundary was crossed during compaction")
    measurement = meter.measure(session)
    if mode == "automatic":
        if tuple(node.seq for node in measurement.nodes) != nodes_before:
            raise CompactionChanged("session surface changed while the summary was being made")
        return
    try:
        again = check_region(measurement, region.start, region.end)
    except CompactionError as error:
        raise CompactionChanged(f"session surface changed: {error}") from error
    if again.seqs != region.seqs or again.tokens != region.tokens:
        raise CompactionChanged("session surface changed: the selected span is no longer the same")


async def compact(
    session: Session,
    start: int,
    end: int,
    summarizer: Summarizer,
    *,
    mode: Mode = "automatic",
    checkpoint: Checkpoint | None = None,
    cancel: asyncio.Event | None = None,
    source_command_id: str | None = None,
    meter: TokenMeter | None = None,
) -> CompactionResult:
    """Replace the Surface span from seq ``start`` to seq ``end`` by a summary checkpoint.

    See the module doc for the steps, the events written and the errors raised.
    """
    meter = meter or DEFAULT_METER
    if cancel is not None and cancel.is_set():
        raise CompactionCancelled("compaction cancelled before it started")
    region = check_region(meter.measure(session), start, end)
    events = session.events
    live = live_compaction_start(events)
    if live is not None:
        raise CompactionBusy(f"compaction lock is already active (compaction/start at seq {live.seq})")
    turn = open_turn(events)
    if mode == "automatic":
        if turn is None:
            raise CompactionError("automatic compaction needs an open turn: no open turn", code="state")
        owner: int | None = turn
    elif mode == "manual":
        if turn is not None:
            raise CompactionBusy(f"manual compaction needs an idle session: turn {turn} is open")
        owner = None
    else:
        raise CompactionError(f"unknown compaction mode {mode!r}", code="state")

    compaction_id = str(uuid.uuid4())
    nodes_before = tuple(node.seq for node in meter.measure(session).nodes)
    start_event = session.append("compaction/start", _bracket(compaction_id, source_command_id, owner))
    recorded: BaseException | None = None  # what the closing end records, when not the raised error
    try:
        if checkpoint is not None:
            try:  # not abortable: a write is never cut off half way; cancel is checked after it
                await checkpoint(session)
            except Exception as error:
                raise CompactionPersistenceFailed(
                    f"the compaction lock could not be made durable: {error}", compaction_id=compaction_id
                ) from error
        if cancel is not None and cancel.is_set():
            raise _Cancelled()
        messages = tuple(Message(raw) for seq in region.seqs if (raw := project(events[seq])) is not None)
        header = fold_request_header(events)
        request = SummaryRequest(
            session=session,
            compaction_id=compaction_id,
            messages=messages,
            seqs=region.seqs,
            header=header,
            tokens=region.tokens,
            cancel=cancel,
        )
        try:
            summary = await _abortable(summarizer.summarize(request), cancel)
        except (_Cancelled, SummaryFailed):
            raise
        except Exception as error:
            recorded = error
            raise SummaryFailed(error_chain(error), compaction_id=compaction_id) from error
        if not isinstance(summary, Summary):  # a summarizer that broke the protocol
            raise SummaryFailed(f"the summarizer returned {summary!r} instead of a Summary")
        message = checkpoint_message(
            summary.texts, compaction_id, source_command_id, recall_tool=_recall_tool(header)
        )
        checkpoint_tokens = price_message(message)
        if checkpoint_tokens >= region.tokens:
            raise SummaryFailed(
                "summary is not smaller than the span it replaces "
                f"({checkpoint_tokens} >= {region.tokens} tokens)",
                reason="NOT_SMALLER",
            )
        if cancel is not None and cancel.is_set():
            raise _Cancelled()
        _check_stable(session, meter, mode, region, nodes_before, start_event.seq)
        try:
            summary_event = session.append(
                "compaction/summary", _summary_data(compaction_id, source_command_id, summary, region)
            )
            checkpoint_event = session.append(
                "user/message",
                message,
                surface_op=Replace(region.start, region.end),
                source_event_seqs=[start_event.seq, summary_event.seq, *region.seqs],
            )
        except Exception as error:
            raise CommitFailed(f"the compaction could not be committed: {error}") from error
    except _Cancelled:
        await _close_failed(
            session, compaction_id, source_command_id, owner, "compaction cancelled", checkpoint
        )
        raise CompactionCancelled("compaction cancelled", compaction_id=compaction_id) from None
    except asyncio.CancelledError:
        await _close_failed(
            session, compaction_id, source_command_id, owner, "compaction cancelled by the caller", checkpoint
        )
        raise
    except Exception as error:
        chain = error_chain(recorded if recorded is not None else error)
        await _close_failed(session, compaction_id, source_command_id, owner, chain, checkpoint)
        if cancel is not None and cancel.is_set():
            raise CompactionCancelled("compaction cancelled", compaction_id=compaction_id) from error
        if isinstance(error, CompactionError):
            error.compaction_id = compaction_id
            raise
        raise CommitFailed(f"compaction failed: {chain}", compaction_id=compaction_id) from error

    try:
        end_event = session.append("compaction/end", _bracket(compaction_id, source_command_id, owner))
    except Exception as error:
        raise CommitFailed(
            f"compaction/end could not be appended; the lock stays held: {error}", compaction_id=compaction_id
        ) from error
    if checkpoint is not None:
        try:
            await checkpoint(session)
        except Exception as error:
            raise CompactionPersistenceFailed(
                f"the compaction was committed in memory but could not be made durable: {error}",
                compaction_id=compaction_id,
            ) from error
    return CompactionResult(
        compaction_id=compaction_id,
        turn=owner,
        start_seq=start_event.seq,
        summary_seq=summary_event.seq,
        checkpoint_seq=checkpoint_event.seq,
        end_seq=end_event.seq,
        shadowed_start=region.start,
        shadowed_end=region.end,
        shadowed_seqs=region.seqs,
        shadowed_tokens=region.tokens,
        checkpoint_tokens=checkpoint_tokens,
        summary=summary.text,
        provider=summary.provider,
        model=summary.model,
    )


async def _close_failed(
    session: Session,
    compaction_id: str,
    source_command_id: str | None,
    owner: int | None,
    error: str,
    checkpoint: Checkpoint | None,
) -> None:
    """Append the one closing ``compaction/end`` with ``error`` and flush it. When the append
    itself fails the start stays unmatched: raise ``CommitFailed`` and flush nothing. A failed
    flush is swallowed here (the phase error the caller raises is the one that matters)."""
    data = _bracket(compaction_id, source_command_id, owner)
    data["error"] = error
    try:
        session.append("compaction/end", data)
    except Exception as end_error:
        raise CommitFailed(
            f"compaction/end could not be appended after a failure ({error}); "
            f"the lock stays held: {end_error}",
            compaction_id=compaction_id,
        ) from end_error
    if checkpoint is not None:
        with contextlib.suppress(Exception):
            await asyncio.shield(checkpoint(session))


def bracket_of(session: Session, compaction_id: str) -> list[Event]:
    """Every ``compaction/*`` event and checkpoint of one compaction, in log order."""
    out: list[Event] = []
    for event in session.events:
        if event.type.startswith("compaction/") or event.type == "user/message":
            data = event.data
            if not isinstance(data, Mapping):
                continue
            if data.get("compactionId") == compaction_id:
                out.append(event)
                continue
            source = data.get("source")
            if isinstance(source, Mapping) and source.get("compactionId") == compaction_id:
                out.append(event)
    return out
