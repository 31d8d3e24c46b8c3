"""The event type vocabulary of DeepSeek Harness format v0 (FORMAT §2)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "KNOWN_EVENT_TYPES",
    "LEGACY_REFUSED_TYPES",
    "MESSAGE_EVENT_TYPES",
    "SURFACE_TYPES",
]

SURFACE_TYPES: Final = frozenset({"user/message", "assistant/message", "tool/result"})
"""Types that are Surface nodes: they must carry a surface op; no other type may."""

MESSAGE_EVENT_TYPES: Final = SURFACE_TYPES

LEGACY_REFUSED_TYPES: Final = frozenset({"request/header-delta", "mode/set"})
"""Retired types: refused on load (both) and on append/seed (``request/header-delta``)."""

KNOWN_EVENT_TYPES: Final = frozenset(
    {
        "agent-preset/selected",
        "agent/inbox/spliced",
        "approval/asked",
        "approval/decided",
        "approval/policy",
        "assistant/chunk",
        "assistant/message",
        "command/done",
        "command/run",
        "compaction/end",
        "compaction/prune",
        "compaction/start",
        "compaction/summary",
        "feedback/record",
        "goal/change",
        "hook/invoked",
        "hook/result",
        "llm/retry",
        "llm/retry-started",
        "permission/preset",
        "plan/mode",
        "request/context",
        "request/header",
        "sandbox/mode",
        "schedule/change",
        "session/end-seed",
        "session/title",
        "session/title-llm-request",
        "step/end",
        "step/start",
        "subagent/descriptor",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "todo/write",
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        "tool/call",
        "tool/code-dispatch",
        "tool/code-dispatch-start",
        "tool/result",
        "turn/end",
        "turn/start",
        "user/message",
        "web/deepseek-search-llm-request",
    }
)
"""Types a dsh reader accepts. Anything else must be written with ``ignorable=True``."""
