"""The session page's exports: Markdown (``to_markdown``), the log as JSON lines, and the
OpenAI chat-completions messages (``to_openai``), the same functions as ``harness export``."""

from __future__ import annotations

import json
from typing import Final

from harness.events.json import dumps
from harness.present.export import to_markdown, to_openai
from harness.session.session import Session

__all__ = ["KINDS", "export"]

KINDS: Final = {
    "md": "text/markdown; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "openai.json": "application/json; charset=utf-8",
}
"""The export kinds, by the URL's suffix, and their media types."""


def export(session: Session, kind: str, stored_length: int | None = None) -> tuple[bytes, str]:
    """``session`` exported as ``kind`` (a key of ``KINDS``): the bytes and their media type.
    ``jsonl`` is the header line and every stored event's wire line (``stored_length`` of
    them: the closers a load would add are not in the store, so not in the export).
    Unknown kinds raise ``InvalidQuery``."""
    from harness.errors import InvalidQuery

    media = KINDS.get(kind)
    if media is None:
        raise InvalidQuery(f"no export {kind!r}: one of {', '.join(KINDS)}")
    if kind == "md":
        return to_markdown(session).encode("utf-8", "backslashreplace"), media
    if kind == "openai.json":
        return json.dumps(to_openai(session), ensure_ascii=True, indent=2).encode(), media
    events = session.events if stored_length is None else session.events[:stored_length]
    lines = [dumps(session.header.to_json(line=True)), *(event.encode() for event in events)]
    return b"\n".join(lines) + b"\n", media
