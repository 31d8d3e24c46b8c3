"""The public API (issue 12, item 8): every public name is importable from ``harness`` and from its
subpackage, the heavy dependencies load only when a name that needs them is used, and the lazy
lists agree with the ``TYPE_CHECKING`` imports that type checkers and IDEs read."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import harness
import harness.errors

PACKAGE = Path(harness.__file__).resolve().parent
HEAVY = (
    "psycopg",
    "psycopg_pool",
    "openai",
    "httpx",
    "typer",
    "click",
    "rich",
    "zstandard",
    "opentelemetry",
    "google.protobuf",
    "langgraph",
    "langchain_core",  # harness.integrations.langgraph only
    "google.adk",
)
SUBPACKAGES = (
    "harness.events",
    "harness.messages",
    "harness.surface",
    "harness.session",
    "harness.stores",
    "harness.tools",
    "harness.providers",
    "harness.compaction",
    "harness.recovery",
    "harness.query",
    "harness.search",
    "harness.telemetry",
    "harness.agent",
)
# the applications and test aids, not the library: not aggregated into harness
APPLICATIONS = (
    "harness.__main__",
    "harness.cli",
    "harness.demos",
    "harness.present",
    "harness.testing",
    "harness.viewer",
)


def fresh_python(code: str) -> str:
    """Run ``code`` in a new interpreter (nothing imported yet) and return its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def loaded_heavy(statement: str) -> list[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    loaded: list[str] = json.loads(fresh_python(code))
    return loaded


def test_the_names_a_newcomer_looks_for_import_from_harness() -> None:
    from harness import (  # noqa: F401
        Agent,
        CompactionPolicy,
        DeepSeekProvider,
        ExtractiveSummarizer,
        FixedApprover,
        HarnessError,
        JsonlBackend,
        LlmSummarizer,
        MemoryBackend,
        PostgresBackend,
        Provider,
        SessionStore,
        SqliteBackend,
        StoredLog,
        Tool,
        TurnOutcome,
        Workspace,
        WorldReport,
        check_world,
        compact,
        read_session_file,
        select_compactable_range,
    )


def test_import_harness_loads_no_heavy_dependency() -> None:
    assert loaded_heavy("import harness") == []


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_importing_a_subpackage_loads_no_heavy_dependency(package: str) -> None:
    assert loaded_heavy(f"import {package}") == []


def test_the_storage_core_needs_no_backend_dependency() -> None:
    assert loaded_heavy("from harness import SessionStore, MemoryBackend, check_world, compact") == []


@pytest.mark.parametrize(
    ("name", "module"),
    [("PostgresBackend", "psycopg"), ("DeepSeekProvider", "openai"), ("JsonlBackend", "zstandard")],
)
def test_a_heavy_dependency_loads_with_the_name_that_needs_it(name: str, module: str) -> None:
    assert module in loaded_heavy(f"from harness import {name}")


def test_catching_a_provider_config_error_loads_no_http_client() -> None:
    """``ProviderConfigError`` is in ``harness.errors``: ``except harness.ProviderConfigError``
    (or importing it from the provider package) must not pull in ``openai``."""
    assert loaded_heavy("from harness import ProviderConfigError") == []
    assert loaded_heavy("from harness.providers import ProviderConfigError") == []
    from harness.providers.deepseek import ProviderConfigError  # the old home still works

    assert ProviderConfigError is harness.errors.ProviderConfigError is harness.ProviderConfigError
    assert issubclass(ProviderConfigError, harness.HarnessError)


def test_a_provider_author_finds_the_retrying_provider_protocol() -> None:
    from harness import DeepSeekProvider, RetryingProvider

    assert isinstance(DeepSeekProvider("http://127.0.0.1:9", api_key="sk-unused"), RetryingProvider)


def test_every_name_in_all_resolves_in_a_fresh_interpreter() -> None:
    code = (
        "import harness, json\n"
        "missing = []\n"
        "for name in harness.__all__:\n"
        "    try:\n"
        "        getattr(harness, name)\n"
        "    except Exception as error:\n"
        "        missing.append(f'{name}: {error!r}')\n"
        "print(json.dumps(missing))"
    )
    assert json.loads(fresh_python(code)) == []
    assert len(harness.__all__) == len(set(harness.__all__))


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_a_subpackage_exports_its_names_and_harness_exports_them_too(package: str) -> None:
    module = importlib.import_module(package)
    names = module.__all__
    assert names and len(names) == len(set(names))
    for name in names:
        value = getattr(module, name)
        assert name in harness.__all__, f"{package}.{name} is not exported by harness"
        assert getattr(harness, name) is value, name
        assert name in dir(module) and name in dir(harness)


def library_modules() -> list[ModuleType]:
    found = []
    for info in pkgutil.walk_packages([str(PACKAGE)], "harness."):
        if not info.name.startswith(APPLICATIONS):
            found.append(importlib.import_module(info.name))
    return found


def test_the_whole_error_tree_is_exported() -> None:
    assert set(harness.errors.__all__) <= set(harness.__all__)
    public_errors = {
        value
        for module in library_modules()
        for name, value in vars(module).items()
        if not name.startswith("_")
        and isinstance(value, type)
        and issubclass(value, harness.HarnessError)
    }
    for error in public_errors:
        assert getattr(harness, error.__name__, None) is error, f"{error.__module__}.{error.__name__}"


def test_every_exported_exception_is_a_harness_error() -> None:
    """``except harness.HarnessError`` catches every refusal the library exports; ``ToolError``
    alone is not one: a tool raises it to tell the model, and the loop turns it into a result."""
    outside = {
        name
        for name in harness.__all__
        if isinstance(value := getattr(harness, name), type)
        and issubclass(value, BaseException)
        and not issubclass(value, harness.HarnessError)
    }
    assert outside == {"ToolError"}


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'SessionStor'"):
        _ = harness.SessionStor  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        from harness.stores import SessionStor  # type: ignore[attr-defined]  # noqa: F401


def type_checking_imports(path: Path) -> dict[str, set[str]]:
    """``module -> names`` of the ``from module import names`` under ``if TYPE_CHECKING:``."""
    found: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module, ast.dump(statement)
                found.setdefault(statement.module, set()).update(alias.name for alias in statement.names)
    return found


def eager_imports(path: Path) -> set[str]:
    return {
        alias.name
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness.")
        for alias in node.names
        if node.module != "harness._lazy"
    }


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_a_lazy_list_agrees_with_its_type_checking_imports(package: str) -> None:
    module = importlib.import_module(package)
    path = Path(module.__file__ or "")
    checked = type_checking_imports(path)
    lazy = getattr(module, "_EXPORTS", None)
    if lazy is None:  # an eager package: what it imports is what it exports
        assert not checked
        assert eager_imports(path) == set(module.__all__)
        return
    assert {name: set(names) for name, names in lazy.items()} == checked
    assert set(module.__all__) == {name for names in checked.values() for name in names}
    assert not eager_imports(path)


def test_harness_aggregates_every_subpackage() -> None:
    """harness star-imports the eager packages, and the lazy ones under TYPE_CHECKING (for type
    checkers and IDEs) exactly where it loads them on first use at run time."""
    path = PACKAGE / "__init__.py"
    eager = {
        node.module
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom) and [alias.name for alias in node.names] == ["*"]
    }
    checked = type_checking_imports(path)
    assert all(names == {"*"} for names in checked.values())
    lazy = {package.__name__ for package in harness._LAZY_PACKAGES}
    assert set(checked) == lazy
    assert eager | lazy == {*SUBPACKAGES, "harness.errors"}
    assert not eager & lazy


def test_every_package_declares_all() -> None:
    for init in sorted(PACKAGE.rglob("__init__.py")):
        targets = [
            target
            for node in ast.parse(init.read_text(encoding="utf-8")).body
            for target in (node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)])
        ]
        declared = any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets)
        assert declared, f"{init.relative_to(PACKAGE.parent)} has no __all__"
