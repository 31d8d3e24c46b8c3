"""Schema 17's ``sessions`` rows: a row read back as a header, a header written as a row.

A row is read as dsh's ``decodeSessionRow`` checks it (non-empty id, safe non-negative
integers, an absolute ``cwd``, ``origin`` null or ``subagent``, a UUID ``incarnation``, a
non-negative ``revision``) and then as harness checks any header (``validate_header``). A
version other than 0 is ``UnsupportedFormat`` before anything else; the rest is corruption
whose message starts "invalid session header".
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Final

from harness.errors import CorruptSession, InvalidHeader, UnsupportedFormat
from harness.session.header import SESSION_FORMAT_VERSION, SessionHeader, validate_header
from harness.stores.dsh_sqlite.schema import UUID_RE, safe_int

__all__ = ["SESSION_COLUMNS", "UPSERT_SESSION", "header_of", "session_params", "text_of"]

SESSION_COLUMNS: Final = (
    "id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, "
    "incarnation, revision"
)
UPSERT_SESSION: Final = """INSERT INTO sessions
  (id, version, created_at, cwd, parent_session, seed_length, origin,
   delegation_depth, agent_preset, incarnation, revision)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
ON CONFLICT(id) DO UPDATE SET
  version = excluded.version,
  created_at = excluded.created_at,
  cwd = excluded.cwd,
  parent_session = excluded.parent_session,
  seed_length = excluded.seed_length,
  origin = excluded.origin,
  delegation_depth = excluded.delegation_depth,
  agent_preset = excluded.agent_preset"""
"""dsh's ``upsert-session.sql``: a new row starts at revision 0 with a fresh incarnation."""


def text_of(value: object) -> str | None:
    """A ``TEXT`` value read as bytes, decoded; ``None`` if it is not UTF-8 bytes."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def session_params(header: SessionHeader) -> tuple[Any, ...]:
    """The ``UPSERT_SESSION`` parameters of ``header``, with a new incarnation UUID. The
    delegation depth is written as harness's JSONL header line has it (0 when unset)."""
    return (
        header.id,
        header.version,
        header.created_at,
        header.cwd,
        header.parent_session,
        header.seed_length,
        header.origin,
        header.delegation_depth or 0,
        header.agent_preset,
        str(uuid.uuid4()),
    )


def header_of(session_id: str, row: Sequence[Any], corrupt: Callable[[str], CorruptSession]) -> SessionHeader:
    """A session row as a ``SessionHeader`` (dsh's ``decodeSessionRow`` + ``rowToMeta``)."""
    _, version, created_at, cwd, parent, seed_length, origin, depth, preset, incarnation, revision = row
    if type(version) is int and version != SESSION_FORMAT_VERSION:
        when = "written by a newer harness — upgrade the harness" if version > 0 else "no upgrade path"
        raise UnsupportedFormat(f"stored session {session_id!r} has format version {version}: {when}")

    def text(value: object, column: str) -> str | None:
        if value is None:
            return None
        decoded = text_of(value)
        if decoded is None:
            raise corrupt(f"invalid session header: stored {column} must be UTF-8 text or null")
        return decoded

    def number(value: object, column: str, *, nullable: bool) -> int | None:
        if value is None and nullable:
            return None
        checked = safe_int(value, minimum=0)
        if checked is None:
            raise corrupt(f"invalid session header: stored {column} must be a non-negative safe integer")
        return checked

    if safe_int(version) is None:
        raise corrupt("invalid session header: stored version must be a safe integer")
    raw: dict[str, Any] = {
        "version": version,
        "id": text(row[0], "id"),
        "createdAt": number(created_at, "created_at", nullable=False),
    }
    for key, value, column in (
        ("cwd", cwd, "cwd"),
        ("parentSession", parent, "parent_session"),
        ("origin", origin, "origin"),
        ("agentPreset", preset, "agent_preset"),
    ):
        decoded = text(value, column)
        if decoded is not None:
            raw[key] = decoded
    for key, value, column in (
        ("seedLength", seed_length, "seed_length"),
        ("delegationDepth", depth, "delegation_depth"),
    ):
        counted = number(value, column, nullable=True)
        if counted is not None:
            raw[key] = counted
    if "cwd" in raw and not os.path.isabs(raw["cwd"]):
        raise corrupt("invalid session header: stored session cwd must be absolute")
    identity = text(incarnation, "incarnation")
    if identity is None or not UUID_RE.match(identity):
        raise corrupt("invalid session header: stored session incarnation must be a UUID")
    number(revision, "revision", nullable=False)
    try:
        return validate_header(raw, session_id)
    except InvalidHeader as error:
        raise corrupt(f"invalid session header: {error}") from None
