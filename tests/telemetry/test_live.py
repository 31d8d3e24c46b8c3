"""The live observer: spans through the SDK's tracer provider as the agent runs, with the ids
and attributes an export gives; a hung or dead collector neither slows nor breaks the session."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import harness
from harness.agent.approval import FixedApprover
from harness.agent.loop import Agent, AgentSettings
from harness.providers.deepseek import DeepSeekProvider
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore
from harness.telemetry import LiveTelemetry, SpanRecord, project_session
from harness.telemetry import conventions as c
from harness.testing.fake_deepseek import FakeDeepSeek, Reply, usage
from harness.tools.registry import default_tools
from tests.agent.cli_support import PROXY_VARIABLES
from tests.telemetry.receiver import HungCollector, OtlpReceiver, closed_port, tree

KEY = "sk-live-telemetry-test-0000"


def script() -> list[Reply]:
    return [
        Reply.tool_calls(
            [("call_a", "read_file", '{"path": "notes.txt"}')], text="Reading.", usage=usage(90, 7)
        ),
        Reply.tool_calls([("call_b", "write_file", '{"path": "out.txt", "content": "x"}')]),
        Reply.text("Done.", usage=usage(120, 3)),
    ]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


async def run_agent(workspace: Path, attach: Callable[[harness.Session], object]) -> harness.Session:
    """One agent turn (read, write after an approval, answer) with ``attach(session)`` called
    on the new session; returns the session after its flush."""
    (workspace / "notes.txt").write_text("alpha\n")
    store = SessionStore(MemoryBackend())
    with FakeDeepSeek(script(), api_key=KEY) as server:
        provider = DeepSeekProvider(server.base_url, api_key=KEY)
        try:
            session = await store.create(cwd=str(workspace))
            attach(session)
            agent = Agent(
                session,
                provider,
                default_tools(),
                AgentSettings(model="deepseek-v4-flash", system="Be brief."),
                workspace=workspace,
                checkpoint=store.flush,
                approver=FixedApprover("allowed-once"),
            )
            outcome = await agent.run_turn("copy the notes")
            assert outcome.reason["kind"] == "completed"
            await store.flush(session)
            return session
        finally:
            await provider.aclose()
            await store.close()


def _as_records(spans: list[SpanRecord]) -> dict[str, SpanRecord]:
    return {s.span_id: s for s in spans}


def test_live_spans_are_the_exported_spans(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    lives: list[LiveTelemetry] = []

    def attach(session: harness.Session) -> LiveTelemetry:
        lives.append(LiveTelemetry(session, provider))
        return lives[-1]

    session = asyncio.run(run_agent(tmp_path, attach))
    assert lives[0].close(timeout=10) is True
    assert lives[0].dropped == 0 and lives[0].failed == 0
    finished = exporter.get_finished_spans()
    expected = _as_records(project_session(session.id, session.events))
    assert len(finished) == len(expected) == lives[0].emitted
    for span in finished:
        context = span.get_span_context()
        assert context is not None
        record = expected[f"{context.span_id:016x}"]
        assert f"{context.trace_id:032x}" == record.trace_id
        parent = f"{span.parent.span_id:016x}" if span.parent is not None else None
        assert parent == record.parent_span_id
        assert span.name == record.name
        assert (span.start_time, span.end_time) == (record.start_ns, record.end_ns)
        assert dict(span.attributes or {}) == {
            k: tuple(v) if isinstance(v, list) else v for k, v in record.attributes.items()
        }
        assert [e.name for e in span.events] == [e.name for e in record.events]
        assert span.kind == (SpanKind.CLIENT if record.kind == "client" else SpanKind.INTERNAL)
        assert span.status.status_code == (StatusCode.ERROR if record.status == "error" else StatusCode.UNSET)
        assert span.instrumentation_scope is not None and span.instrumentation_scope.name == c.SCOPE_NAME
    names = sorted(s.name for s in finished)
    assert names == sorted(
        [
            "invoke_agent harness",
            *["chat deepseek-v4-flash"] * 3,
            "execute_tool read_file",
            "execute_tool write_file",
        ]
    )
    write = next(s for s in finished if s.name == "execute_tool write_file")
    assert [e.name for e in write.events] == [c.EVENT_APPROVAL_ASKED, c.EVENT_APPROVAL_DECIDED]
    agent = next(s for s in finished if s.parent is None)
    assert agent.attributes is not None and agent.attributes[c.INPUT_TOKENS] == 90 + 120
    # the provider's other tracers keep their random ids
    other = provider.get_tracer("someone-else").start_span("theirs")
    other.end()
    assert f"{other.get_span_context().span_id:016x}" not in expected


def test_a_session_that_attaches_late_emits_only_what_follows(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    first = asyncio.run(run_agent(tmp_path, lambda session: None))
    # a second observer on a copy of the finished log sees the context and emits nothing
    copy = harness.Session.from_decoded(first.id, [e.to_json() for e in first.events], first.header.to_json())
    live = LiveTelemetry(copy, provider)
    assert live.close(timeout=5) and exporter.get_finished_spans() == ()


def test_a_hung_collector_never_slows_the_session_drops_are_counted_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with HungCollector() as collector:
        exporter = OTLPSpanExporter(endpoint=f"{collector.endpoint}/v1/traces", timeout=5)
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))  # exports inline, on the worker
        lives: list[LiveTelemetry] = []

        def attach(session: harness.Session) -> LiveTelemetry:
            lives.append(LiveTelemetry(session, provider, max_queue=4))
            return lives[-1]

        with caplog.at_level(logging.WARNING, logger="harness.telemetry.live"):
            session = asyncio.run(run_agent(tmp_path, attach))
        live = lives[0]
        # the turn ran to its end while the worker was stuck on its first export: the observer
        # never waited for it, it dropped what did not fit and said so
        assert session.events[-1].type == "turn/end"
        assert live.dropped > 0
        assert "telemetry queue full" in caplog.text
        assert live.close(timeout=0.2) is False  # close does not wait for the hung export either
    exporter.shutdown()  # type: ignore[no-untyped-call]  # the worker's later exports fail at once; the stuck one times out


def test_a_dead_collector_breaks_nothing(tmp_path: Path) -> None:
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{closed_port()}/v1/traces", timeout=1)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    lives: list[LiveTelemetry] = []

    def attach(session: harness.Session) -> LiveTelemetry:
        lives.append(LiveTelemetry(session, provider, owns_provider=True))
        return lives[-1]

    session = asyncio.run(run_agent(tmp_path, attach))
    assert session.events[-1].type == "turn/end"
    assert lives[0].close(timeout=10) is True
    assert lives[0].dropped == 0 and lives[0].emitted == len(project_session(session.id, session.events))


def test_a_live_session_reaches_a_real_collector_over_otlp_http(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        provider = TracerProvider()
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces"))
        )
        lives: list[LiveTelemetry] = []

        def attach(session: harness.Session) -> LiveTelemetry:
            lives.append(LiveTelemetry(session, provider, owns_provider=True))
            return lives[-1]

        session = asyncio.run(run_agent(tmp_path, attach))
        assert lives[0].close(timeout=10) is True
        received = receiver.spans()
    assert receiver.received and all(r.content_type == "application/x-protobuf" for r in receiver.received)
    assert tree(received) == [
        "trace",
        "  invoke_agent harness",
        "    chat deepseek-v4-flash",
        "    execute_tool read_file",
        "    chat deepseek-v4-flash",
        "    execute_tool write_file ·harness.approval.asked ·harness.approval.decided",
        "    chat deepseek-v4-flash",
    ]
    expected = {s.span_id: s for s in project_session(session.id, session.events)}
    assert {s.span_id for s in received} == set(expected)


def test_a_bad_queue_size_is_refused(tmp_path: Path) -> None:
    session = harness.Session.create()
    with pytest.raises(ValueError, match="max_queue"):
        LiveTelemetry(session, TracerProvider(), max_queue=0)
