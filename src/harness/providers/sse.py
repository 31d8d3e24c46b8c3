"""A line-fed server-sent-events decoder: lines in, ``data`` payloads out.

Only the ``data`` field matters to chat completions: an event's ``data`` lines are joined
with newlines and handed out when the blank line that ends the event arrives. Comment lines
(``: keep-alive``) and other fields (``event``, ``id``, ``retry``) are skipped.
"""

from __future__ import annotations

__all__ = ["SseDecoder"]


class SseDecoder:
    """Accumulates SSE lines; ``feed`` returns a finished event's data, else ``None``."""

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: list[str] | None = None

    def feed(self, line: str) -> str | None:
        """Take one line (without its line break)."""
        line = line.rstrip("\r\n")
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if field != "data":
            return None
        if value.startswith(" "):
            value = value[1:]
        if self._data is None:
            self._data = []
        self._data.append(value)
        return None

    def flush(self) -> str | None:
        """The pending event's data, if any (at a blank line or the end of the stream)."""
        data, self._data = self._data, None
        return None if data is None else "\n".join(data)
