"""The checkpoint message that stands in for a compacted span (FORMAT §11.5).

A checkpoint is a user message: ``[text: PREAMBLE + "\\n\\n<compacted-summary>", ...summary text
blocks, text: "</compacted-summary>"]`` with source ``{kind: "plugin", plugin: "compact",
compactionId, sourceCommandId?}``. The preamble is our own wording: it tells the model the
block is a condensed record of earlier work to build on silently. When the agent is offered
the recall tool (``session_search``), the preamble gains one sentence (``RECALL_NOTE``) saying
that details the digest left out can be looked up with it; the shape stays the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness.events.json import FrozenDict
from harness.messages.model import text_block, user_message

__all__ = [
    "CHECKPOINT_PLUGIN",
    "CLOSE_TAG",
    "OPEN_TAG",
    "PREAMBLE",
    "RECALL_NOTE",
    "checkpoint_message",
    "checkpoint_source",
    "is_checkpoint_message",
    "summary_text_of",
]

PREAMBLE: Final = (
    "Context note: the earlier part of this conversation was condensed automatically into the "
    "digest below so that it fits the context window. Take the digest as settled background, "
    "build on it without restating it, and carry on with the task from the messages that "
    "follow; do not comment on or acknowledge this note."
)
RECALL_NOTE: Final = (
    "The full earlier conversation is still on record: when you need an exact detail the digest "
    "leaves out (a value, a path, an error, an instruction), look it up with the {tool} tool "
    "instead of guessing."
)
OPEN_TAG: Final = "<compacted-summary>"
CLOSE_TAG: Final = "</compacted-summary>"
CHECKPOINT_PLUGIN: Final = "compact"


def checkpoint_source(compaction_id: str, source_command_id: str | None = None) -> FrozenDict:
    """The checkpoint's source: ``{kind: "plugin", plugin: "compact", compactionId, sourceCommandId?}``."""
    source: dict[str, Any] = {"kind": "plugin", "plugin": CHECKPOINT_PLUGIN, "compactionId": compaction_id}
    if source_command_id is not None:
        source["sourceCommandId"] = source_command_id
    return FrozenDict(source)


def checkpoint_message(
    texts: Sequence[str],
    compaction_id: str,
    source_command_id: str | None = None,
    *,
    recall_tool: str | None = None,
) -> FrozenDict:
    """The checkpoint user message framing ``texts`` (the summary's text blocks); with
    ``recall_tool`` (the name of a tool the model is offered), the preamble says that older
    details can be looked up with it."""
    preamble = PREAMBLE if recall_tool is None else PREAMBLE + " " + RECALL_NOTE.format(tool=recall_tool)
    content = [text_block(preamble + "\n\n" + OPEN_TAG)]
    content += [text_block(text) for text in texts]
    content.append(text_block(CLOSE_TAG))
    return user_message(content, source=checkpoint_source(compaction_id, source_command_id))


def is_checkpoint_message(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is a compaction checkpoint (recognised by source kind and plugin)."""
    source = message.get("source")
    return (
        isinstance(source, Mapping)
        and source.get("kind") == "plugin"
        and source.get("plugin") == CHECKPOINT_PLUGIN
    )


def summary_text_of(message: Mapping[str, Any]) -> str:
    """The summary inside a checkpoint message (without preamble and tags); ``""`` if none."""
    content = message.get("content")
    if not isinstance(content, list | tuple):
        return ""
    texts = [
        block.get("text", "")
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
    joined = "".join(texts)
    start = joined.find(OPEN_TAG)
    end = joined.rfind(CLOSE_TAG)
    if start < 0 or end < start:
        return joined
    return joined[start + len(OPEN_TAG) : end].strip()
