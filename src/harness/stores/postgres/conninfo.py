"""Connection settings, and keeping the DSN's password out of every message.

``connect_settings(dsn, io_timeout_s)`` gives the TCP settings that make a cut-off
connection fail in bounded time; ``where(dsn)`` names a server as
``user@host:port/dbname`` (never the password); ``scrub(text, dsn)`` removes the
password from any text that is about to reach an error message or a log line (libpq's
own messages do not contain it, but a DSN echoed back by a driver or a wrapper might).
"""

from __future__ import annotations

import math
from typing import Any

from psycopg.conninfo import conninfo_to_dict

__all__ = ["connect_settings", "password_of", "scrub", "where"]


def connect_settings(dsn: str, io_timeout_s: float) -> dict[str, Any]:
    """libpq settings under which a connection whose peer cannot be reached fails within about
    ``io_timeout_s``: ``tcp_user_timeout`` ends a request the server never acknowledges (a cut
    link, dropped replies), keepalives end an idle-looking one (a reply that never comes) and
    ``connect_timeout`` a connection attempt. Keepalives alone would wait while data is
    unacknowledged, which is when it matters. Settings the DSN names itself are left to it."""
    idle = max(1, math.floor(io_timeout_s / 2))
    settings: dict[str, Any] = {
        "tcp_user_timeout": max(1, round(io_timeout_s * 1000)),
        "keepalives": 1,
        "keepalives_idle": idle,
        "keepalives_interval": 1,
        "keepalives_count": max(1, math.ceil(io_timeout_s - idle)),
        "connect_timeout": max(2, math.ceil(io_timeout_s)),  # libpq's minimum is 2 s
    }
    named = _parts(dsn)
    return {key: value for key, value in settings.items() if key not in named}


def _parts(dsn: str) -> dict[str, Any]:
    try:
        return dict(conninfo_to_dict(dsn))
    except Exception:  # a malformed DSN: name nothing from it
        return {}


def password_of(dsn: str) -> str | None:
    """The password the DSN carries, if any (to scrub it from messages)."""
    value = _parts(dsn).get("password")
    return str(value) if value else None


def where(dsn: str) -> str:
    """``user@host:port/dbname`` from the DSN, without the password (defaults left out)."""
    parts = _parts(dsn)
    if not parts:
        return "PostgreSQL (unparsable connection string)"
    host = str(parts.get("host") or parts.get("hostaddr") or "local socket")
    port = parts.get("port")
    user = parts.get("user")
    dbname = parts.get("dbname")
    text = (f"{user}@" if user else "") + host + (f":{port}" if port else "")
    return f"{text}/{dbname}" if dbname else text


def scrub(text: str, dsn: str) -> str:
    """``text`` with the DSN's password (raw and percent-encoded forms) replaced by ``***``."""
    password = password_of(dsn)
    if not password:
        return text
    from urllib.parse import quote

    for form in {password, quote(password, safe=""), quote(password)}:
        if form:
            text = text.replace(form, "***")
    return text
