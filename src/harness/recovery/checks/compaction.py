"""Compactions that started and never ended."""

from __future__ import annotations

from harness.recovery.findings import Finding, finding
from harness.recovery.history import Compaction, History
from harness.recovery.vocabulary import FindingKind, Severity

__all__ = ["check_compactions"]


def _orphan(compaction: Compaction, end_seed: int | None) -> Finding:
    committed = compaction.summary_seq is not None
    what = (
        f"its summary was committed at seq {compaction.summary_seq}, so the Surface was replaced; only the "
        "end marker is missing"
        if committed
        else "no summary was committed, so nothing was replaced"
    )
    evidence = {
        "compactionId": compaction.id,
        "startSeq": compaction.start_seq,
        "turn": compaction.turn,
        "summarySeq": compaction.summary_seq,
        "endSeedSeq": end_seed,
    }
    if end_seed is not None and compaction.start_seq < end_seed:
        return finding(
            FindingKind.COMPACTION_ORPHAN,
            Severity.INFO,
            f"Compaction {compaction.id} (seq {compaction.start_seq}) never ended: {what}. The restart at "
            f"seq {end_seed} made it stale.",
            "Nothing to undo; a new compaction may start.",
            **evidence,
        )
    return finding(
        FindingKind.COMPACTION_ORPHAN,
        Severity.WARN,
        f"Compaction {compaction.id} (seq {compaction.start_seq}) has not ended and no restart followed it: "
        f"{what}.",
        "Another worker may still be compacting this session: do not start a second compaction until it "
        "ends or the session is restored.",
        **evidence,
    )


def check_compactions(history: History) -> list[Finding]:
    """One finding per ``compaction/start`` without a ``compaction/end`` of the same id:
    ``info`` when a later ``session/end-seed`` made it stale, ``warn`` when none did."""
    found: list[Finding] = []
    for compaction in history.compactions.values():
        if compaction.end_seq is not None:
            continue
        later_seeds = [seq for seq in history.end_seeds if seq > compaction.start_seq]
        found.append(_orphan(compaction, later_seeds[0] if later_seeds else None))
    return found
