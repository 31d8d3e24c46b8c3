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
    result = CliRunner().invoke(app, ["--store", str(tmp_path), "run", "hi", "-w", str(tmp_path)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), repr(result.exception)
    assert "error: no API key: set $DEEPSEEK_API_KEY (it is set but empty)" in result.stderr


@pytest.mark.parametrize(
    "command",
    [["sessions"], ["log", "x"], ["surface", "x"], ["verify", "x"], ["export", "x"], ["check", "x"]],
)
def test_a_read_command_never_creates_an_sqlite_file(tmp_path: Path, command: list[str]) -> None:
    """``harness --sqlite typo.db sessions`` said "no stored sessions" and left an empty
    database at typo.db."""
    path = tmp_path / "typo.db"
    result = CliRunner().invoke(app, ["--store", f"sqlite:{path}", *command])
    assert result.exit_code == 2, result.output
    assert f"no SQLite file at {path}" in result.stderr
    assert not path.exists()


def test_sessions_names_the_root_it_found_empty(tmp_path: Path) -> None:
    root = tmp_path / "typo-root"
    result = CliRunner().invoke(app, ["--store", str(root), "sessions"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and f"no stored sessions under {root}" in result.stdout


@pytest.mark.parametrize("spec", ["sqlite:", "jsonl:"])
def test_a_store_spec_without_its_target_is_a_usage_error(tmp_path: Path, spec: str) -> None:
    result = CliRunner().invoke(app, ["--store", spec, "sessions"])
    assert result.exit_code == 2 and "names no location" in result.stderr, result.output


def test_verify_json_reports_a_missing_sqlite_file_as_one_document(tmp_path: Path) -> None:
    import json

    path = tmp_path / "typo.db"
    result = CliRunner().invoke(app, ["--store", f"sqlite:{path}", "verify", "some-id", "--json"])
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["valid"] is False and report["exit"] == 2 and "no SQLite file" in report["problem"]
    assert not path.exists()


def test_verify_names_the_torn_tail_byte_once() -> None:
    """It said "torn tail after byte 39196 (torn tail at byte 39196: the last line ...)"."""
    from tests.test_fixtures_dsh import FIXTURES

    path = Path(FIXTURES) / "06-torn-tail-input-DERIVED.jsonl"
    result = CliRunner().invoke(app, ["verify", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "torn tail after byte 39196 (the last line has no newline)" in result.stdout
    assert result.stdout.count("39196") == 1
