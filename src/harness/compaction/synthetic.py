"""Long, realistic coding-agent sessions with planted probes, for the retention evaluation.

``generate_session(seed)`` writes a whole session in FORMAT §4 order — turns, steps, a request
header with a system prompt and tool schemas, assistant tool calls (``read_file``, ``grep``,
``run_shell``, ``edit_file``, ``todo_write``), their ``tool/call``/``tool/result`` pairs,
``todo/write`` events and assistant conclusions — about a made-up service. Early turns plant
facts that later work depends on; later turns add bulk (long file reads, test logs) so that
the early turns are what a compaction replaces:

* constraints the user gave (a directory never to touch, a latency limit, a signature to keep);
* unfinished tasks (open ``todo_write`` items);
* file paths read, edited or named;
* tool results (a failing assertion's numbers, a grep hit's setting).

Everything derives from ``seed`` (ids, times, names, numbers), so a seed always gives the same
session, and its probes are unique strings that cannot appear by chance.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.compaction.probes import Probe
from harness.messages.model import assistant_message, tool_call_block, tool_result_message, user_message
from harness.session.session import Session

__all__ = ["SyntheticSession", "generate_session", "generate_sessions"]

PROVIDER = "deepseek-official"
MODEL = "deepseek-v4-flash"

_SYSTEM = (
    "You are a careful coding agent working in a Python repository. Read before you edit, keep "
    "changes small, run the tests after each change and report what you did."
)
_TOOLS = [
    {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": {key: {"type": "string"} for key in keys}},
    }
    for name, description, keys in (
        ("read_file", "Read a text file of the workspace.", ("path",)),
        ("grep", "Search files for a regular expression.", ("pattern", "path")),
        ("run_shell", "Run a shell command in the workspace.", ("command",)),
        ("edit_file", "Replace one exact string in a file.", ("path", "old", "new")),
        ("todo_write", "Replace the task list.", ("todos",)),
    )
]

_PACKAGES = ("ledger", "atlas", "quarry", "beacon", "harbor", "meadow", "orchid", "tundra")
_MODULES = ("parser", "cache", "routes", "billing", "scheduler", "models", "auth", "export", "ingest")
_VERBS = ("normalise", "reconcile", "schedule", "render", "validate", "settle", "merge", "rotate")
_NOUNS = ("invoice", "window", "batch", "ledger_entry", "token", "snapshot", "quota", "payload")
_FEATURES = ("leap seconds", "empty batches", "duplicate ids", "negative amounts", "DST changes")


@dataclass(frozen=True)
class SyntheticSession:
    """A generated session and the probes planted in it."""

    session: Session
    probes: tuple[Probe, ...]
    seed: int
    facts: dict[str, Any] = field(default_factory=dict)


class _Writer:
    """Appends one session's events in loop order with deterministic ids and times."""

    def __init__(self, seed: int, rng: random.Random, *, session_id: str | None = None) -> None:
        self.rng = rng
        self.time = 1_700_000_000_000 + seed * 1_000_000
        self.ids = 0
        header = {
            "version": 0,
            "id": session_id or f"synthetic-{seed}",
            "createdAt": self.time,
            "cwd": "/work/project",
        }
        self.session = Session.create(header, clock=self.tick)
        self.turn = 0
        self.step = 0
        self.calls = 0
        self.headed = False

    def tick(self) -> int:
        self.time += self.rng.randint(5, 900)
        return self.time

    def new_id(self, prefix: str) -> str:
        self.ids += 1
        return f"{prefix}-{self.ids:05d}"

    def begin_turn(self, prompt: str) -> None:
        self.turn += 1
        self.step = 0
        self.session.append("turn/start", {"turn": self.turn})
        self.begin_step()
        self.session.append("user/message", user_message(prompt, id=self.new_id("u")), surface_op="append")
        if not self.headed:
            self.headed = True
            header = {
                "config": {
                    "provider": PROVIDER,
                    "model": MODEL,
                    "maxTokens": 256000,
                    "reasoningEffort": "high",
                },
                "adapterDefaults": {"reasoningEffort": True, "maxTokens": True},
                "system": _SYSTEM,
                "tools": _TOOLS,
            }
            self.session.append("request/header", {"header": header, "reason": "initial"})
            self.session.append(
                "request/context", {"provider": PROVIDER, "model": MODEL, "contextWindow": 1_000_000}
            )

    def begin_step(self) -> None:
        self.step += 1
        self.session.append("step/start", {"turn": self.turn, "step": self.step})

    def end_step(self) -> None:
        self.session.append("step/end", {"turn": self.turn, "step": self.step})

    def calls_step(
        self, calls: list[tuple[str, dict[str, Any], str, bool]], *, todos: list[dict[str, str]] | None = None
    ) -> None:
        """One step: the assistant calls tools; each returns (text, is_error)."""
        if self.session.events[-1].type == "step/end":
            self.begin_step()
        blocks = []
        ids = []
        for name, arguments, _, _ in calls:
            self.calls += 1
            call_id = f"call_{self.calls:04d}"
            ids.append(call_id)
            blocks.append(tool_call_block(call_id, name, json.dumps(arguments, ensure_ascii=False)))
        message = assistant_message(blocks, provider=PROVIDER, model=MODEL, id=self.new_id("a"))
        self.session.append(
            "assistant/message",
            {"turn": self.turn, "step": self.step, "message": message},
            surface_op="append",
            source_event_seqs=[],
        )
        for call_id, (name, arguments, text, is_error) in zip(ids, calls, strict=True):
            started = self.session.append(
                "tool/call",
                {
                    "turn": self.turn,
                    "step": self.step,
                    "callId": call_id,
                    "name": name,
                    "arguments": json.dumps(arguments, ensure_ascii=False),
                },
            )
            if name == "todo_write" and todos is not None:
                self.session.append("todo/write", {"todos": todos})
            result = tool_result_message(call_id, text, is_error=is_error, id=self.new_id("t"))
            self.session.append(
                "tool/result",
                {"turn": self.turn, "step": self.step, "message": result},
                surface_op="append",
                source_event_seqs=[started.seq],
            )
        self.end_step()

    def reply_and_end(self, text: str) -> None:
        if self.session.events[-1].type == "step/end":
            self.begin_step()
        message = assistant_message(text, provider=PROVIDER, model=MODEL, id=self.new_id("a"))
        self.session.append(
            "assistant/message",
            {"turn": self.turn, "step": self.step, "message": message},
            surface_op="append",
            source_event_seqs=[],
        )
        self.end_step()
        self.session.append("turn/end", {"turn": self.turn, "reason": {"kind": "completed"}})


def _code(rng: random.Random, module: str, lines: int, planted: dict[int, str]) -> str:
    """A numbered listing of ``lines`` made-up lines; ``planted`` puts given lines at given indexes."""
    out = [f'"""The {module} module."""', "", "from __future__ import annotations", ""]
    while len(out) < lines:
        verb, noun = rng.choice(_VERBS), rng.choice(_NOUNS)
        out += [
            f"def {verb}_{noun}_{rng.randint(10, 99)}(value: int, *, scale: int = {rng.randint(2, 64)})"
            " -> int:",
            f'    """{verb.capitalize()} one {noun.replace("_", " ")}."""',
            f"    result = (value * scale + {rng.randint(1, 999)}) % {rng.randint(1000, 9999)}",
            "    return result",
            "",
        ]
    out = out[:lines]
    for index, line in planted.items():
        out[min(index, len(out) - 1)] = line
    return "\n".join(f"{number + 1:4d}  {line}" for number, line in enumerate(out))


def _test_log(rng: random.Random, test_file: str, failure: str | None, passed: int) -> str:
    lines = [
        "============================= test session starts ==============================",
        f"collected {passed + (1 if failure else 0)} items",
        "",
    ]
    for index in range(passed):
        lines.append(f"{test_file}::test_case_{index:03d} PASSED{' ' * rng.randint(1, 20)}[{index:3d}%]")
    if failure:
        lines += [
            "",
            "=================================== FAILURES ===================================",
            failure,
        ]
        lines.append(
            f"========================= 1 failed, {passed} passed in {rng.uniform(0.5, 9):.2f}s ========="
        )
    else:
        lines.append(
            f"============================== {passed} passed in {rng.uniform(0.5, 9):.2f}s =============="
        )
    return "\n".join(lines)


def generate_session(seed: int = 0, *, filler_turns: int = 8, file_lines: int = 160) -> SyntheticSession:
    """A long session with planted probes (see the module doc). ``filler_turns`` later turns of
    bulk follow the planted ones; ``file_lines`` sets the size of each file read."""
    rng = random.Random(seed)
    writer = _Writer(seed, rng)
    pkg = rng.choice(_PACKAGES)
    module, other = rng.sample(_MODULES, 2)
    vendor = f"third_party_{rng.randint(100, 999)}"
    limit_ms = rng.randint(120, 480)
    function = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
    case = f"test_{function}_{rng.choice(_FEATURES).replace(' ', '_').lower()}"
    expected, got = rng.randint(1000, 9999), 0
    got = expected + rng.choice((-1, 1)) * rng.randint(1, 9)
    setting = f"FLUSH_INTERVAL_MS = {rng.randint(2000, 9000)}"
    doc = f"docs/{rng.choice(('operations', 'runbook', 'design'))}-{rng.randint(10, 99)}.md"
    source = f"src/{pkg}/{module}.py"
    config = f"src/{pkg}/config.py"
    test_file = f"tests/test_{module}.py"
    feature = rng.choice(_FEATURES)
    budget = f"RETRY_BUDGET = {rng.randint(3, 97)}"
    database = f"db-stg-{rng.randint(100, 999)}"

    probes = [
        Probe(name="never touch vendored dir", kind="constraint", pattern=f"{vendor}/", query="vendored"),
        Probe(name="latency limit", kind="constraint", pattern=f"{limit_ms} ms", query="p99"),
        Probe(name="keep signature", kind="constraint", pattern=f"{function}(", query="public signature"),
        Probe(name="open task: regression test", kind="task", pattern=case, query="regression test"),
        Probe(
            name="open task: document",
            kind="task",
            pattern=f"Document the {feature} handling",
            query="Document",
        ),
        Probe(name="edited source", kind="path", pattern=source, query="The fix is in"),
        Probe(name="test file", kind="path", pattern=test_file, query="tests live"),
        Probe(name="doc to update", kind="path", pattern=doc, query="new behaviour"),
        Probe(
            name="failing assertion",
            kind="tool-result",
            pattern=f"expected {expected} got {got}",
            query="AssertionError",
        ),
        Probe(name="config setting", kind="tool-result", pattern=setting, query="FLUSH_INTERVAL"),
        Probe(name="mid-file constant", kind="tool-result", pattern=budget, query="RETRY_BUDGET"),
        Probe(name="staging database", kind="constraint", pattern=database, query="staging database"),
    ]

    # Turn 1: the task, its constraints, a plan, the first reads.
    writer.begin_turn(
        f"The nightly job in the {pkg} service rounds amounts wrongly when it meets {feature}. Please "
        f"fix it. Constraints: never modify anything under {vendor}/ since it is vendored code. Every "
        f"request handler must stay under {limit_ms} ms at p99. Keep the public signature of "
        f"{function}(value, *, scale) exactly as it is, other teams import it. The tests live in "
        f"{test_file}."
    )
    todos = [
        {"content": f"Reproduce the {feature} rounding failure", "status": "in_progress"},
        {"content": f"Fix {function} in {source}", "status": "pending"},
        {"content": f"Add regression test {test_file}::{case}", "status": "pending"},
        {"content": f"Document the {feature} handling in {doc}", "status": "pending"},
    ]
    writer.calls_step(
        [("todo_write", {"todos": json.dumps(todos)}, "Task list updated: 4 items.", False)], todos=todos
    )
    code = _code(
        rng,
        module,
        file_lines,
        {40: f"def {function}(value: int, *, scale: int = 100) -> int:", file_lines * 2 // 3: budget},
    )
    writer.calls_step(
        [
            ("read_file", {"path": source}, code, False),
            (
                "grep",
                {"pattern": "FLUSH_INTERVAL", "path": f"src/{pkg}"},
                f"{config}:{rng.randint(20, 90)}: "
                f"{setting}\n{config}:{rng.randint(91, 99)}: # flushed by the nightly job",
                False,
            ),
        ]
    )
    failure = (
        f"________________________ {case} ________________________\n"
        f"    def {case}():\n>       assert {function}(7, scale=3) == {expected}\n"
        f"E       AssertionError: expected {expected} got {got}\n{test_file}:88: AssertionError"
    )
    writer.calls_step(
        [
            (
                "run_shell",
                {"command": f"python -m pytest -q {test_file}"},
                _test_log(rng, test_file, failure, rng.randint(30, 60)),
                True,
            )
        ]
    )
    writer.reply_and_end(
        f"I reproduced the failure: {function} loses a unit when the amount crosses {feature}. "
        "Next I will patch the rounding and add a regression test."
    )

    # Turn 2: the user adds a request; a fix lands, the plan is updated (two items stay open).
    second = f"Also make sure {doc} explains the new behaviour. Then continue with the fix."
    if filler_turns == 0:
        second += f" Please run any manual check against the staging database {database} only."
    writer.begin_turn(second)
    writer.calls_step(
        [
            (
                "edit_file",
                {"path": source, "old": "return result", "new": "return round(result)"},
                f"Edited {source}: 1 replacement.",
                False,
            )
        ]
    )
    todos = [
        {"content": f"Reproduce the {feature} rounding failure", "status": "completed"},
        {"content": f"Fix {function} in {source}", "status": "completed"},
        {"content": f"Add regression test {test_file}::{case}", "status": "in_progress"},
        {"content": f"Document the {feature} handling in {doc}", "status": "pending"},
    ]
    writer.calls_step(
        [("todo_write", {"todos": json.dumps(todos)}, "Task list updated: 4 items.", False)], todos=todos
    )
    writer.reply_and_end(f"The fix is in {source}. The regression test and the documentation are next.")

    # Filler turns: more reading and testing of other parts (bulk that a compaction replaces).
    for index in range(filler_turns):
        name = rng.choice(_MODULES)
        target = f"src/{pkg}/{name}.py"
        question = (
            f"While you are there, check how {target} handles {rng.choice(_FEATURES)} (question {index + 1})."
        )
        if index == min(1, filler_turns - 1):
            question += f" Please run any manual check against the staging database {database} only."
        writer.begin_turn(question)
        writer.calls_step([("read_file", {"path": target}, _code(rng, name, file_lines, {}), False)])
        writer.calls_step(
            [
                (
                    "run_shell",
                    {"command": f"python -m pytest -q tests/test_{other}.py"},
                    _test_log(rng, f"tests/test_{other}.py", None, rng.randint(20, 50)),
                    False,
                )
            ]
        )
        writer.reply_and_end(f"{target} handles that case correctly; its {rng.randint(20, 50)} tests pass.")

    # The last turn: short, it stays as the retained tail.
    writer.begin_turn("Thanks. Give me a one-line status.")
    writer.reply_and_end("Status: the fix is in; the regression test and the docs update remain.")
    facts = {"package": pkg, "source": source, "function": function, "case": case, "vendor": vendor}
    return SyntheticSession(writer.session, tuple(probes), seed, facts)


def generate_sessions(
    count: int, *, seed: int = 0, make: Callable[[int], SyntheticSession] | None = None
) -> list[SyntheticSession]:
    """``count`` generated sessions with seeds ``seed, seed+1, ...``."""
    build = make or generate_session
    return [build(seed + index) for index in range(count)]
