"""A session's lines fetched for a streamed restore: pages of rows joined on the server.

``read_exact`` fetches one result row per event; for a restore most of that time is the
driver's work per row (a result row, a Python object per column, one event-loop wakeup
per network read of the many small messages). ``read`` instead asks for each page of
``PAGE_ROWS`` seqs as two values, the page's seqs and its lines joined by newlines
(``string_agg``, both over the same rows in the same order), and splits the lines when
the stream reaches the page.

A page is used only when it holds exactly the rows of its seqs, each once: its seqs
are the page's range (in order, or put in order here) and its text has exactly one
newline between rows (a stored line holding a newline would add one). Anything else
makes ``read`` fall back to ``read_exact``, which gives the exact outcome. Rows stored
past the recorded length show up in the last page, which is open-ended.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from typing import Any, Final

import psycopg
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.pq import Format

from harness.stores.backend import ReadProgress
from harness.stores.postgres.queries import Queries

__all__ = ["PAGE_ROWS", "TOO_LARGE", "Page", "RawText", "fetch_pages", "page_lines", "stored_lines"]

PAGE_ROWS: Final = 1024
"""Seqs per page."""

Page = bytes | list[bytes]
"""A page as fetched (its lines joined by newlines) or already split (put in seq order)."""

TOO_LARGE: Final = (psycopg.errors.ProgramLimitExceeded, psycopg.errors.OutOfMemory)
"""What the server raises for a page too large to join (over 1 GB): read exactly instead."""

_SEQ: Final = itemgetter(0)


class RawText(Loader):
    """Load ``text`` in binary format as the raw UTF-8 bytes (no ``str`` decoding)."""

    format = Format.BINARY

    def load(self, data: Buffer) -> bytes:
        return bytes(data)


async def fetch_pages(
    conn: psycopg.AsyncConnection[Any], queries: Queries, session_key: int, length: int
) -> list[Page] | None:
    """The pages of seqs 0 … ``length`` − 1 (``length`` > 0), or ``None`` when a page does
    not hold exactly its rows (see the module docs). Runs in the caller's transaction."""
    cursor = conn.cursor(binary=True)
    cursor.adapters.register_loader("text", RawText)
    pages: list[Page] = []
    for start in range(0, length, PAGE_ROWS):
        end = start + PAGE_ROWS
        if end < length:
            await cursor.execute(queries.page, (session_key, start, end))
        else:
            await cursor.execute(queries.page_rest, (session_key, start))
            end = length
        row = await cursor.fetchone()
        page = None if row is None else checked_page(row[0], row[1], start, end)
        if page is None:
            return None
        pages.append(page)
    return pages


def checked_page(seqs: bytes | None, text: bytes | None, start: int, end: int) -> Page | None:
    """The page of seqs ``start`` … ``end`` − 1 from its fetched seqs and joined lines, or
    ``None`` unless they hold exactly one row per seq of that range."""
    if seqs is None or text is None:
        return None
    if seqs == ",".join(map(str, range(start, end))).encode() and text.count(b"\n") == end - start - 1:
        return text
    try:
        numbers = [int(seq) for seq in seqs.split(b",")]
    except ValueError:
        return None
    lines = text.split(b"\n")
    if len(lines) != len(numbers):
        return None
    rows = sorted(zip(numbers, lines, strict=True), key=_SEQ)
    if [seq for seq, _ in rows] != list(range(start, end)):
        return None
    return [line for _, line in rows]


def page_lines(pages: list[Page]) -> Iterator[list[bytes]]:
    """Each page's lines, in order, letting each page go once it is split."""
    for index in range(len(pages)):
        page = pages[index]
        pages[index] = b""
        yield page.split(b"\n") if isinstance(page, bytes) else page


def stored_lines(pages: list[Page], progress: ReadProgress) -> Iterator[bytes]:
    """Every line of ``pages`` in order (``WireStream.lines``); ``progress`` counts lines,
    which are events (PostgreSQL rows are not packed)."""
    for lines in page_lines(pages):
        yield from lines
        progress.done += len(lines)
