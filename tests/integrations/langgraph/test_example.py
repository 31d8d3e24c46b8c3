"""``examples/langgraph_resume.py`` runs: the worker is killed with SIGKILL in step 3, the graph
resumes from ``HarnessSaver``'s last durable checkpoint (steps 1 and 2 do not run again) and
finishes, and ``harness log`` shows the thread's session."""

from __future__ import annotations

from pathlib import Path

from tests.integrations.examples_support import run_example


def test_the_example_is_killed_resumed_and_logged(tmp_path: Path) -> None:
    out = run_example("langgraph_resume.py", tmp_path, timeout=300)
    assert "worker killed (exit -9)" in out
    assert "stored: ['step 1 done', 'step 2 done']; next: ['step3']" in out
    resumed = out[out.index("resuming") : out.index("harness log ")]
    assert "step 1 started" not in resumed and "step 2 started" not in resumed
    assert "step 3 started" in resumed and "step 4 started" in resumed
    assert "graph: ['step 1 done', 'step 2 done', 'step 3 done', 'step 4 done']" in out
    log = out[out.index("harness log langgraph:resume-demo") :]
    assert "langgraph/thread" in log and log.count("langgraph/checkpoint") == 6
