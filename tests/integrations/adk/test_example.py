"""``examples/adk_runner.py`` runs an ADK agent through ADK's own ``Runner`` on
``HarnessSessionService``: both turns answer, a fresh store reads every event back with the
user state the agent's ``output_key`` set, and ``harness log`` shows the same events, the tool
call with its name and arguments and its result as a ``tool/result``."""

from __future__ import annotations

from pathlib import Path

from tests.integrations.examples_support import run_example


def test_the_adk_runner_example(tmp_path: Path) -> None:
    out = run_example("adk_runner.py", tmp_path / "root", timeout=180, columns=100)
    assert "Weather in Paris? -> It is 21.5 °C and clear in Paris." in out
    assert "And in Oslo? -> It is 21.5 °C and clear in Oslo." in out
    assert "read back: 8 events; user state: {'last_answer': 'It is 21.5 °C and clear in Oslo.'}" in out
    assert out.count("  forecaster: call") == 2 and out.count("  forecaster: result") == 2
    log = out[out.index("seq  time") :]
    assert log.count("user/message") == 2 and log.count("assistant/message") == 4
    assert log.count("tool/result") == 2  # an ADK function response reads as harness's own
    assert '→ get_weather {"city":"Paris"}' in log and '"temp_c":21.5' in log
    assert "adk/session" in log
