"""The message model (FORMAT §3): typed, read-only views over message JSON.

A message in the log is JSON (``{id, role, content, source}``); the log is the
truth. ``Message``, the ``Block`` views and the ``Source`` views give typed access
to that JSON without copying it, so unknown block types, unknown source kinds and
unknown fields are preserved byte for byte. ``.raw`` is the underlying read-only
JSON. Builders (``user_message``, ``assistant_message``, ``tool_result_message``,
``text_block``, ...) make new message JSON for ``Session.append``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import msgspec

from harness.errors import InvalidMessage
from harness.events.json import FrozenDict, FrozenList, snapshot
from harness.messages.call_ids import require_call_id

__all__ = [
    "Block",
    "ImageBlock",
    "LlmFailure",
    "Message",
    "ModelSource",
    "PluginSource",
    "ReasoningBlock",
    "Source",
    "TextBlock",
    "TokenUsage",
    "ToolCallBlock",
    "ToolResultBlock",
    "ToolSource",
    "UnknownBlock",
    "UnknownSource",
    "UserSource",
    "assistant_message",
    "block_view",
    "check_sendable",
    "lone_surrogate",
    "new_message_id",
    "reasoning_block",
    "sendable",
    "source_view",
    "text_block",
    "tool_call_block",
    "tool_result_message",
    "user_message",
]

Role = Literal["system", "user", "assistant"]


_VARIANT_VERSION_MASK = ~(0xC000 << 48 | 0xF000 << 64)
_VARIANT_VERSION = 0x8000 << 48 | 4 << 76  # RFC 4122 variant, version 4


def _uuid4_text(raw: bytes) -> str:
    """``str(uuid.UUID(bytes=raw, version=4))`` without the ``UUID`` object (a third of its time)."""
    text = "%032x" % (int.from_bytes(raw, "big") & _VARIANT_VERSION_MASK | _VARIANT_VERSION)
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def new_message_id() -> str:
    """A fresh message id (UUID v4: ``str(uuid.uuid4())``)."""
    return _uuid4_text(os.urandom(16))


class _View:
    __slots__ = ("_raw",)
    _raw: Mapping[str, Any]

    def __init__(self, raw: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_raw", raw)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    @property
    def raw(self) -> Mapping[str, Any]:
        """The underlying read-only JSON."""
        return self._raw

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _View) and type(other) is type(self) and other.raw == self.raw

    def __hash__(self) -> int:
        return hash((type(self), self.raw.get("type") or self.raw.get("kind")))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.raw)!r})"


# ---- content blocks -------------------------------------------------------------------


class Block(_View):
    """A content block (open union on ``type``)."""

    __slots__ = ()

    @property
    def type(self) -> str:
        return str(self.raw.get("type", ""))


class TextBlock(Block):
    """``{type: "text", text}``."""

    __slots__ = ()

    @property
    def text(self) -> str:
        return str(self.raw.get("text", ""))


class ReasoningBlock(TextBlock):
    """``{type: "reasoning", text}``."""

    __slots__ = ()


class ImageBlock(Block):
    """``{type: "image", attachment: {attachmentId, mediaType, bytes, width, height, name?}}``."""

    __slots__ = ()

    @property
    def attachment(self) -> Mapping[str, Any]:
        value = self.raw.get("attachment")
        return value if isinstance(value, Mapping) else FrozenDict()


class ToolCallBlock(Block):
    """``{type: "tool-call", id, name, arguments}``; ``arguments`` is raw JSON text."""

    __slots__ = ()

    @property
    def id(self) -> str:
        return str(self.raw.get("id", ""))

    @property
    def name(self) -> str:
        return str(self.raw.get("name", ""))

    @property
    def arguments(self) -> str:
        return str(self.raw.get("arguments", ""))


class ToolResultBlock(Block):
    """``{type: "tool-result", toolCallId, content: Block[], isError?}``."""

    __slots__ = ()

    @property
    def tool_call_id(self) -> str:
        return str(self.raw.get("toolCallId", ""))

    @property
    def content(self) -> tuple[Block, ...]:
        return tuple(block_view(item) for item in self.raw.get("content") or ())

    @property
    def is_error(self) -> bool:
        return self.raw.get("isError") is True


class UnknownBlock(Block):
    """A block of a type this version does not know; kept as is."""

    __slots__ = ()


_BLOCKS: dict[str, type[Block]] = {
    "text": TextBlock,
    "reasoning": ReasoningBlock,
    "image": ImageBlock,
    "tool-call": ToolCallBlock,
    "tool-result": ToolResultBlock,
}


def block_view(raw: Mapping[str, Any]) -> Block:
    """The typed view of one block's JSON."""
    return _BLOCKS.get(raw.get("type"), UnknownBlock)(raw)  # type: ignore[arg-type]


# ---- sources ----------------------------------------------------------------------------


class Source(_View):
    """A message source (open union on ``kind``)."""

    __slots__ = ()

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind", ""))


class UserSource(Source):
    """``{kind: "user"}`` (hosts may add fields, which are kept)."""

    __slots__ = ()


class PluginSource(Source):
    """``{kind: "plugin", plugin, form?, ...}``."""

    __slots__ = ()

    @property
    def plugin(self) -> str:
        return str(self.raw.get("plugin", ""))

    @property
    def form(self) -> str | None:
        value = self.raw.get("form")
        return value if isinstance(value, str) else None


class ModelSource(Source):
    """``{kind: "model", provider, model, replayState?}``."""

    __slots__ = ()

    @property
    def provider(self) -> str:
        return str(self.raw.get("provider", ""))

    @property
    def model(self) -> str:
        return str(self.raw.get("model", ""))


class ToolSource(Source):
    """``{kind: "tool", callId}``."""

    __slots__ = ()

    @property
    def call_id(self) -> str:
        return str(self.raw.get("callId", ""))


class UnknownSource(Source):
    """A source of a kind this version does not know; kept as is."""

    __slots__ = ()


_SOURCES: dict[str, type[Source]] = {
    "user": UserSource,
    "plugin": PluginSource,
    "model": ModelSource,
    "tool": ToolSource,
}


def source_view(raw: Mapping[str, Any]) -> Source:
    """The typed view of one source's JSON."""
    return _SOURCES.get(raw.get("kind"), UnknownSource)(raw)  # type: ignore[arg-type]


# ---- messages ---------------------------------------------------------------------------


class Message(_View):
    """A read-only model message: ``{id, role, content, source}``."""

    __slots__ = ()

    @property
    def id(self) -> str:
        return str(self.raw.get("id", ""))

    @property
    def role(self) -> str:
        return str(self.raw.get("role", ""))

    @property
    def content(self) -> tuple[Block, ...]:
        return tuple(block_view(item) for item in self.raw.get("content") or ())

    @property
    def source(self) -> Source:
        value = self.raw.get("source")
        return source_view(value if isinstance(value, Mapping) else FrozenDict())

    @property
    def text(self) -> str:
        """The concatenated text of the text blocks."""
        return "".join(b.text for b in self.content if type(b) is TextBlock)

    def to_json(self) -> Mapping[str, Any]:
        return self.raw

    def __hash__(self) -> int:
        return hash(self.id)


# ---- usage and failures -----------------------------------------------------------------


class TokenUsage(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """Token counts of one response. Counts are disjoint: input excludes cache reads/writes."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    def to_json(self) -> FrozenDict:
        return FrozenDict(msgspec.to_builtins(self))

    @classmethod
    def from_json(cls, raw: Any) -> TokenUsage:
        return msgspec.convert(raw, cls)

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + (self.cache_read_tokens or 0)
            + (self.cache_write_tokens or 0)
        )


class LlmFailure(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """``{message, code, status?, providerRetryAfterMs?, requestId?}``."""

    message: str
    code: str
    status: int | None = None
    provider_retry_after_ms: int | None = None
    request_id: str | None = None

    def to_json(self) -> FrozenDict:
        return FrozenDict(msgspec.to_builtins(self))


# ---- text a model can be sent --------------------------------------------------------------

# A surrogate half that is not part of a high-low pair. Python strings hold these when bytes
# that are not UTF-8 were decoded with ``surrogateescape`` (argv, file names), or when JSON
# spelled one (JavaScript strings may hold them, so the log keeps them); UTF-8, and so every
# model request, cannot carry them.
_LONE_SURROGATE = re.compile(r"[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


def lone_surrogate(text: str) -> int | None:
    """The index of the first unpaired surrogate in ``text``; ``None`` when it is valid Unicode."""
    if text.isascii():
        return None
    found = _LONE_SURROGATE.search(text)
    return found.start() if found is not None else None


def _describe(text: str, index: int) -> str:
    code = ord(text[index])
    if 0xDC80 <= code <= 0xDCFF:  # how surrogateescape spells an undecodable byte
        return f"character {index} is the byte 0x{code - 0xDC00:02x}"
    return f"character {index} is an unpaired surrogate U+{code:04X}"


def _first_unsendable(value: Any, path: str) -> tuple[str, str] | None:
    if isinstance(value, str):
        index = lone_surrogate(value)
        return None if index is None else (path, _describe(value, index))
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = _first_unsendable(item, f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for position, item in enumerate(value):
            found = _first_unsendable(item, f"{path}[{position}]")
            if found is not None:
                return found
    return None


def check_sendable(value: Any, path: str = "text") -> None:
    """Raise ``InvalidMessage`` (naming the path) when a string in ``value`` cannot be sent
    to a model: it holds an unpaired surrogate, i.e. it was not valid UTF-8 text."""
    found = _first_unsendable(value, path)
    if found is not None:
        where, why = found
        message = f"{where} is not valid UTF-8 text ({why}): a model cannot be sent it"
        raise InvalidMessage(message, path=where)


def sendable(text: str) -> str:
    """``text`` as UTF-8 can carry it: surrogate pairs joined, each unpaired half replaced by
    U+FFFD (what a decoder that replaces errors would have made of the original bytes)."""
    if lone_surrogate(text) is None:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _LONE_SURROGATE.sub("\ufffd", joined)


# ---- builders ---------------------------------------------------------------------------


def text_block(text: str) -> FrozenDict:
    """A ``text`` block."""
    return FrozenDict(type="text", text=text)


def reasoning_block(text: str) -> FrozenDict:
    """A ``reasoning`` block (the model's thinking, as the provider returned it)."""
    return FrozenDict(type="reasoning", text=text)


def tool_call_block(call_id: str, name: str, arguments: str) -> FrozenDict:
    """A ``tool-call`` block. ``call_id`` must be a non-empty string (``InvalidEventData``)."""
    require_call_id(call_id)
    return FrozenDict(type="tool-call", id=call_id, name=name, arguments=arguments)


def _content(content: str | Iterable[Mapping[str, Any]]) -> FrozenList:
    if isinstance(content, str):
        return FrozenList([text_block(content)])
    return snapshot(list(content), "content")  # type: ignore[no-any-return]


def user_message(
    content: str | Iterable[Mapping[str, Any]],
    *,
    source: Mapping[str, Any] | None = None,
    id: str | None = None,
) -> FrozenDict:
    """A user message JSON (``source`` defaults to ``{kind: "user"}``).

    Raises ``InvalidMessage`` when the content holds text that is not valid UTF-8 (an
    unpaired surrogate): no model request could carry it.
    """
    blocks = _content(content)
    check_sendable(blocks, "content")
    return FrozenDict(
        content=blocks,
        source=snapshot(dict(source) if source is not None else {"kind": "user"}, "source"),
        role="user",
        id=id or new_message_id(),
    )


def assistant_message(
    content: str | Iterable[Mapping[str, Any]],
    *,
    provider: str,
    model: str,
    id: str | None = None,
) -> FrozenDict:
    """An assistant message JSON with a model source."""
    return FrozenDict(
        role="assistant",
        content=_content(content),
        source=FrozenDict(kind="model", provider=provider, model=model),
        id=id or new_message_id(),
    )


def tool_result_message(
    call_id: str,
    content: str | Iterable[Mapping[str, Any]],
    *,
    is_error: bool | None = None,
    id: str | None = None,
) -> FrozenDict:
    """A tool-result message JSON: one ``tool-result`` block answering ``call_id``
    (a non-empty string, else ``InvalidEventData``)."""
    require_call_id(call_id)
    block: dict[str, Any] = {"type": "tool-result", "toolCallId": call_id, "content": _content(content)}
    if is_error is not None:
        block["isError"] = is_error
    return FrozenDict(
        source=FrozenDict(kind="tool", callId=call_id),
        content=FrozenList([FrozenDict(block)]),
        role="user",
        id=id or new_message_id(),
    )
