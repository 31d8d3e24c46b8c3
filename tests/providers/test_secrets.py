"""The API key goes into the Authorization header and nowhere else."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest

from harness.messages.stream import Finish, FinishAborted, FinishError, StreamChunk
from harness.providers.deepseek import DeepSeekProvider, ProviderConfigError
from harness.testing import FakeDeepSeek, Reply
from tests.providers.helpers import API_KEY, MakeProvider, Sleeps, collect, options, run


def test_key_never_leaks(
    server: FakeDeepSeek,
    make_provider: MakeProvider,
    sleeps: Sleeps,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, the openai client's and the HTTP stack's too
    server.add(
        Reply.reasoning("thinking", "answer"),
        # DeepSeek's real 401 echoes the key it was given; the provider must mask it.
        Reply.error(401, f"Authentication Fails, Your api key: {API_KEY} is invalid"),
        Reply.error(500, f"upstream said {API_KEY}"),
        Reply.error(500),
        Reply.cut(),
        Reply.hang("x"),
        Reply.malformed('{"oops": "' + API_KEY),
        Reply.stream([{"delta": {"content": {"k": API_KEY}}}]),
    )
    provider = make_provider(idle_timeout_s=0.2, max_retries=1)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable = DeepSeekProvider(f"http://127.0.0.1:{port}", api_key=API_KEY, max_retries=0)

    async def scenario() -> list[list[StreamChunk]]:
        streams = [await collect(provider, options(["hello"])) for _ in range(7)]
        streams.append(await collect(unreachable, options()))
        await provider.aclose()
        return streams

    streams = run(scenario())

    codes = [_code(chunks) for chunks in streams]
    assert codes == [
        None,
        "AUTH",
        "SERVER",
        "STREAM_CLOSED",
        "TIMEOUT",
        "MALFORMED_RESPONSE",
        "MALFORMED_RESPONSE",
        "TRANSPORT",
    ]
    assert len(sleeps.delays) == 1  # the two 500s: one retry
    # The key did reach the server, in the Authorization header only.
    assert all(r.header("authorization") == f"Bearer {API_KEY}" for r in server.requests)
    assert all(API_KEY not in r.raw_body.decode() for r in server.requests)

    # Not in any chunk (what the agent loop writes to the log) ...
    log_file = tmp_path / "chunks.jsonl"
    with log_file.open("w", encoding="utf-8") as out:
        for chunks in streams:
            for chunk in chunks:
                out.write(json.dumps(chunk.to_json()) + "\n")
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert API_KEY.encode() not in path.read_bytes(), path
    # ... nor in any failure message, repr, or log record.
    for chunks in streams:
        for chunk in chunks:
            assert API_KEY not in repr(chunk)
    for shown in (repr(provider), str(provider), repr(vars(provider)), repr(unreachable)):
        assert API_KEY not in shown
    assert caplog.records, "the scenario logs something (retries at least)"
    for record in caplog.records:
        assert API_KEY not in record.getMessage()
        assert API_KEY not in (record.exc_text or "")
        assert API_KEY not in repr(record.args)
    assert API_KEY not in caplog.text


def _code(chunks: list[StreamChunk]) -> str | None:
    last = chunks[-1]
    assert isinstance(last, Finish)
    if isinstance(last.reason, FinishError | FinishAborted):
        assert API_KEY not in last.reason.failure.message
        return last.reason.failure.code
    return None


def test_missing_key_is_a_clear_error() -> None:
    with pytest.raises(ProviderConfigError) as raised:
        DeepSeekProvider("http://127.0.0.1:9")
    assert "DEEPSEEK_API_KEY" in str(raised.value)
