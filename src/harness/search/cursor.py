"""The opaque cursor of a search page: where the next page starts, bound to its query.

A hit's place in the order is its key ``(score, session id, seq)``: hits are ordered by
score, then session id, then seq, and the next page holds the hits whose key is greater
than the last one shown. The cursor carries that key, a digest of the query (text,
filter, session, whether ranked) and a checksum over both: a cursor given with another
query, or edited in any way, raises ``InvalidQuery``. It is a position, not a snapshot:
when the index gained events between two pages, the scores of the later pages may move.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from typing import Final

from harness.errors import InvalidQuery

__all__ = ["Key", "decode_cursor", "encode_cursor", "query_digest"]

Key = tuple[float, str, int]
"""``(score, session id, seq)``: a hit's place in the order."""

_PREFIX: Final = "hs1."


def query_digest(text: str, filter_key: str, session: str | None, ranked: bool) -> str:
    """The digest a cursor binds to."""
    body = json.dumps([text, filter_key, session, ranked], ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def _check(body: bytes) -> str:
    return hashlib.sha256(b"harness.search.cursor\x00" + body).hexdigest()[:12]


def encode_cursor(key: Key, digest: str) -> str:
    """The cursor of the page after the hit with ``key``."""
    body = json.dumps({"k": list(key), "q": digest}, ensure_ascii=True, separators=(",", ":")).encode()
    return _PREFIX + base64.urlsafe_b64encode(body).decode().rstrip("=") + "." + _check(body)


def decode_cursor(cursor: object, digest: str) -> Key:
    """The key a cursor resumes after; ``InvalidQuery`` when it is damaged or belongs to
    another query."""
    if not isinstance(cursor, str) or not cursor.startswith(_PREFIX):
        raise InvalidQuery(f"not a search cursor: {cursor!r}"[:200])
    text, _, check = cursor[len(_PREFIX) :].rpartition(".")
    try:
        body = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        data = json.loads(body) if check == _check(body) else None
    except (ValueError, binascii.Error):
        data = None
    key = data.get("k") if isinstance(data, dict) else None
    if (
        not isinstance(key, list)
        or len(key) != 3
        or not isinstance(key[0], float | int)
        or isinstance(key[0], bool)
        or not math.isfinite(key[0])
        or not isinstance(key[1], str)
        or isinstance(key[2], bool)
        or not isinstance(key[2], int)
        or key[2] < 0
    ):
        raise InvalidQuery("a damaged search cursor")
    assert isinstance(data, dict)
    if data.get("q") != digest:
        raise InvalidQuery("the search cursor belongs to another query (its text, filter or session differs)")
    return (float(key[0]), key[1], key[2])
