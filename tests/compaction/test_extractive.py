"""``ExtractiveSummarizer``: offline, deterministic, keeps what matters."""

from __future__ import annotations

import json

from harness.compaction import (
    SECTION_HEADINGS,
    ExtractiveSummarizer,
    compact_now,
    generate_session,
    surface_text,
)
from tests.compaction.helpers import Builder, run


def working_session() -> Builder:
    builder = Builder().open(
        "Fix the parser in src/app/parser.py. You must not touch vendor/lib/. Keep Python 3.11 support."
    )
    builder.tool(
        "read_file", json.dumps({"path": "src/app/parser.py"}), "def parse(text):\n    return text\n" * 40
    )
    builder.tool(
        "run_shell",
        json.dumps({"command": "pytest -q"}),
        "collected 3 items\n" + "ok\n" * 50 + "E   ValueError: bad token at 17\n1 failed",
        is_error=True,
    )
    _, ids = builder.calls_message([("todo_write", "{}")])
    builder.session.append(
        "todo/write",
        {
            "todos": [
                {"content": "Handle the bad token case", "status": "in_progress"},
                {"content": "Write docs/parser.md", "status": "pending"},
                {"content": "Reproduce", "status": "completed"},
            ]
        },
    )
    builder.result(ids[0], "todo_write", "updated")
    builder.next_step()
    builder.say("The failure comes from the tokenizer; next I will handle the bad token case. " * 3)
    builder.close()
    builder.closed_turn("thanks", "ok")
    return builder


def test_the_digest_keeps_constraints_paths_errors_todos_and_the_conclusion() -> None:
    session = working_session().session
    result = run(compact_now(session, ExtractiveSummarizer()))
    assert result is not None and (result.provider, result.model) == ("harness", "extractive-v1")
    summary = result.summary
    for heading in SECTION_HEADINGS:
        assert heading in summary
    assert "You must not touch vendor/lib/." in summary  # the constraint, verbatim
    assert "Keep Python 3.11 support." in summary
    assert "src/app/parser.py" in summary
    assert "ValueError: bad token at 17" in summary
    assert "[in_progress] Handle the bad token case" in summary
    assert "[pending] Write docs/parser.md" in summary
    assert "Reproduce" not in summary.split("## Pending Jobs")[1].split("##")[0]  # completed items go
    assert "read_file(" in summary and "def parse(text)" in summary  # a call with the head of its result
    assert "The failure comes from the tokenizer" in summary
    assert result.checkpoint_tokens < result.shadowed_tokens


def test_the_digest_is_deterministic() -> None:
    first = run(compact_now(working_session().session, ExtractiveSummarizer()))
    second = run(compact_now(working_session().session, ExtractiveSummarizer()))
    assert first is not None and second is not None
    assert first.summary == second.summary


def test_a_prior_checkpoint_is_merged_not_lost() -> None:
    builder = working_session()
    session = builder.session
    run(compact_now(session, ExtractiveSummarizer()))
    builder.closed_turn("Now also check src/app/lexer.py " + "please " * 80, "lexer checked " * 80, tools=1)
    builder.closed_turn("thanks again", "ok")
    second = run(compact_now(session, ExtractiveSummarizer()))
    assert second is not None
    assert "vendor/lib/" in second.summary
    assert "src/app/lexer.py" in second.summary
    assert second.summary.count("## Primary Request and Intent") == 1
    assert "vendor/lib/" in surface_text(session)


def test_the_digest_fits_its_budget_on_a_long_session() -> None:
    made = generate_session(3)
    result = run(compact_now(made.session, ExtractiveSummarizer(budget_ratio=0.2)))
    assert result is not None
    assert result.checkpoint_tokens <= 0.25 * result.shadowed_tokens
