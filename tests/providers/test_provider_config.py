"""Provider configuration a new user gets wrong (issue 12, items 7 and 9, found in review): a base
URL that is not http(s) is refused when the provider is built (it used to be retried three times as
a ``TRANSPORT`` failure, waits and a session included), a retry policy whose waits cannot be
computed or could not be read back by dsh is refused, and the User-Agent carries the version of
the installed distribution (``harness-sessions``, not the old ``harness``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import harness
from harness.cli import app
from harness.providers.deepseek import DeepSeekProvider, OpenAICompatibleProvider, ProviderConfigError
from harness.providers.retry import RetryPolicy
from harness.stores import JsonlBackend, SessionStore
from harness.testing import FakeDeepSeek, Reply
from tests.providers.helpers import API_KEY, MakeProvider, collect, options, run

MAX_DELAY_MS = 2_147_483_647  # dsh's timer limit: it refuses an llm/retry with a longer delayMs

# a user who swapped the two variables: the "URL" is the key, and must not be echoed
BAD_URLS = ["localhost:8080", "api.deepseek.com", "ftp://example.com/", "http://[bad", "http://", API_KEY]


def test_the_user_agent_carries_the_installed_version(
    server: FakeDeepSeek, make_provider: MakeProvider
) -> None:
    server.add(Reply.text("hi"))
    run(collect(make_provider(), options()))
    assert server.requests[0].header("user-agent") == f"deepseek-harness-py/{harness.__version__}"


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_base_url_that_is_not_http_is_refused_when_the_provider_is_built(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ProviderConfigError, match=r"^base_url is not an http:// or https:// URL") as given:
        DeepSeekProvider(url, api_key=API_KEY)
    monkeypatch.setenv("DEEPSEEK_BASE_URL", url)
    with pytest.raises(ProviderConfigError, match=r"^\$DEEPSEEK_BASE_URL is not an http") as from_env:
        DeepSeekProvider(api_key=API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    with pytest.raises(ProviderConfigError, match=r"^\$OPENAI_BASE_URL is not an http"):
        OpenAICompatibleProvider(api_key=API_KEY)
    for raised in (given, from_env):
        assert API_KEY not in str(raised.value)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9", "https://api.deepseek.com", "HTTPS://Host.example/v1/", " http://h:1/v1 "]
)
def test_an_http_base_url_is_accepted(url: str) -> None:
    assert DeepSeekProvider(url, api_key=API_KEY).base_url.lower().startswith(url.strip().lower())


def test_the_repr_shows_the_endpoint_without_credentials() -> None:
    """Gateways take a token as URL userinfo or query; ``repr`` (logs, tracebacks) shows neither."""
    provider = DeepSeekProvider("https://user:pw-secret@gw.example:8443/v1?token=tok-secret", api_key=API_KEY)
    for shown in (repr(provider), str(provider)):
        assert "gw.example:8443/v1" in shown
        assert "pw-secret" not in shown and "tok-secret" not in shown and API_KEY not in shown


def test_check_sends_nothing_so_a_bad_base_url_does_not_stop_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"

    async def create() -> str:
        async with SessionStore(JsonlBackend(root)) as store:
            session = await store.create(cwd=str(tmp_path))
            session.append("session/title", {"title": "nothing to check"})
            await store.flush(session)
            return session.id

    session_id = asyncio.run(create())
    monkeypatch.setenv("DEEPSEEK_BASE_URL", "localhost:8080")  # and no key: neither is used
    args = ["--store", str(root), "check", session_id, "-w", str(tmp_path), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["blocking"] is False


def test_run_without_a_key_says_which_variable_to_set(tmp_path: Path) -> None:
    """The CLI user has no ``api_key`` argument to pass: the line names the variable first."""
    result = CliRunner().invoke(app, ["--store", str(tmp_path / "s"), "run", "hello", "-w", str(tmp_path)])
    assert result.exit_code == 1
    assert "error: no API key: set $DEEPSEEK_API_KEY" in result.output, result.output


def test_run_with_a_bad_base_url_says_so_at_once_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", API_KEY)
    monkeypatch.setenv("DEEPSEEK_BASE_URL", "localhost:8080")
    root = tmp_path / "sessions"
    result = CliRunner().invoke(app, ["--store", str(root), "run", "hello", "-w", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "$DEEPSEEK_BASE_URL is not an http:// or https:// URL" in result.output
    assert "retrying" not in result.output and "Traceback" not in result.output
    assert not root.exists() or not any(root.rglob("session.jsonl*"))


@pytest.mark.parametrize(
    "fields",
    [
        {"base_delay_s": float("nan")},  # used to raise ValueError out of the agent loop
        {"max_delay_s": float("inf")},
        {"max_retry_after_s": -1.0},
        {"max_retry_after_s": MAX_DELAY_MS / 1000 + 1},  # a wait dsh would refuse to read back
        {"base_delay_s": True},
        {"max_retries": -1},
        {"max_retries": 1.5},
        {"max_retries": True},
        {"codes": "RATE_LIMIT"},  # a string, whose letters would be the codes
        {"codes": frozenset({""})},
    ],
)
def test_a_retry_policy_out_of_range_is_refused(fields: dict[str, object]) -> None:
    field = next(iter(fields))
    with pytest.raises(ProviderConfigError, match=f"^{field} must be"):
        RetryPolicy(**fields)  # type: ignore[arg-type]


def test_the_widest_retry_policy_is_accepted() -> None:
    widest = RetryPolicy(
        max_retries=0, base_delay_s=0, max_delay_s=MAX_DELAY_MS / 1000, max_retry_after_s=MAX_DELAY_MS / 1000
    )
    assert widest.max_delay_s * 1000 <= MAX_DELAY_MS
    assert harness.providers.retry.MAX_DELAY_MS == MAX_DELAY_MS
    assert RetryPolicy(codes=frozenset({"RATE_LIMIT", "TIMEOUT"})).codes == {"RATE_LIMIT", "TIMEOUT"}
