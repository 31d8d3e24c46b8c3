"""``examples/openai_agents_resume.py`` (issue 15, item 4): an SDK run in a harness session,
killed with SIGKILL mid-run, resumed, then shown by ``harness log``."""

from __future__ import annotations

from pathlib import Path

from tests.integrations.examples_support import run_example


def test_the_killed_run_resumes_and_harness_log_shows_it(tmp_path: Path) -> None:
    out = run_example("openai_agents_resume.py", tmp_path, timeout=600, columns=80)
    assert "SIGKILL" in out
    # the question, the call and its output were durable before the kill
    assert "survived the kill: 3 items: message, function_call, function_call_output" in out
    assert "resumed run answered: Done: a.txt: 42 lines." in out
    log = out[out.index("seq  time") :]
    for line in (
        "user/message       +  How many lines has a.txt?",
        'assistant/message  +  → count_lines {"path": "a.txt"}',
        "tool/result        +  a.txt: 42 lines",
        "user/message       +  Please finish.",
        "assistant/message  +  Done: a.txt: 42 lines.",
    ):
        assert line in log
    assert max(len(line) for line in log.splitlines()) <= 80
