"""harness as Google ADK's session service (``docs/integrations/adk.md``).

Needs the optional extra: ``pip install 'harness-sessions[adk]'`` (google-adk 2.13).
``HarnessSessionService(store)`` implements ADK's ``BaseSessionService`` over a harness
``SessionStore``; ``events`` maps ADK events onto harness message events and ``state`` says
where app, user and session state live. ``import harness`` never imports this package.
"""

from __future__ import annotations

from harness.integrations.adk.service import HarnessSessionService, StaleSessionError
from harness.integrations.adk.state import app_log_id, session_log_id, user_log_id

__all__ = ["HarnessSessionService", "StaleSessionError", "app_log_id", "session_log_id", "user_log_id"]
