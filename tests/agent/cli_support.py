"""Test setup shared by the ``harness`` CLI tests in this folder."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import harness
from harness.cli import app
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def offline_env(monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    """Clear the proxy variables (the fake server is local) and set ``DEEPSEEK_API_KEY``."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEEPSEEK_API_KEY", key)


def cli(root: Path, *args: str) -> Any:
    """Invoke the CLI in-process with ``--root root``; exceptions propagate."""
    return CliRunner().invoke(app, ["--store", str(root), *args], catch_exceptions=False)


def stored(root: Path, session_id: str) -> harness.Session:
    """The session as ``inspect`` reads it back from the JSONL store under ``root``."""

    async def go() -> harness.Session:
        store = SessionStore(JsonlBackend(root))
        try:
            return await store.inspect(session_id)
        finally:
            await store.close()

    return asyncio.run(go())
