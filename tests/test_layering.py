"""Lower layers never import upper ones, and no harness modules import each other in a cycle
(docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "harness"
# Each layer may import itself and the layers listed before it.
LAYERS = [
    "_lazy",  # the lazy re-export helper of package __init__ modules: imports nothing of harness
    "errors",
    "events",
    "messages",
    "surface",
    "session",
    "stores",
    "query",  # beside compaction and recovery: reads the log and the store, below the agent
    "search",  # the full-text index of a store: query's rules over an FTS5 / tsvector index
    "tools",
    "providers",
    "compaction",
    "recovery",
    "telemetry",  # the log as OpenTelemetry spans: reads events (and compaction's redact), below the agent
    "agent",
    "integrations",  # harness as another framework's store: each module needs its optional extra
    "present",  # events and sessions as text, shared by the two front ends below
]
TOP = {"cli", "demos", "testing", "viewer"}
# The front ends: each may import the ones before it (the CLI serves the viewer), never after.
FRONT_ENDS = ["viewer", "cli"]


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("harness"))
    return found


SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE or p.stem in LAYERS)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_lower_layers(path: Path) -> None:
    own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    if own in TOP or own not in LAYERS:
        return
    allowed = set(LAYERS[: LAYERS.index(own) + 1])
    for module in imported_modules(path):
        layer = layer_of(module)
        assert layer in allowed, (
            f"{path.relative_to(PACKAGE)} imports {module} (layer {layer!r} is above {own!r})"
        )


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_front_ends_import_no_front_end_above_them(path: Path) -> None:
    own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    if own not in FRONT_ENDS:
        return
    above = set(FRONT_ENDS[FRONT_ENDS.index(own) + 1 :])
    for module in imported_modules(path):
        where = path.relative_to(PACKAGE)
        assert layer_of(module) not in above, f"{where} imports {module} (the {own} is below it)"


def test_every_layer_has_sources() -> None:
    present = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in SOURCES}
    assert present >= set(LAYERS)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def import_edges(name: str) -> set[str]:
    """The harness modules ``name`` imports anywhere in its text: at the top, inside functions
    and under ``TYPE_CHECKING`` (a cycle through type hints is still two modules that cannot be
    understood apart). ``from harness.x import y`` is an edge to the module ``harness.x.y`` when
    there is one, else to the package ``harness.x`` (its ``__init__``); the parent packages Python
    initialises on the way are not edges."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in MODULES else module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {module for module in found if module in MODULES and module != name}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                child = pending.pop()
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_import_cycles() -> None:
    graph = {name: import_edges(name) for name in MODULES}
    cycles = import_cycles(graph)
    assert not cycles, "modules that import each other (directly or around a loop): " + "; ".join(
        " <-> ".join(cycle) for cycle in cycles
    )


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_relative_and_package_imports_are_edges() -> None:
    edges = import_edges("harness.stores.jsonl")
    assert "harness.stores.jsonl.backend" in edges
