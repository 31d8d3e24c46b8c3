"""How session data maps to PostgreSQL values, and back.

* **Text keys.** PostgreSQL ``text`` must be valid UTF-8 without NUL, but a session
  id (or a lease owner) may hold a lone surrogate, as JavaScript strings can. Keys
  are stored as the body of their JSON string encoding (``db_text``): identical to
  the id for ordinary ids, injective, and decodable (``from_db_text``).
* **Event lines.** Each event is stored as its wire line ``Event.encode()``, which
  is always valid UTF-8 with no raw newline or NUL, so ``text`` keeps it byte for
  byte, key order included (``jsonb`` would not).
* **Header.** The session's JSONL header line (``type: "session"``, ...) as JSON text.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable
from typing import Any

from harness.events.collector import collector_paused
from harness.events.event import Event
from harness.events.json import dumps, loads
from harness.session.header import SessionHeader
from harness.stores.base import corrupt
from harness.stores.rows import decode_row, header_from_text, title_seq
from harness.stores.rows import event_from_wire as wire_event

__all__ = [
    "db_text",
    "decode_header",
    "decode_lines",
    "encode_header",
    "event_from_wire",
    "from_db_text",
    "notify_channel",
    "title_seq",
]


def db_text(value: str) -> str:
    """``value`` as stored in a text key column: its JSON string body (see the module docs)."""
    return dumps(value)[1:-1].decode("utf-8")


def from_db_text(text: str) -> str:
    """The string ``db_text`` stored as ``text``."""
    value = loads(f'"{text}"')
    assert isinstance(value, str)
    return value


def notify_channel(schema: str, session_id: str) -> str:
    """The LISTEN/NOTIFY channel of one session in one schema (short, lowercase, fixed length).

    A hash collision costs a tailer a read that finds nothing new, never a wrong event.
    """
    digest = hashlib.sha1(db_text(session_id).encode("utf-8")).hexdigest()[:24]
    return f"harness_{zlib.crc32(schema.encode('utf-8', 'surrogatepass')):08x}_{digest}"


def encode_header(header: SessionHeader) -> str:
    """The header's JSONL line as text."""
    return dumps(header.to_json(line=True)).decode("utf-8")


def decode_header(session_id: str, text: object, where: str) -> SessionHeader:
    """Validate a stored header line: ``UnsupportedFormat`` for a foreign version (checked
    first), ``CorruptSession`` for anything else wrong."""
    return header_from_text(session_id, text, corrupt(session_id, where))


def decode_lines(
    session_id: str, lines: Iterable[bytes | str], where: str, first_seq: int = 0
) -> list[dict[str, Any]]:
    """Decode stored lines in seq order; each must be an object carrying its position's seq."""
    events: list[dict[str, Any]] = []
    damaged = corrupt(session_id, where)
    with collector_paused():
        for seq, line in enumerate(lines, first_seq):
            events.extend(decode_row(line, seq, damaged))
    return events


def event_from_wire(session_id: str, obj: dict[str, Any], where: str) -> Event:
    """An ``Event`` from a committed wire object (``rows.event_from_wire``), its damage
    named as this schema's."""
    return wire_event(obj, corrupt(session_id, where))
