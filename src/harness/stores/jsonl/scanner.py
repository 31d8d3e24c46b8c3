"""The event lines after the header: torn tail or corruption (FORMAT §9.2, §9.6).

``LineScanner`` is fed plaintext (the raw file, or one zstd frame at a time) and
applies the raw rules to every newline-terminated line:

* the line is parsed and, when it is a packed row, expanded; failure (an empty
  line too) opens an *issue*;
* a line that is valid JSON harness cannot hold (``UnrepresentableJson``: a number
  beyond a double such as ``1e400``, nesting deeper than ``MAX_READ_DEPTH``) is
  judged like any other: when it is the next committed event it is refused as
  corruption (a committed line is never cut as a torn tail), else it is the
  issue or the ``turn/end`` it would be for a reader that can hold it (dsh);
* otherwise every expanded event must carry the next seq, else the whole row is
  dropped and an issue opens, which is corruption at once if the row holds a
  ``turn/end``;
* after an issue, later lines are only parsed to look for a ``turn/end``: one
  makes the issue corruption, since a committed turn follows it.

Without corruption, the events before the first issue are the committed prefix and
``committed`` is the plaintext offset right after the last good line. A last line
without its newline does not count.
"""

from __future__ import annotations

from typing import Any, Final

from harness.errors import CorruptSession
from harness.events.json import UnrepresentableJson, loads
from harness.events.packed import PackedRowError, expand_row, is_packed_row

__all__ = ["LineScanner", "ScanIssue"]

_TURN_END: Final = "turn/end"


class ScanIssue:
    """The first line the committed prefix stops at: its message and where it starts."""

    __slots__ = ("line", "message", "offset")

    def __init__(self, message: str, line: int, offset: int) -> None:
        self.message = message
        self.line = line
        self.offset = offset


def _has_turn_end(events: list[Any]) -> bool:
    return any(type(event) is dict and event.get("type") == _TURN_END for event in events)


def _seq_matches(event: Any, expected: int) -> bool:
    if type(event) is not dict:
        return False
    seq = event.get("seq")
    kind = type(seq)
    return (kind is int or kind is float) and seq == expected


class LineScanner:
    """Raw-rule scanning of event lines. See the module doc.

    ``line`` numbers are the file's (plaintext's) line numbers, the header being line 1.
    ``error_offset`` maps a plaintext offset to the byte offset reported in a
    ``CorruptSession`` (the identity for raw files; the frame start for zstd).
    """

    def __init__(self, *, path: str | None, start: int, first_line: int = 2) -> None:
        self.path = path
        self.events: list[dict[str, Any]] = []
        self.committed = start  # plaintext offset after the last good line
        self.position = start  # plaintext offset of the next byte fed
        self.line = first_line  # number of the next line
        self.issue: ScanIssue | None = None
        self.pending = b""  # an unterminated last line so far

    def _corrupt(self, issue: ScanIssue, error_offset: int | None) -> CorruptSession:
        return CorruptSession(
            f"corrupt session log: {issue.message}",
            path=self.path,
            offset=issue.offset if error_offset is None else error_offset,
        )

    def feed(self, data: bytes, *, error_offset: int | None = None) -> None:
        """Scan ``data``, the plaintext right after what was fed before.

        ``error_offset``: the byte offset to report for corruption found in this
        piece (for a zstd frame, the frame's start); ``None`` reports the line's own
        plaintext offset.
        """
        if self.pending:
            data = self.pending + data
            start = self.position - len(self.pending)
        else:
            start = self.position
        self.position = start + len(data)
        pieces = data.split(b"\n")
        self.pending = pieces.pop()
        events = self.events
        offset = start
        for raw in pieces:
            line_start = offset
            offset += len(raw) + 1
            number = self.line
            self.line += 1
            beyond: UnrepresentableJson | None = None
            try:
                try:
                    record = loads(raw)
                except UnrepresentableJson as error:
                    record, beyond = error.value, error
                if is_packed_row(record):
                    decoded: list[Any] = expand_row(record)
                else:
                    decoded = [record]
            except (ValueError, PackedRowError):
                if self.issue is None:
                    self.issue = ScanIssue(f"unparsable committed event at line {number}", number, line_start)
                continue
            issue = self.issue
            if issue is not None:
                if _has_turn_end(decoded):
                    raise self._corrupt(issue, error_offset)
                continue
            expected = len(events)
            for index, event in enumerate(decoded):
                if not _seq_matches(event, expected + index):
                    got = event.get("seq") if type(event) is dict else None
                    self.issue = ScanIssue(
                        f"seq gap in committed region at line {number} "
                        f"(expected {expected + index}, got {got!r})",
                        number,
                        line_start,
                    )
                    if _has_turn_end(decoded):
                        raise self._corrupt(self.issue, error_offset)
                    break
            else:
                if beyond is not None:
                    refused = ScanIssue(
                        f"committed event at line {number} is JSON harness cannot read: {beyond}",
                        number,
                        line_start,
                    )
                    raise self._corrupt(refused, error_offset)
                events.extend(decoded)
                self.committed = offset

    @property
    def clean(self) -> bool:
        """True when every byte fed so far is committed (no issue, no unterminated line)."""
        return self.issue is None and not self.pending and self.committed == self.position
