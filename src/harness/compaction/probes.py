"""Probes: facts that must stay recoverable from the Surface after a compaction.

A probe is a string (or a regular expression) that the model-visible text must contain:
a key constraint, an unfinished task, a file path, a tool result. ``surface_text`` renders
what the model sees now — every text, reasoning, tool-call name and arguments, and tool-result
text of the derived messages — and ``Probe.found_in`` searches it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

import msgspec

from harness.messages.model import Message
from harness.session.session import Session

__all__ = ["PROBE_KINDS", "Probe", "ProbeKind", "message_text", "surface_text"]

ProbeKind: TypeAlias = Literal["constraint", "task", "path", "tool-result"]
PROBE_KINDS: tuple[ProbeKind, ...] = ("constraint", "task", "path", "tool-result")


class Probe(msgspec.Struct, frozen=True, kw_only=True):
    """A fact to look for: ``pattern`` as a plain substring, or a regex when ``regex``."""

    name: str
    kind: ProbeKind
    pattern: str
    regex: bool = False

    def found_in(self, text: str) -> bool:
        """Whether ``text`` carries this probe."""
        if self.regex:
            return re.search(self.pattern, text) is not None
        return self.pattern in text


def _block_texts(blocks: Iterable[Any], out: list[str]) -> None:
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind in ("text", "reasoning") and isinstance(block.get("text"), str):
            out.append(block["text"])
        elif kind == "tool-call":
            out.append(f"{block.get('name', '')}({block.get('arguments', '')})")
        elif kind == "tool-result":
            inner = block.get("content")
            _block_texts(inner if isinstance(inner, list | tuple) else (), out)


def message_text(message: Message) -> str:
    """The model-visible text of one message."""
    out: list[str] = []
    content = message.raw.get("content")
    _block_texts(content if isinstance(content, list | tuple) else (), out)
    return "\n".join(out)


def surface_text(session: Session) -> str:
    """Everything the model would read of ``session`` now, as one string."""
    return "\n".join(message_text(message) for message in session.derive_messages())
