"""How a pydantic-ai ``ModelMessage`` shows in a harness log: the message events that render it.

The rendering is a view for harness and dsh (``harness log``, ``harness surface``, dsh's
loader): a ``ModelRequest`` becomes ``user/message`` events (system prompts as plugin
``instructions``) and one ``tool/result`` per tool return; a ``ModelResponse`` becomes one
``assistant/message`` with its text, thinking and tool calls. Parts harness has no block for
(files, native tool calls, instruction deltas...) are left out of the view; the entry event
that precedes the rendering keeps the whole message (``entries.py``), and every read of the
store comes from there, so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from harness.events.json import MAX_SAFE_INTEGER

__all__ = ["Rendered", "next_position", "render_message"]

PROVIDER_FALLBACK = "pydantic-ai"
MODEL_FALLBACK = "unknown"

Rendered = tuple[str, dict[str, Any]]
"""One message event: its type and its data."""


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user_content(content: str | Sequence[Any]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [_text(content)]
    blocks: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, str):
            blocks.append(_text(item))
            continue
        # a file, an image, a cache point...: named in the view, kept whole in the entry
        kind = getattr(item, "kind", None) or type(item).__name__
        url = getattr(item, "url", None)
        blocks.append(_text(f"[{kind}: {url}]" if isinstance(url, str) else f"[{kind}]"))
    return blocks


def _usage(message: ModelResponse) -> dict[str, int] | None:
    usage = message.usage
    cache_read = usage.cache_read_tokens or 0
    cache_write = usage.cache_write_tokens or 0
    total_in = usage.input_tokens or 0
    output = usage.output_tokens or 0
    if not (total_in or output or cache_read or cache_write):
        return None
    if max(total_in, output, cache_read, cache_write) > MAX_SAFE_INTEGER:
        return None  # harness data holds safe integers only; the entry keeps the counts
    # harness counts are disjoint: input excludes the cache reads and writes (FORMAT §3)
    out = {"inputTokens": max(0, total_in - cache_read - cache_write), "outputTokens": output}
    if cache_read:
        out["cacheReadTokens"] = cache_read
    if cache_write:
        out["cacheWriteTokens"] = cache_write
    return out


def _request(entry_id: str, message: ModelRequest, turn: int, step: int) -> list[Rendered]:
    out: list[Rendered] = []
    pending: list[dict[str, Any]] = []

    def message_id() -> str:
        return f"{entry_id}/{len(out)}"

    def flush_user() -> None:
        if pending:
            out.append(
                (
                    "user/message",
                    {
                        "id": message_id(),
                        "role": "user",
                        "content": list(pending),
                        "source": {"kind": "user"},
                    },
                )
            )
            pending.clear()

    for part in message.parts:
        if isinstance(part, UserPromptPart):
            pending.extend(_user_content(part.content))
        elif isinstance(part, RetryFeedbackPart):
            pending.append(_text(part.model_response()))
        elif isinstance(part, SystemPromptPart):
            flush_user()
            source = {"kind": "plugin", "plugin": "pydantic-ai", "form": "instructions"}
            out.append(
                (
                    "user/message",
                    {"id": message_id(), "role": "user", "content": [_text(part.content)], "source": source},
                )
            )
        elif isinstance(part, ToolReturnPart) and not isinstance(part, NativeToolReturnPart):
            text = part.model_response_str()
            if not part.tool_call_id:  # harness needs a call id; keep the text as the user's
                pending.append(_text(text))
                continue
            flush_user()
            block = {
                "type": "tool-result",
                "toolCallId": part.tool_call_id,
                "content": [_text(text)],
                "isError": part.outcome != "success",
            }
            result = {
                "id": message_id(),
                "role": "user",
                "content": [block],
                "source": {"kind": "tool", "callId": part.tool_call_id},
            }
            out.append(("tool/result", {"turn": turn, "step": step, "message": result}))
    flush_user()
    return out


def _plain_call(part: object) -> bool:
    """A call of one of the agent's own tools with an id (harness cannot show one without)."""
    if not isinstance(part, ToolCallPart) or isinstance(part, NativeToolCallPart):
        return False
    return bool(part.tool_call_id)


def _response(entry_id: str, message: ModelResponse, turn: int, step: int) -> list[Rendered]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            blocks.append(_text(part.content))
        elif isinstance(part, ThinkingPart):
            blocks.append({"type": "reasoning", "text": part.content})
        elif _plain_call(part):
            assert isinstance(part, ToolCallPart)
            blocks.append(
                {
                    "type": "tool-call",
                    "id": part.tool_call_id,
                    "name": part.tool_name,
                    "arguments": part.args_as_json_str(),
                }
            )
    source = {
        "kind": "model",
        "provider": message.provider_name or PROVIDER_FALLBACK,
        "model": message.model_name or MODEL_FALLBACK,
    }
    data: dict[str, Any] = {
        "turn": turn,
        "step": step,
        "message": {"id": f"{entry_id}/0", "role": "assistant", "content": blocks, "source": source},
    }
    usage = _usage(message)
    if usage is not None:
        data["usage"] = usage
    return [("assistant/message", data)]


def next_position(message: ModelMessage, turn: int, step: int) -> tuple[int, int]:
    """The ``(turn, step)`` a message is shown at, after one shown at ``(turn, step)``: a request
    with a user prompt opens the next turn, each response is the next step of its turn."""
    if isinstance(message, ModelRequest):
        if any(isinstance(part, UserPromptPart) for part in message.parts):
            return turn + 1, 0
        return max(turn, 1), step
    return max(turn, 1), step + 1


def render_message(entry_id: str, message: ModelMessage, *, turn: int, step: int) -> list[Rendered]:
    """The message events that show ``message`` (stored as entry ``entry_id``) in a harness log."""
    if isinstance(message, ModelRequest):
        return _request(entry_id, message, max(turn, 1), step)
    return _response(entry_id, message, max(turn, 1), max(step, 1))
