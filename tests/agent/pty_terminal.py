"""A real terminal for CLI tests: the command runs on a pseudo-terminal as its controlling
terminal, so a Ctrl-C byte (``\\x03``) makes the kernel send SIGINT to it, as a keyboard does."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Mapping, Sequence
from types import TracebackType

# Runs in the child, a session leader on the pty: take the pty as controlling terminal, then
# become the command. (A preexec_fn would do the same, but is unsafe with threads around.)
_LAUNCH = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)

CTRL_C = b"\x03"
ENTER = b"\r"


class Terminal:
    """``harness`` (or any command) on a pty. ``expect`` waits for output; ``send`` types."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str], *, columns: int = 120) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        self.process = subprocess.Popen(
            [sys.executable, "-c", _LAUNCH, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            env={**env, "COLUMNS": str(columns), "TERM": "xterm"},
        )
        os.close(slave)
        self.master = master
        self.output = b""
        self._mark = 0

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed its side
            data = b""
        self.output += data
        return bool(data)

    def expect(self, needle: bytes, timeout: float = 30.0) -> bytes:
        """Wait until ``needle`` appears after the previous match; the output up to it."""
        deadline = time.monotonic() + timeout
        while needle not in self.output[self._mark :]:
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 0.2)) and self.process.poll() is not None):
                raise AssertionError(f"no {needle!r} on the terminal; it shows:\n{self.text()[-3000:]}")
        end = self.output.index(needle, self._mark) + len(needle)
        seen, self._mark = self.output[self._mark : end], end
        return seen

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def wait(self, timeout: float = 30.0) -> int:
        """The exit code, once the command ends (it must end within ``timeout``; nothing is
        typed meanwhile)."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"the command did not end; the terminal shows:\n{self.text()[-3000:]}")
            self._read(0.1)
        while self._read(0.05):
            pass
        return self.process.returncode

    def text(self) -> str:
        return self.output.decode("utf-8", "replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
