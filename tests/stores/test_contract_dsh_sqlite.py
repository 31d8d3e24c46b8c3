"""The store contract on ``DshSqliteBackend`` (dsh's schema 17), and where the layout differs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness.errors import InvalidSessionId
from harness.stores.backend import Backend
from harness.stores.dsh_sqlite import DshSqliteBackend
from harness.testing.contract import StoreContract
from harness.testing.samples import chunk, header, run


class TestDshSqliteContract(StoreContract):
    """The shared store contract, on one dsh database file."""

    # The id column is UTF-8 ``TEXT``: an id with a lone surrogate cannot be stored (dsh's Node
    # binding would write U+FFFD, merging distinct ids); its refusal is tested below.
    isolation_ids = tuple(i for i in StoreContract.isolation_ids if i != "\ud800lone")

    def make_backend(self, tmp_path: Path) -> Backend:
        return DshSqliteBackend(tmp_path / "sessions.sqlite")

    def second_backend(self, tmp_path: Path, first: Backend) -> Backend:
        return DshSqliteBackend(tmp_path / "sessions.sqlite")

    def corrupt_header(self, tmp_path: Path, backend: Backend, session_id: str) -> None:
        # dsh's own row rule: a stored cwd must be absolute.
        with sqlite3.connect(tmp_path / "sessions.sqlite", isolation_level=None) as conn:
            conn.execute("UPDATE sessions SET cwd = 'relative/dir' WHERE id = ?", (session_id,))


def test_an_id_with_a_lone_surrogate_is_refused(tmp_path: Path) -> None:
    async def scenario() -> None:
        backend = DshSqliteBackend(tmp_path / "sessions.sqlite")
        try:
            with pytest.raises(InvalidSessionId, match="lone surrogate"):
                await backend.create(header("\ud800lone"))
            with pytest.raises(InvalidSessionId, match="lone surrogate"):
                await backend.append("\ud800lone", [chunk(0)])
            with pytest.raises(InvalidSessionId, match="lone surrogate"):
                await backend.stored_length("\ud800lone")
            assert await backend.list() == []
        finally:
            await backend.close()

    run(scenario())
