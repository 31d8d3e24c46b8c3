"""One door into storage: no code outside ``stores/`` names a concrete backend class (it opens
stores with ``open_store``/``open_backend`` and asks capabilities), and each backend declares
the capabilities the layers above ask for."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness.stores.backend import Backend
from harness.stores.capabilities import DatabaseFile, SessionFiles, SqlSchema, tail_wakes_on_commit
from harness.stores.open import open_backend

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "harness"
BACKENDS = {"JsonlBackend", "SqliteBackend", "DshSqliteBackend", "PostgresBackend", "MemoryBackend"}
# The package's own index of public names re-exports them (``harness.JsonlBackend``).
EXPORTS = {PACKAGE / "__init__.py"}


def named_backends(path: Path) -> set[tuple[int, str]]:
    """Every name, attribute, string or import of a backend class in ``path``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value]
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names = [alias.name.rsplit(".", 1)[-1] for alias in node.names]
        found |= {(getattr(node, "lineno", 0), name) for name in names if name in BACKENDS}
    return found


def test_no_code_outside_stores_names_a_backend_class() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(PACKAGE / "stores") or path in EXPORTS:
            continue
        where = path.relative_to(PACKAGE)
        offenders += [f"{where}:{line}: {name}" for line, name in sorted(named_backends(path))]
    assert not offenders, "open stores with open_store and ask capabilities instead:\n" + "\n".join(offenders)


def test_the_check_finds_a_backend_named_any_way(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from harness.stores.jsonl.backend import JsonlBackend\n"
        "import harness\n"
        "x = harness.SqliteBackend\n"
        "y = type(b).__name__ == 'PostgresBackend'\n"
        "z = isinstance(b, MemoryBackend)\n"
    )
    assert {name for _, name in named_backends(sample)} == BACKENDS - {"DshSqliteBackend"}


@pytest.mark.parametrize(
    ("spec", "files", "database", "schema", "notified"),
    [
        ("jsonl:{tmp}/root", True, False, False, False),
        ("sqlite:{tmp}/h.db", False, True, False, False),
        ("memory:", False, False, False, False),
        ("postgresql://127.0.0.1:1/none", False, False, True, True),
    ],
)
def test_each_backend_declares_what_the_layers_above_ask(
    tmp_path: Path, spec: str, files: bool, database: bool, schema: bool, notified: bool
) -> None:
    backend = open_backend(spec.format(tmp=tmp_path))  # nothing connects or opens until first use
    assert isinstance(backend, Backend)
    assert isinstance(backend, SessionFiles) is files
    assert isinstance(backend, DatabaseFile) is database
    assert isinstance(backend, SqlSchema) is schema
    assert tail_wakes_on_commit(backend) is notified


def test_dsh_layout_is_a_database_file_too(tmp_path: Path) -> None:
    backend = open_backend(f"sqlite:{tmp_path / 'd.db'}", layout="dsh")
    assert isinstance(backend, DatabaseFile) and not isinstance(backend, SessionFiles)


def test_session_files_name_every_log_and_reopen_sees_new_ones(tmp_path: Path) -> None:
    import asyncio

    from harness.stores.store import SessionStore

    async def go() -> None:
        backend = open_backend(f"jsonl:{tmp_path}", compression="none")
        assert isinstance(backend, SessionFiles)
        async with SessionStore(backend.reopen()) as store:
            for name in ("a", "b/slash"):
                session = await store.create(id=name)
                session.append("turn/start", {"turn": 1})
        files = dict(backend.session_files())
        assert set(files) == {"a", "b/slash"} and all(Path(path).is_file() for path in files.values())
        (tmp_path / "not-ours").mkdir()
        assert set(dict(backend.session_files())) == {"a", "b/slash"}
        await backend.close()

    asyncio.run(go())
