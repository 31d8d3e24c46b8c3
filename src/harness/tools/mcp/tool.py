"""``McpTool``: one tool of an MCP server, offered to the model like a built-in.

Its spec is the server's name for it namespaced (``mcp__<server>__<tool>``), the server's
description and its input schema. A tool whose annotations say ``readOnlyHint: true`` does
not change the world (it runs without approval, beside other read-only calls); any other
tool does, so under policy ``ask`` the user is asked first, as for ``write_file``.

A result becomes the text the model reads: text blocks as they are; an image or audio
block as a line naming its type, size and hash (the model's API takes no images in a tool
result); a resource link or an embedded resource by its URI (an embedded text resource with
its text); structured content as JSON when the result has no text. ``meta`` records what
came back (``{"mcp": {"server", "tool", "content": [...], "structuredContent"?}}``; binary
data only by size and SHA-256). A result the server marks ``isError`` is a ``ToolError``
``MCP_TOOL_ERROR`` with the same text and meta. Secrets of the server's configuration are
scrubbed from all of it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from harness.tools.base import ToolContext, ToolError, ToolOutcome, ToolSpec
from harness.tools.mcp.connection import McpConnection

__all__ = ["MAX_RESULT_CHARS", "McpTool", "result_outcome"]

MAX_RESULT_CHARS: Final = 100_000
"""Longer result text is cut (its head and tail are kept)."""


class McpTool:
    """A ``Tool`` calling ``definition`` (a ``tools/list`` entry) on ``connection`` under the
    name ``exposed``."""

    def __init__(self, connection: McpConnection, definition: Mapping[str, Any], exposed: str) -> None:
        self.connection = connection
        self.server = connection.config.name
        self.tool = str(definition["name"])
        annotations = definition.get("annotations")
        self.read_only = isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True
        schema = definition.get("inputSchema")
        parameters = dict(schema) if isinstance(schema, Mapping) else {}
        parameters.setdefault("type", "object")
        description = str(definition.get("description") or definition.get("title") or "").strip()
        self._spec = ToolSpec(
            name=exposed,
            description=f"[MCP server {self.server}] {description or self.tool}",
            parameters=parameters,
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def changes_world(self) -> bool:
        """False only when the server annotates the tool ``readOnlyHint: true``."""
        return not self.read_only

    @property
    def exclusive(self) -> bool:
        return not self.read_only

    def __repr__(self) -> str:
        return f"McpTool({self._spec.name!r}, server={self.server!r}, tool={self.tool!r})"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        result = await self.connection.call_tool(self.tool, arguments, context.cancel)
        outcome = result_outcome(self.server, self.tool, result, scrub=self.connection.config.scrub)
        if outcome.is_error:
            raise ToolError("MCP_TOOL_ERROR", outcome.text, meta=outcome.meta)
        return outcome


def _binary(block: Mapping[str, Any], key: str) -> tuple[int, str]:
    raw = block.get(key)
    try:
        data = base64.b64decode(raw, validate=True) if isinstance(raw, str) else b""
    except (binascii.Error, ValueError):
        data = raw.encode() if isinstance(raw, str) else b""
    return len(data), hashlib.sha256(data).hexdigest()


def _block(block: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(text for the model, its record in meta) of one content block."""
    kind = str(block.get("type"))
    if kind == "text":
        text = str(block.get("text", ""))
        return text, {"type": "text", "chars": len(text)}
    if kind in ("image", "audio"):
        size, digest = _binary(block, "data")
        mime = str(block.get("mimeType", "application/octet-stream"))
        line = f"[{kind}: {mime}, {size} bytes, sha256 {digest[:16]}; not shown to the model]"
        return line, {"type": kind, "mimeType": mime, "bytes": size, "sha256": digest}
    if kind == "resource_link":
        uri = str(block.get("uri", ""))
        return f"[resource link: {uri}]", {"type": kind, "uri": uri}
    if kind == "resource":
        resource = block.get("resource")
        resource = resource if isinstance(resource, Mapping) else {}
        uri = str(resource.get("uri", ""))
        if isinstance(resource.get("text"), str):
            text = resource["text"]
            return f"[resource {uri}]\n{text}", {"type": kind, "uri": uri, "chars": len(text)}
        size, digest = _binary(resource, "blob")
        mime = str(resource.get("mimeType", "application/octet-stream"))
        line = f"[resource {uri}: {mime}, {size} bytes]"
        return line, {"type": kind, "uri": uri, "mimeType": mime, "bytes": size, "sha256": digest}
    return f"[{kind} content]", {"type": kind}


def _cut(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    half = MAX_RESULT_CHARS // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} characters cut …]\n{text[-half:]}"


def _same(text: str) -> str:
    return text


def result_outcome(
    server: str, tool: str, result: Mapping[str, Any], *, scrub: Callable[[str], str] = _same
) -> ToolOutcome:
    """The ``ToolOutcome`` of a ``CallToolResult`` (as JSON; see the module doc). ``scrub`` is
    applied to everything the outcome holds."""
    clean = scrub
    texts: list[str] = []
    records: list[dict[str, Any]] = []
    content = result.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping):
            text, record = _block(block)
            if text is not None:
                texts.append(text)
            records.append(record)
    mcp: dict[str, Any] = {"server": server, "tool": tool, "content": records}
    structured = result.get("structuredContent")
    if structured is not None:
        encoded = clean(json.dumps(structured, ensure_ascii=False, sort_keys=True))
        try:
            mcp["structuredContent"] = json.loads(encoded)
        except ValueError:  # a scrubbed secret broke an escape: keep the scrubbed text
            mcp["structuredContent"] = encoded
        if not any(record["type"] == "text" for record in records):
            texts.append(encoded)
    text = clean(_cut("\n".join(texts))) or "(no content)"
    return ToolOutcome(text, is_error=result.get("isError") is True, meta={"mcp": mcp})
