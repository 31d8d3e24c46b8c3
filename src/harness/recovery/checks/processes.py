"""External resources: processes ``run_shell`` left running in the background."""

from __future__ import annotations

from collections.abc import Callable

from harness.recovery.findings import Finding, finding
from harness.recovery.history import BackgroundProcess, History
from harness.recovery.procs import ProcessProbe, probe_process
from harness.recovery.vocabulary import FindingKind, Severity

__all__ = ["check_processes"]

REUSE_SLACK_MS = 2000
"""A process that started this long after the result recorded its pid is another one
(the start time is known to about a second)."""


def _command(record: BackgroundProcess) -> str:
    command = record.command or "?"
    return command if len(command) <= 80 else command[:79] + "…"


def _one(record: BackgroundProcess, probe: ProcessProbe) -> Finding:
    evidence = {
        "pid": record.pid,
        "command": record.command,
        "callId": record.call_id,
        "resultSeq": record.result_seq,
        "recordedAt": record.result_time,
        "startedAt": probe.started_ms,
    }
    label = f"Background process {record.pid} (started by `{_command(record)}`, seq {record.result_seq})"
    if not probe.alive:
        return finding(
            FindingKind.BACKGROUND_PROCESS,
            Severity.WARN,
            f"{label} is gone, as processes usually are after a restart.",
            "Tell the model it is no longer running; start it again if the task still needs it.",
            **evidence,
            state="gone",
        )
    if probe.started_ms is not None and probe.started_ms > record.result_time + REUSE_SLACK_MS:
        return finding(
            FindingKind.BACKGROUND_PROCESS,
            Severity.WARN,
            f"{label} is gone: pid {record.pid} now belongs to a process started after it was recorded.",
            f"Tell the model it is no longer running; never signal pid {record.pid}, which is another "
            "program now.",
            **evidence,
            state="reused",
        )
    same = (
        "it started before the pid was recorded"
        if probe.started_ms is not None
        else "its start time is unknown"
    )
    return finding(
        FindingKind.BACKGROUND_PROCESS,
        Severity.INFO,
        f"{label} is still running ({same}).",
        "Check that it is the same program before relying on it or stopping it; after a restart a pid "
        "can belong to another process.",
        **evidence,
        state="running",
    )


def check_processes(history: History, probe: Callable[[int], ProcessProbe] = probe_process) -> list[Finding]:
    """One finding per recorded background pid: ``warn`` when gone or reused, ``info``
    when a process that seems to be the same one still runs."""
    return [_one(history.background[pid], probe(pid)) for pid in sorted(history.background)]
