"""``harness run`` / ``chat`` show model-request retries while they wait (issue 12 item 7) and
name the URL when nothing listens there (item 12): the real ``openai`` client against the fake
server, or against a port with nothing listening on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import harness
from harness.cli import agent_commands, app
from harness.providers.deepseek import DeepSeekProvider
from harness.providers.retry import RetryPolicy
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from tests.agent.cli_support import offline_env

KEY = "sk-test-retry-never-logged-77"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    offline_env(monkeypatch, KEY)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    yield workspace


def cli(root: Path, *args: str, input: str | None = None) -> Any:
    return CliRunner().invoke(app, ["--store", str(root), *args], input=input, catch_exceptions=False)


def stored(root: Path, session_id: str) -> harness.Session:
    async def go() -> harness.Session:
        store = SessionStore(JsonlBackend(root))
        try:
            return await store.load(session_id)
        finally:
            await store.close()

    return asyncio.run(go())


def flat(text: str) -> str:
    return " ".join(text.split())


def test_run_shows_each_retry_and_its_wait_then_finishes(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    with FakeDeepSeek([Reply.text("Answer after the waits.")], api_key=KEY) as server:
        # a rate limit, then an overload; both ask for a short wait so the test stays quick
        server.fail_next(503, retry_after=0.01).fail_next(429, retry_after=0.02)
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = cli(root, "run", "hello", "-w", str(env))
        requests = len(server.requests)
    assert result.exit_code == 0, result.output
    output = flat(result.output)
    assert "rate limited (HTTP 429), retrying in 0.02 s… (retry 1 of 3)" in output, output
    assert "server error (HTTP 503), retrying in 0.01 s… (retry 2 of 3)" in output, output
    assert output.index("retry 1 of 3") < output.index("retry 2 of 3") < output.index("Answer after")
    assert requests == 3
    session_id = output.split("session ")[-1].split()[0]
    session = stored(root, session_id)  # the records load back
    retries = [e for e in session.events if e.type == "llm/retry"]
    assert [(e.data["retry"], e.data["failure"]["status"]) for e in retries] == [(1, 429), (2, 503)]
    assert sum(e.type == "llm/retry-started" for e in session.events) == 2


def test_chat_shows_a_retry_between_the_prompt_and_the_answer(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    with FakeDeepSeek([Reply.text("Hi there.")], api_key=KEY) as server:
        server.fail_next(429, retry_after=0.01)
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = cli(root, "chat", "-w", str(env), input="hello\n/exit\n")
    assert result.exit_code == 0, result.output
    output = flat(result.output)
    assert "rate limited (HTTP 429), retrying in 0.01 s… (retry 1 of 3)" in output, output
    assert output.index("retrying in") < output.index("Hi there.")


def _dead_port() -> tuple[socket.socket, int]:
    """A port bound on 127.0.0.1 that nothing listens on (connections are refused)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    return probe, probe.getsockname()[1]


def test_run_against_nothing_listening_names_the_url(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    probe, port = _dead_port()
    base = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("DEEPSEEK_BASE_URL", base)
    fast = RetryPolicy(max_retries=2, base_delay_s=0.001, max_delay_s=0.002)  # waits of ~1 ms
    monkeypatch.setattr(agent_commands, "_provider", lambda **_: DeepSeekProvider(retry_policy=fast))
    with probe:
        plain = cli(root, "run", "hello", "-w", str(env))
        as_json = cli(root, "run", "hello", "-w", str(env), "--json")
    url = f"{base}/chat/completions"
    assert plain.exit_code == 1, plain.output
    output = flat(plain.output)
    assert f"could not connect to {url}" in output, output
    assert "connection failed: could not connect to" in output and "(retry 2 of 2)" in output
    assert "Traceback" not in plain.output
    assert as_json.exit_code == 1
    outcome = json.loads(as_json.stdout.strip().splitlines()[-1])
    error = outcome["reason"]["error"]
    assert error["code"] == "TRANSPORT" and url in error["message"]
    session = stored(root, outcome["session"])  # the recorded failure names the URL too
    (end,) = [e for e in session.events if e.type == "turn/end"]
    assert url in end.data["reason"]["error"]["message"]
    assert all(url in e.data["failure"]["message"] for e in session.events if e.type == "llm/retry")
    for path in root.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes()
