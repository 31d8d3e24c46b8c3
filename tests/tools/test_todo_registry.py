"""todo_write records the whole list; the registry keeps order and refuses duplicates."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harness.tools import Tool, ToolRegistry, default_registry, default_tools
from harness.tools.base import ToolContext, ToolError, ToolOutcome, ToolSpec
from harness.tools.grep import Grep
from harness.tools.list_dir import ListDir
from harness.tools.todo_write import TodoWrite

from .helpers import Recorded, context, refusal, run

EXPECTED = [
    ("read_file", False, False),
    ("write_file", True, True),
    ("edit_file", True, True),
    ("list_dir", False, False),
    ("grep", False, False),
    ("run_shell", True, True),
    ("todo_write", False, True),
]


def test_todo_write_records_the_whole_list(tmp_path: Path) -> None:
    recorded: Recorded = []
    todos = [
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress"},
        {"content": "run the tests", "status": "pending"},
    ]
    outcome = run(TodoWrite(), {"todos": todos}, tmp_path, recorded)
    assert recorded == [("todo/write", {"todos": todos})]
    assert outcome.text.splitlines() == [
        "Todo list saved: 3 items (1 completed, 1 in progress, 1 pending).",
        "[x] read the code",
        "[>] fix the bug",
        "[ ] run the tests",
    ]
    assert outcome.meta is None and not outcome.is_error
    run(TodoWrite(), {"todos": []}, tmp_path, recorded)
    assert recorded[-1] == ("todo/write", {"todos": []})


def test_todo_write_refusals_record_nothing(tmp_path: Path) -> None:
    recorded: Recorded = []
    for todos in (
        [{"content": "x", "status": "done"}],
        [{"content": "", "status": "pending"}],
        [{"content": "x"}],
        [{"content": "x", "status": "pending", "priority": "high"}],
        "x",
    ):
        with pytest.raises(ToolError) as caught:
            run(TodoWrite(), {"todos": todos}, tmp_path, recorded)
        assert caught.value.code == "INVALID_ARGUMENTS"
    refusal(
        TodoWrite(max_items=1),
        {"todos": [{"content": "a", "status": "pending"}] * 2},
        tmp_path,
        "INVALID_ARGUMENTS",
    )
    assert recorded == []


def test_default_tools_follow_the_protocol() -> None:
    tools = default_tools()
    assert [(t.spec.name, t.changes_world, t.exclusive) for t in tools] == EXPECTED
    assert all(isinstance(tool, Tool) for tool in tools)


class Dummy:
    """A minimal tool for registry tests."""

    changes_world = False
    exclusive = False

    def __init__(self, name: str, parameters: dict[str, Any] | None = None) -> None:
        self.spec = ToolSpec(name, "A test tool.", parameters or {"type": "object", "properties": {}})

    async def run(self, arguments: Any, context: ToolContext) -> ToolOutcome:
        return ToolOutcome("ok")


def test_registry_order_lookup_and_refusals() -> None:
    registry = default_registry()
    assert registry.names() == [name for name, _, _ in EXPECTED]
    specs = registry.specs()
    assert [spec["name"] for spec in specs] == registry.names()
    assert all(set(spec) == {"name", "description", "parameters"} for spec in specs)
    specs[0]["parameters"]["type"] = "mutated"
    assert registry.specs()[0]["parameters"]["type"] == "object"
    assert "grep" in registry and registry.get("nope") is None
    grep = registry.get("grep")
    assert grep is not None and grep.spec.name == "grep"
    assert [tool.spec.name for tool in registry] == registry.names() and len(registry) == 7
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Grep())
    with pytest.raises(ValueError, match="tool name"):
        ToolRegistry([Dummy("has space")])
    with pytest.raises(ValueError, match="type 'object'"):
        ToolRegistry([Dummy("x", {"type": "string"})])
    extra = ToolRegistry([Dummy("b"), Dummy("a")])
    assert extra.names() == ["b", "a"]


def test_read_only_walks_stop_on_cancel(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x\n")

    async def scenario(tool: Tool, arguments: dict[str, Any]) -> str:
        ctx: ToolContext = context(tmp_path)
        ctx.cancel.set()
        with pytest.raises(ToolError) as caught:
            await tool.run(arguments, ctx)
        return caught.value.code

    assert asyncio.run(scenario(Grep(), {"pattern": "x"})) == "CANCELLED"
    assert asyncio.run(scenario(ListDir(), {})) == "CANCELLED"


def test_a_bad_tool_spec_is_a_typed_harness_error_and_still_a_value_error() -> None:
    """``except harness.HarnessError`` catches every refusal of ``register``; old callers
    catching ``ValueError`` still do."""
    from harness.errors import HarnessError
    from harness.tools import InvalidToolSpec

    for tool in (Dummy("has space"), Dummy(""), Dummy("x" * 65), Dummy("x", {"type": "string"})):
        with pytest.raises(InvalidToolSpec) as refused:
            ToolRegistry([tool])
        assert isinstance(refused.value, HarnessError) and isinstance(refused.value, ValueError)
