"""The fake server on its own, driven from plain synchronous code (urllib, raw sockets)."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any

import pytest

from harness.testing import CREATED, FakeDeepSeek, RecordedRequest, Reply, usage


def post(
    server: FakeDeepSeek, body: Any, path: str = "/chat/completions"
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        server.base_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer k"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def events(raw: bytes) -> list[Any]:
    out: list[Any] = []
    for line in raw.decode().splitlines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def test_streams_a_deepseek_shaped_reply_and_records_the_request() -> None:
    with FakeDeepSeek(
        [Reply.reasoning("ab", "cd", parts=2, usage=usage(10, 4, cache_hit_tokens=3))]
    ) as server:
        status, headers, raw = post(server, {"model": "deepseek-v4-pro", "messages": []})
        recorded = server.last_request
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    stream = events(raw)
    assert stream[-1] == "[DONE]"
    chunks = stream[:-1]
    assert {c["model"] for c in chunks} == {"deepseek-v4-pro"}
    assert {c["id"] for c in chunks} == {"chatcmpl-fake-1"} and {c["created"] for c in chunks} == {CREATED}
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"role": "assistant", "content": None, "reasoning_content": ""}
    assert [d.get("reasoning_content") for d in deltas[1:3]] == ["a", "b"]
    assert [d.get("content") for d in deltas[3:5]] == ["c", "d"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["prompt_cache_hit_tokens"] == 3
    assert chunks[-1]["usage"]["prompt_tokens_details"] == {"cached_tokens": 3}
    assert isinstance(recorded, RecordedRequest)
    assert recorded.body == {"model": "deepseek-v4-pro", "messages": []}
    assert recorded.header("Authorization") == "Bearer k"


def test_errors_carry_retry_after_and_a_request_id() -> None:
    with FakeDeepSeek([Reply.error(429, retry_after=3)]) as server:
        status, headers, raw = post(server, {})
    assert status == 429
    assert headers["Retry-After"] == "3" and headers["x-request-id"] == "fake-req-1"
    assert json.loads(raw)["error"]["message"] == "Rate limit reached for requests"


def test_script_exhausted_unknown_path_and_wrong_key() -> None:
    with FakeDeepSeek(api_key="right") as server:
        assert post(server, {})[0] == 401  # urllib sends "Bearer k"
        assert post(server, {}, path="/models")[0] == 404
    with FakeDeepSeek() as server:
        assert post(server, {})[0] == 410
        assert len(server.requests) == 1


def test_callable_script_items_see_the_request() -> None:
    def echo(request: RecordedRequest) -> Reply:
        return Reply.text(f"you said {request.messages[-1]['content']}", parts=1)

    with FakeDeepSeek() as server:
        assert server.add(echo) is server and server.pending == 1
        _, _, raw = post(server, {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert server.pending == 0
    assert events(raw)[1]["choices"][0]["delta"]["content"] == "you said hi"


def test_replies_are_deterministic() -> None:
    outputs = []
    for _ in range(2):
        script = [Reply.tool_calls([("c1", "f", '{"x":1}'), ("c2", "g", "{}")], interleave=True)]
        with FakeDeepSeek(script) as server:
            outputs.append(post(server, {"model": "m"})[2])
    assert outputs[0] == outputs[1]


def test_stop_does_not_wait_for_a_hanging_client() -> None:
    server = FakeDeepSeek([Reply.hang()]).start()
    client = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        body = b"{}"
        client.sendall(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n" + body)
        assert client.recv(12).startswith(b"HTTP/1.1 200")
        server.stop()  # returns although the client never closes
    finally:
        client.close()
    with pytest.raises(RuntimeError):
        _ = server.base_url


def test_chunked_request_bodies_are_read() -> None:
    with FakeDeepSeek([Reply.text("ok")]) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as client:
            client.sendall(
                b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                b'5\r\n{"a":\r\n2\r\n1}\r\n0\r\n\r\n'
            )
            assert client.recv(12).startswith(b"HTTP/1.1 200")
        assert server.last_request.body == {"a": 1}
