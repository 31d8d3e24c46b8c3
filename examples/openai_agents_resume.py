"""An OpenAI Agents SDK run kept in a harness session, killed with SIGKILL mid-run and resumed.

    python examples/openai_agents_resume.py [ROOT]

Needs ``pip install 'harness-sessions[openai-agents]'``; offline (a scripted model stands in
for the API). What it does:

1. a child process runs ``Runner.run(agent, ..., session=HarnessSession(...))``: the model
   asks for the ``count_lines`` tool, the tool runs, and while the model is "thinking" about
   the result the parent kills the child with SIGKILL;
2. the parent opens the same session from the same JSONL root: the question, the call and
   its output survived (``add_items`` returned only after a durable flush), and the run is
   resumed from there with a new ``Runner.run`` whose model answers;
3. ``harness --store ROOT log ID`` prints the session, as for any harness session.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import Agent, ModelSettings, RunConfig, Runner, function_tool
from agents.items import ModelResponse, TResponseInputItem
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from harness.integrations.openai_agents import HarnessSession
from harness.stores import SessionStore, open_store

SESSION_ID = "agents-resume-demo"
READY = "child-ready"  # the file the child writes when it is about to be killed


@function_tool
def count_lines(path: str) -> str:
    """Count the lines of a file (a scripted answer: this is a demo)."""
    return f"{path}: 42 lines"


class ScriptedModel(Model):
    """A ``Model`` that follows a script instead of calling an API.

    ``call``: the first response asks for ``count_lines``; then ``block`` makes the model wait
    forever (the parent kills the process there), or else it answers with what the tool said.
    """

    def __init__(self, *, block: Path | None = None) -> None:
        self.block = block

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        items = [input] if isinstance(input, str) else input
        outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if not outputs:
            call = ResponseFunctionToolCall(
                type="function_call", id="fc_1", call_id="call_count_1", name="count_lines",
                arguments='{"path": "a.txt"}', status="completed",
            )  # fmt: skip
            return ModelResponse(output=[call], usage=Usage(requests=1), response_id=None)
        if self.block is not None:
            self.block.write_text("the tool output is in the session\n", encoding="utf-8")
            await asyncio.Event().wait()  # "thinking" until SIGKILL
        last: dict[str, Any] = dict(outputs[-1])  # a function_call_output item
        text = f"Done: {last['output']}."
        message = ResponseOutputMessage(
            type="message", id="msg_1", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )  # fmt: skip
        return ModelResponse(output=[message], usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this demo runs the agent without streaming")


def agent(model: Model) -> Agent[Any]:
    return Agent(name="counter", instructions="Count lines with the tool.", model=model, tools=[count_lines])


def store(root: Path) -> SessionStore:
    return open_store(f"jsonl:{root}", compression="none")


async def child(root: Path) -> None:
    """The run that gets killed."""
    async with store(root) as sessions:
        session = HarnessSession(SESSION_ID, sessions)
        model = ScriptedModel(block=root / READY)
        await Runner.run(agent(model), "How many lines has a.txt?", session=session, run_config=CONFIG)


async def resume(root: Path) -> tuple[list[Any], str]:
    """Open the killed session and finish the work."""
    async with store(root) as sessions:
        session = HarnessSession(SESSION_ID, sessions)
        survived = await session.get_items()
        result = await Runner.run(
            agent(ScriptedModel()), "Please finish.", session=session, run_config=CONFIG
        )
        return survived, str(result.final_output)


CONFIG = RunConfig(tracing_disabled=True)


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "--child":
        asyncio.run(child(Path(argv[2])))
        return 0
    root = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="agents-resume-"))
    root.mkdir(parents=True, exist_ok=True)
    (root / READY).unlink(missing_ok=True)
    process = subprocess.Popen([sys.executable, __file__, "--child", str(root)])
    deadline = time.monotonic() + 120
    while not (root / READY).exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            print("the child ended before it could be killed", file=sys.stderr)
            return 1
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    print(f"killed the run (pid {process.pid}, SIGKILL) while the model was thinking")
    survived, answer = asyncio.run(resume(root))
    kinds = [item.get("type", "message") for item in survived]
    print(f"survived the kill: {len(survived)} items: {', '.join(kinds)}")
    print(f"resumed run answered: {answer}")
    log = subprocess.run(
        [sys.executable, "-m", "harness", "--store", str(root), "--compression", "none", "log", SESSION_ID],
        capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "80"},
    )  # fmt: skip
    print(log.stdout, end="")
    if log.returncode != 0:
        print(log.stderr, file=sys.stderr)
    return log.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
