"""Bounded capture of a command's output: the head and the tail are kept, the middle cut.

Memory stays at most ``head + tail`` bytes however much the command prints. The text is
decoded as UTF-8 (undecodable bytes become U+FFFD); when bytes were dropped, a marker
line says how many.
"""

from __future__ import annotations

__all__ = ["OutputCapture"]


class OutputCapture:
    """Collects chunks; ``text()`` gives the capped output (see the module doc)."""

    __slots__ = ("_head", "_tail", "head_limit", "tail_limit", "total")

    def __init__(self, head: int, tail: int) -> None:
        """Keep the first ``head`` and the last ``tail`` bytes."""
        self.head_limit = head
        self.tail_limit = tail
        self.total = 0
        self._head = bytearray()
        self._tail = bytearray()

    def feed(self, chunk: bytes) -> None:
        """Take the next piece of output."""
        self.total += len(chunk)
        room = self.head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit > 0:
            self._tail += chunk[-self.tail_limit :]
            excess = len(self._tail) - self.tail_limit
            if excess > 0:
                del self._tail[:excess]

    @property
    def omitted(self) -> int:
        """Bytes dropped from the middle so far."""
        return self.total - len(self._head) - len(self._tail)

    def text(self) -> str:
        """The kept output as text, with a marker where bytes were dropped."""
        if self.omitted == 0:
            return bytes(self._head + self._tail).decode("utf-8", errors="replace")
        head = bytes(self._head).decode("utf-8", errors="replace")
        tail = bytes(self._tail).decode("utf-8", errors="replace")
        marker = f"[… {self.omitted} of {self.total} bytes of output cut here …]"
        return f"{head}\n{marker}\n{tail}"
