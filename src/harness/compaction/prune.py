"""The tool-result pruner (FORMAT §11.7): the model-free pass that runs before summarizing.

A current ``tool/result`` whose text (the concatenated text blocks inside its ``tool-result``
block, counted in code points) is longer than ``threshold_chars`` keeps its first
``head_chars`` and last ``tail_chars`` code points, with ``PRUNE_MARKER`` inserted once where
the removal starts; non-text blocks stay in place and text blocks left empty are dropped.

Each pruned node ``s`` gets ``compaction/prune {shadowedRange: {s, s}, shadowedSeqs: [s],
shadowedTokenCount: price(original)}`` and, at the very next seq, a replacement ``tool/result``
(``Replace(s, s)``, sources ``[s]``) with the same data and message id and only the inner
content changed. A pruned result is short enough never to be pruned again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from harness.compaction.meter import price_node
from harness.errors import CompactionConfigError
from harness.events.event import Replace
from harness.events.json import thaw
from harness.session.session import Session

__all__ = ["DEFAULT_PRUNER", "PRUNE_MARKER", "PrunerConfig", "prune_content", "prune_tool_results"]

PRUNE_MARKER: Final = "\n\n[... tool result middle pruned ...]\n\n"


class PrunerConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Pruner limits in code points; ``head + len(PRUNE_MARKER) + tail`` must fit the threshold."""

    threshold_chars: int = 8192
    head_chars: int = 4096
    tail_chars: int = 1024

    def __post_init__(self) -> None:
        if min(self.threshold_chars, self.head_chars, self.tail_chars) < 0:
            raise CompactionConfigError("pruner limits must not be negative")
        if self.head_chars + len(PRUNE_MARKER) + self.tail_chars > self.threshold_chars:
            raise CompactionConfigError(
                f"pruner head_chars + marker ({len(PRUNE_MARKER)}) + tail_chars must not exceed "
                f"threshold_chars ({self.head_chars} + {len(PRUNE_MARKER)} + {self.tail_chars} > "
                f"{self.threshold_chars})"
            )


DEFAULT_PRUNER: Final = PrunerConfig()
"""The pruner with FORMAT's defaults (8192 / 4096 / 1024)."""


def _is_text(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str)


def prune_content(blocks: Sequence[Any], config: PrunerConfig) -> list[Any] | None:
    """The pruned inner content of a tool result, or ``None`` when it is within the threshold."""
    total = sum(len(block["text"]) for block in blocks if _is_text(block))
    if total <= config.threshold_chars:
        return None
    head_end = config.head_chars
    tail_start = total - config.tail_chars
    out: list[Any] = []
    offset = 0
    marked = False
    for block in blocks:
        if not _is_text(block):
            out.append(thaw(block))
            continue
        text: str = block["text"]
        begin, finish = offset, offset + len(text)
        offset = finish
        kept_head = text[: max(0, min(finish, head_end) - begin)]
        kept_tail = text[max(0, max(begin, tail_start) - begin) :] if finish > tail_start else ""
        new = kept_head
        if not marked and begin <= head_end < finish:
            new += PRUNE_MARKER
            marked = True
        new += kept_tail
        if new:
            pruned = thaw(block)
            pruned["text"] = new
            out.append(pruned)
    if not marked:  # the removal starts exactly at the end of the text blocks' head
        out.append({"type": "text", "text": PRUNE_MARKER})
    return out


def prune_tool_results(session: Session, config: PrunerConfig | None = None) -> list[int]:
    """Prune every over-threshold current ``tool/result``; returns the replacement seqs."""
    config = config or DEFAULT_PRUNER
    events = session.events
    replaced: list[int] = []
    for seq in tuple(session.surface.nodes):
        event = events[seq]
        if event.type != "tool/result":
            continue
        data = thaw(event.data)
        message = data.get("message") if isinstance(data, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or not content or not isinstance(content[0], dict):
            continue
        inner = content[0].get("content")
        if not isinstance(inner, list):
            continue
        pruned = prune_content(inner, config)
        if pruned is None:
            continue
        session.append(
            "compaction/prune",
            {
                "shadowedRange": {"start": seq, "end": seq},
                "shadowedSeqs": [seq],
                "shadowedTokenCount": price_node(event),
            },
        )
        content[0]["content"] = pruned
        replacement = session.append(
            "tool/result", data, surface_op=Replace(seq, seq), source_event_seqs=[seq]
        )
        replaced.append(replacement.seq)
    return replaced
