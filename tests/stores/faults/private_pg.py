"""A private PostgreSQL cluster for tests that break the server (restart, stop, kill backends).

The shared server on 5432 is never touched: ``PrivateServer.start`` runs ``initdb`` into a
temporary directory as the ``postgres`` user (``runuser``, when running as root) and
``pg_ctl`` on a free port bound to 127.0.0.1. ``fsync=off`` keeps it fast: these tests are
about connections coming and going, not the server's own durability. Without the binaries
(``/usr/lib/postgresql/<v>/bin`` or ``PG_BIN``) the tests skip, and under ``CI=true`` fail.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from tests.stores.faults.shim import need


def _bin_dir() -> Path | None:
    explicit = os.environ.get("PG_BIN")
    if explicit:
        return Path(explicit)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PrivateServer:
    """One private cluster: ``dsn``, and ``stop``/``start``/``restart`` it at will. With
    ``netns`` it runs inside that network namespace, listening on ``listen`` (a comma-separated
    list of its addresses; ``dsn`` names the first)."""

    def __init__(self, *, netns: str | None = None, listen: str = "127.0.0.1") -> None:
        bin_dir = _bin_dir()
        need(bin_dir is not None and (bin_dir / "pg_ctl").exists(), "no PostgreSQL binaries (set PG_BIN)")
        assert bin_dir is not None
        self.bin = bin_dir
        self.as_postgres: list[str] = []
        if os.geteuid() == 0:
            need(shutil.which("runuser") is not None, "runuser is needed to run PostgreSQL as postgres")
            self.as_postgres = ["runuser", "-u", "postgres", "--"]
        self.listen = listen
        if netns is not None:  # inside its own namespace every port is free
            self.as_postgres = ["ip", "netns", "exec", netns, *self.as_postgres]
        self.dir = Path(tempfile.mkdtemp(prefix="harness-faults-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self.dsn = f"postgresql://postgres@{listen.split(',')[0]}:{self.port}/postgres"
        if self.as_postgres:
            shutil.chown(self.dir, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        if listen != "127.0.0.1":  # reachable only inside the test's private namespaces
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write("host all all 0.0.0.0/0 trust\n")

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [*self.as_postgres, str(self.bin / tool), *args], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise AssertionError(f"{tool} {' '.join(args)} failed: {done.stdout}{done.stderr}")

    def _options(self) -> str:
        return (
            f"-p {self.port} -c listen_addresses={self.listen} -c unix_socket_directories={self.dir} "
            "-c fsync=off -c full_page_writes=off -c max_connections=40"
        )

    def start(self) -> None:
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", self._options(), "-l", str(self.dir / "log"), "-w", "start"
        )

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast") -> None:
        """Stop (``immediate``: as a crash, recovered from the WAL on start) and start again."""
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-m",
            mode,
            "-o",
            self._options(),
            "-l",
            str(self.dir / "log"),
            "-w",
            "restart",
        )

    def running(self) -> bool:
        done = subprocess.run(
            [*self.as_postgres, str(self.bin / "pg_ctl"), "-D", str(self.data), "status"],
            capture_output=True,
            check=False,
        )
        return done.returncode == 0

    def remove(self) -> None:
        if self.running():
            self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)
