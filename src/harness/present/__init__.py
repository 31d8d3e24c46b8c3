"""How events and sessions read as text, shared by the CLI and the viewer: one line per event
(``summary``) and a session as Markdown or OpenAI-style messages (``export``). It sits above
the agent layer and below both front ends, so the viewer never imports the CLI."""

from harness.present.export import to_markdown, to_openai
from harness.present.summary import event_summary, is_failure, retry_line

__all__ = ["event_summary", "is_failure", "retry_line", "to_markdown", "to_openai"]
