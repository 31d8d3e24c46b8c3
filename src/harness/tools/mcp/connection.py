"""One connection to one MCP server, through the official ``mcp`` SDK (the ``[mcp]`` extra).

The SDK's client lives in a task of its own (``_own``) for the whole connection. Its
transports run task groups: when a server dies, the HTTP transport's group fails and
cancels the task that entered it. Entered in the agent's task, that would cancel the turn;
here it ends only the owner task, and every waiting or later call sees the connection gone
and fails with a typed ``ToolError`` (``MCP_SERVER_GONE``) at once. A call also ends on
its timeout (``MCP_TIMEOUT``) or on the turn's cancel (``CANCELLED``): a turn never hangs
on a server. A stdio server's stderr goes to a temporary file, whose last lines explain a
failed start. Every text that leaves this module has the configuration's secrets scrubbed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO, cast

from harness.errors import McpConnectError
from harness.tools.base import ToolError
from harness.tools.mcp.config import McpServerConfig

__all__ = ["McpConnection"]

logger = logging.getLogger("harness.tools.mcp")

_STDERR_TAIL = 1500
_MAX_PAGES = 100


def _describe(error: BaseException) -> str:
    """One line for an exception, the first leaf of an exception group."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}" if type(error).__name__ not in text else text


class McpConnection:
    """A live connection to the server ``config`` names (see the module doc); ``cwd`` is
    where a stdio server starts when its configuration gives no ``cwd``."""

    def __init__(self, config: McpServerConfig, *, cwd: Path | None = None) -> None:
        self.config = config
        self._cwd = cwd
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._errlog: TextIO | None = None
        self._failure: str | None = None

    # ---- lifecycle ----------------------------------------------------------------------

    async def connect(self) -> None:
        """Start or reach the server and finish the handshake within the connect timeout;
        ``McpConnectError`` (secrets scrubbed) when that fails."""
        ready: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._owner = asyncio.create_task(self._own(ready), name=f"mcp-{self.config.name}")
        try:
            failure = await asyncio.wait_for(asyncio.shield(ready), self.config.connect_timeout_s)
        except TimeoutError:
            failure = f"no answer within {self.config.connect_timeout_s:g} s"
        except BaseException:
            await self.aclose()
            raise
        if failure is not None:
            message = self._why(failure)
            await self.aclose()
            raise McpConnectError(message)

    def _why(self, reason: str) -> str:
        text = f"MCP server {self.config.name!r} ({self.config.endpoint}): {reason}"
        tail = self._stderr_tail()
        if tail:
            text += f"\n--- its stderr (last lines) ---\n{tail}"
        return self.config.scrub(text)

    def _stderr_tail(self) -> str:
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            return self._errlog.read()[-_STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""

    async def _own(self, ready: asyncio.Future[str | None]) -> None:
        from mcp import Client

        try:
            async with contextlib.AsyncExitStack() as stack:
                client = Client(self._transport(stack), cache=None, mode="auto")
                self._client = await stack.enter_async_context(client)
                if not ready.done():
                    ready.set_result(None)
                await self._closing.wait()
        except BaseException as error:
            self._failure = self.config.scrub(_describe(error))
            if not ready.done():
                ready.set_result(_describe(error))
            elif not isinstance(error, asyncio.CancelledError) or not self._closing.is_set():
                logger.warning("MCP server %s: the connection ended: %s", self.config.name, self._failure)
        finally:
            self._client = None

    def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        config = self.config
        if config.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            # closed by aclose, not by the stack: a failed start's stderr is read after the stack ends
            if self._errlog is None:
                errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
                self._errlog = cast(TextIO, errlog)
            params = StdioServerParameters(
                command=config.command or "",
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd or (str(self._cwd) if self._cwd is not None else None),
            )
            return stdio_client(params, errlog=self._errlog)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(headers=dict(config.headers) or None)
        stack.push_async_callback(http.aclose)
        return streamable_http_client(config.url or "", http_client=http)

    async def aclose(self) -> None:
        """End the connection (a stdio server is stopped); safe to call twice."""
        self._closing.set()
        owner, self._owner = self._owner, None
        try:
            if owner is not None:
                await self._stop(owner)
        finally:
            errlog, self._errlog = self._errlog, None
            if errlog is not None:
                errlog.close()

    async def _stop(self, owner: asyncio.Task[None]) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(owner), 10)
        except (TimeoutError, Exception):
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
        except asyncio.CancelledError:
            owner.cancel()
            raise

    # ---- state --------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """True while the server is connected."""
        return self._client is not None and self._owner is not None and not self._owner.done()

    @property
    def server_info(self) -> tuple[str | None, str | None]:
        """(name, version) as the server reported them."""
        info = self._client.server_info if self._client is not None else None
        return (info.name, info.version) if info is not None else (None, None)

    @property
    def protocol_version(self) -> str | None:
        """The protocol version the handshake settled on."""
        return str(self._client.protocol_version) if self._client is not None else None

    # ---- requests -----------------------------------------------------------------------

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server lists (all pages), as JSON objects with the wire's names."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await self._request(
                lambda c=cursor: self._client.list_tools(cursor=c), self.config.connect_timeout_s, None
            )
            tools += [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], cancel: asyncio.Event | None = None
    ) -> dict[str, Any]:
        """The ``CallToolResult`` of ``name`` as JSON; ``ToolError`` when the server is gone,
        does not answer within the call timeout, refuses the request, or the turn is cancelled."""
        result = await self._request(
            lambda: self._client.call_tool(name, dict(arguments), read_timeout_seconds=None),
            self.config.call_timeout_s,
            cancel,
        )
        data: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return data

    async def _request(self, make: Any, timeout: float, cancel: asyncio.Event | None) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp_types.jsonrpc import CONNECTION_CLOSED

        server = self.config.name
        if not self.alive or self._owner is None:
            raise ToolError("MCP_SERVER_GONE", self._gone())
        owner = self._owner
        request = asyncio.ensure_future(make())
        waits: set[asyncio.Future[Any]] = {request, owner}
        cancelled = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        if cancelled is not None:
            waits.add(cancelled)
        try:
            done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if cancelled is not None:
                cancelled.cancel()
            if not request.done():
                request.cancel()
                with contextlib.suppress(BaseException):
                    await request
        if request in done and not request.cancelled():
            error = request.exception()
            if error is None:
                return request.result()
            if isinstance(error, MCPError) and error.code != CONNECTION_CLOSED:
                text = self.config.scrub(f"MCP server {server!r} refused the request: {error.message}")
                raise ToolError("MCP_ERROR", text)
            if self.alive and not isinstance(error, MCPError | OSError):
                raise ToolError("MCP_ERROR", self.config.scrub(f"MCP server {server!r}: {_describe(error)}"))
            self._failure = self._failure or self.config.scrub(_describe(error))
            raise ToolError("MCP_SERVER_GONE", self._gone())
        if owner in done or not self.alive:
            raise ToolError("MCP_SERVER_GONE", self._gone())
        if cancelled is not None and cancelled in done:
            raise ToolError(
                "CANCELLED",
                f"Cancelled while waiting for MCP server {server!r}; the call may still run there.",
            )
        raise ToolError(
            "MCP_TIMEOUT",
            f"MCP server {server!r} did not answer within {timeout:g} s; the call may still be running "
            "there, so its outcome is unknown.",
        )

    def _gone(self) -> str:
        why = f" ({self._failure})" if self._failure else ""
        return (
            f"MCP server {self.config.name!r} is not connected: the connection ended{why}. Its tools fail "
            "until harness connects again (harness resume reconnects)."
        )
