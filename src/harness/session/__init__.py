"""``Session``: the append-only log and its Surface; the header, restore, crash repair, fork and
request building (SPEC §2–3).
"""

from __future__ import annotations

from harness.session.header import SESSION_FORMAT_VERSION, SessionHeader, new_session_id
from harness.session.repair import repair_closers
from harness.session.request import build_request, fold_request_header
from harness.session.session import EventLog, Observer, Session, fork_seed

__all__ = [
    "SESSION_FORMAT_VERSION",
    "EventLog",
    "Observer",
    "Session",
    "SessionHeader",
    "build_request",
    "fold_request_header",
    "fork_seed",
    "new_session_id",
    "repair_closers",
]
