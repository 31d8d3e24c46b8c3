"""Finding and ending the processes a ``run_shell`` command started.

Each command runs as the leader of a new session (``start_new_session``), so its pid is
also its process-group id and session id. The members are the live (not zombie)
processes in that group or that session: a background job that moved to its own group
(job control) is still found through the session; one that called ``setsid`` itself is
not. Linux reads ``/proc``; elsewhere ``ps`` is asked for the group only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

__all__ = ["is_running", "kill_members", "session_members"]


def session_members(leader: int) -> list[int]:
    """Live pids in the process group or session led by ``leader``, sorted."""
    if os.path.isdir("/proc/self"):
        return _from_proc(leader)
    return _from_ps(leader)


def is_running(pid: int) -> bool:
    """True when ``pid`` names a live process (a zombie counts as gone)."""
    if os.path.isdir("/proc/self"):
        fields = _proc_stat(pid)
        return fields is not None and fields[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_members(leader: int) -> None:
    """SIGKILL the whole process group of ``leader`` and every other session member."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)
    for pid in session_members(leader):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].decode("ascii", errors="replace").split()


def _from_proc(leader: int) -> list[int]:
    members: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _proc_stat(int(name))
        if fields is None or len(fields) < 4 or fields[0] in ("Z", "X"):
            continue
        group, session = int(fields[2]), int(fields[3])
        if group == leader or session == leader:
            members.append(int(name))
    return sorted(members)


def _from_ps(leader: int) -> list[int]:
    try:
        listing = subprocess.run(
            ["ps", "-A", "-o", "pid=,pgid=,stat="], capture_output=True, text=True, check=False, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    members: list[int] = []
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == str(leader) and not parts[2].startswith("Z"):
            members.append(int(parts[0]))
    return sorted(members)
