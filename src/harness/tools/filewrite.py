"""Writing a file's whole content so a crash never leaves it half written.

An existing file is replaced atomically: the bytes go to a temporary file beside it
(flushed to disk, given the old file's permission bits), which is then renamed over it.
A new file is created directly (``O_EXCL``; the umask applies to its mode).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["write_whole_file"]


def write_whole_file(real: Path, data: bytes) -> None:
    """Make ``data`` the content of the file at the real path ``real`` (see the module doc).

    Raises ``OSError`` on failure; the old content is then untouched.
    """
    try:
        mode: int | None = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        mode = None
    if mode is None:
        fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        return
    fd, temporary = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
