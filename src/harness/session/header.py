"""The session header (FORMAT §1) and its validation (FORMAT §7.1)."""

from __future__ import annotations

import ntpath
import posixpath
import time
import uuid
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from harness.errors import InvalidHeader
from harness.events.envelope import as_safe_int

__all__ = ["SESSION_FORMAT_VERSION", "SessionHeader", "new_session_id", "validate_header"]

SESSION_FORMAT_VERSION: Final = 0
RETIRED_HEADER_FIELDS: Final = frozenset({"sandboxMode", "approvalPolicy"})


def new_session_id() -> str:
    """A fresh session id, ``session-<uuid4>`` like the reference's store-minted ids."""
    return f"session-{uuid.uuid4()}"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _is_absolute(path: str) -> bool:
    return posixpath.isabs(path) or (ntpath.isabs(path) and bool(ntpath.splitdrive(path)[0]))


class SessionHeader(msgspec.Struct, frozen=True, kw_only=True):
    """Who a session is: id, creation time, workspace and fork lineage."""

    id: str
    created_at: int
    version: int = SESSION_FORMAT_VERSION
    cwd: str | None = None
    parent_session: str | None = None
    seed_length: int | None = None
    origin: str | None = None
    delegation_depth: int | None = None
    agent_preset: str | None = None

    @classmethod
    def new(
        cls, *, id: str | None = None, cwd: str | None = None, created_at: int | None = None
    ) -> SessionHeader:
        """A header for a brand-new top-level session."""
        return validate_header(
            {
                "version": SESSION_FORMAT_VERSION,
                "id": id if id is not None else new_session_id(),
                "createdAt": created_at if created_at is not None else _now_ms(),
                **({"cwd": cwd} if cwd is not None else {}),
            }
        )

    def to_json(self, *, line: bool = False) -> dict[str, Any]:
        """The header as JSON in writer order. ``line=True`` gives the JSONL header line
        (with ``type: "session"`` and ``delegationDepth`` always present)."""
        out: dict[str, Any] = {}
        if line:
            out["type"] = "session"
        out["version"] = self.version
        out["id"] = self.id
        out["createdAt"] = self.created_at
        for key, value in (
            ("cwd", self.cwd),
            ("parentSession", self.parent_session),
            ("seedLength", self.seed_length),
            ("origin", self.origin),
        ):
            if value is not None:
                out[key] = value
        if line or self.delegation_depth is not None:
            out["delegationDepth"] = self.delegation_depth or 0
        if self.agent_preset is not None:
            out["agentPreset"] = self.agent_preset
        return out


def _int_field(raw: Mapping[str, Any], key: str, *, required: bool) -> int | None:
    if key not in raw:
        if required:
            raise InvalidHeader(f"session header {key} is missing")
        return None
    value = as_safe_int(raw[key])
    if value is None or value < 0:
        raise InvalidHeader(f"session header {key} must be a non-negative safe integer, got {raw[key]!r}")
    return value


def _str_field(raw: Mapping[str, Any], key: str) -> str | None:
    if key not in raw:
        return None
    value = raw[key]
    if not isinstance(value, str):
        raise InvalidHeader(f"session header {key} must be a string, got {value!r}")
    return value


def validate_header(raw: object, session_id: str | None = None) -> SessionHeader:
    """Check a header (FORMAT §7.1) and return it typed.

    ``raw`` may be a ``SessionHeader`` or its JSON object (``type`` allowed).
    With ``session_id``, the header's id must match it. Unknown keys are dropped;
    the retired ``sandboxMode``/``approvalPolicy`` are refused.
    """
    if isinstance(raw, SessionHeader):
        raw = raw.to_json()
    if not isinstance(raw, Mapping) or isinstance(raw, list | tuple):
        raise InvalidHeader(f"session header is not a plain JSON record: {raw!r}")
    version = raw.get("version")
    if as_safe_int(version) != SESSION_FORMAT_VERSION:
        raise InvalidHeader(
            f"unsupported session format version {version!r} "
            f"(this harness reads version {SESSION_FORMAT_VERSION})"
        )
    header_id = raw.get("id")
    if not isinstance(header_id, str) or not header_id:
        raise InvalidHeader(f"session header id must be a non-empty string, got {header_id!r}")
    if session_id is not None and header_id != session_id:
        raise InvalidHeader(f"session header id {header_id!r} does not match session id {session_id!r}")
    for key in RETIRED_HEADER_FIELDS:
        if key in raw:
            raise InvalidHeader(f"session header carries the retired field {key!r}")
    created_at = _int_field(raw, "createdAt", required=True)
    cwd = _str_field(raw, "cwd")
    if cwd is not None and not _is_absolute(cwd):
        raise InvalidHeader(f"session header cwd must be an absolute path, got {cwd!r}")
    origin = raw.get("origin")
    if "origin" in raw and origin != "subagent":
        raise InvalidHeader(f"session header origin must be 'subagent', got {origin!r}")
    assert created_at is not None
    return SessionHeader(
        id=header_id,
        created_at=created_at,
        cwd=cwd,
        parent_session=_str_field(raw, "parentSession"),
        seed_length=_int_field(raw, "seedLength", required=False),
        origin=origin if isinstance(origin, str) else None,
        delegation_depth=_int_field(raw, "delegationDepth", required=False),
        agent_preset=_str_field(raw, "agentPreset"),
    )
