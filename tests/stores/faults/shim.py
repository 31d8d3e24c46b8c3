"""The ``hfault`` LD_PRELOAD shim (``shim.c``): built here with the system compiler, driven by
environment variables and a control file, its injected faults read back from its log.

A test runs the code under test in a subprocess whose environment ``Shim.env`` gives: the
shim preloaded, faults confined to files under ``path``, rules from ``rules`` and from the
control file (``arm`` rewrites it; the shim re-reads it when it changes and restarts its
counters). Without a C compiler the tests skip with the reason, except under ``CI=true``,
where they fail.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(__file__).with_name("shim.c")
CACHE = Path(__file__).resolve().parents[3] / ".cache" / "hfault"


def need(condition: bool, reason: str) -> None:
    """Skip unless ``condition``; under ``CI=true`` fail instead (CI must run these tests)."""
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def build() -> Path:
    """The shared object, compiled once per source version (cached under ``.cache/hfault``)."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    need(compiler is not None, "the fault-injection shim needs a C compiler (apt-get install gcc)")
    assert compiler is not None
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    target = CACHE / f"hfault-{digest}.so"
    if not target.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        command = [compiler, "-shared", "-fPIC", "-O1", "-Wall", "-o", str(partial), str(SOURCE), "-ldl"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise AssertionError(f"building the shim failed: {' '.join(command)}\n{done.stderr}")
        os.replace(partial, target)
    return target


class Shim:
    """One test's use of the shim: faults for files whose path starts with ``match`` (by
    default the data directory ``path``), a control file and a fault log."""

    def __init__(self, library: Path, path: Path, work: Path) -> None:
        self.library = library
        self.path = path
        self.match = str(path)
        self.control = work / "hfault.rules"
        self.log = work / "hfault.log"
        self.control.write_text("")

    def env(self, rules: str = "") -> dict[str, str]:
        """The environment of a process running under the shim."""
        env = dict(os.environ)
        env.update(
            LD_PRELOAD=str(self.library),
            HFAULT_PATH=self.match,
            HFAULT_RULES=rules,
            HFAULT_CONTROL=str(self.control),
            HFAULT_LOG=str(self.log),
        )
        return env

    def arm(self, rules: str) -> None:
        """Replace the control file's rules (the shim counts calls afresh from here)."""
        temp = self.control.with_suffix(".tmp")
        temp.write_text(rules + "\n")
        os.replace(temp, self.control)

    def faults(self) -> list[list[str]]:
        """The injected faults so far: ``[op, count, errno, mode, path]`` each."""
        if not self.log.exists():
            return []
        return [line.split(" ", 4) for line in self.log.read_text().splitlines() if line]
