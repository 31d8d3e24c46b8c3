"""MCP servers: each server the log's ``mcp/connect`` events recorded, against the same
server connected again now (``McpHub.states``).

- unreachable (or no longer configured): ``block`` when a call to one of its tools is of
  unknown outcome in the unsettled turns (its effects cannot be checked through the
  server), ``warn`` otherwise;
- a tool removed: ``warn`` when the session called it, ``info`` when it was only offered;
- a tool whose definition changed (its fingerprint differs): ``warn``;
- another server name or version (``warn``) or protocol version (``info``);
- and, whenever the log used a server, ``info``: MCP session state did not survive (a new
  connection has none of the old one's subscriptions or server-side context).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.recovery.findings import Finding, finding, plural
from harness.recovery.history import History
from harness.recovery.vocabulary import FindingKind, Severity
from harness.tools.mcp.records import McpServerState

__all__ = ["check_mcp", "session_lost"]


def _who(state: McpServerState) -> str:
    if state.server_name is None and state.server_version is None:
        return "an unnamed server"
    return f"{state.server_name or '?'} {state.server_version or '?'}".strip()


def session_lost(history: History) -> list[Finding]:
    """The ``info`` finding that MCP session state did not survive (none without servers)."""
    if not history.mcp:
        return []
    names = sorted(history.mcp)
    return [
        finding(
            FindingKind.MCP_SESSION_LOST,
            Severity.INFO,
            f"MCP session state did not survive the restart: {plural(len(names), 'server')} "
            f"({', '.join(names)}) {'starts' if len(names) == 1 else 'start'} a new session, without the "
            "subscriptions or server-side context of the old one.",
            "Nothing to undo; the model is told, and must set up again any state it relied on.",
            servers=names,
        )
    ]


def _unreachable(history: History, before: McpServerState, now: McpServerState | None) -> Finding:
    offered = {tool.exposed for tool in before.tools}
    unknown = [
        item.call_id
        for item in history.unfinished()
        if item.code == "TOOL_OUTCOME_UNKNOWN" and item.call is not None and item.call.name in offered
    ]
    severity: Severity = Severity.BLOCK if unknown else Severity.WARN
    why = "is no longer configured" if now is None else "cannot be reached"
    summary = f"The MCP server {before.name} (last connected at seq {before.seq}) {why}"
    if now is not None and now.error:
        summary += f": {now.error.splitlines()[0]}"
    if unknown:
        summary += (
            f". {plural(len(unknown), 'call')} to its tools ({', '.join(unknown)}) ended with an "
            "unknown outcome."
        )
        action = (
            "Bring the server back (or restore its configuration) to check what those calls did before "
            "continuing; the model must not repeat them blindly."
        )
    else:
        action = "Start the server or fix its configuration; until then its tools are not offered."
    return finding(
        FindingKind.MCP_SERVER_UNREACHABLE,
        severity,
        summary,
        action,
        server=before.name,
        configured=now is not None,
        error=now.error if now is not None else None,
        connectSeq=before.seq,
        unknownOutcomeCalls=unknown,
    )


def _tools(history: History, before: McpServerState, now: McpServerState) -> list[Finding]:
    found: list[Finding] = []
    for tool in before.tools:
        current = now.tool(tool.name)
        calls = len(history.tool_calls.get(tool.exposed, ()))
        if current is None:
            found.append(
                finding(
                    FindingKind.MCP_TOOL_REMOVED,
                    Severity.WARN if calls else Severity.INFO,
                    f"The MCP server {before.name} no longer lists the tool {tool.name} "
                    f"(offered as {tool.exposed}; the session called it {plural(calls, 'time')}).",
                    "Tell the model the tool is gone (a call to it will be refused), or restore it on "
                    "the server."
                    if calls
                    else "Nothing to do; the next request header lists the tools offered now.",
                    server=before.name,
                    tool=tool.name,
                    exposedAs=tool.exposed,
                    calls=calls,
                )
            )
        elif current.sha256 != tool.sha256:
            found.append(
                finding(
                    FindingKind.MCP_TOOL_SCHEMA_CHANGED,
                    Severity.WARN,
                    f"The tool {tool.name} of the MCP server {before.name} has another definition than at "
                    f"seq {before.seq} (description, schemas or annotations).",
                    "The next request sends the new schema; check that earlier calls in the history still "
                    "mean the same before the model relies on them.",
                    server=before.name,
                    tool=tool.name,
                    exposedAs=tool.exposed,
                    before=tool.sha256,
                    now=current.sha256,
                    readOnlyBefore=tool.read_only,
                    readOnlyNow=current.read_only,
                )
            )
    return found


def _version(before: McpServerState, now: McpServerState) -> list[Finding]:
    identity = (before.server_name, before.server_version) != (now.server_name, now.server_version)
    protocol = before.protocol_version != now.protocol_version
    if not identity and not protocol:
        return []
    parts = []
    if identity:
        parts.append(f"{_who(before)} → {_who(now)}")
    if protocol:
        parts.append(f"protocol {before.protocol_version} → {now.protocol_version}")
    return [
        finding(
            FindingKind.MCP_SERVER_CHANGED,
            Severity.WARN if identity else Severity.INFO,
            f"The MCP server {before.name} reports another version than at seq {before.seq}: "
            f"{'; '.join(parts)}.",
            "Its tools may behave differently now: confirm the new version is intended."
            if identity
            else "Nothing to do; the new connection speaks the newer protocol.",
            server=before.name,
            before=_who(before),
            now=_who(now),
            protocolBefore=before.protocol_version,
            protocolNow=now.protocol_version,
        )
    ]


def check_mcp(history: History, now: Sequence[McpServerState]) -> list[Finding]:
    """Findings for every server the log recorded, against ``now`` (see the module doc)."""
    current = {state.name: state for state in now}
    found: list[Finding] = []
    for name, before in history.mcp.items():
        state = current.get(name)
        if state is None or not state.reachable:
            if before.reachable or state is None:
                found.append(_unreachable(history, before, state))
            continue
        if not before.reachable:
            continue  # never reached before: nothing recorded to compare
        found += _version(before, state)
        found += _tools(history, before, state)
    return found + session_lost(history)
