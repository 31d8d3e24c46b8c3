"""``harness log`` on a real terminal width (issue 12 item 10): laid out for 80 columns first,
every row keeps its seq, time, type and surface mark, summaries are readable text (never a
Python repr), failures say their message, and sources are folded to a range or a count."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import harness
from harness.cli import app
from harness.cli.render import events_table, fold_seqs
from harness.compaction import ExtractiveSummarizer, compact_now
from harness.events.event import Event, Replace
from harness.present.summary import event_summary, is_failure, plural
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore

SID = "session-3f706544-ca59-4a7f-a825-92b905f9b9bc"
WIDTHS = (80, 100, 200)
ROUTE = {"provider": "deepseek-official", "model": "deepseek-v4-flash"}
NOT_FOUND = "There is no file at missing.txt."
AUTH = "HTTP 401: Authentication Fails (the API key is invalid)"
COMPACTION_FAILED = "TRANSPORT: transport failure: Connection error."


def _long_reply(session: harness.Session, turn: int, step: int, words: int) -> Event:
    """An assistant message streamed as ``words`` text deltas (its sources: every chunk seq)."""
    pieces = [f"word{n} " for n in range(words)]
    seqs = [
        session.append(
            "assistant/chunk",
            {"turn": turn, "step": step, "chunk": {"type": "text-delta", "index": 0, "text": piece}},
        ).seq
        for piece in pieces
    ]
    reply = harness.assistant_message("".join(pieces), **ROUTE)
    return session.append(
        "assistant/message",
        {"turn": turn, "step": step, "message": reply},
        surface_op="append",
        source_event_seqs=seqs,
    )


def _tool_step(session: harness.Session, turn: int, step: int, call_id: str) -> None:
    session.append("step/start", {"turn": turn, "step": step})
    arguments = '{"path":"missing.txt"}'
    deltas = [
        session.append(
            "assistant/chunk",
            {
                "turn": turn,
                "step": step,
                "chunk": {"type": "tool-call-delta", "index": 0, "id": call_id, "argumentsDelta": ch},
            },
        ).seq
        for ch in arguments
    ]
    call = harness.tool_call_block(call_id, "read_file", arguments)
    session.append(
        "assistant/message",
        {"turn": turn, "step": step, "message": harness.assistant_message([call], **ROUTE)},
        surface_op="append",
        source_event_seqs=deltas,
    )
    started = session.append(
        "tool/call",
        {"turn": turn, "step": step, "callId": call_id, "name": "read_file", "arguments": arguments},
    )
    session.append(
        "tool/result",
        {
            "turn": turn,
            "step": step,
            "message": harness.tool_result_message(call_id, NOT_FOUND, is_error=True),
            "error": {"name": "ToolError", "code": "NOT_FOUND"},
        },
        surface_op="append",
        source_event_seqs=[started.seq],
    )
    session.append("step/end", {"turn": turn, "step": step})


def audit_session() -> harness.Session:
    """Long assistant messages with many chunk sources, tool calls, failures, nested plugin
    data, a failed compaction and a compaction replace."""
    session = harness.Session.create(harness.SessionHeader.new(id=SID, cwd="/home/me/proj"))
    for turn in (1, 2):
        session.append("turn/start", {"turn": turn})
        session.append("step/start", {"turn": turn, "step": 1})
        ask = harness.user_message(f"Summarise the notes, part {turn}")
        session.append("user/message", ask, surface_op="append")
        _long_reply(session, turn, 1, 150)
        session.append("step/end", {"turn": turn, "step": 1})
        _tool_step(session, turn, 2, f"call-{turn}")
        session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    session.append("turn/start", {"turn": 3})
    session.append("step/start", {"turn": 3, "step": 1})
    session.append("user/message", harness.user_message("again"), surface_op="append")
    session.append("step/end", {"turn": 3, "step": 1})
    failure = {"message": AUTH, "code": "AUTH", "status": 401}
    session.append("turn/end", {"turn": 3, "reason": {"kind": "error", "error": failure}})
    session.append(
        "todo/write",
        {"todos": [{"content": "read", "status": "completed"}, {"content": "write", "status": "pending"}]},
    )
    session.append("hook/result", {"hook": "lint", "output": {"lines": ["a", "b"], "ok": False}})
    session.append("compaction/start", {"compactionId": "020cdbf3-4aba-4c6f-a0f9-923db9fe172e", "turn": None})
    session.append(
        "compaction/end",
        {"compactionId": "020cdbf3-4aba-4c6f-a0f9-923db9fe172e", "turn": None, "error": COMPACTION_FAILED},
    )
    result = asyncio.run(compact_now(session, ExtractiveSummarizer()))
    assert result is not None
    return session


@pytest.fixture(scope="module")
def session() -> harness.Session:
    return audit_session()


@pytest.fixture(scope="module")
def events(session: harness.Session) -> list[Event]:
    return list(session.events)


def render(events: list[Event], width: int) -> list[str]:
    screen = io.StringIO()
    console = Console(file=screen, width=width, force_terminal=False, color_system=None)
    console.print(events_table(events, width))
    return screen.getvalue().splitlines()


def check_layout(lines: list[str], events: list[Event], width: int) -> None:
    text = "\n".join(lines)
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    for event in events:  # each event's row starts with its seq, its time, its full type
        stamp = r"(\d{4}-)?(\d\d-\d\d )?\d\d:\d\d:\d\d"
        row = re.compile(rf"^\s*{event.seq}\s+{stamp}\s+{re.escape(event.type)}\b")
        assert any(row.match(line) for line in lines), (width, event.seq, event.type)
    assert "Frozen" not in text and "FrozenList" not in text and "FrozenDict" not in text
    # the failures say their message (a failure may take more than one line)
    flat = " ".join(" ".join(line.split()) for line in lines)
    for message in ("NOT_FOUND", "There is no file", "AUTH", "HTTP 401", "TRANSPORT: transport failure"):
        assert message in flat, (width, message)
    if width >= 100:  # nested plugin data as compact JSON
        assert 'hook=lint, output={"lines":["a","b"],"ok":false}' in flat


@pytest.mark.parametrize("width", WIDTHS)
def test_the_log_table_fits_the_width_and_keeps_every_column(events: list[Event], width: int) -> None:
    lines = render(events, width)
    check_layout(lines, events, width)
    text = "\n".join(lines)
    replace = next(e for e in events if isinstance(e.surface_op, Replace))
    assert isinstance(replace.surface_op, Replace)
    span = f"{replace.surface_op.start}..{replace.surface_op.end}"
    message = next(e for e in events if len(e.source_event_seqs or ()) == 150)
    chunks = message.source_event_seqs or ()
    if width >= 100:  # the sources column, folded to a range
        assert "sources" in lines[1] + lines[0]
        assert f"{chunks[0]}..{chunks[-1]}" in text
    else:
        assert "sources" not in text
    assert f"{chunks[0]},{chunks[1]}" not in text  # never every chunk seq
    assert span in text  # the replaced range is shown at every width
    assert re.search(rf"^\s*{replace.seq}\s.*\b(R|replace {re.escape(span)})\b", text, re.MULTILINE)
    appended = next(e for e in events if e.type == "user/message")
    assert re.search(rf"^\s*{appended.seq}\s.*\buser/message\s+(\+|append)\s", text, re.MULTILINE)


@pytest.mark.parametrize("width", WIDTHS)
def test_harness_log_follows_columns(
    session: harness.Session, events: list[Event], tmp_path: Path, width: int
) -> None:
    async def save() -> None:
        store = SessionStore(JsonlBackend(tmp_path))
        live = await store.create(session.header)
        for event in events:
            live.append(
                event.type, event.data, surface_op=event.surface_op, source_event_seqs=event.source_event_seqs
            )
        await store.close()

    asyncio.run(save())
    result = CliRunner().invoke(app, ["--store", str(tmp_path), "log", SID], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    check_layout(lines, events, width)
    assert re.search(rf"^\s*{len(events)}\s.*session/end-seed", result.stdout, re.MULTILINE)  # the load's


def test_summaries_are_readable_text_never_reprs(events: list[Event]) -> None:
    by_type = {event.type: event for event in events}
    assert event_summary(by_type["hook/result"], 200) == 'hook=lint, output={"lines":["a","b"],"ok":false}'
    assert event_summary(by_type["todo/write"], 200) == "2 todos: 1 completed, 1 pending"
    turn_end = [e for e in events if e.type == "turn/end"][-1]
    assert event_summary(turn_end, 200) == f"turn 3 error: AUTH: {AUTH}"
    result = next(e for e in events if e.type == "tool/result")
    assert event_summary(result, 200) == f"error NOT_FOUND: {NOT_FOUND}"
    failed = next(e for e in events if e.type == "compaction/end")
    assert event_summary(failed, 200) == f"failed: {COMPACTION_FAILED} [020cdbf3]"
    failure = {"message": "HTTP 429: Rate limit reached for requests", "code": "RATE_LIMIT", "status": 429}
    data = {"retry": 1, "maxRetries": 3, "delayMs": 2000, "failure": failure}
    retry = Event.create("llm/retry", 0, 0, data)
    assert event_summary(retry, 200) == (
        "rate limited (HTTP 429), retrying in 2 s… (retry 1 of 3) — HTTP 429: Rate limit reached for requests"
    )
    nested = Event.create("plugin/x", 0, 0, {"rows": [{"a": [1, 2]}], "flag": None})
    assert event_summary(nested, 200) == 'rows=[{"a":[1,2]}], flag=null'
    assert "Frozen" not in event_summary(Event.create("plugin/y", 0, 0, {"a": {"b": [{"c": 1}]}}), 200)


def test_sources_fold_to_a_range_or_a_count() -> None:
    assert fold_seqs(list(range(6, 17))) == "6..16"
    assert fold_seqs([18]) == "18"
    assert fold_seqs([103, 104, 3, 17], 14) == "103..104,3,17"
    assert fold_seqs([103, 104, 3, 17, 19, 28, 32, 41, 43, 87], 10) == "10 seqs"
    assert fold_seqs([]) == "none" and fold_seqs(None) == ""
    assert plural(1, "closer") == "1 closer" and plural(3, "closer") == "3 closers"


def test_a_failed_attempts_finish_chunk_says_its_error() -> None:
    """It showed "finish error" alone: the code and message of the failure were lost."""
    failure = {"code": "RATE_LIMIT", "message": "HTTP 429: Rate limit reached", "status": 429}
    chunk = {"type": "finish", "reason": {"kind": "error", "failure": failure}}
    event = Event.create("assistant/chunk", 7, 0, {"turn": 1, "step": 1, "chunk": chunk})
    assert event_summary(event, 200) == "finish error: RATE_LIMIT: HTTP 429: Rate limit reached"
    assert is_failure(event)
    lines = render([event], 80)
    flat = " ".join(" ".join(line.split()) for line in lines)
    assert "RATE_LIMIT: HTTP 429" in flat
    stop = Event.create("assistant/chunk", 8, 0, {"chunk": {"type": "finish", "reason": {"kind": "stop"}}})
    assert event_summary(stop, 200) == "finish stop" and not is_failure(stop)


@pytest.mark.parametrize("suffix", ["", ".zstd"])
def test_log_of_a_file_says_what_the_file_does_not_hold(suffix: str) -> None:
    """``harness log FILE`` showed the load's closers as if they were in the file, and said
    nothing of the torn tail it left out: an auditor could not tell them apart."""
    from tests.test_fixtures_dsh import FIXTURES

    path = Path(FIXTURES) / f"06-torn-tail-input-DERIVED.jsonl{suffix}"
    result = CliRunner().invoke(app, ["log", str(path)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines)
    flat = " ".join(" ".join(result.stdout.split()).split())
    assert "note: the file ends in a torn tail after byte" in flat
    closers = re.search(r"note: seq (\d+)\.\.(\d+): 2 closers a load would commit", flat)
    assert closers, flat
    first, last = int(closers.group(1)), int(closers.group(2))
    assert re.search(rf"^\s*{last}\s.*turn/end\s+turn 1 interrupted", result.stdout, re.MULTILINE)
    assert first == last - 1
    plain = CliRunner().invoke(app, ["log", str(Path(FIXTURES) / "01-simple-chat.jsonl")])
    assert "note:" not in plain.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_a_tail_line_fits_the_width(events: list[Event], width: int) -> None:
    """``harness tail`` cut every summary at 100 characters whatever the terminal, so at 80
    columns each event wrapped over two or three lines."""
    from harness.cli.render import tail_line

    for event in events:
        screen = io.StringIO()
        Console(file=screen, width=width, color_system=None, soft_wrap=True).print(tail_line(event, width))
        (line,) = screen.getvalue().splitlines()
        assert len(line) <= width, line
        assert line.split()[0] == str(event.seq) and event.type in line
    long = next(e for e in events if len(event_summary(e, 1000)) > 200)
    assert len(tail_line(long, 200).plain) > 150  # a wide terminal gets a longer summary
