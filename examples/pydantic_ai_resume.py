"""A pydantic-ai agent whose conversation lives in harness, killed with SIGKILL mid-run and resumed.

    python examples/pydantic_ai_resume.py ROOT

runs the whole story in a JSONL root ``ROOT`` (needs ``pip install 'harness-sessions[pydantic-ai]'``):

1. A worker process runs an agent (pydantic-ai's ``FunctionModel``, scripted: it calls the
   ``step`` tool for n = 1..5, then answers) and saves the conversation to a
   ``HarnessConversationStore`` at every step of the run, so each model response and each tool
   result is durable before the run goes on.
2. While the tool runs step 3, the worker is killed with SIGKILL.
3. The conversation is loaded from the store: it ends with the model's call of step 3, which
   has no result. The agent continues from there (pydantic-ai runs the pending call) to the end.
4. ``harness log`` shows the session: the same log harness and DeepSeek Harness load.

A tool call that was running when the process died runs again on resume (at least once), as
in any crash-safe agent: make such tools idempotent. ``--worker`` runs step 1 alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pydantic_ai import Agent, CallToolsNode
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_graph import End

from harness.integrations.pydantic_ai import HarnessConversationStore
from harness.stores import open_store

CONVERSATION = "pydantic-ai-resume-demo"
STEPS = 5


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The fake model: one ``step`` call per answered step, then the answer."""
    done = sum(1 for m in messages for p in m.parts if isinstance(p, ToolReturnPart))
    if done >= STEPS:
        return ModelResponse(parts=[TextPart(f"done after {done} steps")])
    return ModelResponse(parts=[ToolCallPart("step", {"n": done + 1}, f"call-step-{done + 1}")])


def build_agent(hang_at: int | None) -> Agent[None, str]:
    agent = Agent(FunctionModel(scripted, model_name="scripted"))

    @agent.tool_plain
    def step(n: int) -> str:
        """Do step ``n`` of the job."""
        print(f"step {n} started", flush=True)
        if n == hang_at:
            time.sleep(600)  # the demo kills the worker here
        return f"step {n} finished"

    return agent


async def run_agent(root: Path, *, hang_at: int | None) -> str:
    """Run (or continue) the conversation to its end, saving it at every step."""
    sessions = open_store(f"jsonl:{root}", compression="none")
    store = HarnessConversationStore(sessions)
    loaded = await store.load(CONVERSATION)
    conversation = loaded or Conversation(conversation_id=CONVERSATION)
    revision = conversation.revision
    prompt = None if loaded is not None else f"do the {STEPS} steps"
    agent = build_agent(hang_at)
    async with agent.iter(prompt, conversation=conversation) as run:
        async for node in run:
            if not isinstance(node, CallToolsNode | End):
                continue
            # a model response has come back: save the history before its tool calls run. (A
            # request is saved with the response that answers it: pydantic-ai fills in a
            # request's fields when it sends it, so one saved earlier would read as an edit.)
            messages = list(run.all_messages())
            checkpoint = Conversation(
                conversation_id=CONVERSATION, messages=messages, usage=run.usage, revision=revision
            )
            await store.save(checkpoint)
            revision = checkpoint.revision
            print(f"saved {len(messages)} messages", flush=True)
        assert run.result is not None
        output = run.result.output
    await sessions.close()
    return output


def demo(root: Path) -> int:
    root.mkdir(parents=True, exist_ok=True)
    worker = subprocess.Popen(
        [sys.executable, __file__, str(root), "--worker", "--hang-at", "3"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    for line in worker.stdout:
        print(f"  worker: {line.rstrip()}")
        if line.startswith("step 3 started"):
            os.kill(worker.pid, signal.SIGKILL)
            break
    worker.wait()
    print(f"worker killed (exit {worker.returncode})")

    async def stored() -> tuple[list[ModelMessage], str | None]:
        sessions = open_store(f"jsonl:{root}", compression="none")
        store = HarnessConversationStore(sessions)
        loaded = await store.load(CONVERSATION)
        session_id = await store.session_of(CONVERSATION)
        await sessions.close()
        return ([] if loaded is None else loaded.messages), session_id

    messages, _ = asyncio.run(stored())
    last = messages[-1].parts[-1] if messages else None
    pending = f"{last.tool_name}({last.args})" if isinstance(last, ToolCallPart) else "nothing"
    print(f"stored: {len(messages)} messages; the last one calls {pending}")
    print("resuming")
    output = asyncio.run(run_agent(root, hang_at=None))
    print(f"agent: {output}")
    _, session_id = asyncio.run(stored())  # the session the conversation's newest messages are in
    assert session_id is not None
    print(f"harness log {session_id}")
    log = subprocess.run(
        [sys.executable, "-m", "harness", "--store", str(root), "log", session_id],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        check=False,
    )
    print(log.stdout, end="")
    return log.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="JSONL session root")
    parser.add_argument("--worker", action="store_true", help="run the agent only (step 1)")
    parser.add_argument("--hang-at", type=int, default=None, help="the step the worker hangs at")
    args = parser.parse_args()
    if args.worker:
        print(asyncio.run(run_agent(args.root, hang_at=args.hang_at)))
        return 0
    return demo(args.root)


if __name__ == "__main__":
    sys.exit(main())
