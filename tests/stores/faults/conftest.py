"""Fixtures of the fault suite: the shim, built once per run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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
