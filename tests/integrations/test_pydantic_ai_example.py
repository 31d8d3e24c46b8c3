"""``examples/pydantic_ai_resume.py`` runs: the worker is killed with SIGKILL in step 3, the run
resumes from the store and finishes, and ``harness log`` shows the session; every step's result
is in the conversation exactly once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ToolReturnPart

from harness.integrations.pydantic_ai import HarnessConversationStore
from harness.stores import JsonlBackend, SessionStore
from tests.integrations.examples_support import run_example


def test_the_example_is_killed_resumed_and_logged(tmp_path: Path) -> None:
    out = run_example("pydantic_ai_resume.py", tmp_path, timeout=300)
    assert "worker killed (exit -9)" in out
    assert "the last one calls step({'n': 3})" in out
    assert "agent: done after 5 steps" in out
    log = out[out.index("harness log ") :]
    assert log.count("tool/result") == 5 and "done after 5 steps" in log

    async def stored() -> Conversation | None:
        sessions = SessionStore(JsonlBackend(tmp_path, compression="none"))
        loaded = await HarnessConversationStore(sessions).load("pydantic-ai-resume-demo")
        await sessions.close()
        return loaded

    conversation = asyncio.run(stored())
    assert conversation is not None
    results = [p.content for m in conversation.messages for p in m.parts if isinstance(p, ToolReturnPart)]
    assert results == [f"step {n} finished" for n in range(1, 6)]
