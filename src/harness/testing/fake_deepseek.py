"""A local DeepSeek-compatible chat-completions server that plays a script.

``FakeDeepSeek`` listens on 127.0.0.1 on a free port, in a background thread with its own
event loop, so it works the same from synchronous code and from inside ``asyncio``::

    with FakeDeepSeek([Reply.text("hello"), Reply.error(429, retry_after=1)]) as server:
        provider = DeepSeekProvider(server.base_url, api_key="sk-test")
        ...
        assert server.requests[0].body["model"] == "deepseek-v4-flash"

Each ``POST /chat/completions`` takes the next ``Reply`` of the script (a callable taking the
``RecordedRequest`` may stand in for a reply and build one on the fly). Every request is
recorded with its headers and decoded JSON body. When the script runs out the server answers
``410`` (code ``HTTP_410`` on the provider side), which no provider retries.
``server.fail_next(429, times=2, retry_after=0.01)`` puts that many error answers in front of
the script (a rate limit or an overload that clears after N attempts). With
``api_key=...`` a request without the matching bearer token gets ``401`` and uses no reply.
``GET /models`` (the cheap authenticated call a resume makes to check the key) lists
``models`` (or answers ``401`` to a wrong key) without using the script; those requests are
kept in ``model_listings``, apart from ``requests``, which holds the chat requests.

Streams are DeepSeek-shaped: a first delta with an empty ``reasoning_content`` when the reply
reasons, reasoning and text split into several deltas, tool calls with their arguments spread
over deltas, ``finish_reason`` and ``usage`` on the last chunk, then ``data: [DONE]``. Replies
can also end by cutting the connection mid-stream or by hanging after the headers. Output is
deterministic: ids count up from ``chatcmpl-fake-1`` and ``created`` is fixed.

Only the standard library is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, TypeAlias

__all__ = ["FakeDeepSeek", "RecordedRequest", "Reply", "ScriptItem", "usage"]

CREATED = 1_700_000_000
"""The fixed ``created`` timestamp of every chunk."""

Ending: TypeAlias = Literal["done", "cut", "eof", "hang"]

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    402: "Payment Required",
    403: "Forbidden",
    404: "Not Found",
    410: "Gone",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}

_DEFAULT_MESSAGES = {
    400: "Invalid request",
    401: "Authentication Fails (the API key is invalid)",
    402: "Insufficient Balance",
    403: "Forbidden",
    413: "Request entity too large",
    429: "Rate limit reached for requests",
    500: "Internal server error",
    503: "Server overloaded, please try again later",
}


def usage(
    prompt_tokens: int,
    completion_tokens: int,
    *,
    cache_hit_tokens: int = 0,
    reasoning_tokens: int | None = None,
) -> dict[str, Any]:
    """A DeepSeek-shaped ``usage`` object (both cache-hit spellings, reasoning details)."""
    out: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cache_hit_tokens},
        "prompt_cache_hit_tokens": cache_hit_tokens,
        "prompt_cache_miss_tokens": prompt_tokens - cache_hit_tokens,
    }
    if reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return out


def _split(text: str | Sequence[str] | None, parts: int) -> list[str]:
    """``text`` as delta pieces: a given sequence as is, a string cut into ``parts`` pieces."""
    if text is None:
        return []
    if not isinstance(text, str):
        return [piece for piece in text if piece]
    if not text:
        return []
    size = max(1, math.ceil(len(text) / max(1, parts)))
    return [text[start : start + size] for start in range(0, len(text), size)]


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a stream (``status`` 200) or an HTTP error.

    ``events`` are the stream's chunks before ``[DONE]``: a mapping is a partial chunk
    (``delta``, ``finish_reason``, ``usage``) wrapped into a full chunk when sent, a string is
    sent verbatim as the event's data. ``ending`` is ``done`` (``[DONE]``), ``cut`` (the
    connection breaks off without it), ``eof`` (the body ends cleanly, still without it) or
    ``hang`` (nothing more is sent). Build replies with the class methods rather than by hand.
    """

    status: int = 200
    events: tuple[Mapping[str, Any] | str, ...] = ()
    ending: Ending = "done"
    error_body: Any = None
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    label: str = ""

    # ---- streams ------------------------------------------------------------------------

    @classmethod
    def text(
        cls,
        text: str | Sequence[str],
        *,
        reasoning: str | Sequence[str] | None = None,
        usage: Mapping[str, Any] | None = None,
        finish_reason: str = "stop",
        parts: int = 3,
        delay_s: float = 0.0,
    ) -> Reply:
        """A text answer split into ``parts`` deltas (or the given pieces), optionally after
        reasoning. ``Reply.text("")`` is a stream with no content at all."""
        events = _content_events(text, reasoning, parts)
        events.append(_last(finish_reason, usage))
        return cls(events=tuple(events), delay_s=delay_s, label=f"text {finish_reason}")

    @classmethod
    def reasoning(
        cls,
        reasoning: str | Sequence[str],
        text: str | Sequence[str],
        **kwargs: Any,
    ) -> Reply:
        """Reasoning, then a text answer (same options as ``Reply.text``)."""
        return cls.text(text, reasoning=reasoning, **kwargs)

    @classmethod
    def tool_calls(
        cls,
        calls: Sequence[tuple[str, str, str]],
        *,
        text: str | Sequence[str] | None = None,
        reasoning: str | Sequence[str] | None = None,
        usage: Mapping[str, Any] | None = None,
        parts: int = 2,
        interleave: bool = False,
        finish_reason: str = "tool_calls",
        delay_s: float = 0.0,
    ) -> Reply:
        """Parallel tool calls ``(id, name, arguments)``, each call's arguments spread over
        ``parts`` deltas; ``interleave`` alternates the calls' argument deltas."""
        events = _content_events(text, reasoning, parts=3) if text or reasoning else [_first(False)]
        starts: list[dict[str, Any]] = []
        pieces: list[list[dict[str, Any]]] = []
        for position, (call_id, name, arguments) in enumerate(calls):
            starts.append(
                {
                    "index": position,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            )
            pieces.append(
                [{"index": position, "function": {"arguments": piece}} for piece in _split(arguments, parts)]
            )
        if interleave:
            events.extend({"delta": {"tool_calls": [start]}} for start in starts)
            longest = max((len(p) for p in pieces), default=0)
            for step in range(longest):
                for call_pieces in pieces:
                    if step < len(call_pieces):
                        events.append({"delta": {"tool_calls": [call_pieces[step]]}})
        else:
            for start, call_pieces in zip(starts, pieces, strict=True):
                events.append({"delta": {"tool_calls": [start]}})
                events.extend({"delta": {"tool_calls": [piece]}} for piece in call_pieces)
        events.append(_last(finish_reason, usage))
        return cls(events=tuple(events), delay_s=delay_s, label=f"{len(calls)} tool call(s)")

    @classmethod
    def stream(
        cls,
        events: Iterable[Mapping[str, Any] | str],
        *,
        ending: Ending = "done",
        delay_s: float = 0.0,
    ) -> Reply:
        """A hand-written stream: partial chunks (``{"delta": ..., "finish_reason": ...,
        "usage": ...}``) or raw data strings, then ``ending``."""
        return cls(events=tuple(events), ending=ending, delay_s=delay_s, label=f"stream {ending}")

    @classmethod
    def cut(
        cls, text: str | Sequence[str] = "partial ans", *, reasoning: str | Sequence[str] | None = None
    ) -> Reply:
        """Some deltas, then the connection closes without ``finish_reason`` or ``[DONE]``."""
        return cls(events=tuple(_content_events(text, reasoning, 3)), ending="cut", label="cut")

    @classmethod
    def hang(cls, text: str | Sequence[str] | None = None) -> Reply:
        """The response headers (and the deltas of ``text``, if given), then nothing at all."""
        events = _content_events(text, None, 3) if text else []
        return cls(events=tuple(events), ending="hang", label="hang")

    @classmethod
    def malformed(cls, data: str = '{"choices": [') -> Reply:
        """A stream whose first event is not valid JSON."""
        return cls(events=(data,), label="malformed")

    # ---- errors -------------------------------------------------------------------------

    @classmethod
    def error(
        cls,
        status: int,
        message: str | None = None,
        *,
        retry_after: float | str | None = None,
        headers: Mapping[str, str] | None = None,
        error_type: str | None = None,
    ) -> Reply:
        """An HTTP error with an OpenAI-style body ``{"error": {message, type, param, code}}``."""
        text = message if message is not None else _DEFAULT_MESSAGES.get(status, f"error {status}")
        kind = error_type or ("invalid_request_error" if status < 500 else "server_error")
        extra = dict(headers or {})
        if retry_after is not None:
            extra["Retry-After"] = str(retry_after)
        body = {"error": {"message": text, "type": kind, "param": None, "code": kind}}
        return cls(status=status, error_body=body, headers=tuple(extra.items()), label=f"error {status}")

    @classmethod
    def context_overflow(cls, requested: int = 1_200_000, window: int = 1_000_000) -> Reply:
        """A 400 whose message says the context length was exceeded."""
        return cls.error(
            400,
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{requested} tokens. Please reduce the length of the messages.",
        )


def _first(reasoning: bool) -> dict[str, Any]:
    delta: dict[str, Any] = {"role": "assistant", "content": None if reasoning else ""}
    if reasoning:
        delta["reasoning_content"] = ""
    return {"delta": delta}


def _content_events(
    text: str | Sequence[str] | None, reasoning: str | Sequence[str] | None, parts: int
) -> list[Mapping[str, Any] | str]:
    events: list[Mapping[str, Any] | str] = [_first(reasoning is not None)]
    events.extend(
        {"delta": {"content": None, "reasoning_content": piece}} for piece in _split(reasoning, parts)
    )
    events.extend({"delta": {"content": piece, "reasoning_content": None}} for piece in _split(text, parts))
    return events


def _last(finish_reason: str, usage: Mapping[str, Any] | None) -> dict[str, Any]:
    event: dict[str, Any] = {"delta": {"content": ""}, "finish_reason": finish_reason}
    if usage is not None:
        event["usage"] = dict(usage)
    return event


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received: headers (lower-cased names) and decoded JSON body."""

    method: str
    path: str
    headers: Mapping[str, str]
    raw_body: bytes
    body: Any = field(default=None)

    def header(self, name: str) -> str | None:
        """A header's value by case-insensitive name."""
        return self.headers.get(name.lower())

    @property
    def messages(self) -> list[Any]:
        """The ``messages`` array of the body (empty when there is none)."""
        value = self.body.get("messages") if isinstance(self.body, dict) else None
        return value if isinstance(value, list) else []


ScriptItem: TypeAlias = Reply | Callable[[RecordedRequest], Reply]
"""A script entry: a reply, or a function building one from the request it answers."""


class _BadRequest(Exception):
    pass


class FakeDeepSeek:
    """A scripted DeepSeek-compatible server on 127.0.0.1 (see the module doc)."""

    def __init__(
        self,
        replies: Iterable[ScriptItem] = (),
        *,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Sequence[str] = ("deepseek-v4-flash", "deepseek-v4-pro"),
    ) -> None:
        self._script: deque[ScriptItem] = deque(replies)
        self._models = tuple(models)
        self._listings: list[RecordedRequest] = []
        self._api_key = api_key
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._served = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        state = f"port={self._port}" if self._thread is not None else "stopped"
        return f"FakeDeepSeek({state}, pending={self.pending}, requests={len(self._requests)})"

    # ---- the script ---------------------------------------------------------------------

    def add(self, *replies: ScriptItem) -> FakeDeepSeek:
        """Append replies to the script; returns the server for chaining."""
        with self._lock:
            self._script.extend(replies)
        return self

    def fail_next(
        self,
        status: int,
        times: int = 1,
        *,
        retry_after: float | str | None = None,
        message: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> FakeDeepSeek:
        """Answer the next ``times`` requests with HTTP ``status`` (e.g. 429 or 503, with a
        ``Retry-After`` of ``retry_after`` seconds) before the rest of the script."""
        if times < 0:
            raise ValueError("times must be zero or more")
        reply = Reply.error(status, message, retry_after=retry_after, headers=headers)
        with self._lock:
            self._script.extendleft([reply] * times)
        return self

    @property
    def pending(self) -> int:
        """How many scripted replies are still unused."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def model_listings(self) -> list[RecordedRequest]:
        """Every ``GET /models`` received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._listings)

    @property
    def last_request(self) -> RecordedRequest:
        """The most recent request; raises ``LookupError`` when there is none."""
        with self._lock:
            if not self._requests:
                raise LookupError("the fake server has received no request")
            return self._requests[-1]

    async def wait_for_requests(self, count: int, timeout_s: float = 5.0) -> list[RecordedRequest]:
        """Wait (without blocking the event loop) until ``count`` requests have arrived."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while len(self._requests) < count:
            if loop.time() > deadline:
                raise TimeoutError(f"the fake server got {len(self._requests)} of {count} requests")
            await asyncio.sleep(0.005)
        return self.requests

    # ---- lifecycle ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (known once started)."""
        return self._port

    @property
    def base_url(self) -> str:
        """The URL to give a client, e.g. ``http://127.0.0.1:54321``."""
        if self._thread is None:
            raise RuntimeError("the fake server is not running; use it as a context manager or call start()")
        return f"http://{self._host}:{self._port}"

    def start(self) -> FakeDeepSeek:
        """Start serving in a background thread; returns once the port is bound."""
        if self._thread is not None:
            return self
        self._ready.clear()
        thread = threading.Thread(target=self._run, name="fake-deepseek", daemon=True)
        self._thread = thread
        thread.start()
        self._ready.wait()
        if self._failure is not None:
            self._thread = None
            thread.join()
            raise RuntimeError("the fake server could not start") from self._failure
        return self

    def stop(self) -> None:
        """Stop serving: open connections are closed and the thread is joined."""
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None:
            return
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop may already be gone
                loop.call_soon_threadsafe(stopping.set)
        thread.join()
        self._thread = None

    def __enter__(self) -> FakeDeepSeek:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> FakeDeepSeek:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported to start(); the thread must not die silently
            self._failure = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        server = await asyncio.start_server(self._connection, self._host, self._port)
        self._port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await server.wait_closed()

    # ---- HTTP ---------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    break
                if not await self._answer(request, reader, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, _BadRequest):
            pass
        except asyncio.CancelledError:
            pass  # the server is stopping
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _read_request(self, reader: asyncio.StreamReader) -> RecordedRequest | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) < 2:
            raise _BadRequest(lines[0])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            raw = await _read_chunked(reader)
        else:
            raw = await reader.readexactly(int(headers.get("content-length", "0") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        return RecordedRequest(method=parts[0], path=parts[1], headers=headers, raw_body=raw, body=body)

    def _next(self, request: RecordedRequest) -> tuple[Reply, int]:
        with self._lock:
            self._requests.append(request)
            if request.method != "POST" or not request.path.split("?")[0].endswith("/chat/completions"):
                return Reply.error(404, f"no route for {request.method} {request.path}"), 0
            if self._api_key is not None and request.header("authorization") != f"Bearer {self._api_key}":
                return Reply.error(401), 0
            if not self._script:
                return Reply.error(410, "fake-deepseek: the script has no reply left"), 0
            item = self._script.popleft()
            self._served += 1
            served = self._served
        reply = item if isinstance(item, Reply) else item(request)
        return reply, served

    async def _answer(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Send one reply; ``True`` when the connection stays usable."""
        if request.method == "GET" and request.path.split("?")[0].endswith("/models"):
            return await self._list_models(request, writer)
        reply, served = self._next(request)
        request_id = f"fake-req-{len(self._requests)}"
        if reply.status != 200:
            payload = json.dumps(reply.error_body).encode()
            extra = (*reply.headers, ("x-request-id", request_id))
            writer.write(_head(reply.status, "application/json", extra, length=len(payload)) + payload)
            await writer.drain()
            return True
        writer.write(_head(200, "text/event-stream", (*reply.headers, ("x-request-id", request_id))))
        await writer.drain()
        model = request.body.get("model", "deepseek-v4-flash") if isinstance(request.body, dict) else ""
        for event in reply.events:
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            data = event if isinstance(event, str) else json.dumps(_chunk(event, served, str(model)))
            await _send_chunk(writer, f"data: {data}\n\n".encode())
        if reply.ending == "cut":
            # A graceful close (buffered bytes are still delivered) without the last chunk of
            # the chunked body: the client has the deltas, then an incomplete body.
            writer.close()
            await writer.wait_closed()
            return False
        if reply.ending == "eof":
            await _send_chunk(writer, b"")
            return True
        if reply.ending == "hang":
            while await reader.read(4096):  # until the client gives up and closes
                pass
            return False
        await _send_chunk(writer, b"data: [DONE]\n\n")
        await _send_chunk(writer, b"")
        return True


    async def _list_models(self, request: RecordedRequest, writer: asyncio.StreamWriter) -> bool:
        with self._lock:
            self._listings.append(request)
        if self._api_key is not None and request.header("authorization") != f"Bearer {self._api_key}":
            status, body = 401, Reply.error(401).error_body
        else:
            data = [{"id": model, "object": "model", "owned_by": "fake-deepseek"} for model in self._models]
            status, body = 200, {"object": "list", "data": data}
        payload = json.dumps(body).encode()
        writer.write(_head(status, "application/json", (), length=len(payload)) + payload)
        await writer.drain()
        return True


def _chunk(event: Mapping[str, Any], served: int, model: str) -> dict[str, Any]:
    choices: list[dict[str, Any]] = []
    if "delta" in event or "finish_reason" in event:
        choices.append(
            {
                "index": 0,
                "delta": dict(event.get("delta") or {}),
                "logprobs": None,
                "finish_reason": event.get("finish_reason"),
            }
        )
    out: dict[str, Any] = {
        "id": f"chatcmpl-fake-{served}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": choices,
    }
    if event.get("usage") is not None:
        out["usage"] = event["usage"]
    return out


def _head(
    status: int, content_type: str, headers: Iterable[tuple[str, str]], *, length: int | None = None
) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", f"Content-Type: {content_type}"]
    if length is None:
        lines += ["Transfer-Encoding: chunked", "Cache-Control: no-cache"]
    else:
        lines.append(f"Content-Length: {length}")
    lines.append("Connection: keep-alive")
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _send_chunk(writer: asyncio.StreamWriter, payload: bytes) -> None:
    writer.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
    await writer.drain()


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    out = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return bytes(out)
        out += await reader.readexactly(size)
        await reader.readexactly(2)
