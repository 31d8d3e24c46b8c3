"""Fixtures for the provider tests: a clean environment, a fake server, a provider on it."""

from __future__ import annotations

import inspect
import random
from collections.abc import Iterator
from typing import Any

import pytest

from harness.providers.deepseek import DeepSeekProvider
from harness.testing import FakeDeepSeek
from tests.providers.helpers import API_KEY, MakeProvider, Sleeps


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy may divert loopback traffic, and no real endpoint or key leaks in."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeDeepSeek]:
    """A running fake server with an empty script (tests ``add`` their replies)."""
    with FakeDeepSeek(api_key=API_KEY) as fake:
        yield fake


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make_provider(
    server: FakeDeepSeek, sleeps: Sleeps, request: pytest.FixtureRequest
) -> Iterator[MakeProvider]:
    """Build a provider on the fake server (recorded sleeps, seeded jitter).

    A test that does not ask for ``sleeps`` itself expects no retry at all: a hidden retry
    (say, over a connection that went stale) would otherwise pass unnoticed.
    """

    def make(**kwargs: Any) -> DeepSeekProvider:
        kwargs.setdefault("api_key", API_KEY)
        kwargs.setdefault("sleep", sleeps)
        kwargs.setdefault("rng", random.Random(7))
        kwargs.setdefault("idle_timeout_s", 5)
        return DeepSeekProvider(server.base_url, **kwargs)

    yield make
    if "sleeps" not in inspect.signature(request.function).parameters:
        assert sleeps.delays == [], "unexpected retries"
