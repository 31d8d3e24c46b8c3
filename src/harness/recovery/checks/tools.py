"""Tools: used in the history but not offered now, or offered with another schema than
the request header in force recorded."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.events.json import thaw
from harness.recovery.findings import Finding, finding, plural
from harness.recovery.history import History
from harness.recovery.vocabulary import FindingKind, Severity
from harness.tools.base import Tool

__all__ = ["canonical_json", "check_tools"]


def _numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(key): _numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers(item) for item in value]
    return value


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, no spaces and integral floats as integers: equal strings
    mean the same JSON value, whatever the key order."""
    return json.dumps(_numbers(thaw(value)), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def check_tools(history: History, tools: Mapping[str, Tool]) -> list[Finding]:
    """Missing tools (``warn`` when the history called them, ``info`` when only the header
    offered them) and changed schemas (``warn``). MCP tools are left to the MCP check,
    which knows their server."""
    found: list[Finding] = []
    offered: dict[str, Mapping[str, Any]] = {}
    mcp = history.mcp_tools
    if history.header is not None:
        for spec in history.header.tools:
            name = spec.get("name") if isinstance(spec, Mapping) else None
            if isinstance(name, str) and name not in mcp:
                offered[name] = spec
    for name, seqs in history.tool_calls.items():
        if name in tools or name in mcp:
            continue
        found.append(
            finding(
                FindingKind.TOOL_MISSING,
                Severity.WARN,
                f"The session called {name} {plural(len(seqs), 'time')} (last at seq {seqs[-1]}), but "
                "no tool of that name is available now.",
                "Tell the model the tool is gone (a call to it will be refused), or restore the tool.",
                tool=name,
                calls=len(seqs),
                lastCallSeq=seqs[-1],
                offeredInHeader=name in offered,
            )
        )
    for name in offered:
        if name in tools or name in history.tool_calls:
            continue
        found.append(
            finding(
                FindingKind.TOOL_MISSING,
                Severity.INFO,
                f"The last request offered {name}, which is not available now (the session never called it).",
                "Nothing to do; the next request header lists the tools offered now.",
                tool=name,
                calls=0,
                lastCallSeq=None,
                offeredInHeader=True,
            )
        )
    for name, spec in offered.items():
        tool = tools.get(name)
        if tool is None:
            continue
        current = tool.spec.to_json()
        changed = [
            part
            for part in ("description", "parameters")
            if canonical_json(spec.get(part)) != canonical_json(current.get(part))
        ]
        if not changed:
            continue
        found.append(
            finding(
                FindingKind.TOOL_SCHEMA_CHANGED,
                Severity.WARN,
                f"{name} has a different {' and '.join(changed)} than in the request header of seq "
                f"{history.header_seq}.",
                "The next request sends the new schema; earlier calls in the history follow the old one, "
                "so check that they still mean the same.",
                tool=name,
                changed=changed,
                headerSeq=history.header_seq,
                before={part: thaw(spec.get(part)) for part in changed},
                now={part: current.get(part) for part in changed},
            )
        )
    return found
