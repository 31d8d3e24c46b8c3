"""Is a recorded pid still the process the log saw? Liveness, plus (on Linux) the
process's start time, which tells a survivor from a later process that reused the pid."""

from __future__ import annotations

import os
from dataclasses import dataclass

from harness.tools.processes import is_running

__all__ = ["ProcessProbe", "probe_process"]


@dataclass(frozen=True, slots=True)
class ProcessProbe:
    """``alive``: a live (not zombie) process has the pid now. ``started_ms``: when that
    process started (epoch ms, about ±1 s), or None when the system does not say."""

    alive: bool
    started_ms: int | None = None


def _boot_time_s() -> int | None:
    try:
        with open("/proc/stat", "rb") as handle:
            for line in handle:
                if line.startswith(b"btime "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _start_ms(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
        fields = raw[raw.rfind(b")") + 2 :].split()
        ticks = int(fields[19])  # field 22 of stat(5): start time in clock ticks after boot
        per_second = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    boot = _boot_time_s()
    if boot is None or per_second <= 0:
        return None
    return boot * 1000 + ticks * 1000 // per_second


def probe_process(pid: int) -> ProcessProbe:
    """What runs under ``pid`` now (see ``ProcessProbe``)."""
    if not is_running(pid):
        return ProcessProbe(alive=False)
    return ProcessProbe(alive=True, started_ms=_start_ms(pid))
