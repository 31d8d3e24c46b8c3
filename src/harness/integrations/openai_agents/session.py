"""``HarnessSession``: a harness session as the OpenAI Agents SDK's ``Session``.

The SDK's history operations map onto the event log (``items.py`` says how each item is
recorded); nothing is ever deleted from the log:

- ``add_items`` appends one Surface event per item and, by default, returns only after a
  durable flush (``durable=False`` leaves the write to the store's write-behind window);
- ``get_items`` reads the Surface (so a compaction or a removal is respected); with a limit
  it never returns a tool output without its call;
- ``pop_item`` and ``clear_session`` append one content-less ``assistant/message`` that
  *replaces* the removed nodes on the Surface (FORMAT §6): the removed events stay in the log,
  and no model history, harness's or dsh's, contains them any more;
- ``run_compaction`` runs harness's locked compaction transaction with a harness summarizer.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit

from harness.compaction.extractive import ExtractiveSummarizer
from harness.compaction.summarizer import Summarizer
from harness.compaction.transaction import CompactionResult
from harness.compaction.triggers import compact_now
from harness.errors import CompactionBusy, CompactionChanged
from harness.events.event import Event, Replace
from harness.events.vocabulary import SURFACE_TYPES
from harness.integrations.openai_agents.items import (
    OP_KEY,
    call_id_of_call,
    call_id_of_output,
    derive_item,
    item_payload,
    tombstone_payload,
)
from harness.integrations.openai_agents.loops import gate_of
from harness.session.session import Session
from harness.stores.open import open_store
from harness.stores.shared import shared_session
from harness.stores.store import SessionStore

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory.session import OpenAIResponsesCompactionArgs

__all__ = [
    "DEFAULT_COMPACTION_THRESHOLD",
    "DEFAULT_WAIT_S",
    "HarnessSession",
    "default_should_trigger_compaction",
]

logger = logging.getLogger("harness.integrations.openai_agents")

DEFAULT_COMPACTION_THRESHOLD = 10
"""As in the SDK: an automatic compaction runs once this many non-user items are current."""


def default_should_trigger_compaction(context: dict[str, Any]) -> bool:
    """Compact when at least ``DEFAULT_COMPACTION_THRESHOLD`` candidate items are current."""
    return len(context["compaction_candidate_items"]) >= DEFAULT_COMPACTION_THRESHOLD


def _is_user_message(item: dict[str, Any]) -> bool:
    return item.get("role") == "user" and item.get("type") in (None, "message")


DEFAULT_WAIT_S = 30.0
"""How long a call waits, by default, for another writer of the session to let go of it."""


class HarnessSession:
    """The SDK's ``Session`` (and ``OpenAIResponsesCompactionAwareSession``) kept in a harness
    store: ``HarnessSession("chat-1", store)``, then ``Runner.run(agent, text, session=...)``.

    ``session_id`` is the harness session id: it is loaded from ``store`` on first use, or
    created there. Any number of writers may use one session, in this process or others, each
    with its own store on the same backend: a call owns the session only while it runs
    (``harness.stores.shared``), waiting up to ``wait`` seconds for another writer to let go
    (``SessionInUse`` after that), and returns once its items are durable. ``hold=True`` keeps
    the session owned from the first call until ``close()``: a single writer then saves a
    claim per call, and other writers wait for it. ``durable=False`` returns from ``add_items``
    before the write (batched by the store's write-behind window; ``flush()`` waits for it); it
    needs ``hold`` (the default then), since a writer cannot let go of unwritten items.

    ``summarizer`` makes the compaction summaries (default: harness's offline
    ``ExtractiveSummarizer``); ``should_trigger_compaction`` decides an unforced
    ``run_compaction`` (the SDK's hook shape; the runner calls ``run_compaction`` after every
    turn): without one only a forced call compacts, with ``default_should_trigger_compaction``
    it is the SDK's threshold of 10 items; ``retain_tokens`` is the recent tail a compaction
    keeps verbatim; ``model`` names the model in the source of assistant items.

    Any event loop and thread may call it (``Runner.run_sync`` makes a loop per call): the
    store runs in one loop at a time, calls from the loop that has it run at once, and a call
    from another loop waits (without blocking its loop) until those are done, then takes the
    store to its own loop. No thread is started.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        store: SessionStore,
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        durable: bool = True,
        hold: bool | None = None,
        wait: float = DEFAULT_WAIT_S,
        summarizer: Summarizer | None = None,
        should_trigger_compaction: Callable[[dict[str, Any]], bool] | None = None,
        retain_tokens: int = 0,
        model: str = "unspecified",
        cwd: str | None = None,
    ) -> None:
        if hold is None:
            hold = not durable
        elif not hold and not durable:
            raise ValueError("durable=False batches writes across calls, so it needs hold=True")
        if not (isinstance(wait, int | float) and wait >= 0 and math.isfinite(wait)):
            raise ValueError(f"wait must be a finite number of seconds >= 0, not {wait!r}")
        self.session_id = session_id
        self.session_settings = (
            coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()
        )
        self.store = store
        self.durable = durable
        self.hold = hold
        self.wait = float(wait)
        self.summarizer: Summarizer = summarizer if summarizer is not None else ExtractiveSummarizer()
        self.should_trigger_compaction = should_trigger_compaction
        self.retain_tokens = retain_tokens
        self.model = model
        self._cwd = cwd
        self._gate = gate_of(store)  # one per store: shared by every HarnessSession on it
        self._shared = shared_session(store, session_id)  # one per store and id
        self._holding = False
        self._owns_store = False  # from_url: close() closes the store too

    @classmethod
    def from_url(cls, session_id: str, spec: str, **options: Any) -> HarnessSession:
        """A session over a store of its own, opened from ``spec`` as ``--store`` and
        ``open_store`` take it (``DIR``, ``sqlite:FILE``, ``postgresql://…``; ``~`` expanded):
        ``HarnessSession.from_url("chat-1", "sqlite:~/agents.db")``, as ``SQLiteSession("chat-1",
        "agents.db")``. ``close()`` closes that store. ``options`` as for the constructor."""
        session = cls(session_id, open_store(spec), **options)
        session._owns_store = True
        return session

    def __repr__(self) -> str:
        return f"HarnessSession({self.session_id!r}, durable={self.durable}, hold={self.hold})"

    # ---- owning the harness session for a call ------------------------------------------

    @contextlib.asynccontextmanager
    async def _call(self) -> AsyncIterator[Session]:
        """Run the body with the live session, owned for its duration (or held)."""
        async with self._gate.hold():
            shared = self._shared
            session = await shared.enter(wait=self.wait, create=self._create)
            if self.hold and not self._holding:
                shared.holders += 1
                self._holding = True
            failed = False
            try:
                yield session
            except Exception:
                # events the view holds and the store did not write: the view must go
                failed = self.store.is_live(session) and self.store.pending(session) > 0
                raise
            finally:
                await shared.exit(failed=failed)

    async def _create(self) -> Session:
        return await self.store.create(id=self.session_id, cwd=self._cwd)

    async def session(self, *, writing: bool = True) -> Session:
        """The harness session behind this one, up to date (loaded or created on first use).

        With ``hold`` it is live (owned by this store): append to it from the loop that has
        the store. Otherwise it is the view as of this call, detached once the call ends:
        read it, do not append to it. ``writing`` is accepted for compatibility.
        """
        async with self._call() as session:
            return session

    async def flush(self) -> None:
        """Return when every item added so far is durable (with ``hold=False`` they are)."""
        async with self._gate.hold():
            view = self._shared.view
            if view is not None and self._shared.owned and self.store.is_live(view):
                await self.store.flush(view)

    async def close(self) -> None:
        """Let go of a held session (``hold=True``): flush it and give up its ownership, so
        other writers can take it; the next call takes it again. A session made by
        ``from_url`` also closes its store (it cannot be used again)."""
        async with self._gate.hold():
            if self._holding:
                self._holding = False
                await self._shared.unhold()
        if self._owns_store:
            await self.store.close()

    async def _settle(self, session: Session) -> None:
        if self.durable:
            await self.store.flush(session)

    # ---- the Session protocol -----------------------------------------------------------

    async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> list[TResponseInputItem]:
        """The current history, oldest first; the latest ``limit`` items when given (else the
        ``session_settings`` limit). A limited window never starts with a tool output whose
        call it cut off: such an output is left out (the window may be shorter). Only stored
        items are shown, except with ``durable=False``: then also this process's items that
        are still queued for writing."""
        async with self._call() as session:
            pending = self.store.pending(session)
            queued = session.events[len(session.events) - pending :] if pending else ()
            if self.durable and any(event.type in SURFACE_TYPES for event in queued):
                await self.store.flush(session)  # a call beside this one is writing items
            limit = resolve_session_limit(limit, self.session_settings)
            if limit is not None and limit <= 0:
                return []
            return _current_items(session, limit)  # type: ignore[return-value]

    async def add_items(self, items: list[TResponseInputItem], *, wrapper: Any = None) -> None:
        """Append ``items`` (each becomes one event) and, unless ``durable=False``, make them
        durable before returning. Every item is checked first: a bad one raises
        (``InvalidMessage`` / ``InvalidEventData``) and none is added. When the write fails,
        none of the items is kept (the next call reads the session from the store)."""
        if not items:
            return
        payloads = [item_payload(item, self.model) for item in items]
        async with self._call() as session:
            calls: dict[str, int] = self._shared.memo.setdefault("calls", {})
            for item, payload in zip(items, payloads, strict=True):
                sources: list[int] | None = None
                if payload.answers is not None:
                    call_seq = calls.get(payload.answers)
                    if call_seq is None:
                        call_seq = _find_call(session, payload.answers)
                    if call_seq is not None:
                        sources = [call_seq]
                event = session.append(
                    payload.type, payload.data, surface_op="append", source_event_seqs=sources
                )
                opened = call_id_of_call(item) if isinstance(item, dict) else None
                if opened is not None:
                    calls[opened] = event.seq
            await self._settle(session)

    async def pop_item(self, *, wrapper: Any = None) -> TResponseInputItem | None:
        """Remove the latest item from the history and return it (None when there is none).

        Recorded as a Surface replace: the item's event stays in the log."""
        async with self._call() as session:
            nodes = session.surface.nodes
            events = session.events
            for position in range(len(nodes) - 1, -1, -1):
                item = derive_item(events[nodes[position]])
                if item is not None:
                    _remove(session, nodes[position:], "pop_item", self.model)
                    await self._settle(session)
                    return item  # type: ignore[return-value]
            return None

    async def clear_session(self, *, wrapper: Any = None) -> None:
        """Empty the history. Recorded as one Surface replace of every current node: no
        event is deleted, and ``harness log`` still shows what was there."""
        async with self._call() as session:
            nodes = session.surface.nodes
            if not nodes or (len(nodes) == 1 and _is_tombstone(session.events[nodes[0]])):
                return
            _remove(session, list(nodes), "clear_session", self.model)
            self._shared.memo.pop("calls", None)
            await self._settle(session)

    # ---- the compaction-aware protocol --------------------------------------------------

    async def run_compaction(
        self, args: OpenAIResponsesCompactionArgs | None = None, *, wrapper: Any = None
    ) -> CompactionResult | None:
        """Compact the history through harness's locked transaction (``compact_now``).

        Unless ``args["force"]``, ``should_trigger_compaction`` decides first (the SDK's
        context: ``compaction_candidate_items`` and ``session_items``); without a hook an
        unforced call does nothing. The summary of a
        head-anchored, call/output-balanced span replaces it on the Surface; the span's events
        stay in the log. Items added while the summary is made are kept (they are after the
        span): calls of this process run beside it, other writers wait for it (up to their
        ``wait``). A failure closes the bracket with its error and leaves the history as it
        was; it raises, except that a concurrent change of the span (``CompactionChanged``)
        or a compaction already in flight (``CompactionBusy``) only logs and returns None.
        ``response_id``, ``store`` and ``compaction_mode`` are accepted and not used: the
        summary is made here, not by the Responses API.
        """
        async with self._call() as session:
            force = bool(args.get("force", False)) if args else False
            if not force:
                if self.should_trigger_compaction is None:
                    return None
                history = _current_items(session, None)
                candidates = [item for item in history if not _is_user_message(item)]
                context = {
                    "response_id": args.get("response_id") if args else None,
                    "compaction_mode": args.get("compaction_mode", "input") if args else "input",
                    "compaction_candidate_items": candidates,
                    "session_items": history,
                }
                if not self.should_trigger_compaction(context):
                    return None
            try:
                return await compact_now(
                    session,
                    self.summarizer,
                    checkpoint=self.store.flush,
                    retain_tokens=self.retain_tokens,
                )
            except (CompactionChanged, CompactionBusy) as error:
                logger.warning("session %s: compaction skipped, history kept: %s", self.session_id, error)
                return None


_CALL_LOOKBACK = 256  # Surface nodes searched for the call of an output added by an earlier process


def _find_call(session: Session, call_id: str) -> int | None:
    """The seq of the recent current node that holds the tool call ``call_id``, if any."""
    nodes = session.surface.nodes
    events = session.events
    needle = call_id.encode()
    for position in range(len(nodes) - 1, max(-1, len(nodes) - 1 - _CALL_LOOKBACK), -1):
        event = events[nodes[position]]
        if event.type != "assistant/message" or needle not in event.data_json:
            continue
        message = event.data.get("message")
        for block in message.get("content", ()) if isinstance(message, Mapping) else ():
            if isinstance(block, Mapping) and block.get("type") == "tool-call" and block.get("id") == call_id:
                return event.seq
    return None


def _is_tombstone(event: Event) -> bool:
    return (
        event.type == "assistant/message"
        and OP_KEY.encode() in event.data_json
        and derive_item(event) is None
    )


def _remove(session: Session, shadowed: Sequence[int], op: str, model: str) -> Event:
    """Append the tombstone that replaces ``shadowed`` (a run of current nodes ending at the last)."""
    return session.append(
        "assistant/message",
        tombstone_payload(op, len(shadowed), model),
        surface_op=Replace(shadowed[0], shadowed[-1]),
        source_event_seqs=list(shadowed),
    )


def _current_items(session: Session, limit: int | None) -> list[dict[str, Any]]:
    """The items of the current Surface nodes, oldest first (the latest ``limit`` if given),
    with outputs whose call the window cut off left out."""
    nodes = session.surface.nodes
    events = session.events
    if limit is None:
        return [item for seq in nodes if (item := derive_item(events[seq])) is not None]
    window: list[dict[str, Any]] = []
    for position in range(len(nodes) - 1, -1, -1):
        item = derive_item(events[nodes[position]])
        if item is not None:
            window.append(item)
            if len(window) == limit:
                break
    window.reverse()
    opened = {call for item in window if (call := call_id_of_call(item)) is not None}
    return [item for item in window if (answers := call_id_of_output(item)) is None or answers in opened]
