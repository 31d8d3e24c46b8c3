"""Probes: facts that must stay within the model's reach after a compaction.

A probe is a string (or a regular expression) that the model-visible text should contain:
a key constraint, an unfinished task, a decision, a file path, an identifier, a constant, a
tool result, an error. ``surface_text`` renders what the model sees now — every text,
reasoning, tool-call name and arguments, and tool-result text of the derived messages — and
``Probe.found_in`` searches it. ``query`` is what a model that half-remembers the fact would
type into ``session_search`` to get it back (``harness.compaction.recall``); without one, the
pattern itself is the query (an exact lookup).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

import msgspec

from harness.errors import InvalidProbe
from harness.messages.model import Message
from harness.session.session import Session

__all__ = [
    "PROBE_KINDS",
    "PROBE_STATUSES",
    "Probe",
    "ProbeKind",
    "ProbeStatus",
    "message_text",
    "surface_text",
]

ProbeKind: TypeAlias = Literal[
    "constraint", "task", "decision", "path", "identifier", "constant", "tool-result", "error"
]
PROBE_KINDS: tuple[ProbeKind, ...] = (
    "constraint",
    "task",
    "decision",
    "path",
    "identifier",
    "constant",
    "tool-result",
    "error",
)

ProbeStatus: TypeAlias = Literal["kept", "recoverable", "lost", "invalid"]
"""Where a probe stands after a compaction: ``kept`` in the Surface; ``recoverable`` through
the ``session_search`` tool; ``lost`` (neither, although the log holds it: a bug); ``invalid``
(the log never held the fact: the probe, not the compaction, is wrong)."""
PROBE_STATUSES: tuple[ProbeStatus, ...] = ("kept", "recoverable", "lost", "invalid")


class Probe(msgspec.Struct, frozen=True, kw_only=True):
    """A fact to look for: ``pattern`` as a plain substring, or a regex when ``regex``;
    ``query`` is the recall query (see the module doc). Refused with ``InvalidProbe``: an
    unknown kind, an empty pattern or query, a regex that does not compile."""

    name: str
    kind: ProbeKind
    pattern: str
    regex: bool = False
    query: str | None = None

    def __post_init__(self) -> None:
        where = f"probe {self.name!r}"
        if self.kind not in PROBE_KINDS:
            raise InvalidProbe(
                f"kind must be one of {', '.join(PROBE_KINDS)}, not {self.kind!r}", where=where
            )
        if not self.pattern:
            raise InvalidProbe("the pattern is empty", where=where)
        if self.query is not None and not self.query.strip():
            raise InvalidProbe("the query is blank", where=where)
        if self.regex:
            try:
                re.compile(self.pattern)
            except re.error as error:
                raise InvalidProbe(f"the pattern is not a regular expression: {error}", where=where) from None

    @property
    def recall_query(self) -> str | None:
        """The text to search the log for: ``query``, else a literal pattern (``None`` for a
        regex probe without a query: it cannot be searched for)."""
        if self.query is not None:
            return self.query
        return None if self.regex else self.pattern

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
