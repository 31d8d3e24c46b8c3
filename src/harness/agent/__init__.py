"""The agent loop: turns and steps over a Session, a Provider and tools (SPEC §6); approvals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import exported_names, lazy_exports

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.agent.approval import ApprovalOutcome as ApprovalOutcome
    from harness.agent.approval import ApprovalRequest as ApprovalRequest
    from harness.agent.approval import Approver as Approver
    from harness.agent.approval import FixedApprover as FixedApprover
    from harness.agent.approval import policy_in_force as policy_in_force
    from harness.agent.loop import Agent as Agent
    from harness.agent.loop import AgentSettings as AgentSettings
    from harness.agent.loop import TurnOutcome as TurnOutcome

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

if not TYPE_CHECKING:  # at run time: the table's names, each imported on first use (PEP 562)
    __all__ = exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
