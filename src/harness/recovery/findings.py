"""``Finding``: one difference between the recorded world and the real one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from harness.events.json import snapshot, thaw
from harness.recovery.vocabulary import FindingKind, Severity

__all__ = ["Finding", "finding", "plural"]

_SEVERITIES = tuple(Severity)


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """What changed (``kind``), how much it matters (``severity``), a one-line
    ``summary``, the facts behind it (``evidence``, read-only JSON) and what to do
    (``action``)."""

    kind: FindingKind
    severity: Severity
    summary: str
    evidence: Mapping[str, Any]
    action: str

    @property
    def blocks(self) -> bool:
        """True when the resumed session must not act before someone decides."""
        return self.severity == Severity.BLOCK

    def to_json(self) -> dict[str, Any]:
        """``{kind, severity, summary, evidence, action}`` as plain JSON (the kind and the
        severity as their strings)."""
        return {
            "kind": str(self.kind),
            "severity": str(self.severity),
            "summary": self.summary,
            "evidence": thaw(self.evidence),
            "action": self.action,
        }


def finding(kind: FindingKind, severity: Severity, summary: str, action: str, **evidence: Any) -> Finding:
    """A finding whose evidence (the keyword arguments, which must be JSON) is
    snapshotted as read-only JSON."""
    if severity not in _SEVERITIES:
        raise ValueError(f"severity must be one of {', '.join(_SEVERITIES)}, not {severity!r}")
    return Finding(
        kind=FindingKind(kind),
        severity=Severity(severity),
        summary=" ".join(summary.split()),
        evidence=snapshot(evidence, "evidence"),
        action=" ".join(action.split()),
    )


def plural(count: int, noun: str) -> str:
    """``1 commit``, ``2 commits``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
