"""Approvals (FORMAT §5): the policy in force and who decides a call that changes the world."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol, runtime_checkable

import msgspec

from harness.events.event import Event

__all__ = [
    "ApprovalOutcome",
    "ApprovalRequest",
    "Approver",
    "FixedApprover",
    "Policy",
    "PolicyTracker",
    "policy_in_force",
]

ApprovalOutcome = Literal["allowed-once", "rejected", "cancelled", "unavailable"]
Policy = Literal["ask", "never"]


class ApprovalRequest(msgspec.Struct, frozen=True):
    """One question: may the call ``call_id`` of ``tool_name`` with ``arguments`` run?"""

    id: str
    tool_name: str
    call_id: str
    arguments: str
    reason: str | None = None


@runtime_checkable
class Approver(Protocol):
    """Decides approval requests (a person at a prompt, or a fixed answer when headless)."""

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome: ...


class FixedApprover:
    """Always the same answer: ``allowed-once`` for ``--yes``, ``unavailable`` when no one
    can be asked (a headless run denies)."""

    def __init__(self, outcome: ApprovalOutcome) -> None:
        self.outcome: ApprovalOutcome = outcome

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        return self.outcome


def _policy_of(event: Event) -> Policy | None:
    data = event.data
    policy = data.get("policy") if isinstance(data, Mapping) else None
    return policy if policy in ("ask", "never") else None


def policy_in_force(events: Sequence[Event]) -> Policy:
    """The policy of the latest ``approval/policy`` event (``ask`` when there is none)."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type == "approval/policy":
            policy = _policy_of(event)
            if policy is not None:
                return policy
    return "ask"


class PolicyTracker:
    """``policy_in_force`` folded incrementally: each call reads only the events appended
    since the last one (a loop asks before every world-changing call)."""

    def __init__(self) -> None:
        self._upto = 0
        self._policy: Policy = "ask"

    def current(self, events: Sequence[Event]) -> Policy:
        """The policy in force at the end of ``events`` (the same growing log each call)."""
        if len(events) < self._upto:  # not the log this tracker followed: start over
            self._upto, self._policy = 0, "ask"
        for index in range(self._upto, len(events)):
            event = events[index]
            if event.type == "approval/policy":
                self._policy = _policy_of(event) or self._policy
        self._upto = len(events)
        return self._policy
