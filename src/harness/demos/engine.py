"""``harness demo``: one offline session, from append to restore, shown side by side.

The demo uses only the public API (``import harness``). It builds a two-turn session
in memory with a tool call, replaces the first turn with a checkpoint message, writes
every event as a JSON line, restores a new session from those lines and checks that
the restored Surface and model history equal the live ones. It also shows what
``repair_closers`` would add if the process had died in the middle of a turn.

No model is called: the assistant's stream chunks, messages and the tool's output are
scripted here. All model-visible text is this project's own wording.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

import harness
import harness.events.json as harness_json

__all__ = ["DemoCheckFailed", "build_demo_session", "run_demo", "verify_restore"]

PROVIDER: Final = "deepseek-official"
MODEL: Final = "deepseek-v4-flash"
SESSION_ID: Final = "demo-session"
START_MS: Final = 1_767_225_600_000  # 2026-01-01T00:00:00Z: a fixed clock keeps the output stable

SYSTEM_PROMPT: Final = (
    "You help a developer with the files of their project. Look at a file with read_file "
    "before you answer a question about its contents, and keep answers short."
)
READ_FILE_TOOL: Final[Mapping[str, Any]] = {
    "name": "read_file",
    "description": "Return the text of one file of the project, given its path.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Path relative to the project root."}},
        "required": ["path"],
    },
}
TODO_TEXT: Final = "water the plants\nfix the bike\ncall the bank\n"
CHECKPOINT_TEXT: Final = (
    "[Checkpoint: this note stands in for the start of the conversation.] The user asked how many "
    "lines notes/todo.txt has. read_file showed 3 lines: water the plants, fix the bike, call the bank. "
    "The answer given was 3."
)


class DemoCheckFailed(harness.HarnessError):
    """The restored session differs from the live one (a bug in harness, never expected)."""


def _fixed_clock(start: int = START_MS, step: int = 7) -> Callable[[], int]:
    """A deterministic clock (epoch ms) so that the demo prints the same log every run."""
    now = start - step

    def clock() -> int:
        nonlocal now
        now += step
        return now

    return clock


# ---- building the session ------------------------------------------------------------------


def _chunk(session: harness.Session, turn: int, step: int, chunk: Mapping[str, Any]) -> int:
    """Append one ``assistant/chunk`` and return its seq."""
    return session.append("assistant/chunk", {"turn": turn, "step": step, "chunk": dict(chunk)}).seq


def _answer_step(
    session: harness.Session,
    turn: int,
    step: int,
    text: str,
    msg_id: str,
    *,
    user: Mapping[str, Any] | None = None,
) -> None:
    """One model step that streams a plain text answer (after an optional user message)."""
    session.append("step/start", {"turn": turn, "step": step})
    if user is not None:
        session.append("user/message", user, surface_op=harness.APPEND)
    usage = {"inputTokens": 210, "outputTokens": 12, "cacheReadTokens": 128}
    chunks = [
        _chunk(session, turn, step, {"type": "text-delta", "index": 0, "text": text}),
        _chunk(session, turn, step, {"type": "block-end", "index": 0, "block": harness.text_block(text)}),
        _chunk(session, turn, step, {"type": "usage", "usage": usage}),
        _chunk(session, turn, step, {"type": "finish", "reason": {"kind": "stop"}}),
    ]
    message = harness.assistant_message(text, provider=PROVIDER, model=MODEL, id=msg_id)
    session.append(
        "assistant/message",
        {"turn": turn, "step": step, "message": message, "usage": usage},
        surface_op=harness.APPEND,
        source_event_seqs=chunks,
    )
    session.append("step/end", {"turn": turn, "step": step})


def build_demo_session() -> harness.Session:
    """The demo's live session: two finished turns, then turn 1 replaced by a checkpoint."""
    header = harness.SessionHeader.new(id=SESSION_ID, cwd="/home/dev/project", created_at=START_MS)
    session = harness.Session.create(header, clock=_fixed_clock())

    # Turn 1, step 1: the user asks; the model calls read_file; the tool answers.
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    question = harness.user_message("How many lines does notes/todo.txt have?", id="u-1")
    first_node = session.append("user/message", question, surface_op=harness.APPEND).seq
    epoch = harness.EpochHeader.build(
        provider=PROVIDER, model=MODEL, system=SYSTEM_PROMPT, tools=[READ_FILE_TOOL]
    )
    session.append("request/header", {"header": epoch.to_json(), "reason": "initial"})
    session.append("request/context", {"provider": PROVIDER, "model": MODEL, "contextWindow": 1_000_000})
    intro = "I will read the file first."
    args = '{"path":"notes/todo.txt"}'
    call = harness.tool_call_block("call-1", "read_file", args)
    usage = {"inputTokens": 180, "outputTokens": 24}
    chunks = [
        _chunk(session, 1, 1, {"type": "text-delta", "index": 0, "text": intro}),
        _chunk(session, 1, 1, {"type": "block-end", "index": 0, "block": harness.text_block(intro)}),
        _chunk(
            session,
            1,
            1,
            {
                "type": "tool-call-delta",
                "index": 1,
                "id": "call-1",
                "name": "read_file",
                "argumentsDelta": args,
            },
        ),
        _chunk(session, 1, 1, {"type": "block-end", "index": 1, "block": call}),
        _chunk(session, 1, 1, {"type": "usage", "usage": usage}),
        _chunk(session, 1, 1, {"type": "finish", "reason": {"kind": "tool-calls"}}),
    ]
    message = harness.assistant_message(
        [harness.text_block(intro), call], provider=PROVIDER, model=MODEL, id="a-1"
    )
    session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "message": message, "usage": usage},
        surface_op=harness.APPEND,
        source_event_seqs=chunks,
    )
    call_seq = session.append(
        "tool/call", {"turn": 1, "step": 1, "callId": "call-1", "name": "read_file", "arguments": args}
    ).seq
    result = harness.tool_result_message("call-1", TODO_TEXT, is_error=False, id="t-1")
    session.append(
        "tool/result",
        {"turn": 1, "step": 1, "message": result},
        surface_op=harness.APPEND,
        source_event_seqs=[call_seq],
    )
    session.append("step/end", {"turn": 1, "step": 1})

    # Turn 1, step 2: the model answers from the tool result.
    _answer_step(session, 1, 2, "notes/todo.txt has 3 lines.", "a-2")
    last_node_of_turn1 = session.surface.nodes[-1]
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})

    # Turn 2: a short follow-up answered in one step.
    session.append("turn/start", {"turn": 2})
    follow_up = harness.user_message("Thanks. Which task comes first?", id="u-2")
    _answer_step(session, 2, 1, "The first task is: water the plants.", "a-3", user=follow_up)
    session.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})

    # Manual replace while idle: one checkpoint message stands in for all of turn 1.
    # The range is balanced (the tool call and its result are both inside it), and the
    # checkpoint cites every node it shadows.
    nodes = list(session.surface.nodes)
    shadowed = nodes[nodes.index(first_node) : nodes.index(last_node_of_turn1) + 1]
    checkpoint = harness.user_message(
        CHECKPOINT_TEXT, source={"kind": "plugin", "plugin": "compact"}, id="checkpoint-1"
    )
    session.append(
        "user/message",
        checkpoint,
        surface_op=harness.Replace(first_node, last_node_of_turn1),
        source_event_seqs=shadowed,
    )
    return session


def build_crash_fork(session: harness.Session) -> harness.Session:
    """A fork of ``session`` whose third turn stops mid-step, as if the process had died.

    The model asked for two tool calls; the first was recorded as started (``tool/call``)
    but has no result, the second never started.
    """
    fork = session.fork(id=f"{session.id}-crash")
    fork.append("turn/start", {"turn": 3})
    fork.append("step/start", {"turn": 3, "step": 1})
    ask = harness.user_message("Now compare notes/todo.txt with notes/done.txt.", id="u-3")
    fork.append("user/message", ask, surface_op=harness.APPEND)
    calls = [
        harness.tool_call_block("call-2", "read_file", '{"path":"notes/todo.txt"}'),
        harness.tool_call_block("call-3", "read_file", '{"path":"notes/done.txt"}'),
    ]
    message = harness.assistant_message(calls, provider=PROVIDER, model=MODEL, id="a-4")
    fork.append(
        "assistant/message",
        {"turn": 3, "step": 1, "message": message},
        surface_op=harness.APPEND,
        source_event_seqs=[],
    )
    fork.append(
        "tool/call",
        {"turn": 3, "step": 1, "callId": "call-2", "name": "read_file", "arguments": calls[0]["arguments"]},
    )
    return fork


# ---- restore check -------------------------------------------------------------------------


def encode_lines(session: harness.Session) -> list[bytes]:
    """Every event of ``session`` as one compact JSON line (no newline)."""
    return [harness.encode_event(event) for event in session.events]


def restore_from_lines(session: harness.Session, lines: Sequence[bytes]) -> harness.Session:
    """A new session restored from JSON lines, as a store would after reading them back."""
    seed = [harness_json.loads(line) for line in lines]
    return harness.Session.from_restore(session.id, seed, session.header)


def verify_restore(live: harness.Session, restored: harness.Session) -> str:
    """Check that ``restored`` equals ``live``; return a one-line summary or raise ``DemoCheckFailed``."""
    count = len(live.events)
    problems: list[str] = []
    if [harness.encode_event(e) for e in restored.events[:count]] != encode_lines(live):
        problems.append("the restored events do not re-encode to the same JSON lines")
    if list(restored.surface.nodes) != list(live.surface.nodes):
        problems.append(f"Surface {list(restored.surface.nodes)} != {list(live.surface.nodes)}")
    if restored.surface.replace_generation != live.surface.replace_generation:
        problems.append("replace generations differ")
    if restored.derive_messages() != live.derive_messages():
        problems.append("derived model messages differ")
    tail = restored.events[count:]
    if restored.first_live_seq != count or [e.type for e in tail] != ["session/end-seed"]:
        problems.append("restore did not end the seed with one session/end-seed")
    if problems:
        raise DemoCheckFailed("restore did not match the live session: " + "; ".join(problems))
    return (
        f"Restore matched: {count} JSON lines re-encode byte for byte; Surface "
        f"{list(live.surface.nodes)} (generation {live.surface.replace_generation}) and "
        f"{len(live.derive_messages())} model messages are equal; restore added "
        f"session/end-seed at seq {count}."
    )


# ---- rendering -----------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _seq_ranges(seqs: Sequence[int] | None) -> str:
    """``[5, 6, 7, 9]`` → ``"5-7,9"``; ``None`` → ``""``; ``[]`` → ``"[]"``."""
    if seqs is None:
        return ""
    if not seqs:
        return "[]"
    parts: list[str] = []
    start = prev = seqs[0]
    for seq in [*seqs[1:], None]:
        if seq is not None and seq == prev + 1:
            prev = seq
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if seq is not None:
            start = prev = seq
    return ", ".join(parts)


def _blocks(content: Sequence[Any], limit: int = 60) -> Iterator[str]:
    for block in content:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind in ("text", "reasoning"):
            yield repr(_clip(str(block.get("text", "")), limit))
        elif kind == "tool-call":
            yield f"call {block.get('name')}({block.get('arguments')}) [{block.get('id')}]"
        elif kind == "tool-result":
            inner = " ".join(_blocks(block.get("content") or (), limit))
            yield f"result [{block.get('toolCallId')}] {inner}"
        else:
            yield f"<{kind}>"


def _message_summary(message: Mapping[str, Any] | None, limit: int = 60) -> str:
    if not isinstance(message, Mapping):
        return ""
    return " + ".join(_blocks(message.get("content") or (), limit))


def _chunk_summary(chunk: Mapping[str, Any]) -> str:
    kind = str(chunk.get("type"))
    if kind in ("text-delta", "reasoning-delta"):
        return f"{kind.split('-')[0]} {chunk.get('text')!r}"
    if kind == "tool-call-delta":
        return f"call {chunk.get('name') or ''}"
    if kind == "block-end":
        block = chunk.get("block")
        return f"end #{chunk.get('index')} {block.get('type') if isinstance(block, Mapping) else ''}"
    if kind == "usage":
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            return f"usage {usage.get('inputTokens')}/{usage.get('outputTokens')}"
    if kind == "finish":
        reason = chunk.get("reason")
        return f"finish {reason.get('kind') if isinstance(reason, Mapping) else reason}"
    return kind


def _data_summary(event: harness.Event) -> str:
    data = event.data
    if not isinstance(data, Mapping):
        return ""
    kind = event.type
    if kind in ("turn/start", "turn/end", "step/start", "step/end"):
        where = f"turn {data.get('turn')}" + (f" step {data['step']}" if "step" in data else "")
        reason = data.get("reason")
        return where + (f" {reason.get('kind')}" if isinstance(reason, Mapping) else "")
    if kind == "user/message":
        return _message_summary(data)
    if kind in ("assistant/message", "tool/result"):
        return _message_summary(data.get("message"))
    if kind == "assistant/chunk":
        chunk = data.get("chunk")
        return _chunk_summary(chunk) if isinstance(chunk, Mapping) else ""
    if kind == "request/header":
        header = data.get("header")
        tools = header.get("tools") if isinstance(header, Mapping) else None
        config = header.get("config") if isinstance(header, Mapping) else None
        model = config.get("model") if isinstance(config, Mapping) else "?"
        return f"{data.get('reason')}, {model}, {len(tools or ())} tool"
    if kind == "request/context":
        return f"window {data.get('contextWindow')}"
    if kind == "tool/call":
        return f"{data.get('name')} [{data.get('callId')}]"
    return _clip(harness_json.dumps(harness.thaw(data)).decode(), 40) if data else ""


def _op_text(event: harness.Event) -> Text:
    op = event.surface_op
    if op is None:
        return Text("")
    if isinstance(op, harness.Replace):
        return Text(f"repl {op.start}-{op.end}", style="bold magenta")
    return Text("append", style="green")


def _node_label(event: harness.Event) -> str:
    data = event.data
    message = data if event.type == "user/message" else data.get("message")
    role = message.get("role", "?") if isinstance(message, Mapping) else "?"
    if event.type == "tool/result":
        role = "tool"
    source = message.get("source") if isinstance(message, Mapping) else None
    if isinstance(source, Mapping) and source.get("kind") == "plugin":
        role = f"{role}/{source.get('plugin')}"
    return f"{role}: {_clip(_message_summary(message), 34)}"


_TABLE_STYLE: Final[Mapping[str, Any]] = {
    "box": box.SIMPLE_HEAD,
    "show_edge": False,
    "pad_edge": False,
    "padding": (0, 1),
    "collapse_padding": True,
    "title_justify": "left",
    "title_style": "bold",
    "expand": True,
}


def log_table(session: harness.Session, *, title: str = "Event Log") -> Table:
    """The log: seq, type, Surface op, sources and a short summary of the data."""
    table = Table(title=title, **_TABLE_STYLE)
    table.add_column("seq", justify="right", style="cyan", no_wrap=True, width=3)
    table.add_column("type", no_wrap=True, width=17)
    table.add_column("op", no_wrap=True, width=9)
    table.add_column("src", style="yellow", width=6)
    table.add_column("data", overflow="ellipsis", no_wrap=True, ratio=1)
    for event in session.events:
        table.add_row(
            str(event.seq),
            Text(event.type, style="bold" if event.surface_op is not None else "dim"),
            _op_text(event),
            _seq_ranges(event.source_event_seqs),
            Text(_data_summary(event)),
        )
    return table


def surface_table(session: harness.Session) -> Table:
    """The Surface in model order; each replacement lists the nodes it shadows."""
    events = session.events
    shadowed_by = {r.seq: r.shadowed_seqs for r in harness.fold_surface(events).replacements}
    title = f"Surface (generation {session.surface.replace_generation})"
    caption = "(n) = shadowed by the node above: out of the model's view, still in the log"
    table = Table(title=title, caption=caption, caption_justify="left", **_TABLE_STYLE)
    table.add_column("node", justify="right", style="cyan", no_wrap=True, width=4)
    table.add_column("role: first words", overflow="ellipsis", no_wrap=True, ratio=1)
    for seq in session.surface.nodes:
        table.add_row(str(seq), Text(_node_label(events[seq])))
        for old in shadowed_by.get(seq, ()):
            table.add_row(Text(f"({old})", style="dim"), Text(_node_label(events[old]), style="dim strike"))
    return table


def history_table(messages: Sequence[harness.Message]) -> Table:
    """``derive_messages()``: what the next model request would carry."""
    table = Table(
        title="Model history (derive_messages)", box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left"
    )
    table.add_column("#", justify="right", style="cyan")
    table.add_column("role", no_wrap=True)
    table.add_column("source", no_wrap=True)
    table.add_column("content", overflow="fold")
    for index, message in enumerate(messages):
        source = message.source
        kind = source.kind + (f":{source.raw.get('plugin')}" if source.kind == "plugin" else "")
        table.add_row(str(index), message.role, kind, Text(_message_summary(message.raw, 240)))
    return table


def run_demo(console: Console | None = None) -> None:
    """Build, encode, restore and show one session; raise ``DemoCheckFailed`` on a mismatch."""
    out = console if console is not None else Console()
    session = build_demo_session()
    lines = encode_lines(session)
    restored = restore_from_lines(session, lines)
    verdict = verify_restore(session, restored)

    out.rule("[bold]harness demo[/]: one session, its Event Log and the Surface folded from it")
    out.print(
        f"Session [bold]{session.id}[/]: two turns with one tool call, then turn 1 replaced by a "
        "checkpoint message. Surface nodes are in bold; dim rows are log-only facts.",
        highlight=False,
    )
    side_by_side = Table.grid(padding=(0, 2), expand=True)
    side_by_side.add_column(vertical="top", ratio=62)
    side_by_side.add_column(vertical="top", ratio=38)
    side_by_side.add_row(log_table(session), surface_table(session))
    out.print(side_by_side)
    out.print(history_table(session.derive_messages()))
    out.print(
        f"Wrote {len(lines)} JSON lines ({sum(len(line) + 1 for line in lines)} bytes) with "
        "encode_event and restored them with Session.from_restore.",
        highlight=False,
    )
    out.print(Text("✔ " + verdict, style="bold green"))

    fork = build_crash_fork(session)
    closers = harness.repair_closers(fork.events)
    repaired = harness.Session.from_restore(fork.id, [*fork.events, *closers], fork.header)
    out.rule("[bold]Crash repair[/]: a fork that stopped in the middle of turn 3")
    out.print(
        f"Fork [bold]{fork.id}[/] (seed = the {fork.first_live_seq} events above + its end-seed) "
        "opened turn 3; the model asked for two read_file calls; call-2 was recorded as started, "
        "call-3 was not; then the process died. repair_closers would commit:",
        highlight=False,
    )
    closer_view = Table(box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    closer_view.add_column("seq", justify="right", style="cyan")
    closer_view.add_column("type", no_wrap=True)
    closer_view.add_column("src", style="yellow")
    closer_view.add_column("what", overflow="fold")
    for event in closers:
        data = event.data
        if event.type == "tool/result":
            error = data.get("error") or {}
            message = data.get("message") or {}
            result = message.get("content", ({},))[0]
            text = " ".join(_blocks(result.get("content") or ()))
            what = f"[{result.get('toolCallId')}] {error.get('code')}: {text}"
        else:
            what = _data_summary(event)
        closer_view.add_row(str(event.seq), event.type, _seq_ranges(event.source_event_seqs), Text(what))
    out.print(closer_view)
    out.print(
        Text(
            f"✔ The closers pass restore: {len(repaired.events)} events, turn 3 closed as interrupted, "
            f"and the model would see {len(repaired.derive_messages())} messages on resume.",
            style="bold green",
        )
    )
