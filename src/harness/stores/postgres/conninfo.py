"""Connection settings, and keeping the DSN's password out of every message.

``where(dsn)`` names a server as ``user@host:port/dbname`` (never the password);
``scrub(text, dsn)`` removes the password from any text that is about to reach an
error message or a log line (libpq's own messages do not contain it, but a DSN
echoed back by a driver or a wrapper might).
"""

from __future__ import annotations

from typing import Any, Final

from psycopg.conninfo import conninfo_to_dict

__all__ = ["CONNECT_DEFAULTS", "password_of", "scrub", "where"]

CONNECT_DEFAULTS: Final[dict[str, Any]] = {
    # Notice a dead peer within about half a minute even on an idle LISTEN connection.
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}


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
