"""The agent loop: turns and steps over a Session, a Provider and tools (SPEC §6); approvals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.agent.approval import (
        ApprovalOutcome,
        ApprovalRequest,
        Approver,
        FixedApprover,
        policy_in_force,
    )
    from harness.agent.loop import Agent, AgentSettings, TurnOutcome

__all__ = [
    "Agent",
    "AgentSettings",
    "ApprovalOutcome",
    "ApprovalRequest",
    "Approver",
    "FixedApprover",
    "TurnOutcome",
    "policy_in_force",
]

_EXPORTS = {
    "harness.agent.approval": (
        "ApprovalOutcome",
        "ApprovalRequest",
        "Approver",
        "FixedApprover",
        "policy_in_force",
    ),
    "harness.agent.loop": ("Agent", "AgentSettings", "TurnOutcome"),
}

if not TYPE_CHECKING:  # at run time each name is imported on first use (PEP 562)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
