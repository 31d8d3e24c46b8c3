"""Time travel: the Surface, the model history and the model request as they were right after
any event of a session (issue 13).

Nothing here has rules of its own. The Surface comes from ``SurfaceManager`` (the fold that
``fold_surface`` and every live append run), messages from the FORMAT §6 projection
(``project``, as ``Session.derive_messages``), requests from ``build_request`` with the header
``fold_request_header`` finds. ``surface_at(session, s)`` therefore equals
``fold_surface(session.events[: s + 1])``, and ``request_at`` equals what the agent loop built
when it sent that request.

**Request points.** The loop builds a request from the whole log so far, right before the
attempt's first ``assistant/chunk``; a ``request/context`` is written only when the route
changes (FORMAT §4), just before such a request. A *request point* is a seq ``p`` whose prefix
``events[0..p]`` is what a request was built from: every ``request/context``, the event before
each run of ``assistant/chunk`` events (an attempt; chunks change neither the Surface nor the
header, so attempts with nothing between them were sent the same request), and the event
before an ``assistant/message`` that cites no chunk (a known-empty stream).
``request_before(session, seq)`` finds the request that produced ``seq`` (an assistant message,
a chunk, a tool call of that step): the latest request point at or before it.

**Cost.** ``TimeTravel(session)`` folds the log once and incrementally (events appended later
are folded by the next query; the store is never read). For every node the Surface ever held
it keeps when it entered, which replace shadowed it, and a key that sorts nodes in model
order (an append sorts last; a replacement takes the place of the first node it shadows). The
nodes right after replace number ``g`` are one filtered pass over those records, memoised per
replace generation (least recently used first out, past about two million slots); the Surface
at any seq of generation ``g`` is that list plus the seqs appended since, found by bisection.
Messages are projected once per node and shared.
``bench/query_timetravel.py`` measures it against ``derive_messages``.

The module-level functions share one ``TimeTravel`` per live session (held weakly).
"""

from __future__ import annotations

import weakref
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Final, overload

from harness.errors import InvalidQuery
from harness.events.event import Event, Replace
from harness.messages.model import Message
from harness.messages.request import EpochHeader, GenerateOptions
from harness.session.request import build_request, fold_request_header
from harness.session.session import Session
from harness.surface.fold import Replacement, SurfaceFold
from harness.surface.manager import MISSING, SurfaceManager, Transition
from harness.surface.projection import project

__all__ = [
    "TimeTravel",
    "messages_at",
    "request_at",
    "request_before",
    "request_points",
    "surface_at",
    "time_travel",
]

_MEMO_BUDGET: Final = 1 << 21
"""How many slots (nodes and messages) the memoised generations may hold together: about
16 MB of references; the least recently used generations go first beyond that."""

_new_transition = tuple.__new__  # a Transition without the NamedTuple constructor's overhead

_ALIVE: Final = 1 << 62
"""The death seq of a node no replace has shadowed (above any seq)."""


class _Generation:
    """The nodes (and, once asked for, their messages) right after one replace."""

    __slots__ = ("messages", "nodes")

    def __init__(self, nodes: tuple[int, ...]) -> None:
        self.nodes = nodes
        self.messages: tuple[Message, ...] | None = None


class TimeTravel:
    """Point-in-time reads of one session's log: ``surface_at``, ``messages_at``,
    ``request_at`` and the request points. Follows the session as it grows."""

    __slots__ = (
        "_appends",
        "_death",
        "_deaths",
        "_events",
        "_generations",
        "_header_seqs",
        "_headers",
        "_id",
        "_key_of",
        "_keys",
        "_manager",
        "_memo_size",
        "_messages",
        "_order",
        "_points",
        "_previous_type",
        "_replace_seqs",
        "_replacements",
        "_upto",
    )

    def __init__(self, session: Session) -> None:
        # Only the live log and the id are kept (not the session), so the module-level
        # cache can hold TimeTravel objects without keeping their sessions alive.
        self._events = session.events
        self._id = session.id
        self._manager = SurfaceManager(self._events)
        self._upto = 0
        self._previous_type = ""
        self._keys: list[tuple[int, ...]] = []  # sorted: model order of every node ever
        self._order: list[int] = []  # the node seq of each key
        self._key_of: dict[int, tuple[int, ...]] = {}
        self._death: dict[int, int] = {}  # node seq -> seq of the replace that shadowed it
        self._deaths: list[int] | None = []  # the death of each node of _order (None: stale)
        self._appends: list[int] = []  # seqs appended to the Surface, ascending
        self._replacements: list[Replacement] = []
        self._replace_seqs: list[int] = []
        self._header_seqs: list[int] = []
        self._headers: list[EpochHeader] = []
        self._points: list[int] = []
        self._generations: OrderedDict[int, _Generation] = OrderedDict()
        self._memo_size = 0
        self._messages: dict[int, Message | None] = {}

    def __repr__(self) -> str:
        return f"TimeTravel({self._id!r}, {self._upto} events folded)"

    # ---- the fold -----------------------------------------------------------------------

    def _catch_up(self) -> None:
        events = self._events
        end = len(events)
        if self._upto == end:
            return
        manager = self._manager
        check = manager.check
        apply = manager.apply
        previous = self._previous_type
        for event in islice(iter(events), self._upto, end):
            kind = event.type
            seq = event.seq
            op = event.surface_op
            if op is None:
                # Neither a Surface event nor carrying Surface fields (the log was validated
                # when it was written): the rules leave the Surface as it is, as the fast path
                # of Session.append does.
                apply(_new_transition(Transition, (seq, None, None, -1, -1)))
                if kind == "assistant/chunk":
                    if previous != "assistant/chunk" and seq:  # an attempt's first chunk
                        self._point(seq - 1)
                elif kind == "request/context":
                    self._point(seq)
                elif kind == "request/header":
                    header = fold_request_header((event,))
                    if header is not None:
                        self._header_seqs.append(seq)
                        self._headers.append(header)
            else:
                # ``data`` only matters to the tool-result rewrite rule: other events are not
                # decoded for it.
                sources = event.source_event_seqs
                data = event.data if kind == "tool/result" and op != "append" else None
                transition = check(kind, seq, op, MISSING if sources is None else sources, data)
                if transition.start_pos >= 0:
                    shadowed = manager.nodes[transition.start_pos : transition.end_pos + 1]
                    self._replaced(event, shadowed)
                else:
                    self._appended(seq)
                apply(transition)
                if kind == "assistant/message" and sources == () and seq:  # a known-empty stream
                    self._point(seq - 1)
            previous = kind
            self._upto = seq + 1
        self._previous_type = previous

    def _appended(self, seq: int) -> None:
        key = (seq,)  # above every earlier key: an append goes last
        self._keys.append(key)
        self._order.append(seq)
        self._key_of[seq] = key
        self._appends.append(seq)
        if self._deaths is not None:
            self._deaths.append(_ALIVE)

    def _replaced(self, event: Event, shadowed: Sequence[int]) -> None:
        seq = event.seq
        op = event.surface_op
        assert isinstance(op, Replace)
        self._replacements.append(Replacement(seq, op.start, op.end, tuple(shadowed)))
        self._replace_seqs.append(seq)
        # The replacement sits where its shadowed run was: right after the run's first node
        # in key order, before every node that follows the run (see the module doc).
        key = (*self._key_of[shadowed[0]], seq)
        index = bisect_right(self._keys, key)
        self._keys.insert(index, key)
        self._order.insert(index, seq)
        self._key_of[seq] = key
        for node in shadowed:
            self._death[node] = seq
        self._deaths = None

    def _point(self, point: int) -> None:
        points = self._points
        if not points or points[-1] < point:
            points.append(point)

    # ---- queries ------------------------------------------------------------------------

    def _check_seq(self, seq: int) -> int:
        self._catch_up()
        if type(seq) is not int or not 0 <= seq < self._upto:
            if self._upto == 0:
                raise InvalidQuery(f"seq {seq!r} is out of range: session {self._id} has no events")
            raise InvalidQuery(
                f"seq {seq!r} is out of range: session {self._id} has {self._upto} events "
                f"(seqs 0..{self._upto - 1})"
            )
        return seq

    def _generation(self, generation: int) -> _Generation:
        memo = self._generations.get(generation)
        if memo is not None:
            self._generations.move_to_end(generation)
            return memo
        if generation == 0:
            nodes: tuple[int, ...] = ()
        else:
            at = self._replace_seqs[generation - 1]
            deaths = self._deaths
            if deaths is None:
                death = self._death
                deaths = self._deaths = [death.get(node, _ALIVE) for node in self._order]
            nodes = tuple([node for node, died in zip(self._order, deaths, strict=True) if node <= at < died])
        memo = _Generation(nodes)
        generations = self._generations
        generations[generation] = memo
        self._memo_size += 2 * len(nodes)  # the nodes, and their messages once asked for
        while self._memo_size > _MEMO_BUDGET and len(generations) > 1:
            _, dropped = generations.popitem(last=False)
            self._memo_size -= 2 * len(dropped.nodes)
        return memo

    def _split(self, seq: int) -> tuple[int, _Generation, list[int]]:
        """The generation in force right after ``seq``, its memo and the seqs appended since."""
        generation = bisect_right(self._replace_seqs, seq)
        memo = self._generation(generation)
        since = self._replace_seqs[generation - 1] if generation else -1
        appends = self._appends
        tail = appends[bisect_right(appends, since) : bisect_right(appends, seq)]
        return generation, memo, tail

    def surface_at(self, seq: int) -> SurfaceFold:
        """The Surface right after event ``seq``: its nodes, replace generation and the
        replacements so far (equal to ``fold_surface(events[: seq + 1])``).

        Raises ``InvalidQuery`` for a seq outside the log."""
        seq = self._check_seq(seq)
        generation, memo, tail = self._split(seq)
        nodes = memo.nodes + tuple(tail) if tail else memo.nodes
        return SurfaceFold(nodes, generation, tuple(self._replacements[:generation]))

    def _projected(self, nodes: Sequence[int]) -> list[Message]:
        cache = self._messages
        events = self._events
        out: list[Message] = []
        for node in nodes:
            try:
                message = cache[node]
            except KeyError:
                raw = project(events[node])
                message = cache[node] = None if raw is None else Message(raw)
            if message is not None:
                out.append(message)
        return out

    def messages_at(self, seq: int) -> list[Message]:
        """The model history right after event ``seq`` (what ``derive_messages`` returned
        then): a new list of read-only messages in Surface order.

        Raises ``InvalidQuery`` for a seq outside the log."""
        seq = self._check_seq(seq)
        _, memo, tail = self._split(seq)
        if memo.messages is None:
            memo.messages = tuple(self._projected(memo.nodes))
        return [*memo.messages, *self._projected(tail)]

    def header_at(self, seq: int) -> EpochHeader | None:
        """The request header in force right after event ``seq`` (the latest usable
        ``request/header`` at or before it), or ``None``."""
        seq = self._check_seq(seq)
        index = bisect_right(self._header_seqs, seq) - 1
        return self._headers[index] if index >= 0 else None

    def request_points(self) -> tuple[int, ...]:
        """Every request point of the log, ascending (see the module doc)."""
        self._catch_up()
        return tuple(self._points)

    def request_before(self, seq: int) -> int:
        """The latest request point at or before ``seq``: for an assistant message, a chunk
        or a tool call, the point of the request that produced it.

        Raises ``InvalidQuery`` when no request was sent by then."""
        seq = self._check_seq(seq)
        index = bisect_right(self._points, seq) - 1
        if index < 0:
            raise InvalidQuery(f"no model request was sent at or before seq {seq} of session {self._id}")
        return self._points[index]

    def request_at(self, seq: int) -> GenerateOptions:
        """The request the model was sent at request point ``seq``: the header in force
        (system prompt, tools, config) and the messages, built by ``build_request``.

        Raises ``InvalidQuery`` when ``seq`` is outside the log, is not a request point
        (``request_before`` finds the one that applies) or has no header in force."""
        seq = self._check_seq(seq)
        index = bisect_right(self._points, seq) - 1
        if index < 0 or self._points[index] != seq:
            kind = self._events[seq].type
            hint = ""
            if index >= 0:
                hint = f"; the request in force there was sent at seq {self._points[index]}"
            raise InvalidQuery(
                f"seq {seq} ({kind}) is not a request point of session {self._id}: no model request "
                f"was built right after it (a request/context, or the event before a response's "
                f"first chunk){hint}"
            )
        header = self.header_at(seq)
        if header is None:
            raise InvalidQuery(f"no request/header is in force at seq {seq} of session {self._id}")
        return build_request(
            _SessionAt(self._id, _Prefix(self._events, seq + 1), self.messages_at(seq)), header
        )


class _Prefix(Sequence[Event]):
    """The first ``length`` events of a log, without copying them."""

    __slots__ = ("_events", "_length")

    def __init__(self, events: Sequence[Event], length: int) -> None:
        self._events = events
        self._length = length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Event, ...]: ...

    def __getitem__(self, index: int | slice) -> Event | tuple[Event, ...]:
        if isinstance(index, slice):
            return tuple(self._events[i] for i in range(*index.indices(self._length)))
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        return self._events[index]

    def __iter__(self) -> Iterator[Event]:
        events = self._events
        return (events[i] for i in range(self._length))


class _SessionAt:
    """A session as it was right after one seq: what ``build_request`` reads of it."""

    __slots__ = ("_events", "_id", "_messages")

    def __init__(self, session_id: str, events: Sequence[Event], messages: list[Message]) -> None:
        self._id = session_id
        self._events = events
        self._messages = messages

    @property
    def id(self) -> str:
        return self._id

    @property
    def events(self) -> Sequence[Event]:
        return self._events

    def derive_messages(self) -> list[Message]:
        return list(self._messages)


_shared: weakref.WeakKeyDictionary[Session, TimeTravel] = weakref.WeakKeyDictionary()


def time_travel(session: Session) -> TimeTravel:
    """The ``TimeTravel`` of ``session``, shared by the functions below (made on first use)."""
    traveller = _shared.get(session)
    if traveller is None:
        traveller = _shared[session] = TimeTravel(session)
    return traveller


def surface_at(session: Session, seq: int) -> SurfaceFold:
    """The Surface right after event ``seq`` of ``session`` (see ``TimeTravel.surface_at``)."""
    return time_travel(session).surface_at(seq)


def messages_at(session: Session, seq: int) -> list[Message]:
    """The model history right after event ``seq`` (see ``TimeTravel.messages_at``)."""
    return time_travel(session).messages_at(seq)


def request_at(session: Session, seq: int) -> GenerateOptions:
    """The request the model was sent at request point ``seq`` (see ``TimeTravel.request_at``)."""
    return time_travel(session).request_at(seq)


def request_before(session: Session, seq: int) -> int:
    """The request point of the request that produced ``seq`` (see ``TimeTravel.request_before``)."""
    return time_travel(session).request_before(seq)


def request_points(session: Session) -> tuple[int, ...]:
    """Every request point of ``session``, ascending."""
    return time_travel(session).request_points()
