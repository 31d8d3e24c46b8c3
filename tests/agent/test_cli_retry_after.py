"""A rate limit whose ``Retry-After`` is longer than the retry policy waits is not retried (issue 12
item 7, found in review): ``harness run`` says how long the provider asked to wait, so the user
knows why nothing was retried and when to try again."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.testing.fake_deepseek import FakeDeepSeek, Reply

KEY = "sk-test-retry-after-never-logged-31"


def test_run_names_the_wait_a_rate_limit_asked_for_when_it_is_not_waited_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    with FakeDeepSeek([Reply.error(429, retry_after=3600), Reply.text("unused")], api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = CliRunner().invoke(app, ["--store", str(tmp_path / "s"), "run", "hi", "-w", str(tmp_path)])
        requests = len(server.requests)
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    assert "turn 1 ended: error: RATE_LIMIT HTTP 429" in output, output
    assert "(the provider asked for a wait of 3600 s)" in output, output
    assert "retrying" not in output and requests == 1
