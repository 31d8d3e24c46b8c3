"""Temporary files the session's commands created outside the workspace, gone now.

The log says what ``run_shell`` ran and printed, not what it wrote, so this check reads the
commands and outputs where they tell: a path under a temporary directory (``/tmp``,
``/var/tmp``, ``$TMPDIR``) that a command wrote to (``>``/``>>``, ``tee``, ``touch``,
``mkdir``, ``-o``/``--output``, the last argument of ``cp``/``mv``/``install``/``ln``) or that
a ``mktemp`` printed. Each such path that does not exist now is a ``warn`` finding. A path
inside the workspace is the files check's business, not this one's; a command that later
removed the path (``rm``) settles it.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import tempfile
from pathlib import Path

from harness.recovery.findings import Finding, finding
from harness.recovery.history import History, ShellRun
from harness.recovery.vocabulary import FindingKind, Severity

__all__ = ["check_temp_files", "created_temp_paths"]

MAX_FINDINGS = 20
_WRITERS = {"tee", "touch", "mkdir"}
_COPIERS = {"cp", "mv", "install", "ln"}
_OUTPUT_FLAGS = {"-o", "--output", "--out", "-O"}
_SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")"}
_REDIRECT = re.compile(r"^\d*(>>?|&>>?)(.*)$")


def _temp_roots() -> tuple[str, ...]:
    roots = {"/tmp", "/var/tmp", tempfile.gettempdir()}
    if os.environ.get("TMPDIR"):
        roots.add(os.environ["TMPDIR"].rstrip("/") or "/")
    return tuple(sorted(root.rstrip("/") for root in roots if root))


def _is_temp(path: str, roots: tuple[str, ...]) -> bool:
    return any(path.startswith(f"{root}/") and len(path) > len(root) + 1 for root in roots)


def _words(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return command.split()


def _targets(command: str) -> tuple[list[str], list[str]]:
    """(paths the command writes, paths it removes), in order."""
    written: list[str] = []
    removed: list[str] = []
    words = _words(command)
    segment: list[str] = []
    for index, word in enumerate([*words, ";"]):
        match = _REDIRECT.match(word)
        if match is not None:
            target = match.group(2) or (words[index + 1] if index + 1 < len(words) else "")
            written.append(target)
            continue
        if word in _SEPARATORS:
            if segment:
                _segment(segment, written, removed)
            segment = []
            continue
        segment.append(word)
    return written, removed


def _segment(words: list[str], written: list[str], removed: list[str]) -> None:
    program = os.path.basename(words[0])
    arguments = [word for word in words[1:] if not word.startswith("-")]
    if program in _WRITERS:
        written.extend(arguments)
    elif program in _COPIERS and len(arguments) >= 2:
        written.append(arguments[-1])
    elif program in ("rm", "rmdir", "unlink"):
        removed.extend(arguments)
    for flag, value in itertools.pairwise(words):
        if flag in _OUTPUT_FLAGS:
            written.append(value)


def created_temp_paths(run: ShellRun, roots: tuple[str, ...] | None = None) -> tuple[list[str], list[str]]:
    """(temporary paths ``run`` created, temporary paths it removed), each as written."""
    roots = roots or _temp_roots()
    written, removed = _targets(run.command)
    if "mktemp" in run.command:
        written += [line.strip() for line in run.output.splitlines() if line.strip().startswith("/")]
    keep = [path for path in written if _is_temp(path, roots)]
    gone = [path for path in removed if _is_temp(path, roots)]
    return list(dict.fromkeys(keep)), list(dict.fromkeys(gone))


def check_temp_files(history: History, root: Path) -> list[Finding]:
    """A ``warn`` finding per temporary path a command created that is gone now (at most
    ``MAX_FINDINGS``)."""
    roots = _temp_roots()
    created: dict[str, ShellRun] = {}
    for run in history.shell_runs:
        made, removed = created_temp_paths(run, roots)
        for path in removed:
            created.pop(path, None)
        for path in made:
            created[path] = run
    found: list[Finding] = []
    for path, run in created.items():
        real = os.path.realpath(path)
        if real == str(root) or real.startswith(f"{root}/") or os.path.lexists(path):
            continue
        found.append(
            finding(
                FindingKind.TEMP_FILE_VANISHED,
                Severity.WARN,
                f"{path}, created outside the workspace by the command at seq {run.result_seq} "
                f"(`{run.command[:80]}`), no longer exists.",
                "Anything the session kept there is lost (temporary directories are cleared on reboot): "
                "run the command again if its output is still needed.",
                path=path,
                command=run.command[:500],
                resultSeq=run.result_seq,
                callId=run.call_id,
            )
        )
        if len(found) == MAX_FINDINGS:
            break
    return found
