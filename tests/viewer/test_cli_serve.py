"""``harness serve`` on the command line: the extra it needs, the store it opens, the address
and token it prints; and ``import harness`` never loads the viewer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli import app


def test_import_harness_loads_no_viewer() -> None:
    code = (
        "import sys, harness, harness.cli; "
        "names = ('harness.viewer', 'starlette', 'jinja2', 'uvicorn'); "
        "print(sorted(m for m in sys.modules if m.startswith(names)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_serve_without_the_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "starlette", None)  # an import of it now fails
    result = CliRunner().invoke(app, ["serve", "--store", str(tmp_path)])
    assert result.exit_code == 2
    assert "pip install 'harness-sessions[viewer]'" in result.output and "starlette" in result.output


def test_serve_refuses_a_store_that_is_not_there(tmp_path: Path) -> None:
    missing = CliRunner().invoke(app, ["serve", "--store", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no JSONL session root" in missing.output
    sqlite = CliRunner().invoke(app, ["serve", "--store", f"sqlite:{tmp_path / 'nope.db'}"])
    assert sqlite.exit_code == 2 and "no SQLite file" in sqlite.output
    assert not (tmp_path / "nope.db").exists()


def test_serve_refuses_a_weak_token(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", "--store", str(tmp_path), "--token", "short"])
    assert result.exit_code == 2 and "--token must be 16 to 256 characters" in result.output


def test_serve_announces_its_address_and_a_generated_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import uvicorn

    ran: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: ran.update(options, app=app))
    result = CliRunner().invoke(
        app, ["serve", "--store", str(tmp_path), "--host", "0.0.0.0", "--port", "9123", "--json"]
    )
    assert result.exit_code == 0, result.output
    first = json.loads(result.stdout.splitlines()[0])
    assert first["generatedToken"] is True and len(first["token"]) >= 32
    assert first["url"] == f"http://127.0.0.1:9123/?token={first['token']}"
    assert ran["host"] == "0.0.0.0" and ran["port"] == 9123
    local = CliRunner().invoke(app, ["serve", "--store", str(tmp_path)])
    assert local.exit_code == 0 and "http://127.0.0.1:8765/" in local.output and "token" not in local.output
    assert ran["host"] == "127.0.0.1"
