"""``open_store``/``open_backend``: the one door into storage, a spec string to an opened store.

Each built-in scheme opens its backend; paths expand ``~`` and ``$VARS``; an unknown scheme,
a missing location, a bad option or a spec option that contradicts a keyword is a
``StoreSpecError`` that creates nothing; a reader (``create=False``) never leaves an empty
SQLite file behind; an outside backend plugs in with ``register_scheme``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from harness.errors import StoreNotFound, StoreSpecError
from harness.stores.backend import Backend
from harness.stores.memory import MemoryBackend
from harness.stores.open import (
    Scheme,
    StoreSpec,
    known_schemes,
    open_backend,
    open_store,
    parse_store_spec,
    register_scheme,
)
from harness.testing.contract import one_turn

REPO = Path(__file__).resolve().parents[2]


def test_each_built_in_scheme_opens_its_backend(tmp_path: Path) -> None:
    from harness.stores.dsh_sqlite import DshSqliteBackend
    from harness.stores.jsonl.backend import JsonlBackend
    from harness.stores.sqlite import SqliteBackend

    assert type(open_backend(str(tmp_path / "root"))) is JsonlBackend
    assert type(open_backend(f"jsonl:{tmp_path / 'root'}", compression="none")) is JsonlBackend
    assert type(open_backend(f"sqlite:{tmp_path / 'h.db'}")) is SqliteBackend
    assert type(open_backend(f"sqlite:{tmp_path / 'd.db'}", layout="dsh")) is DshSqliteBackend
    assert type(open_backend("memory:")) is MemoryBackend
    assert harness.open_store is open_store  # the core exports the door


def test_a_store_opened_by_spec_keeps_sessions(tmp_path: Path) -> None:
    async def go() -> None:
        for spec in (f"jsonl:{tmp_path / 'root'}", f"sqlite:{tmp_path / 's.db'}"):
            async with open_store(spec) as store:
                session = await store.create(id="s1")
                one_turn(session)
            async with open_store(spec, create=False) as again:
                assert len((await again.inspect("s1")).events) >= len(session.events)

    asyncio.run(go())


def test_paths_expand_home_and_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HARNESS_TEST_PLACE", "place")
    assert parse_store_spec("~/a") == StoreSpec("jsonl", f"{tmp_path}/a")
    assert parse_store_spec("jsonl:~/a") == StoreSpec("jsonl", f"{tmp_path}/a")
    placed = parse_store_spec("sqlite:~/$HARNESS_TEST_PLACE/s.db")
    assert placed == StoreSpec("sqlite", f"{tmp_path}/place/s.db")


def test_a_postgresql_url_carries_its_schema_and_keeps_the_rest() -> None:
    spec = parse_store_spec("postgresql://u@h:5432/db?schema=agents&sslmode=disable")
    assert spec == StoreSpec("postgresql", "postgresql://u@h:5432/db?sslmode=disable", {"schema": "agents"})
    assert parse_store_spec("POSTGRES://h/db").scheme == "postgresql"
    with pytest.raises(StoreSpecError, match="the spec says schema='agents'"):
        open_backend("postgresql://h/db?schema=agents", schema="other")
    with pytest.raises(StoreSpecError, match="needs a schema name"):
        parse_store_spec("postgresql://h/db?schema=")
    with pytest.raises(StoreSpecError, match="no_such_option"):
        open_backend("postgresql://h/db", no_such_option=1)


@pytest.mark.parametrize(
    ("spec", "hint"),
    [
        ("mysql://db.example/x", "known are DIR, jsonl:DIR, sqlite:FILE, postgresql://URL, memory:"),
        ("sqllite:s.db", "did you mean sqlite:?"),
        ("postgre://h/db", "did you mean postgresql:?"),
        ("notes:2024", "a folder whose name has a colon is written ./notes:2024"),
    ],
)
def test_an_unknown_scheme_is_refused_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: str, hint: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreSpecError, match="unknown store scheme") as refused:
        open_store(spec)
    assert hint in str(refused.value)
    assert isinstance(refused.value, ValueError)
    assert list(tmp_path.iterdir()) == []


def test_bad_specs_and_options_are_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    cases = {
        "": "a store spec is needed",
        "   ": "a store spec is needed",
        "jsonl:": "names no location: write jsonl:DIR",
        "sqlite:": "names no location: write sqlite:FILE",
        "memory:x": "takes nothing after the colon",
        f"jsonl:{tmp_path / 'file'}": "is a file, not a JSONL session root",
        f"sqlite:{tmp_path / 'dir'}": "is a directory, not an SQLite file",
        "a\x00b": "NUL",
    }
    for spec, message in cases.items():
        with pytest.raises(StoreSpecError, match=message):
            open_backend(spec)
    with pytest.raises(StoreSpecError, match="compression must be zstd or none"):
        open_backend(f"jsonl:{tmp_path / 'r'}", compression="gzip")
    with pytest.raises(StoreSpecError, match="layout must be harness or dsh"):
        open_backend(f"sqlite:{tmp_path / 'n.db'}", layout="other")
    with pytest.raises(StoreSpecError, match=r"sqlite:FILE takes no option compression \(it takes: layout\)"):
        open_backend(f"sqlite:{tmp_path / 'n.db'}", compression="zstd")
    with pytest.raises(StoreSpecError, match=r"memory: takes no option layout \(it takes: none\)"):
        open_backend("memory:", layout="dsh")
    assert not (tmp_path / "n.db").exists() and not (tmp_path / "r").exists()


def test_a_reader_leaves_no_empty_sqlite_file_behind(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFound, match="no SQLite file at"):
        open_store(f"sqlite:{tmp_path / 'typo.db'}", create=False)
    assert list(tmp_path.iterdir()) == []


def test_an_outside_backend_plugs_in_by_scheme(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.stores.open as door

    monkeypatch.setattr(door, "_SCHEMES", dict(door._SCHEMES))  # registered for this test only
    opened: list[tuple[str, bool, dict[str, object]]] = []

    def open_custom(spec: StoreSpec, create: bool, options: dict[str, object]) -> Backend:
        opened.append((spec.target, create, options))
        return MemoryBackend()

    register_scheme(Scheme("custom-test", open_custom, "custom-test:NAME", frozenset({"flavour"})))
    assert "custom-test:NAME" in known_schemes()
    store = open_store("custom-test:x", create=False, flavour="mint")
    assert isinstance(store.backend, MemoryBackend)
    assert opened == [("x", False, {"flavour": "mint"})]
    with pytest.raises(StoreSpecError, match="takes no option colour"):
        open_store("custom-test:x", colour="red")
    with pytest.raises(ValueError, match="a scheme name is a letter"):
        register_scheme(Scheme("x", open_custom, "x:"))


def test_the_cli_refuses_a_typo_for_a_store_and_writes_nothing(tmp_path: Path) -> None:
    for spec in ("mysql://db.example/x", "sqllite:s.db", "postgre://h/db"):
        done = subprocess.run(
            [sys.executable, "-m", "harness", "--store", spec, "sessions"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO / "src")},
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert "unknown store scheme" in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []
