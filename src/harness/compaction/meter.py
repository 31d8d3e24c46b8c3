"""The token meter (FORMAT §11.1): a price per Surface node and the pressure of the next request.

Prices follow one fixed heuristic (lengths in UTF-16 code units, as the reference counts them):
text and reasoning ``ceil(len/4)+4``; tool call ``ceil(name/4)+ceil(arguments/4)+4``; tool
result its inner blocks ``+4``; image ``85 + 170 per 512-pixel tile + 4``; any other block
``4+ceil(len(JSON)/4)``; a message its blocks ``+4``; a node the price of its projection (0 when
it projects nothing). The request envelope adds ``ceil(len(system)/4)+4`` and
``ceil(len(JSON(tools))/4)+4``.

Pressure is calibrated by what the provider reported: every ``assistant/message`` is an
anchor. When the latest anchor ran under the request header now in force, pressure is the
anchor's total (the provider's ``input+cacheRead+cacheWrite+output`` when it reported usage and
that is not below the heuristic price of the same request, else the heuristic price) plus the
signed change of the Surface since. Otherwise it is the header estimate plus the Surface total.

The meter folds each session's log incrementally (events are immutable and append-only), so a
measurement after a few appends costs only those appends plus a copy of the node list.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

from harness.events.event import Event, Replace
from harness.events.json import dumps
from harness.messages.model import TokenUsage
from harness.messages.request import EpochHeader
from harness.session.session import Session
from harness.surface.projection import project

__all__ = [
    "DEFAULT_METER",
    "Measurement",
    "SurfaceNode",
    "TokenMeter",
    "measure",
    "price_blocks",
    "price_header",
    "price_message",
    "price_node",
    "tool_call_delta",
    "utf16_len",
]

CHARS_PER_TOKEN: Final = 4
BLOCK_OVERHEAD: Final = 4
ROLE_OVERHEAD: Final = 4
IMAGE_BASE: Final = 85
IMAGE_TILE: Final = 170
IMAGE_TILE_EDGE: Final = 512


def utf16_len(text: str) -> int:
    """The length of ``text`` in UTF-16 code units (what JavaScript's ``length`` counts)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _quarter(text: str) -> int:
    return -(-utf16_len(text) // CHARS_PER_TOKEN)


def _json_len(value: Any) -> int:
    return utf16_len(dumps(value).decode("utf-8", "surrogatepass"))


def _image_price(block: Mapping[str, Any]) -> int | None:
    attachment = block.get("attachment")
    if not isinstance(attachment, Mapping):
        return None
    width, height = attachment.get("width"), attachment.get("height")
    if not isinstance(width, int | float) or not isinstance(height, int | float) or width < 0 or height < 0:
        return None
    tiles = math.ceil(width / IMAGE_TILE_EDGE) * math.ceil(height / IMAGE_TILE_EDGE)
    return IMAGE_BASE + tiles * IMAGE_TILE + BLOCK_OVERHEAD


def price_blocks(blocks: Iterable[Any]) -> int:
    """The heuristic price of a list of content blocks (message content or tool-result content)."""
    tokens = 0
    for block in blocks:
        if not isinstance(block, Mapping):
            tokens += BLOCK_OVERHEAD + -(-_json_len(block) // CHARS_PER_TOKEN)
            continue
        kind = block.get("type")
        if kind in ("text", "reasoning") and isinstance(block.get("text"), str):
            tokens += _quarter(block["text"]) + BLOCK_OVERHEAD
        elif kind == "tool-call" and isinstance(block.get("name"), str):
            arguments = block.get("arguments")
            tokens += _quarter(block["name"]) + _quarter(arguments if isinstance(arguments, str) else "")
            tokens += BLOCK_OVERHEAD
        elif kind == "tool-result":
            inner = block.get("content")
            tokens += price_blocks(inner if isinstance(inner, list | tuple) else ()) + BLOCK_OVERHEAD
        elif kind == "image" and (image := _image_price(block)) is not None:
            tokens += image
        else:
            tokens += BLOCK_OVERHEAD + -(-_json_len(block) // CHARS_PER_TOKEN)
    return tokens


def price_message(message: Mapping[str, Any]) -> int:
    """The heuristic price of one model message (its blocks plus the role framing)."""
    content = message.get("content")
    return price_blocks(content if isinstance(content, list | tuple) else ()) + ROLE_OVERHEAD


def price_node(event: Event) -> int:
    """The price of a Surface node: its projection's price, 0 when it projects nothing."""
    projected = project(event)
    return 0 if projected is None else price_message(projected)


def price_header(header: EpochHeader | None) -> int:
    """The heuristic price of the request envelope: system prompt and tool schemas."""
    if header is None:
        return 0
    tokens = 0
    if header.system:
        tokens += _quarter(header.system) + ROLE_OVERHEAD
    if header.tools:
        tokens += -(-_json_len(list(header.tools)) // CHARS_PER_TOKEN) + BLOCK_OVERHEAD
    return tokens


def tool_call_delta(event: Event) -> int:
    """A node's contribution to the tool-pairing balance (FORMAT §11.2): an assistant message
    adds its tool-call blocks, a tool result takes one away, anything else adds nothing."""
    if event.type == "tool/result":
        return -1
    if event.type != "assistant/message":
        return 0
    data = event.data
    message = data.get("message") if isinstance(data, Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list | tuple):
        return 0
    return sum(1 for block in content if isinstance(block, Mapping) and block.get("type") == "tool-call")


class SurfaceNode(msgspec.Struct, frozen=True):
    """One current Surface node: its seq, its price and its tool-pairing delta."""

    seq: int
    tokens: int
    calls: int


Baseline = Literal["usage", "estimated", "none"]


class Measurement(msgspec.Struct, frozen=True):
    """One coherent reading of a session.

    ``total`` is the pressure of the next request; ``surface_tokens`` the heuristic Surface
    total (the sum of ``nodes[i].tokens``); ``baseline`` says where ``total`` came from
    (provider ``usage``, an ``estimated`` anchor or full estimate, or ``none`` for an empty
    session); ``revision`` is the number of events folded.
    """

    total: int
    surface_tokens: int
    header_tokens: int
    baseline: Baseline
    nodes: tuple[SurfaceNode, ...]
    revision: int

    def balances(self) -> list[int]:
        """``balances[k]``: the tool-pairing balance of the first ``k`` nodes (``len + 1`` items)."""
        out = [0]
        for node in self.nodes:
            out.append(out[-1] + node.calls)
        return out


class _Anchor:
    __slots__ = ("baseline", "header", "kind", "surface_tokens")

    def __init__(
        self, header: EpochHeader | None, surface_tokens: int, baseline: int, kind: Baseline
    ) -> None:
        self.header = header
        self.surface_tokens = surface_tokens
        self.baseline = baseline
        self.kind = kind


class _State:
    __slots__ = ("anchor", "consumed", "header", "nodes", "surface_tokens")

    def __init__(self) -> None:
        self.consumed = 0
        self.header: EpochHeader | None = None
        self.nodes: list[SurfaceNode] = []
        self.surface_tokens = 0
        self.anchor: _Anchor | None = None


def _usage_total(data: Mapping[str, Any]) -> int | None:
    raw = data.get("usage")
    if not isinstance(raw, Mapping):
        return None
    try:
        return TokenUsage.from_json(raw).total
    except (msgspec.ValidationError, TypeError):
        return None


def _same_header(left: EpochHeader | None, right: EpochHeader | None) -> bool:
    if left is None or right is None:
        return left is right
    return left == right


class TokenMeter:
    """Prices Surface nodes and measures request pressure, folding each session's log once.

    One meter may serve many sessions (state is kept per session object, weakly).
    """

    def __init__(self) -> None:
        self._states: weakref.WeakKeyDictionary[Session, _State] = weakref.WeakKeyDictionary()

    def _sync(self, session: Session) -> _State:
        state = self._states.get(session)
        events = session.events
        if state is None or state.consumed > len(events):
            state = _State()
            self._states[session] = state
        for seq in range(state.consumed, len(events)):
            self._fold(state, events[seq])
        state.consumed = len(events)
        if len(state.nodes) != len(session.surface):  # never expected; rebuild rather than guess
            self._states.pop(session, None)
            fresh = _State()
            for event in events:
                self._fold(fresh, event)
            fresh.consumed = len(events)
            self._states[session] = fresh
            return fresh
        return state

    def _fold(self, state: _State, event: Event) -> None:
        kind = event.type
        if kind == "request/header":
            data = event.data
            header = data.get("header") if isinstance(data, Mapping) else None
            if isinstance(header, Mapping):
                state.header = EpochHeader(header)
            return
        op = event.surface_op
        if op is None:
            return
        node = SurfaceNode(event.seq, price_node(event), tool_call_delta(event))
        if kind == "assistant/message":
            # The request that produced this message saw the header and the Surface as they
            # are now; the provider's total covers that input plus this output.
            anchor_surface = state.surface_tokens + node.tokens
            estimate = price_header(state.header) + anchor_surface
            data = event.data
            usage = _usage_total(data) if isinstance(data, Mapping) else None
            if usage is not None and state.header is not None and usage >= estimate:
                state.anchor = _Anchor(state.header, anchor_surface, usage, "usage")
            else:
                state.anchor = _Anchor(state.header, anchor_surface, estimate, "estimated")
        if isinstance(op, Replace):
            positions = {n.seq: i for i, n in enumerate(state.nodes)}
            start, end = positions.get(op.start), positions.get(op.end)
            if start is None or end is None or start > end:
                raise ValueError(f"token meter: replace at seq {event.seq} names a range not on the surface")
            removed = sum(n.tokens for n in state.nodes[start : end + 1])
            state.nodes[start : end + 1] = [node]
            state.surface_tokens += node.tokens - removed
        else:
            state.nodes.append(node)
            state.surface_tokens += node.tokens

    def measure(self, session: Session, header: EpochHeader | None = None) -> Measurement:
        """Pressure and priced Surface now. ``header`` overrides the header in force (the one
        the next request will carry) for the pressure fields only."""
        state = self._sync(session)
        current = header if header is not None else state.header
        header_tokens = price_header(current)
        anchor = state.anchor
        baseline: Baseline
        if anchor is not None and _same_header(anchor.header, current):
            total = anchor.baseline + (state.surface_tokens - anchor.surface_tokens)
            baseline = anchor.kind
        elif current is None and state.surface_tokens == 0:
            total, baseline = 0, "none"
        else:
            total, baseline = header_tokens + state.surface_tokens, "estimated"
        return Measurement(
            total=max(0, total),
            surface_tokens=state.surface_tokens,
            header_tokens=header_tokens,
            baseline=baseline,
            nodes=tuple(state.nodes),
            revision=state.consumed,
        )

    def nodes(self, session: Session) -> Sequence[SurfaceNode]:
        """The priced current Surface nodes, in model order (a copy)."""
        return tuple(self._sync(session).nodes)


DEFAULT_METER: Final = TokenMeter()
"""The meter the compaction functions use when none is given."""


def measure(session: Session, header: EpochHeader | None = None) -> Measurement:
    """``DEFAULT_METER.measure(session, header)``."""
    return DEFAULT_METER.measure(session, header)
