"""The DeepSeek adapter (FORMAT §12) and its OpenAI-compatible sibling.

``DeepSeekProvider`` streams chat completions through the official ``openai`` client
(``openai.AsyncOpenAI``). The request body comes from ``serialize``, the stream is decoded by
``sse`` and translated by ``translate``, failures are classified by ``failures`` and retried
under ``retry``. The API key is handed to the client and kept nowhere else: it is never logged,
never put in a chunk or a failure message, and never shown by ``repr``.

``OpenAICompatibleProvider`` is the same adapter for any endpoint that speaks chat completions:
base URL + model name, a route of your choosing, and no DeepSeek-only body fields.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import aclosing
from importlib import metadata
from typing import Any, TypeVar
from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI, AsyncStream
from openai.types.chat import ChatCompletionChunk

from harness.errors import ProviderConfigError
from harness.events.json import loads, thaw
from harness.messages.model import LlmFailure
from harness.messages.request import EpochHeader, GenerateOptions
from harness.messages.stream import Finish, FinishAborted, FinishError, StreamChunk
from harness.providers.credentials import CredentialCheck
from harness.providers.failures import classify_status, error_message, scrub
from harness.providers.retry import RetryPolicy
from harness.providers.serialize import RequestRefused, build_body, serialize_messages, serialize_tools
from harness.providers.sse import SseDecoder
from harness.providers.translate import MalformedStream, StreamReportedError, StreamTranslator
from harness.session.request import fold_request_header
from harness.session.session import Session

__all__ = [
    "DEEPSEEK_MODELS",
    "DEEPSEEK_ROUTE",
    "DeepSeekProvider",
    "OpenAICompatibleProvider",
    "ProviderConfigError",
    "export_messages",
]

log = logging.getLogger(__name__)

DEEPSEEK_ROUTE = "deepseek-official"
DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEEPSEEK_MODELS: Mapping[str, int] = {"deepseek-v4-flash": 1_000_000, "deepseek-v4-pro": 1_000_000}
"""Known DeepSeek models and their context windows (tokens)."""
DEFAULT_CONTEXT_WINDOW = 1_000_000
DEFAULT_MAX_TOKENS = 256_000
DEFAULT_EFFORT = "high"

_T = TypeVar("_T")


_DISTRIBUTION = "harness-sessions"  # the name it is installed under; the import name is harness


def _user_agent() -> str:
    try:
        version = metadata.version(_DISTRIBUTION)
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        version = "0"
    return f"deepseek-harness-py/{version}"


def _checked_base_url(url: str, name: str) -> str:
    """``url`` if it is an absolute http(s) URL, else ``ProviderConfigError`` naming ``name``.

    The value itself is not echoed: a mistyped variable may hold the API key."""
    try:
        parts = urlsplit(url.strip())
        _ = parts.port  # a port that is not a number raises ValueError
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ProviderConfigError(f"{name} is not an http:// or https:// URL with a host")
    return url.strip()


def _shown(url: Any) -> str:
    """An ``httpx.URL`` as ``scheme://host[:port]/path``: no userinfo, no query (it may be shown)."""
    try:
        netloc = url.netloc  # httpx's netloc leaves the userinfo out
        host = netloc.decode("ascii", "replace") if isinstance(netloc, bytes) else str(netloc)
        return f"{url.scheme}://{host}{url.path}"
    except Exception:  # classifying a failure must not fail; the URL is a courtesy
        return "the provider's endpoint"


class _Aborted:
    """Marker: the cancel event was set."""


class _TimedOut:
    """Marker: nothing arrived within the idle timeout."""


_ABORTED = _Aborted()
_TIMED_OUT = _TimedOut()


async def _race(
    work: Awaitable[_T], cancel: asyncio.Event | None, timeout_s: float
) -> _T | _Aborted | _TimedOut:
    """Run ``work`` until it finishes, ``cancel`` is set, or ``timeout_s`` passes.

    The work's own exception propagates; on cancel or timeout the work is cancelled first.
    """
    if cancel is not None and cancel.is_set():
        if inspect.iscoroutine(work):
            work.close()
        return _ABORTED
    task: asyncio.Task[_T] = asyncio.ensure_future(work)
    waiter: asyncio.Task[bool] | None = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    pending = {task} if waiter is None else {task, waiter}
    try:
        done, _ = await asyncio.wait(pending, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if waiter is not None and not waiter.done():
            waiter.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task in done or (task.done() and not task.cancelled() and task.exception() is None):
        return task.result()  # finished, possibly just as the cancel or timeout came in
    return _ABORTED if waiter is not None and waiter in done else _TIMED_OUT


def _aborted() -> Finish:
    return Finish(FinishAborted(LlmFailure(message="the request was cancelled", code="ABORTED")))


def _error(code: str, message: str) -> Finish:
    return Finish(FinishError(LlmFailure(message=message, code=code)))


class DeepSeekProvider:
    """A ``Provider`` for DeepSeek's chat-completions API (or one that speaks it).

    ``base_url``: the argument, else ``$DEEPSEEK_BASE_URL``, else ``https://api.deepseek.com``.
    ``api_key``: the argument, else ``$DEEPSEEK_API_KEY``. ``client``: an ``openai.AsyncOpenAI``
    to use instead of building one (``base_url`` and ``api_key`` are then ignored).
    ``model_windows`` adds or overrides context windows. ``max_retries`` retries of
    ``RATE_LIMIT``/``SERVER``/``TRANSPORT`` with backoff; ``idle_timeout_s`` is the longest wait
    for the response or for the next line of its stream. ``user_id`` is sent as
    ``x-deepseek-harness-user-id``. ``sleep`` and ``rng`` replace ``asyncio.sleep`` and the
    jitter source (tests). ``reasoning=False`` is a deployment without thinking: only effort
    ``off`` is accepted and no ``thinking`` / ``reasoning_effort`` field is sent.

    It is a ``RetryingProvider``: ``stream(..., retry=False)`` makes one attempt and leaves
    the retries under ``retry_policy`` to the caller (the agent loop, which records them).
    """

    api_key_env = "DEEPSEEK_API_KEY"
    base_url_env = "DEEPSEEK_BASE_URL"
    default_base_url = DEEPSEEK_BASE_URL

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        model_windows: Mapping[str, int] | None = None,
        max_retries: int = 3,
        idle_timeout_s: float = 300,
        user_id: str | None = None,
        client: AsyncOpenAI | None = None,
        route: str = DEEPSEEK_ROUTE,
        default_context_window: int | None = DEFAULT_CONTEXT_WINDOW,
        default_max_tokens: int | None = DEFAULT_MAX_TOKENS,
        reasoning: bool = True,
        retry_policy: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if idle_timeout_s <= 0:
            raise ProviderConfigError("idle_timeout_s must be positive")
        self._route = route
        self._windows = dict(self._known_windows())
        self._windows.update(model_windows or {})
        self._default_window = default_context_window
        self._default_max_tokens = default_max_tokens
        self._reasoning = reasoning
        self._idle_timeout_s = float(idle_timeout_s)
        self._user_id = user_id
        self._retry = retry_policy or RetryPolicy(max_retries=max_retries)
        self._sleep = sleep or asyncio.sleep
        self._rng = rng or random.Random()
        self._owns_client = client is None
        if client is None:
            client = self._build_client(base_url, api_key)
        self._client = client

    # ---- construction -------------------------------------------------------------------

    def _known_windows(self) -> Mapping[str, int]:
        return DEEPSEEK_MODELS

    def _build_client(self, base_url: str | None, api_key: str | None) -> AsyncOpenAI:
        if base_url:
            url = _checked_base_url(base_url, "base_url")
        elif os.environ.get(self.base_url_env):
            url = _checked_base_url(os.environ[self.base_url_env], f"${self.base_url_env}")
        else:
            url = self.default_base_url
        key = api_key if api_key is not None else os.environ.get(self.api_key_env)
        if not key:  # an empty key is no key: the client would refuse it with its own traceback
            empty = " (it is set but empty)" if key == "" else ""
            raise ProviderConfigError(f"no API key: set ${self.api_key_env}{empty} (or pass api_key=)")
        # Our retries are the only ones (max_retries=0); the idle timeout is ours too.
        return AsyncOpenAI(api_key=key, base_url=url, max_retries=0, timeout=None)

    def __repr__(self) -> str:
        # the endpoint without userinfo or query: either may carry a credential
        return f"{type(self).__name__}(route={self._route!r}, endpoint={_shown(self._client.base_url)!r})"

    # ---- the Provider protocol ----------------------------------------------------------

    @property
    def route(self) -> str:
        """The provider id written into ``config.provider``."""
        return self._route

    @property
    def base_url(self) -> str:
        """The endpoint requests go to."""
        return str(self._client.base_url)

    @property
    def retry_policy(self) -> RetryPolicy:
        """The retries this provider's requests are under."""
        return self._retry

    @property
    def default_effort(self) -> str:
        """The reasoning effort filled in when a header names none."""
        return DEFAULT_EFFORT if self._reasoning else "off"

    def materialize(self, header: EpochHeader) -> EpochHeader:
        """Fill in ``maxTokens`` and ``reasoningEffort`` when absent, marking each in
        ``adapterDefaults``. A header that needs nothing is returned unchanged."""
        config = header.config
        add_max = self._default_max_tokens is not None and config.get("maxTokens") is None
        add_effort = config.get("reasoningEffort") is None
        if not add_max and not add_effort:
            return header
        raw = thaw(header.raw)
        new_config = raw.setdefault("config", {})
        markers: dict[str, bool] = {}
        if add_max:
            new_config["maxTokens"] = self._default_max_tokens
        if add_effort:
            new_config["reasoningEffort"] = self.default_effort
            markers["reasoningEffort"] = True
        if add_max:
            markers["maxTokens"] = True
        old_markers = raw.get("adapterDefaults")
        merged = {**(old_markers if isinstance(old_markers, dict) else {}), **markers}
        ordered: dict[str, Any] = {"config": new_config, "adapterDefaults": merged}
        ordered.update((key, value) for key, value in raw.items() if key not in ordered)
        return EpochHeader(ordered)

    def context_window(self, model: str) -> int | None:
        """The context window of ``model``; unlisted models get the default window."""
        return self._windows.get(model, self._default_window)

    def request_headers(self, options: GenerateOptions) -> dict[str, str]:
        """The extra HTTP headers of a request (authentication is added by the client)."""
        headers = {"Accept": "text/event-stream", "User-Agent": _user_agent()}
        if self._user_id:
            headers["x-deepseek-harness-user-id"] = self._user_id
        if options.session_id:
            headers["x-deepseek-harness-session-id"] = options.session_id
        if options.purpose == "compaction":
            headers["x-deepseek-harness-compact"] = "1"
        return headers

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body sent for ``options`` (after ``materialize``).

        Raises ``RequestRefused`` when the request cannot be expressed."""
        materialized = self.materialize(options.header)
        if materialized is not options.header:
            options = GenerateOptions(
                header=materialized,
                messages=options.messages,
                session_id=options.session_id,
                purpose=options.purpose,
            )
        return build_body(options, reasoning=self._reasoning)

    async def stream(
        self, options: GenerateOptions, *, cancel: asyncio.Event | None = None, retry: bool = True
    ) -> AsyncIterator[StreamChunk]:
        """Stream one response; failures end the stream with an error finish, never raise.

        ``retry=False``: one attempt, whatever ``retry_policy`` says (the caller retries)."""
        try:
            body = self.request_body(options)
        except RequestRefused as refused:
            yield Finish(FinishError(refused.failure))
            return
        headers = self.request_headers(options)
        response = await self._open(body, headers, cancel, retry=retry)
        if isinstance(response, Finish):
            yield response
            return
        try:
            async with aclosing(self._read(response, cancel)) as chunks:
                async for chunk in chunks:
                    yield chunk
        finally:
            await self._close(response)

    async def aclose(self) -> None:
        """Close the HTTP client if this provider built it."""
        if self._owns_client:
            await self._client.close()

    async def check_key(self, timeout_s: float = 10.0) -> CredentialCheck:
        """Whether the endpoint accepts the key now: one ``GET /models`` (nothing is generated).
        ``rejected`` on 401/403; the result never holds the key."""
        endpoint = _shown(self._client.base_url)
        secret = self._secret()
        try:
            await self._client.with_options(timeout=timeout_s, max_retries=0).models.list()
        except openai.APIStatusError as exc:
            status = exc.status_code
            message = scrub(error_message(exc.body, exc.message), secret)
            if status in (401, 403):
                return CredentialCheck("rejected", self._route, endpoint, status, message)
            return CredentialCheck("unknown", self._route, endpoint, status, message)
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            return CredentialCheck("unreachable", self._route, endpoint, None, self._failure_of(exc).message)
        return CredentialCheck("accepted", self._route, endpoint, 200, None)

    # ---- request and retries ------------------------------------------------------------

    def _secret(self) -> str | None:
        key = getattr(self._client, "api_key", None)
        return key if isinstance(key, str) else None

    async def _post(self, body: dict[str, Any], headers: dict[str, str]) -> Any:
        stream = await self._client.post(
            "/chat/completions",
            cast_to=ChatCompletionChunk,
            body=body,
            options={"headers": headers, "max_retries": 0},
            stream=True,
            stream_cls=AsyncStream[ChatCompletionChunk],
        )
        return stream.response

    def _failure_of(self, exc: Exception) -> LlmFailure:
        secret = self._secret()
        if isinstance(exc, openai.APIStatusError):
            message = error_message(exc.body, exc.message)
            return classify_status(exc.status_code, message, exc.response.headers, secret=secret)
        url = self._endpoint(exc)
        if isinstance(exc, openai.APITimeoutError):
            return LlmFailure(message=f"the request to {url} timed out", code="TIMEOUT")
        cause = exc.__cause__ or exc
        detail = scrub(str(cause) or type(cause).__name__, secret)
        if any(kind.__name__ == "ConnectError" for kind in type(cause).__mro__):
            message = f"could not connect to {url} ({detail})"
        else:
            message = f"the request to {url} failed ({detail})"
        return LlmFailure(message=scrub(message, secret), code="TRANSPORT")

    def _endpoint(self, exc: Exception) -> str:
        """The URL a failed request went to, without credentials or query (it may be logged)."""
        return _shown(getattr(getattr(exc, "request", None), "url", None) or self._client.base_url)

    async def _open(
        self, body: dict[str, Any], headers: dict[str, str], cancel: asyncio.Event | None, *, retry: bool
    ) -> Any:
        """The streaming HTTP response, or the ``Finish`` that ends the stream instead."""
        attempt = 0
        while True:
            try:
                outcome = await _race(self._post(body, headers), cancel, self._idle_timeout_s)
            except Exception as exc:  # classified below; never escapes the stream
                failure = self._failure_of(exc)
            else:
                if outcome is _ABORTED:
                    return _aborted()
                if outcome is _TIMED_OUT:
                    return _error("TIMEOUT", f"no response within {self._idle_timeout_s:g} s")
                return outcome
            delay = self._retry.delay_s(attempt, failure, self._rng) if retry else None
            if delay is None:
                return Finish(FinishError(failure))
            attempt += 1
            log.info(
                "%s: %s, retry %d of %d in %.2f s",
                self._route,
                failure.code,
                attempt,
                self._retry.max_retries,
                delay,
            )
            slept = await _race(self._sleep_for(delay), cancel, delay + self._idle_timeout_s)
            if slept is _ABORTED:
                return _aborted()

    async def _sleep_for(self, delay: float) -> None:
        await self._sleep(delay)

    # ---- the response stream ------------------------------------------------------------

    async def _read(self, response: Any, cancel: asyncio.Event | None) -> AsyncGenerator[StreamChunk, None]:
        lines: AsyncIterator[str] = response.aiter_lines()
        decoder = SseDecoder()
        translator = StreamTranslator()
        while True:
            try:
                line = await _race(anext(lines), cancel, self._idle_timeout_s)
            except StopAsyncIteration:
                break
            except Exception as exc:
                detail = scrub(str(exc) or type(exc).__name__, self._secret())
                yield _error("STREAM_CLOSED", f"the stream broke before [DONE]: {detail}")
                return
            if line is _ABORTED:
                yield _aborted()
                return
            if line is _TIMED_OUT:
                yield _error("TIMEOUT", f"the stream was idle for {self._idle_timeout_s:g} s")
                return
            assert isinstance(line, str)
            data = decoder.feed(line)
            if data is None:
                continue
            finished, chunks = self._translate(translator, data)
            for chunk in chunks:
                yield chunk
            if finished:
                return
        data = decoder.flush()
        if data is not None:
            finished, chunks = self._translate(translator, data)
            for chunk in chunks:
                yield chunk
            if finished:
                return
        yield _error("STREAM_CLOSED", "the stream ended without [DONE]")

    def _translate(self, translator: StreamTranslator, data: str) -> tuple[bool, list[StreamChunk]]:
        """Chunks for one SSE data payload; ``True`` when they end the stream."""
        if data.strip() == "[DONE]":
            return True, translator.done()
        try:
            return False, translator.feed(loads(data))
        except StreamReportedError as exc:
            detail = scrub(str(exc), self._secret())
            return True, [_error("SERVER", f"the provider reported an error mid-stream: {detail}")]
        except (ValueError, MalformedStream) as exc:
            detail = scrub(str(exc), self._secret())
            return True, [_error("MALFORMED_RESPONSE", f"a stream event could not be read: {detail}")]

    async def _close(self, response: Any) -> None:
        try:
            await response.aclose()
        except Exception:  # closing a broken connection may fail; nothing is lost
            log.debug("%s: closing the response failed", self._route, exc_info=True)


class OpenAICompatibleProvider(DeepSeekProvider):
    """The same adapter for any OpenAI-compatible endpoint: base URL + model name.

    Defaults differ from DeepSeek's: route ``openai-compatible``, key from ``$OPENAI_API_KEY``,
    base URL from ``$OPENAI_BASE_URL``, no output cap or context window filled in unless given,
    and no thinking fields (``reasoning=False``: effort ``off`` only).
    """

    api_key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = "https://api.openai.com/v1"

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        route: str = "openai-compatible",
        model_windows: Mapping[str, int] | None = None,
        default_context_window: int | None = None,
        default_max_tokens: int | None = None,
        reasoning: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            base_url,
            api_key,
            route=route,
            model_windows=model_windows,
            default_context_window=default_context_window,
            default_max_tokens=default_max_tokens,
            reasoning=reasoning,
            **kwargs,
        )

    def _known_windows(self) -> Mapping[str, int]:
        return {}


def export_messages(session: Session) -> dict[str, Any]:
    """The session as a chat-completions body without sampling settings: ``{model, messages,
    tools?}``, built from the request header in force and the derived messages."""
    header = fold_request_header(session.events)
    body: dict[str, Any] = {
        "model": header.model if header is not None else "",
        "messages": serialize_messages(header.system if header else None, session.derive_messages()),
    }
    if header is not None and header.tools:
        body["tools"] = serialize_tools(header.tools)
    return body
