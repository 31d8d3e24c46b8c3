"""``harness export ID --format otlp`` on the demo's sessions: to a file and to a real OTLP/HTTP
receiver on 127.0.0.1 that decodes the payload with opentelemetry-proto; ``harness run --otel``
emitting live to the same receiver; and the refusals."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from harness.cli import app
from harness.demos.agent import DEMO_KEY, run_agent_demo
from harness.stores.jsonl.reader import read_session_file
from harness.telemetry import project_session
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from tests.agent.cli_support import cli, offline_env
from tests.telemetry.receiver import OtlpReceiver, closed_port, decode, spans_of, tree

OTEL_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
)

# The demo: the agent run killed mid-tool and resumed (two turns), then the compaction session.
DEMO_RUN_TREE = [
    "trace",
    "  invoke_agent harness ·harness.crash_repair ·harness.crash_repair",
    "    chat deepseek-v4-flash",
    "    execute_tool read_file",
    "    chat deepseek-v4-flash",
    "    execute_tool write_file ·harness.approval.asked ·harness.approval.decided",
    "    chat deepseek-v4-flash",
    "    execute_tool mcp__facts__line_count",
    "    chat deepseek-v4-flash",
    "    execute_tool run_shell ·harness.approval.asked ·harness.approval.decided",
    "trace",
    "  invoke_agent harness ·harness.recovery.check",
    "    chat deepseek-v4-flash",
    "    execute_tool read_file",
    "    chat deepseek-v4-flash",
]
DEMO_COMPACTION_LAST_TRACE = [
    "trace",
    "  invoke_agent harness",
    "    harness.compaction",
    "      chat deepseek-v4-flash",
    "    chat deepseek-v4-flash",
]


def post(root: Path, session_id: str, endpoint: str, header: str, *more: str) -> Any:
    """``harness export ID --format otlp --endpoint E --header H ...``."""
    return cli(
        root, "export", session_id, "--format", "otlp", "--endpoint", endpoint, "--header", header, *more
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The demo's store and its two session ids (the run, the compaction)."""
    sessions = tmp_path_factory.mktemp("otel-demo") / "sessions"
    final = run_agent_demo(Console(file=io.StringIO(), width=100), sessions=sessions)
    ids = [read_session_file(str(p)).id for p in sessions.rglob("session.jsonl*")]
    other = next(i for i in ids if i != final.id)
    return sessions, final.id, other


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    offline_env(monkeypatch, DEMO_KEY)
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_the_demo_exports_to_a_real_receiver_with_the_expected_tree(demo: tuple[Path, str, str]) -> None:
    root, run_id, compaction_id = demo
    with OtlpReceiver() as receiver:
        result = post(
            root, run_id, receiver.endpoint, "authorization=Bearer abc%20def", "--header", "x-tenant=t1"
        )
        assert result.exit_code == 0, result.output
        assert "exported 13 spans in 2 traces" in result.stderr
        (request,) = receiver.received
        assert request.path == "/v1/traces" and request.content_type == "application/json"
        assert request.headers["authorization"] == "Bearer abc def" and request.headers["x-tenant"] == "t1"
        run_spans = receiver.spans()
        assert tree(run_spans) == DEMO_RUN_TREE
        resource = request.message.resource_spans[0]
        assert {a.key: a.value.string_value for a in resource.resource.attributes} == {
            "service.name": "harness"
        }
        assert resource.scope_spans[0].scope.name == "harness.telemetry"
        assert resource.scope_spans[0].schema_url == "https://opentelemetry.io/schemas/1.41.0"
        shell = next(s for s in run_spans if s.name == "execute_tool run_shell")
        assert shell.attributes["error.type"] == "TOOL_OUTCOME_UNKNOWN" and shell.status_code == 2
        assert shell.attributes["gen_ai.tool.call.id"] == "call_shell"
        chat = next(s for s in run_spans if s.name.startswith("chat"))
        assert chat.kind == 3 and chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "deepseek"
        assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]

        # the compaction session, through the environment's endpoint and headers, as protobuf
        receiver.received.clear()
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=k%3D1",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_SERVICE_NAME": "demo-agent",
        }
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            result = cli(root, "export", compaction_id, "--format", "otlp")
        assert result.exit_code == 0, result.output
        (request,) = receiver.received
        assert request.content_type == "application/x-protobuf" and request.headers["api-key"] == "k=1"
        compaction_tree = tree(receiver.spans())
        assert compaction_tree[-len(DEMO_COMPACTION_LAST_TRACE) :] == DEMO_COMPACTION_LAST_TRACE
        assert compaction_tree.count("trace") == compaction_tree.count("  invoke_agent harness") == 6
        compaction = next(s for s in receiver.spans() if s.name == "harness.compaction")
        assert compaction.attributes["harness.compaction.outcome"] == "compacted"
        assert (
            compaction.attributes["harness.compaction.tokens_after"]
            < compaction.attributes["harness.compaction.tokens_before"]
        )
        attributes = request.message.resource_spans[0].resource.attributes
        assert {a.key: a.value.string_value for a in attributes} == {"service.name": "demo-agent"}


def test_exporting_twice_to_a_file_gives_the_same_bytes(demo: tuple[Path, str, str], tmp_path: Path) -> None:
    root, run_id, _ = demo
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert cli(root, "export", run_id, "--format", "otlp", "-o", str(first)).exit_code == 0
    assert cli(root, "export", run_id, "--format", "otlp", "--output", str(second)).exit_code == 0
    assert first.read_bytes() == second.read_bytes()
    message = decode(first.read_bytes(), "application/json")
    assert tree(spans_of([message])) == DEMO_RUN_TREE
    assert "read_file" in first.read_text() and "Two items" not in first.read_text()  # no content
    with_content = tmp_path / "c.json"
    assert (
        cli(root, "export", run_id, "--format", "otlp", "--content", "-o", str(with_content)).exit_code == 0
    )
    assert "Two items" in with_content.read_text()  # the model's text, when asked for
    stdout = cli(root, "export", run_id, "--format", "otlp")
    assert stdout.exit_code == 0 and json.loads(stdout.stdout) == json.loads(first.read_text())
    summary = cli(root, "export", run_id, "--format", "otlp", "--json")
    document = json.loads(summary.stdout)
    assert (document["spans"], document["traces"], document["sent"]) == (13, 2, [])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--endpoint", "ftp://127.0.0.1/x"], "must be an http(s) URL"),
        (["--endpoint", "http://127.0.0.1:1", "--header", "no-equals-sign"], "header 1 is not name=value"),
        (["--endpoint", "http://127.0.0.1:1", "--protocol", "grpc"], "protocol must be one of"),
        (["--endpoint", f"http://127.0.0.1:{closed_port()}"], "could not be reached"),
    ],
)
def test_a_bad_target_is_refused_with_a_clear_error(
    demo: tuple[Path, str, str], args: list[str], message: str
) -> None:
    root, run_id, _ = demo
    result = cli(root, "export", run_id, "--format", "otlp", *args)
    assert result.exit_code == 1 and message in result.stderr, result.output


def test_a_collector_that_refuses_is_an_error_and_header_values_stay_secret(
    demo: tuple[Path, str, str],
) -> None:
    root, run_id, _ = demo
    with OtlpReceiver(status=401) as receiver:
        result = post(root, run_id, receiver.endpoint, "authorization=Bearer sk-very-secret-token-123456")
    assert result.exit_code == 1 and "HTTP 401" in result.stderr
    assert "sk-very-secret" not in result.output


def test_otlp_options_need_the_otlp_format(demo: tuple[Path, str, str]) -> None:
    root, run_id, _ = demo
    result = cli(root, "export", run_id, "--content")
    assert result.exit_code == 2 and "go with --format otlp" in result.stderr
    assert cli(root, "export", run_id, "--format", "yaml").exit_code == 2


@pytest.mark.parametrize("command", ["run", "chat"])
def test_run_and_chat_with_otel_emit_the_turn_live_to_the_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    script = [
        Reply.tool_calls([("c1", "read_file", '{"path":"notes.txt"}')], text="Reading."),
        Reply.text("Done."),
    ]
    with OtlpReceiver() as receiver, FakeDeepSeek(script, api_key=DEMO_KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=agents")
        if command == "run":
            result = cli(tmp_path / "sessions", "run", "read the notes", "-w", str(workspace), "--otel")
        else:
            result = CliRunner().invoke(
                app,
                ["--store", str(tmp_path / "sessions"), "chat", "-w", str(workspace), "--otel"],
                input="read the notes\n/exit\n",
                catch_exceptions=False,
            )
        assert result.exit_code == 0, result.output
        received = receiver.spans()
        headers = receiver.received[0].headers
    assert headers["x-team"] == "agents"
    assert tree(received) == [
        "trace",
        "  invoke_agent harness",
        "    chat deepseek-v4-flash",
        "    execute_tool read_file",
        "    chat deepseek-v4-flash",
    ]
    (log,) = (tmp_path / "sessions").rglob("session.jsonl*")
    stored = read_session_file(str(log))
    assert {s.span_id for s in received} == {s.span_id for s in project_session(stored.id, stored.events)}
