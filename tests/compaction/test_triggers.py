"""Triggers and policy (FORMAT §11.3, §13 I.73, I.79, I.80, I.82, I.83)."""

from __future__ import annotations

import pytest

import harness
from harness.compaction import (
    CompactionBusy,
    CompactionConfigError,
    CompactionPolicy,
    OverflowRecovery,
    compact_if_needed,
    compact_now,
    measure,
    should_compact,
)
from harness.compaction.prune import PrunerConfig
from tests.compaction.helpers import (
    Builder,
    FailingSummarizer,
    FixedSummarizer,
    Flushes,
    compaction_events,
    long_session,
    run,
)

# ---- I.73 policy ---------------------------------------------------------------------------


def test_policy_defaults_and_budgets() -> None:
    policy = CompactionPolicy()
    assert (policy.threshold_ratio, policy.max_tokens, policy.compaction_retries) == (0.8, 8192, 1)
    assert (policy.max_overflow_retries, policy.auto) == (1, True)
    budgets = policy.budgets(1_000_000)
    assert (budgets.threshold, budgets.retain) == (800_000, 160_000)
    assert CompactionPolicy(retain_tokens=5).budgets(100).retain == 5


@pytest.mark.parametrize(
    "kwargs",
    [
        {"retain_ratio": 0.8},
        {"retain_ratio": 0.9, "threshold_ratio": 0.8},
        {"retain_ratio": 0.1, "retain_tokens": 10},
        {"threshold_ratio": 0.0},
        {"threshold_ratio": 0.1},  # below the default retain ratio
        {"compaction_retries": -1},
    ],
)
def test_invalid_policies_are_config_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(CompactionConfigError) as raised:
        CompactionPolicy(**kwargs)  # type: ignore[arg-type]
    assert raised.value.code == "config"


def test_retain_tokens_must_be_below_the_threshold_of_the_window() -> None:
    with pytest.raises(CompactionConfigError, match="below the threshold"):
        CompactionPolicy(retain_tokens=900).budgets(1000)


def test_should_compact_uses_the_meter() -> None:
    session = long_session(turns=2).session
    pressure = measure(session).total
    assert should_compact(session, context_window=pressure * 2, threshold=0.5)
    assert not should_compact(session, context_window=pressure * 2 + 10, threshold=0.5)


# ---- automatic -----------------------------------------------------------------------------


def window_for(session: harness.Session, ratio: float) -> int:
    """A context window that puts the current pressure at ``ratio`` of it."""
    return int(measure(session).total / ratio)


def test_automatic_does_nothing_below_the_threshold() -> None:
    builder = long_session(turns=3)
    builder.open("next")
    before = len(builder.session.events)
    outcome = run(compact_if_needed(builder.session, FixedSummarizer(), context_window=10**7))
    assert outcome.action == "below"
    assert len(builder.session.events) == before


def test_automatic_compacts_inside_the_open_turn_until_below_the_threshold() -> None:
    builder = long_session(turns=4)
    builder.open("next")
    session = builder.session
    window = window_for(session, 0.9)
    flushes = Flushes()
    outcome = run(compact_if_needed(session, FixedSummarizer(), context_window=window, checkpoint=flushes))
    assert outcome.action == "compacted", outcome
    assert outcome.pressure_after is not None and outcome.threshold is not None
    assert outcome.pressure_after < outcome.threshold
    result = outcome.results[0]
    assert result.turn == builder.turn
    assert flushes.lengths  # the lock and the bracket were made durable


def test_automatic_prunes_first_and_stops_when_that_is_enough() -> None:
    builder = Builder().open("read the log")
    builder.tool("run_shell", "{}", "log line\n" * 2000)
    builder.say("the log is long")
    builder.close()
    builder.open("next")
    session = builder.session
    window = window_for(session, 0.85)
    summarizer = FixedSummarizer()
    outcome = run(compact_if_needed(session, summarizer, context_window=window))
    assert outcome.action == "pruned"
    assert len(outcome.pruned) == 1
    assert summarizer.requests == []
    assert [e.type for e in compaction_events(session)] == ["compaction/prune"]


def test_automatic_with_no_open_turn_fails_with_no_open_turn() -> None:
    session = long_session(turns=3).session
    outcome = run(compact_if_needed(session, FixedSummarizer(), context_window=window_for(session, 0.9)))
    assert outcome.action == "failed" and outcome.error is not None
    assert "no open turn" in str(outcome.error)
    assert not compaction_events(session)


def test_automatic_with_a_live_start_is_busy() -> None:
    builder = long_session(turns=3)
    builder.open("next")
    builder.session.append("compaction/start", {"compactionId": "x", "turn": builder.turn})
    outcome = run(
        compact_if_needed(builder.session, FixedSummarizer(), context_window=window_for(builder.session, 0.9))
    )
    assert isinstance(outcome.error, CompactionBusy)
    assert "already in progress" in str(outcome.error) or "already active" in str(outcome.error)


def test_no_retries_and_still_above_threshold_fails_after_one_attempt() -> None:
    builder = long_session(turns=4)
    builder.open("next")
    builder.say("the tail is big " * 20000)  # the retained tail alone is above the threshold
    session = builder.session
    policy = CompactionPolicy(compaction_retries=0, retain_tokens=0)
    window = window_for(session, 0.95)
    outcome = run(
        compact_if_needed(session, FixedSummarizer(), context_window=window, policy=policy, pruner=None)
    )
    assert outcome.action == "failed"
    assert str(outcome.error) == "still above threshold after 1 compaction attempts"
    assert len(outcome.results) == 1


def test_automatic_reports_a_summary_failure_without_raising() -> None:
    builder = long_session(turns=4)
    builder.open("next")
    outcome = run(
        compact_if_needed(
            builder.session,
            FailingSummarizer(RuntimeError("model down")),
            context_window=window_for(builder.session, 0.9),
        )
    )
    assert outcome.action == "failed" and outcome.error is not None and outcome.error.code == "summary"


def test_automatic_is_skipped_without_a_route_or_a_window_or_when_off() -> None:
    builder = Builder()
    builder.session.append("turn/start", {"turn": 1})
    assert (
        run(compact_if_needed(builder.session, FixedSummarizer(), context_window=100)).reason
        == "no request route yet"
    )
    builder.header()
    assert run(compact_if_needed(builder.session, FixedSummarizer(), context_window=None)).action == "skipped"
    off = CompactionPolicy(auto=False)
    assert (
        run(compact_if_needed(builder.session, FixedSummarizer(), context_window=100, policy=off)).action
        == "skipped"
    )


# ---- I.80 manual ---------------------------------------------------------------------------


def test_manual_on_an_empty_session_writes_nothing() -> None:
    session = Builder().session
    assert run(compact_now(session, FixedSummarizer())) is None
    assert len(session.events) == 0


def test_manual_with_an_open_turn_or_a_live_start_is_busy() -> None:
    builder = long_session(turns=2)
    builder.open("x")
    with pytest.raises(CompactionBusy):
        run(compact_now(builder.session, FixedSummarizer()))
    idle = long_session(turns=2)
    idle.session.append("compaction/start", {"compactionId": "x", "turn": None})
    with pytest.raises(CompactionBusy):
        run(compact_now(idle.session, FixedSummarizer()))


def test_manual_proceeds_when_the_unmatched_start_is_followed_by_an_end_seed() -> None:
    idle = long_session(turns=2)
    idle.session.append("compaction/start", {"compactionId": "x", "turn": None})
    idle.session.append("session/end-seed", {})
    result = run(compact_now(idle.session, FixedSummarizer()))
    assert result is not None and result.turn is None


# ---- overflow ------------------------------------------------------------------------------


def test_overflow_with_a_single_tool_pair_does_nothing() -> None:
    builder = Builder().open()
    _, ids = builder.calls_message([("run_shell", "{}")])
    builder.result(ids[0], "run_shell", "short output")
    before = len(builder.session.events)
    outcome = run(OverflowRecovery().recover(builder.session, "CONTEXT_WINDOW_EXCEEDED", FixedSummarizer()))
    assert not outcome.retry and outcome.result is None
    assert len(builder.session.events) == before


def test_overflow_compacts_all_but_the_last_unit_and_asks_for_a_retry() -> None:
    builder = long_session(turns=3)
    builder.open("next request")
    recovery = OverflowRecovery()
    outcome = run(recovery.recover(builder.session, "CONTEXT_WINDOW_EXCEEDED", FixedSummarizer()))
    assert outcome.retry and outcome.result is not None
    assert len(builder.session.surface.nodes) == 2  # the checkpoint and the new request
    # The retry budget (1) is used up until a response succeeds.
    again = run(recovery.recover(builder.session, "CONTEXT_WINDOW_EXCEEDED", FixedSummarizer()))
    assert not again.retry and "exhausted" in (again.reason or "")
    builder.say("a response arrived")
    builder.next_step()
    builder.say("more " * 300)
    third = run(recovery.recover(builder.session, "CONTEXT_WINDOW_EXCEEDED", FixedSummarizer()))
    assert third.retry


def test_overflow_retry_is_allowed_when_only_the_prune_landed() -> None:
    builder = Builder().open("go")
    builder.tool("run_shell", "{}", "x" * 20_000)
    outcome = run(
        OverflowRecovery().recover(
            builder.session, "CONTEXT_WINDOW_EXCEEDED", FailingSummarizer(RuntimeError("no"))
        )
    )
    assert outcome.retry and outcome.pruned


def test_other_failures_are_not_recovered() -> None:
    builder = long_session(turns=2)
    builder.open("x")
    assert not run(OverflowRecovery().recover(builder.session, "RATE_LIMIT", FixedSummarizer())).retry
    assert not compaction_events(builder.session)


def test_overflow_with_pruner_disabled_uses_no_prune() -> None:
    builder = Builder().open("go")
    builder.tool("run_shell", "{}", "x" * 20_000)
    recovery = OverflowRecovery(pruner=None)
    outcome = run(recovery.recover(builder.session, "CONTEXT_WINDOW_EXCEEDED", FixedSummarizer()))
    assert outcome.pruned == ()
    assert PrunerConfig().threshold_chars == 8192
