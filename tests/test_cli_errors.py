"""Errors a new user meets in the first minutes are one clear line, never a traceback
(issue 12 item 12, review)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import ProviderConfigError
from harness.providers.deepseek import DeepSeekProvider


def test_an_empty_api_key_is_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``DEEPSEEK_API_KEY=`` (set but empty) reached the openai client, whose "Missing
    credentials" OpenAIError came out of ``harness run`` as a traceback."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "")
    with pytest.raises(ProviderConfigError, match=r"DEEPSEEK_API_KEY \(it is set but empty\)"):
        DeepSeekProvider()
    with pytest.raises(ProviderConfigError, match="no API key"):
        DeepSeekProvider(api_key="")
    result = CliRunner().invoke(app, ["--root", str(tmp_path), "run", "hi", "-w", str(tmp_path)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), repr(result.exception)
    assert "error: no API key: set $DEEPSEEK_API_KEY (it is set but empty)" in result.stderr
