"""The event-type registry (issue 35, item 3): one entry per type, every dispatch table checked
against it, and nothing the code writes or dsh knows left without an entry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from harness.events.types import EVENT_TYPES, Aspect, Hooks, Origin, Role, event_type, hook_tables
from harness.events.vocabulary import KNOWN_EVENT_TYPES, LEGACY_REFUSED_TYPES, SURFACE_TYPES

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "harness"
TYPE_NAME = re.compile(r"^[a-z][a-z-]*(/[a-z-]+)+$")
NOT_EVENT_TYPES = ("application/", "text/", "image/")  # media types
# The modules that own an aspect's table; importing them fills the tables.
DISPATCHERS = (
    "harness.query.text",
    "harness.present.summary",
    "harness.telemetry.projection",
    "harness.cli.live",
)


def _import_dispatchers() -> None:
    import importlib

    for module in DISPATCHERS:
        importlib.import_module(module)


def test_every_type_dsh_knows_has_an_entry_from_dsh() -> None:
    """The list in docs/format.md §2 (dsh's generated vocabulary) and the registry agree."""
    text = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")
    block = text.split("**Known types.**", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    listed = set(block.split())
    assert len(listed) == 48
    dsh = {name for name, entry in EVENT_TYPES.items() if entry.origin is Origin.DSH}
    assert listed == dsh
    assert listed == KNOWN_EVENT_TYPES


def _type_literal(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and TYPE_NAME.match(node.value):
        return node.value
    return None


def _written_types() -> dict[str, str]:
    """Each event type the code names: the first argument of an ``append`` call, or an
    upper-case constant holding a ``family/name`` string, with where it was found."""
    found: dict[str, str] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name: str | None = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
                name = _type_literal(node.args[0]) if node.func.attr == "append" else None
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id.lstrip("_").isupper() for t in targets):
                    name = _type_literal(node.value)
            if name is not None and not name.startswith(NOT_EVENT_TYPES):
                found.setdefault(name, f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}")
    return found


def test_every_type_the_code_writes_has_an_entry() -> None:
    written = _written_types()
    assert {"turn/start", "tool/result", "workspace/baseline", "recovery/check"} <= set(written)
    missing = {name: where for name, where in written.items() if name not in EVENT_TYPES}
    assert not missing, f"event types written without a registry entry: {missing}"


def test_harness_own_types_are_written_ignorable_and_not_known_to_dsh() -> None:
    from harness.recovery.vocabulary import RECOVERY_CHECK, WORKSPACE_BASELINE

    for name in (RECOVERY_CHECK, WORKSPACE_BASELINE):
        entry = event_type(name)
        assert entry is not None and entry.origin is Origin.HARNESS
        assert name not in KNOWN_EVENT_TYPES


def test_the_reader_sets_come_from_the_registry() -> None:
    assert {"user/message", "assistant/message", "tool/result"} == SURFACE_TYPES
    assert {"request/header-delta", "mode/set"} == LEGACY_REFUSED_TYPES
    for name in SURFACE_TYPES:
        assert EVENT_TYPES[name].role is Role.SURFACE
    assert event_type("no/such-type") is None


def test_every_aspect_has_one_table_and_every_declared_hook() -> None:
    _import_dispatchers()
    tables = hook_tables()
    assert set(tables) == set(Aspect)
    for aspect, table in tables.items():
        assert table.missing() == [], f"{aspect}: declared in the registry with no hook"
        declared = {n for n, e in EVENT_TYPES.items() if e.has(aspect)}
        assert table.types() == declared


def test_a_hook_for_an_unknown_type_or_an_undeclared_aspect_is_refused() -> None:
    _import_dispatchers()
    table = hook_tables()[Aspect.TEXT]
    with pytest.raises(KeyError, match="not in the event-type registry"):
        table.register("tool/resutl")
    with pytest.raises(ValueError, match="does not declare the text aspect"):
        table.register("turn/start")
    with pytest.raises(ValueError, match="already has its table"):
        Hooks(Aspect.TEXT)
    assert table.get("turn/start") is None


def test_retired_types_have_no_aspects_and_dsh_only_types_show_as_pairs() -> None:
    from harness.events.event import Event
    from harness.present.summary import event_summary

    for name in LEGACY_REFUSED_TYPES:
        assert EVENT_TYPES[name].aspects == frozenset()
    event = Event.create("team/task", 0, 0, {"id": "t1", "status": "done"})
    assert event_summary(event) == "id=t1, status=done"


def test_the_registry_is_reachable_from_the_events_package() -> None:
    import harness.events

    assert harness.events.EVENT_TYPES is EVENT_TYPES
    assert harness.events.event_type("tool/call") is EVENT_TYPES["tool/call"]
    assert "EventType" in harness.events.__all__
