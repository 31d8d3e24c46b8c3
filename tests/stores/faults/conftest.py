"""Fixtures of the fault suite: the shim, built once per run; a private PostgreSQL cluster,
started once per run (only when a test asks for it) and removed at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stores.faults.private_pg import PrivateServer
from tests.stores.faults.shim import Shim, build


@pytest.fixture(scope="session")
def shim_library() -> Path:
    return build()


@pytest.fixture
def shim(shim_library: Path, tmp_path: Path) -> Iterator[Shim]:
    """The shim confined to ``tmp_path / "data"`` (created), with its control and log files."""
    data = tmp_path / "data"
    data.mkdir()
    yield Shim(shim_library, data, tmp_path)


@pytest.fixture(scope="session")
def private_pg() -> Iterator[PrivateServer]:
    cluster = PrivateServer()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()
