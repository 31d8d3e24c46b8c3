"""Turning psycopg's exceptions into harness errors (no raw psycopg error leaves the backend).

The append function refuses with custom SQLSTATEs (see ``migrations``); everything
else is a failed write (``PersistenceFailed``) or a failed read (``StorageError``),
with the psycopg exception chained as the cause and the DSN's password scrubbed.
"""

from __future__ import annotations

from typing import Final

import psycopg
from psycopg_pool import PoolTimeout

from harness.errors import (
    LeaseHeld,
    LeaseLost,
    PersistenceFailed,
    SessionConflict,
    SessionNotFound,
    StorageError,
)
from harness.stores.postgres.codec import from_db_text
from harness.stores.postgres.conninfo import scrub
from harness.stores.postgres.poollog import one_line

__all__ = [
    "CONFLICT",
    "LEASE_HELD",
    "LEASE_LOST",
    "NOT_FOUND",
    "is_connection_error",
    "stored_part",
    "translate",
]

NOT_FOUND: Final = "HX404"
CONFLICT: Final = "HX409"
LEASE_LOST: Final = "HX410"
LEASE_HELD: Final = "HX423"


def is_connection_error(error: BaseException) -> bool:
    """True when ``error`` means the connection broke (worth one retry on a fresh one)."""
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return error.sqlstate is None or error.sqlstate.startswith(("08", "57P"))
    return False


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None


def stored_part(first_seq: int | None, stored: int | None) -> str:
    """How much of a refused batch starting at ``first_seq`` the log holds, in words."""
    if first_seq is None or stored is None or stored <= first_seq:
        return "nothing was written"
    return (
        f"its events {first_seq}..{stored - 1} were already stored by an earlier attempt "
        "whose reply was lost; nothing else was written"
    )


def translate(
    error: BaseException,
    *,
    dsn: str,
    session_id: str | None,
    action: str,
    write: bool,
    first_seq: int | None = None,
    token: int | None = None,
) -> StorageError:
    """The harness error for ``error`` raised while doing ``action`` (chain it with ``from``)."""
    label = f"session {session_id!r}" if session_id is not None else "the session store"
    if isinstance(error, psycopg.Error):
        state = error.sqlstate
        diag = error.diag
        if state == NOT_FOUND:
            return SessionNotFound(f"no session {session_id!r}")
        if state == CONFLICT:
            stored = _int(diag.message_detail)
            got = first_seq
            reason = ""
            if diag.message_hint == "header":
                reason = " (it was created and written by another writer)"
            elif diag.message_hint:
                reason = f" (the stored event at seq {diag.message_hint} differs)"
            return SessionConflict(
                f"append seq mismatch for {label}: expected {stored} at index 0, got {got}{reason}",
                expected=stored,
                got=got,
            )
        if state == LEASE_LOST:
            now = _int(diag.message_detail)
            detail = f"the lease now has token {now}" if now is not None else "no lease is recorded"
            stored = _int(diag.message_hint)
            return LeaseLost(
                f"the lease on {label} (token {token}) expired or was taken over ({detail}); "
                + stored_part(first_seq, stored),
                token=token,
                stored=stored,
            )
        if state == LEASE_HELD:
            owner = from_db_text(diag.message_detail) if diag.message_detail else None
            return LeaseHeld(
                f"{label} is leased by {LeaseHeld.describe(owner)}: acquire the lease before writing",
                holder=owner,
                expires_at=_int(diag.message_hint),
            )
    # PostgreSQL's CONTEXT lines (the statement, the PL/pgSQL line) are folded into one line.
    text = one_line(scrub(str(error).strip() or type(error).__name__, dsn))
    if isinstance(error, PoolTimeout):
        text = f"no database connection available ({text})"
    if write:
        return PersistenceFailed(f"{action} for {label} failed: {text}")
    return StorageError(f"{action} for {label} failed: {text}")
