"""Request building: the header in force and the frozen ``GenerateOptions`` (SPEC §3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.errors import NoRequestHeader
from harness.events.event import Event
from harness.messages.request import EpochHeader, GenerateOptions
from harness.session.session import Session

__all__ = ["NoRequestHeader", "build_request", "fold_request_header"]


def fold_request_header(events: Sequence[Event]) -> EpochHeader | None:
    """The header in force: the one of the latest ``request/header`` event, if any."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type == "request/header":
            data = event.data
            header = data.get("header") if isinstance(data, Mapping) else None
            if isinstance(header, Mapping):
                return EpochHeader(header)
    return None


def build_request(
    session: Session,
    header: EpochHeader | None = None,
    *,
    purpose: str | None = None,
) -> GenerateOptions:
    """Freeze the header (given, else the one in force) and the derived messages."""
    if header is None:
        header = fold_request_header(session.events)
        if header is None:
            raise NoRequestHeader(f"session {session.id} has no request/header yet and none was given")
    return GenerateOptions(
        header=header,
        messages=tuple(session.derive_messages()),
        session_id=session.id,
        purpose=purpose,
    )
