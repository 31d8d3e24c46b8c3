"""Lower layers never import upper ones (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "harness"
# Each layer may import itself and the layers listed before it.
LAYERS = [
    "errors",
    "events",
    "messages",
    "surface",
    "session",
    "stores",
    "tools",
    "providers",
    "compaction",
    "recovery",
    "agent",
]
TOP = {"cli", "demo", "testing"}


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


def test_every_layer_has_sources() -> None:
    present = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in SOURCES}
    assert present >= set(LAYERS) - {"compaction", "recovery"}  # these land with their issues
