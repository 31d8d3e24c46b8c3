"""A LangGraph graph checkpointed in harness, killed with SIGKILL mid-run and resumed.

    python examples/langgraph_resume.py ROOT

runs the whole story in a JSONL root ``ROOT`` (needs ``pip install 'harness-sessions[langgraph]'``):

1. A worker process runs a four-step ``StateGraph`` (``step1 -> step2 -> step3 -> step4``, each
   adding a line to the state) with ``HarnessSaver`` as its checkpointer and
   ``durability="sync"``: the checkpoint of each step is durable before the next step starts.
2. While ``step3`` runs, the worker is killed with SIGKILL.
3. A new saver over the same root reads the thread: its last checkpoint is the one after step 2,
   and the step to run next is ``step3``. ``graph.invoke(None, config)`` resumes from there:
   steps 1 and 2 do not run again.
4. ``harness log`` shows the thread's session: LangGraph's checkpoints and writes as harness
   events, in a log harness and DeepSeek Harness load.

A step that was running when the process died runs again on resume (at least once): make such
steps idempotent. ``--worker`` runs step 1 alone.
"""

from __future__ import annotations

import argparse
import operator
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

from harness.integrations.langgraph import HarnessSaver
from harness.stores import open_store

THREAD = "resume-demo"
STEPS = 4


class State(TypedDict):
    lines: Annotated[list[str], operator.add]


def build_graph(saver: HarnessSaver, hang_at: int | None) -> Any:
    builder = StateGraph(State)

    def make_step(n: int) -> Any:
        def step(state: State) -> dict[str, Any]:
            print(f"step {n} started", flush=True)
            if n == hang_at:
                time.sleep(600)  # the demo kills the worker here
            return {"lines": [f"step {n} done"]}

        return step

    for n in range(1, STEPS + 1):
        builder.add_node(f"step{n}", make_step(n))
    builder.add_edge(START, "step1")
    for n in range(1, STEPS):
        builder.add_edge(f"step{n}", f"step{n + 1}")
    builder.add_edge(f"step{STEPS}", END)
    return builder.compile(checkpointer=saver)


def open_saver(root: Path) -> HarnessSaver:
    return HarnessSaver(open_store(f"jsonl:{root}", compression="none"))


def run(root: Path, *, hang_at: int | None, resume: bool) -> list[str]:
    config: Any = {"configurable": {"thread_id": THREAD}}
    with open_saver(root) as saver:
        graph = build_graph(saver, hang_at)
        result = graph.invoke(None if resume else {"lines": []}, config, durability="sync")
    return list(result["lines"])


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

    config: Any = {"configurable": {"thread_id": THREAD}}
    with open_saver(root) as saver:
        state = build_graph(saver, None).get_state(config)
        print(f"stored: {state.values['lines']}; next: {list(state.next)}")
        session_id = saver.session_id(THREAD)
    print("resuming")
    print(f"graph: {run(root, hang_at=None, resume=True)}")
    print(f"harness log {session_id}")
    log = subprocess.run(
        [sys.executable, "-m", "harness", "--store", str(root), "log", session_id],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
        check=False,
    )
    print(log.stdout, end="")
    return log.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="JSONL session root")
    parser.add_argument("--worker", action="store_true", help="run the graph only (step 1)")
    parser.add_argument("--hang-at", type=int, default=None, help="the step the worker hangs at")
    args = parser.parse_args()
    if args.worker:
        print(run(args.root, hang_at=args.hang_at, resume=False))
        return 0
    return demo(args.root)


if __name__ == "__main__":
    sys.exit(main())
