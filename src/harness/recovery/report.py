"""``WorldReport``: every finding of one ``check_world`` run, and two of its faces: JSON
(for the log and scripts) and the drift message (for the model). The third, a rich
renderable for people, is ``harness.recovery.render.render_report``: the report knows
nothing of its presentation, so reading one never imports ``rich``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from harness.events.json import FrozenDict, thaw
from harness.recovery.findings import Finding
from harness.recovery.message import drift_text, drift_user_message
from harness.recovery.vocabulary import FindingKind, Severity

__all__ = ["REPORT_VERSION", "WorldReport"]

REPORT_VERSION: Final = 1


class WorldReport(msgspec.Struct, frozen=True, kw_only=True):
    """The findings (most severe first), the session and workspace they are about, the
    last seq the check read (``at_seq``; -1 for an empty log) and the checks that could
    not run, with why (``skipped``)."""

    session: str
    workspace: str
    at_seq: int
    findings: tuple[Finding, ...]
    skipped: Mapping[str, str] = msgspec.field(default_factory=dict)

    @property
    def blocking(self) -> bool:
        """True when a finding blocks: ask before the session acts again."""
        return any(item.severity == Severity.BLOCK for item in self.findings)

    def counts(self) -> dict[Severity, int]:
        """Findings per severity (every severity present, zero included)."""
        counts: dict[Severity, int] = dict.fromkeys(Severity, 0)
        for item in self.findings:
            counts[item.severity] += 1
        return counts

    def of_kind(self, kind: FindingKind) -> tuple[Finding, ...]:
        """The findings of one kind, in report order."""
        return tuple(item for item in self.findings if item.kind == kind)

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON (the data of a ``recovery/check`` event)."""
        return {
            "version": REPORT_VERSION,
            "session": self.session,
            "workspace": self.workspace,
            "atSeq": self.at_seq,
            "blocking": self.blocking,
            "counts": {str(level): count for level, count in self.counts().items()},
            "skipped": thaw(self.skipped),
            "findings": [item.to_json() for item in self.findings],
        }

    def drift_message(self) -> str | None:
        """What changed in the world, as text for the model; None when nothing drifted."""
        return drift_text(self.findings)

    def drift_user_message(self) -> FrozenDict | None:
        """``drift_message`` as a ``user/message`` payload with the recovery plugin source."""
        return drift_user_message(self.findings)
