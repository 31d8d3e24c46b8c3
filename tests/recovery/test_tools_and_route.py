"""Tools removed from the registry or given another schema, and the model route switched,
between runs — each raised, and absent when nothing changed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.recovery import FindingKind, check_world
from harness.tools.base import Tool, ToolContext, ToolOutcome, ToolSpec
from harness.tools.registry import default_tools
from harness.tools.shell import RunShell
from tests.recovery.helpers import (
    MODEL,
    WINDOW,
    OtherRoute,
    agent_turn,
    check,
    kinds,
    make_repo,
    provider,
    restart,
)


class Respecced:
    """A tool with another spec (same name) than the one it wraps."""

    def __init__(self, tool: Tool, spec: ToolSpec) -> None:
        self._tool = tool
        self._spec = spec

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def changes_world(self) -> bool:
        return self._tool.changes_world

    @property
    def exclusive(self) -> bool:
        return self._tool.exclusive

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        return await self._tool.run(arguments, context)


def without(name: str) -> list[Tool]:
    return [tool for tool in default_tools() if tool.spec.name != name]


def replacing(replacement: Tool) -> list[Tool]:
    name = replacement.spec.name
    return [replacement if tool.spec.name == name else tool for tool in default_tools()]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "ws", {"a.txt": "alpha\n"})


@pytest.fixture
def session(ws: Path) -> harness.Session:
    """A stopped session that called read_file and run_shell."""
    live = harness.Session.create()
    agent_turn(live, ws, [("read_file", {"path": "a.txt"}), ("run_shell", {"command": "echo hi"})])
    return restart(live)


def test_the_same_tools_give_no_tool_finding(session: harness.Session, ws: Path) -> None:
    report = check(session, ws)
    assert report.of_kind(FindingKind.TOOL_MISSING) == report.of_kind(FindingKind.TOOL_SCHEMA_CHANGED) == ()


def test_a_called_tool_removed_from_the_registry_is_missing(session: harness.Session, ws: Path) -> None:
    (item,) = check(session, ws, tools=without("run_shell")).of_kind(FindingKind.TOOL_MISSING)
    assert item.severity == "warn"
    assert item.evidence == {
        "tool": "run_shell",
        "calls": 1,
        "lastCallSeq": item.evidence["lastCallSeq"],
        "offeredInHeader": True,
    }
    assert session.events[item.evidence["lastCallSeq"]].data["name"] == "run_shell"


def test_an_offered_tool_never_called_and_removed_is_only_information(
    session: harness.Session, ws: Path
) -> None:
    (item,) = check(session, ws, tools=without("grep")).of_kind(FindingKind.TOOL_MISSING)
    assert (item.severity, item.evidence["tool"], item.evidence["calls"]) == ("info", "grep", 0)


def test_a_tool_with_another_schema_has_changed(session: harness.Session, ws: Path) -> None:
    report = check(session, ws, tools=replacing(RunShell(default_timeout_s=30)))
    (item,) = report.of_kind(FindingKind.TOOL_SCHEMA_CHANGED)
    assert item.severity == "warn"
    assert item.evidence["tool"] == "run_shell"
    assert item.evidence["changed"] == ["description", "parameters"]
    assert item.evidence["headerSeq"] == next(e.seq for e in session.events if e.type == "request/header")
    assert "30" in item.evidence["now"]["parameters"]["properties"]["timeout_s"]["description"]
    assert report.of_kind(FindingKind.TOOL_MISSING) == ()


def test_only_a_new_description_is_named_as_the_change(session: harness.Session, ws: Path) -> None:
    (grep,) = [tool for tool in default_tools() if tool.spec.name == "grep"]
    spec = ToolSpec(grep.spec.name, grep.spec.description + " Now faster.", grep.spec.parameters)
    (item,) = check(session, ws, tools=replacing(Respecced(grep, spec))).of_kind(
        FindingKind.TOOL_SCHEMA_CHANGED
    )
    assert item.evidence["changed"] == ["description"]


def test_the_same_schema_with_keys_in_another_order_has_not_changed(
    session: harness.Session, ws: Path
) -> None:
    (shell,) = [tool for tool in default_tools() if tool.spec.name == "run_shell"]
    shuffled = dict(reversed(list(shell.spec.parameters.items())))
    spec = ToolSpec(shell.spec.name, shell.spec.description, shuffled)
    assert (
        check(session, ws, tools=replacing(Respecced(shell, spec))).of_kind(FindingKind.TOOL_SCHEMA_CHANGED)
        == ()
    )


def test_the_same_route_gives_no_route_finding(session: harness.Session, ws: Path) -> None:
    assert check(session, ws, model=MODEL).of_kind(FindingKind.ROUTE_CHANGED) == ()
    assert check(session, ws).of_kind(FindingKind.ROUTE_CHANGED) == ()  # model None: the recorded one


def test_a_model_switch_is_reported(session: harness.Session, ws: Path) -> None:
    (item,) = check(session, ws, model="m-2").of_kind(FindingKind.ROUTE_CHANGED)
    assert item.severity == "warn"
    assert item.evidence["changed"] == ["model"]
    assert item.evidence["before"] == {"provider": "scripted", "model": MODEL, "contextWindow": WINDOW}
    assert item.evidence["now"] == {"provider": "scripted", "model": "m-2", "contextWindow": WINDOW}


def test_a_provider_switch_is_reported(session: harness.Session, ws: Path) -> None:
    (item,) = check(session, ws, provider_now=OtherRoute([], window=WINDOW)).of_kind(
        FindingKind.ROUTE_CHANGED
    )
    assert (item.severity, item.evidence["changed"]) == ("warn", ["provider"])


def test_a_smaller_context_window_warns_and_a_larger_one_informs(session: harness.Session, ws: Path) -> None:
    (smaller,) = check(session, ws, provider_now=provider(window=WINDOW // 2)).of_kind(
        FindingKind.ROUTE_CHANGED
    )
    assert (smaller.severity, smaller.evidence["changed"]) == ("warn", ["contextWindow"])
    assert "compact" in smaller.action
    (larger,) = check(session, ws, provider_now=provider(window=WINDOW * 2)).of_kind(
        FindingKind.ROUTE_CHANGED
    )
    assert larger.severity == "info"


def test_without_a_provider_the_route_is_not_checked(session: harness.Session, ws: Path) -> None:
    report = check_world(session, ws, default_tools(), None, model="m-2")
    assert report.of_kind(FindingKind.ROUTE_CHANGED) == ()
    assert report.skipped == {"route": "no provider was given"}


def test_a_session_that_never_asked_the_model_has_no_route_to_compare(ws: Path) -> None:
    report = check(restart(harness.Session.create()), ws, model="m-2", tools=without("run_shell"))
    assert kinds(report) == []
