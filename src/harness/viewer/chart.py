"""The session chart: the Surface's token price and the log's size over the seqs, as inline SVG.

The Surface at each sampled seq comes from ``surface_at`` (the query layer's time travel) and
is priced with the compaction meter's ``price_node``; the log size is the running total of the
events' wire lines. A compaction shows as the saw-tooth: the Surface drops while the log
keeps growing. At most ``SAMPLES`` points are drawn, so a 100k-event session costs a few
hundred Surface lookups, not 100k. The SVG holds only numbers and our own labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from harness.compaction.meter import price_node
from harness.query import index_of, surface_at
from harness.session.session import Session

__all__ = ["SAMPLES", "Series", "chart_svg", "series"]

SAMPLES: Final = 240
WIDTH: Final = 900
HEIGHT: Final = 160
_PAD_LEFT: Final = 56
_PAD_RIGHT: Final = 56
_PAD_Y: Final = 14


@dataclass
class Series:
    """The sampled seqs, the Surface tokens and the log bytes right after each, and the seqs
    where a compaction committed (its checkpoint)."""

    seqs: list[int]
    tokens: list[int]
    log_bytes: list[int]
    checkpoints: list[int]


def series(session: Session, samples: int = SAMPLES) -> Series:
    """Sample the session at up to ``samples`` seqs (always the last one; each compaction's
    checkpoint and the event before it, so every drop is drawn)."""
    events = session.events
    length = len(events)
    if length == 0:
        return Series([], [], [], [])
    step = max(1, length // samples)
    wanted = set(range(0, length, step)) | {length - 1}
    checkpoints = [b.checkpoint for b in index_of(session).brackets if b.checkpoint is not None]
    for seq in checkpoints:
        wanted.update((max(0, seq - 1), seq))
    seqs = sorted(wanted)
    prices: dict[int, int] = {}
    tokens = []
    for seq in seqs:
        total = 0
        for node in surface_at(session, seq).nodes:
            price = prices.get(node)
            if price is None:
                price = prices[node] = price_node(events[node])
            total += price
        tokens.append(total)
    log_bytes = []
    running = 0
    at = 0
    for seq in seqs:
        while at <= seq:
            running += len(events[at].encode()) + 1
            at += 1
        log_bytes.append(running)
    return Series(seqs, tokens, log_bytes, checkpoints)


def _scale(values: list[int]) -> int:
    return max(values) if values and max(values) > 0 else 1


def _human(value: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return str(value)


def chart_svg(data: Series, length: int) -> str:
    """The chart as one ``<svg>`` element: tokens (left axis), log bytes (right axis),
    checkpoints as ticks. ``data-first``/``data-last`` and the plot's x range let the page's
    script turn a click into a seq."""
    x0, x1 = _PAD_LEFT, WIDTH - _PAD_RIGHT
    y0, y1 = HEIGHT - _PAD_Y, _PAD_Y
    last = max(length - 1, 1)

    def x(seq: int) -> float:
        return x0 + (x1 - x0) * seq / last

    def line(values: list[int], top: int) -> str:
        return " ".join(
            f"{x(seq):.1f},{y0 - (y0 - y1) * value / top:.1f}"
            for seq, value in zip(data.seqs, values, strict=True)
        )

    top_tokens, top_bytes = _scale(data.tokens), _scale(data.log_bytes)
    ticks = "".join(
        f'<line class="ck" x1="{x(seq):.1f}" x2="{x(seq):.1f}" y1="{y1}" y2="{y0}">'
        f"<title>checkpoint seq {seq}</title></line>"
        for seq in data.checkpoints
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'data-x0="{x0}" data-x1="{x1}" data-width="{WIDTH}" data-last="{last}" role="img" '
        f'aria-label="Surface tokens and log size over seqs">'
        f'<rect class="bg" x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}"/>'
        f"{ticks}"
        f'<polyline class="bytes" points="{line(data.log_bytes, top_bytes)}"/>'
        f'<polyline class="tokens" points="{line(data.tokens, top_tokens)}"/>'
        f'<text class="axis tokens" x="4" y="{y1 + 8}">{_human(top_tokens)} tok</text>'
        f'<text class="axis tokens" x="4" y="{y0}">0</text>'
        f'<text class="axis bytes" x="{x1 + 4}" y="{y1 + 8}">{_human(top_bytes)}B</text>'
        f'<text class="axis" x="{x0}" y="{HEIGHT - 1}">seq 0</text>'
        f'<text class="axis" x="{x1 - 60}" y="{HEIGHT - 1}">seq {length - 1}</text>'
        f'<line class="cursor" x1="{x0}" x2="{x0}" y1="{y1}" y2="{y0}"/>'
        "</svg>"
    )
