"""The header line of a JSONL log (FORMAT §1, §9.6).

Order of checks, as the reference reads a log:

1. the line must be JSON (else corruption);
2. a JSON object whose ``version`` is a number other than 0 is refused as
   ``UnsupportedFormat`` before any shape check, naming the session id;
3. the line must have the header shape (``type: "session"``, string ``id``,
   non-negative safe-integer ``createdAt`` and ``delegationDepth``, neither ``-0``,
   ``origin`` absent or ``"subagent"``, ``agentPreset`` absent or a string, no
   retired field), then pass ``validate_header`` (FORMAT §7.1); any failure is
   corruption.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final, NoReturn

from harness.errors import CorruptSession, InvalidHeader, UnsupportedFormat
from harness.events.envelope import as_safe_int
from harness.events.json import MAX_READ_DEPTH
from harness.events.jsondeep import parse
from harness.session.header import (
    RETIRED_HEADER_FIELDS,
    SESSION_FORMAT_VERSION,
    SessionHeader,
    validate_header,
)

__all__ = ["parse_header_line", "raw_suffix"]

_NEGATIVE_ZERO: Final = -0.0


def raw_suffix(path: str | None) -> str:
    """`` (raw log: <path>)`` for a format refusal, when there is a file."""
    return f" (raw log: {path})" if path is not None else ""


def _int_token(token: str) -> int | float:
    # JSON.parse keeps "-0" as negative zero, which no header field accepts; keep it
    # distinguishable from 0 here (Python's parser would make it a plain 0).
    return _NEGATIVE_ZERO if token == "-0" else int(token)


def _refuse_constant(token: str) -> NoReturn:
    raise ValueError(f"{token} is not valid JSON")


_DECODER: Final = json.JSONDecoder(parse_int=_int_token, parse_constant=_refuse_constant)


def _decode(line: bytes) -> Any:
    text = line.decode("utf-8")
    try:
        return _DECODER.decode(text)
    except RecursionError:  # the stdlib parser recurses: read a deep header (dsh does) without it
        return parse(text, MAX_READ_DEPTH, _int_token)


def _number(value: object) -> bool:
    return type(value) is int or type(value) is float


def _count(value: object) -> bool:
    """A non-negative safe integer that is not ``-0`` (integral floats allowed)."""
    safe = as_safe_int(value)
    return safe is not None and safe >= 0 and not (type(value) is float and math.copysign(1.0, value) < 0)


def _shape_problem(obj: dict[str, Any]) -> str | None:
    if obj.get("type") != "session":
        return 'type is not "session"'
    if not _number(obj.get("version")):
        return "version is not a number"
    if not isinstance(obj.get("id"), str):
        return "id is not a string"
    if "createdAt" not in obj or not _count(obj["createdAt"]):
        return f"createdAt must be a non-negative safe integer, got {obj.get('createdAt')!r}"
    if "delegationDepth" not in obj or not _count(obj["delegationDepth"]):
        return f"delegationDepth must be a non-negative safe integer, got {obj.get('delegationDepth')!r}"
    if "origin" in obj and obj["origin"] != "subagent":
        return f"origin must be 'subagent', got {obj['origin']!r}"
    if "agentPreset" in obj and not isinstance(obj["agentPreset"], str):
        return f"agentPreset must be a string, got {obj['agentPreset']!r}"
    for key in sorted(RETIRED_HEADER_FIELDS):
        if key in obj:
            return f"carries the retired field {key!r}"
    return None


def _id_text(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def refuse_version(obj: dict[str, Any], session_id: str | None, path: str | None) -> None:
    """Raise ``UnsupportedFormat`` when ``obj`` names a numeric version other than 0."""
    version = obj.get("version")
    if not isinstance(version, int | float) or isinstance(version, bool) or version == SESSION_FORMAT_VERSION:
        return
    named = _id_text(obj["id"]) if "id" in obj else (session_id or "?")
    shown = (
        repr(version) if isinstance(version, float) and not math.isfinite(version) else json.dumps(version)
    )
    if version > SESSION_FORMAT_VERSION:
        reason = (
            f'session "{named}" was written by a newer harness (format version {shown}; this harness '
            f"reads version {SESSION_FORMAT_VERSION}): upgrade the harness to open it"
        )
    else:
        reason = (
            f'session "{named}" uses format version {shown}, older than the supported '
            f"v{SESSION_FORMAT_VERSION}; there is no upgrade path"
        )
    raise UnsupportedFormat(reason + raw_suffix(path))


def parse_header_line(
    line: bytes, *, session_id: str | None = None, path: str | None = None
) -> SessionHeader:
    """The header of a log from its first line (without the newline). See the module doc."""
    try:
        obj = _decode(line)
    except ValueError as error:
        raise CorruptSession(
            f"corrupt session log: header line is not valid JSON ({error})", path=path, offset=0
        ) from None
    if type(obj) is dict:
        refuse_version(obj, session_id, path)
    if type(obj) is not dict:
        raise CorruptSession("corrupt session log: first line is not a session header", path=path, offset=0)
    problem = _shape_problem(obj)
    if problem is not None:
        raise CorruptSession(
            f"corrupt session log: first line is not a session header: {problem}", path=path, offset=0
        )
    if obj["version"] == 0:
        obj["version"] = 0  # JSON.parse reads -0 and 0.0 as the version 0
    try:
        return validate_header(obj)
    except InvalidHeader as error:
        raise CorruptSession(
            f"corrupt session log: invalid session header: {error}", path=path, offset=0
        ) from None
