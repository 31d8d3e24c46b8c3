"""Exports of a session's model-visible history: Markdown for people, chat messages for tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.messages.model import Message
from harness.session.request import fold_request_header
from harness.session.session import Session

__all__ = ["to_markdown", "to_openai"]


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}\n{fence}"


def _block_markdown(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "reasoning":
        lines = str(block.get("text", "")).splitlines() or [""]
        return "\n".join(f"> {line}" for line in lines)
    if kind == "tool-call":
        title = f"**call `{block.get('name')}`** (`{block.get('id')}`)"
        return title + "\n\n" + _fence(str(block.get("arguments")))
    if kind == "tool-result":
        parts = [
            _block_markdown(part) for part in block.get("content", ()) if isinstance(part, Mapping)
        ]
        label = "error" if block.get("isError") is True else "result"
        return f"**{label}** (`{block.get('toolCallId')}`)\n\n" + _fence("\n".join(parts))
    if kind == "image":
        return "*(an image)*"
    return f"*(a {kind} block)*"


def _title(message: Message) -> str:
    source = message.raw.get("source")
    kind = source.get("kind") if isinstance(source, Mapping) else None
    if message.role == "assistant":
        model = source.get("model") if isinstance(source, Mapping) else None
        return f"assistant ({model})" if model else "assistant"
    if kind == "tool":
        return "tool"
    if kind == "plugin":
        return f"user ({source.get('plugin')})" if isinstance(source, Mapping) else "user"
    return "user"


def to_markdown(session: Session) -> str:
    """The derived messages as Markdown, one section per message."""
    header = fold_request_header(session.events)
    out = [f"# Session {session.id}\n"]
    if header is not None:
        out.append(f"Model: {header.provider} / {header.model}\n")
        if header.system:
            out.append("## system\n\n" + header.system + "\n")
    for message in session.derive_messages():
        blocks = [_block_markdown(b) for b in message.raw.get("content", ()) if isinstance(b, Mapping)]
        out.append(f"## {_title(message)}\n\n" + "\n\n".join(blocks) + "\n")
    return "\n".join(out)


def to_openai(session: Session) -> dict[str, Any]:
    """The request body a provider would send now (OpenAI chat-completions shape), without
    sampling settings: ``{"model", "messages", "tools"?}``."""
    from harness.providers.deepseek import export_messages

    return export_messages(session)
