"""The public API (issue 12, item 8; issue 35): ``harness`` exports the core a person can hold in
mind (at most 160 names, each documented), every other public name is importable from its
subpackage, the heavy dependencies load only when a name that needs them is used, and each
package's one table of lazy names agrees with the ``TYPE_CHECKING`` imports that type checkers and
IDEs read."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import harness
import harness.errors

PACKAGE = Path(harness.__file__).resolve().parent
ROOT = PACKAGE.parents[1]
MAX_NAMES = 160
# harness's __all__ exists at run time only (type checkers read its imports): what it exports
EXPORTED: list[str] = vars(harness)["__all__"]
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
# their names are names of harness, all of them
CORE = ("harness.errors", "harness.events", "harness.messages", "harness.session", "harness.surface")
# the names of harness from these two: the store and the agent a newcomer starts with
STORE_NAMES = {
    "SessionStore",
    "open_store",
    "StoreSpec",
    "SessionInfo",
    "JsonlBackend",
    "SqliteBackend",
    "DshSqliteBackend",
    "PostgresBackend",
    "MemoryBackend",
}
AGENT_NAMES = {
    "Agent",
    "AgentSettings",
    "Approver",
    "ApprovalRequest",
    "ApprovalOutcome",
    "FixedApprover",
    "TurnOutcome",
}
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
        AgentSettings,
        DshSqliteBackend,
        Event,
        FixedApprover,
        HarnessError,
        JsonlBackend,
        MemoryBackend,
        PostgresBackend,
        Session,
        SessionInfo,
        SessionStore,
        SqliteBackend,
        StoreSpec,
        TurnOutcome,
        open_store,
        text_block,
        user_message,
    )


def test_the_other_names_import_from_their_subpackage() -> None:
    from harness.compaction import (  # noqa: F401
        CompactionPolicy,
        ExtractiveSummarizer,
        LlmSummarizer,
        compact,
        select_compactable_range,
    )
    from harness.providers import DeepSeekProvider, Provider  # noqa: F401
    from harness.query import EventFilter, page, window  # noqa: F401
    from harness.recovery import FindingKind, Severity, WorldReport, check_world  # noqa: F401
    from harness.stores import StoredLog, read_session_file  # noqa: F401
    from harness.tools import Tool, Workspace  # noqa: F401

    for name in ("compact", "page", "check_world", "Workspace", "DeepSeekProvider", "read_session_file"):
        assert name not in EXPORTED
        assert not hasattr(harness, name), name


def test_harness_exports_at_most_160_names() -> None:
    """The top level stays small enough to hold in mind (about 6 names of room for the core to grow)."""
    assert len(EXPORTED) <= MAX_NAMES, len(EXPORTED)
    assert len(EXPORTED) == len(set(EXPORTED))


def test_harness_exports_the_core_the_store_and_the_agent() -> None:
    core = [name for package in CORE for name in importlib.import_module(package).__all__]
    assert [
        "__version__",
        *dict.fromkeys(core),
        *harness._EXPORTS["harness.stores"],
        *harness._EXPORTS["harness.agent"],
    ] == EXPORTED
    assert set(harness._EXPORTS["harness.stores"]) == STORE_NAMES
    assert set(harness._EXPORTS["harness.agent"]) == AGENT_NAMES


def documented(value: object) -> bool:
    """A class or function with its own docstring; a constant or a type alias needs none."""
    if inspect.isclass(value):
        return bool((vars(value).get("__doc__") or "").strip())
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        return bool((value.__doc__ or "").strip())
    return True


def test_every_name_of_harness_is_documented() -> None:
    undocumented = [name for name in EXPORTED if not documented(getattr(harness, name))]
    assert undocumented == []


def test_import_harness_loads_no_heavy_dependency() -> None:
    assert loaded_heavy("import harness") == []


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_importing_a_subpackage_loads_no_heavy_dependency(package: str) -> None:
    assert loaded_heavy(f"import {package}") == []


def test_the_storage_core_needs_no_backend_dependency() -> None:
    statement = (
        "from harness import SessionStore, MemoryBackend\n"
        "from harness.recovery import check_world\n"
        "from harness.compaction import compact"
    )
    assert loaded_heavy(statement) == []


@pytest.mark.parametrize(
    ("package", "name", "module"),
    [
        ("harness", "PostgresBackend", "psycopg"),
        ("harness.providers", "DeepSeekProvider", "openai"),
        ("harness", "JsonlBackend", "zstandard"),
    ],
)
def test_a_heavy_dependency_loads_with_the_name_that_needs_it(package: str, name: str, module: str) -> None:
    assert module in loaded_heavy(f"from {package} import {name}")


def test_catching_a_provider_config_error_loads_no_http_client() -> None:
    """``ProviderConfigError`` is in ``harness.errors``: ``except harness.ProviderConfigError``
    (or importing it from the provider package) must not pull in ``openai``."""
    assert loaded_heavy("from harness import ProviderConfigError") == []
    assert loaded_heavy("from harness.providers import ProviderConfigError") == []
    from harness.providers.deepseek import ProviderConfigError  # the old home still works

    assert ProviderConfigError is harness.errors.ProviderConfigError is harness.ProviderConfigError
    assert issubclass(ProviderConfigError, harness.HarnessError)


def test_a_provider_author_finds_the_retrying_provider_protocol() -> None:
    from harness.providers import DeepSeekProvider, RetryingProvider

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
    assert len(EXPORTED) == len(set(EXPORTED))


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_a_subpackage_exports_its_names_and_harness_the_same_objects(package: str) -> None:
    module = importlib.import_module(package)
    names = module.__all__
    assert names and len(names) == len(set(names))
    for name in names:
        value = getattr(module, name)
        assert name in dir(module)
        if package in CORE:
            assert name in EXPORTED, f"{package}.{name} is not exported by harness"
        if name in EXPORTED:
            assert getattr(harness, name) is value, name
            assert name in dir(harness)


def library_modules() -> list[ModuleType]:
    found = []
    for info in pkgutil.walk_packages([str(PACKAGE)], "harness."):
        if not info.name.startswith(APPLICATIONS):
            found.append(importlib.import_module(info.name))
    return found


def test_the_whole_error_tree_is_exported() -> None:
    assert set(harness.errors.__all__) <= set(EXPORTED)
    public_errors = {
        value
        for module in library_modules()
        for name, value in vars(module).items()
        if not name.startswith("_") and isinstance(value, type) and issubclass(value, harness.HarnessError)
    }
    for error in public_errors:  # harness.errors is the tree; a tool's registration errors stay in tools
        package = (
            "harness" if error.__module__ == "harness.errors" else ".".join(error.__module__.split(".")[:2])
        )
        exported = getattr(importlib.import_module(package), error.__name__, None)
        assert exported is error, f"{error.__module__}.{error.__name__} is not exported by {package}"


def test_every_exported_exception_is_a_harness_error() -> None:
    """``except harness.HarnessError`` catches every refusal the library exports; ``ToolError``
    (``harness.tools``) alone is not one: a tool raises it to tell the model, and the loop turns it
    into a result."""
    outside = {
        f"{package}.{name}"
        for package in ("harness", *SUBPACKAGES)
        for name in importlib.import_module(package).__all__
        if isinstance(value := getattr(importlib.import_module(package), name), type)
        and issubclass(value, BaseException)
        and not issubclass(value, harness.HarnessError)
    }
    assert outside == {"harness.tools.ToolError"}


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'SessionStor'"):
        _ = harness.SessionStor  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        from harness.stores import SessionStor  # type: ignore[attr-defined]  # noqa: F401
    with pytest.raises(ImportError):
        from harness import page  # type: ignore[attr-defined]  # noqa: F401


def type_checking_imports(path: Path) -> dict[str, list[ast.alias]]:
    """``module -> names`` of the ``from module import names`` under ``if TYPE_CHECKING:``."""
    found: dict[str, list[ast.alias]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module, ast.dump(statement)
                found.setdefault(statement.module, []).extend(statement.names)
    return found


def literal_all(path: Path) -> bool:
    """True when the module assigns ``__all__`` a list at its top level (type checkers read it)."""
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets)
        for node in ast.parse(path.read_text(encoding="utf-8")).body
    )


def eager_imports(path: Path) -> set[str]:
    return {
        alias.name
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness.")
        for alias in node.names
        if node.module != "harness._lazy"
    }


def package_names() -> list[str]:
    return sorted(
        ".".join(init.relative_to(PACKAGE.parent).parent.parts) for init in PACKAGE.rglob("__init__.py")
    )


@pytest.mark.parametrize("package", package_names())
def test_a_lazy_table_agrees_with_its_type_checking_imports(package: str) -> None:
    """A lazy package keeps one table, ``_EXPORTS``: its ``__all__`` at run time is the table's
    names, and the imports under ``TYPE_CHECKING`` are the same names, each ``Name as Name`` (an
    explicit re-export) unless a literal ``__all__`` re-exports them."""
    module = importlib.import_module(package)
    path = Path(module.__file__ or "")
    checked = type_checking_imports(path)
    table = getattr(module, "_EXPORTS", None)
    if table is None:
        if package in SUBPACKAGES:  # an eager package: what it imports is what it exports
            assert not checked
            assert eager_imports(path) == set(module.__all__)
        return
    if package == "harness":  # the core is star-imported; the table holds the rest
        assert all(isinstance(names, tuple) for names in table.values())
    assert {name: sorted(names) for name, names in table.items()} == {
        name: sorted(alias.name for alias in aliases) for name, aliases in checked.items()
    }
    if not literal_all(path):
        bare = [alias.name for aliases in checked.values() for alias in aliases if alias.asname != alias.name]
        assert bare == [], f"{package}: import these as 'Name as Name' so type checkers re-export them"
    table_names = [name for names in table.values() for name in names]
    if package == "harness":
        assert module.__all__[-len(table_names) :] == table_names
    elif literal_all(path):  # its own order
        assert sorted(module.__all__) == sorted(set(table_names))
    else:
        assert module.__all__ == list(dict.fromkeys(table_names))
        assert not eager_imports(path)


def test_harness_star_imports_the_core_and_tables_the_rest() -> None:
    """harness star-imports the core packages, and imports its other names under TYPE_CHECKING (for
    type checkers and IDEs) exactly where it loads them on first use at run time: from their
    subpackages, which export them too."""
    path = PACKAGE / "__init__.py"
    eager = {
        node.module
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom) and [alias.name for alias in node.names] == ["*"]
    }
    assert eager == set(CORE) == {package.__name__ for package in harness._CORE}
    assert set(harness._EXPORTS) == {"harness.stores", "harness.agent"}
    for package, names in harness._EXPORTS.items():
        assert set(names) <= set(importlib.import_module(package).__all__)
    assert {package.__name__ for package in harness._SUBPACKAGES} == {*SUBPACKAGES, "harness.errors"}


def test_every_package_declares_all() -> None:
    """Each package assigns ``__all__``: a list, or at run time the names of its lazy table."""
    for init in sorted(PACKAGE.rglob("__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        runtime = [
            statement
            for node in tree.body
            if isinstance(node, ast.If) and isinstance(node.test, ast.UnaryOp)
            for statement in node.body
        ]
        targets = [
            target
            for node in [*tree.body, *runtime]
            for target in (node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)])
        ]
        declared = any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets)
        assert declared, f"{init.relative_to(PACKAGE.parent)} has no __all__"


FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def harness_uses(code: str) -> list[tuple[int, str]]:
    """``(line, name)`` of each ``from harness import name`` and ``harness.name`` in ``code``
    (``harness`` bound by ``import harness`` or ``import harness.sub``)."""
    tree = ast.parse(code)
    bound = {
        alias.asname or "harness"
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "harness" or (alias.name.startswith("harness.") and alias.asname is None)
    }
    uses: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "harness" and not node.level:
            uses.extend((node.lineno, alias.name) for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            uses.append((node.lineno, node.attr))
    return uses


def repository_code() -> list[tuple[str, str]]:
    """``(where, code)``: the Python of src, tests, examples and bench, and the python blocks of the
    README and docs/."""
    found = [
        (str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
        for folder in ("src", "tests", "examples", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
    ]
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start(1)) + 1
            found.append((f"{path.relative_to(ROOT)}:{line}", match.group(1)))
    return found


def test_the_repository_uses_only_names_harness_exports() -> None:
    """mypy checks the code; this also reads bench/ and the Python in the README and docs/."""
    allowed = {*EXPORTED, *(info.name for info in pkgutil.iter_modules(harness.__path__))}
    wrong = [
        f"{where} line {line}: harness.{name}"
        for where, code in repository_code()
        for line, name in harness_uses(code)
        if name not in allowed and not name.startswith("_") and where != "tests/test_public_api.py"
    ]
    assert wrong == []
