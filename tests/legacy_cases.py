"""Load-conformance cases with dsh's verdicts (issue 12 item 6; FORMAT §2, §7.6).

Each case is a small stored log and the verdict DeepSeek Harness's own loader gives
it: ``accept``, ``corrupt`` (``SessionPersistenceCorruptionError``) or ``unsupported``
(``SessionFormatUnsupportedError``). The verdicts were confirmed by running every
case through dsh's loader (commit 611615650f); the tests hold harness to them.
"""

from __future__ import annotations

import json
from typing import Any, Literal, NamedTuple

SESSION_ID = "conform-1"
HEADER: dict[str, Any] = {
    "type": "session",
    "version": 0,
    "id": SESSION_ID,
    "createdAt": 1,
    "cwd": "/work/conform",
    "delegationDepth": 0,
}

Verdict = Literal["accept", "corrupt", "unsupported"]


class Case(NamedTuple):
    """One stored log (events without seq/time: those are assigned in order) and its verdict."""

    id: str
    events: list[dict[str, Any]]
    verdict: Verdict


def ev(kind: str, data: Any, **extra: Any) -> dict[str, Any]:
    """An event without seq and time (``numbered`` assigns them)."""
    return {"type": kind, "data": data, **extra}


def numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` with ``seq`` = index and ``time`` = 1000 + index, unless set already."""
    out = []
    for seq, event in enumerate(events):
        wire = {"type": event["type"], "seq": seq, "time": 1000 + seq}
        wire.update(event)
        out.append(wire)
    return out


def jsonl(events: list[dict[str, Any]], session_id: str = SESSION_ID) -> str:
    """The session file text: header line, then one line per numbered event."""
    lines = [{**HEADER, "id": session_id}, *numbered(events)]
    return "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)


USER = {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}


def current_user(message_id: str = "u-1") -> dict[str, Any]:
    return {**USER, "role": "user", "id": message_id}


def turn(end: Any, *middle: dict[str, Any], start: Any = None) -> list[dict[str, Any]]:
    """A closed turn: ``turn/start`` (data ``start`` or ``{turn: 1}``), ``middle``, ``turn/end`` ``end``."""
    return [ev("turn/start", {"turn": 1} if start is None else start), *middle, ev("turn/end", end)]


def ended(reason: Any) -> list[dict[str, Any]]:
    """A closed turn 1 whose ``turn/end`` carries ``reason``."""
    return turn({"turn": 1, "reason": reason})


def started(data: Any) -> list[dict[str, Any]]:
    """A closed turn 1 whose ``turn/start`` data is ``data``."""
    return turn({"turn": 1, "reason": {"kind": "completed"}}, start=data)


def with_user(data: Any, kind: str = "user/message", **extra: Any) -> list[dict[str, Any]]:
    """A closed turn 1 holding one user-side event of ``kind`` with ``data``."""
    return turn({"turn": 1, "reason": {"kind": "completed"}}, ev(kind, data, **extra))


ASSISTANT_CALL = ev(
    "assistant/message",
    {
        "turn": 1,
        "step": 1,
        "message": {
            "id": "a-1",
            "role": "assistant",
            "source": {"kind": "model", "provider": "p", "model": "m"},
            "content": [{"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"}],
        },
    },
    surfaceOp="append",
)


def with_result(data: Any, **extra: Any) -> list[dict[str, Any]]:
    """A closed turn with a step whose tool call c1 is answered by a ``tool/result`` with ``data``."""
    return turn(
        {"turn": 1, "reason": {"kind": "completed"}},
        ev("step/start", {"turn": 1, "step": 1}),
        ASSISTANT_CALL,
        ev("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}),
        ev("tool/result", data, **{"surfaceOp": "append", "sourceEventSeqs": [3], **extra}),
        ev("step/end", {"turn": 1, "step": 1}),
    )


LEGACY_RESULT = {
    "turn": 1,
    "step": 1,
    "callId": "c1",
    "content": [{"type": "text", "text": "ok"}],
    "isError": False,
}
FAILURE = {"message": "boom", "code": "SERVER"}
_RESULT_TURN = with_result(dict(LEGACY_RESULT))


def legacy_rewrite(start: Any) -> dict[str, Any]:
    """A legacy `tool/result` rewriting the node at `start` (seq 4 answers c1)."""
    return ev(
        "tool/result",
        dict(LEGACY_RESULT),
        surfaceOp={"op": "replace", "start": start, "end": 4},
        sourceEventSeqs=[4],
    )


CASES: list[Case] = [
    # ---- turn/end (every turn/end is checked, current or legacy) ---------------------------
    Case("turn-end-completed", ended({"kind": "completed"}), "accept"),
    Case("turn-end-null-data", turn(None), "accept"),
    Case("turn-end-turn-integral-float", turn({"turn": 1.0, "reason": {"kind": "completed"}}), "accept"),
    Case("turn-end-extra-data-key", turn({"turn": 1, "reason": {"kind": "completed"}, "x": 1}), "corrupt"),
    Case("turn-end-turn-0", turn({"turn": 0, "reason": {"kind": "completed"}}), "corrupt"),
    Case("turn-end-turn-negative", turn({"turn": -1, "reason": {"kind": "completed"}}), "corrupt"),
    Case("turn-end-turn-string", turn({"turn": "1", "reason": {"kind": "completed"}}), "corrupt"),
    Case("turn-end-turn-missing", turn({"reason": {"kind": "completed"}}), "corrupt"),
    Case("turn-end-reason-missing", turn({"turn": 1}), "corrupt"),
    Case("turn-end-reason-string", ended("completed"), "corrupt"),
    Case("turn-end-reason-bare-aborted-string", ended("aborted"), "corrupt"),
    Case("turn-end-reason-null", ended(None), "corrupt"),
    Case("turn-end-reason-kind-number", ended({"kind": 1}), "corrupt"),
    Case("turn-end-reason-kind-missing", ended({}), "corrupt"),
    Case("turn-end-completed-extra-key", ended({"kind": "completed", "x": 1}), "corrupt"),
    Case("turn-end-interrupted-extra-key", ended({"kind": "interrupted", "x": 1}), "corrupt"),
    Case("turn-end-blocked-extra-key", ended({"kind": "blocked", "x": 1}), "corrupt"),
    Case("turn-end-max-tokens-extra-key", ended({"kind": "max-tokens", "x": 1}), "corrupt"),
    Case("turn-end-disposed", ended({"kind": "disposed"}), "accept"),
    Case("turn-end-disposed-extra-key", ended({"kind": "disposed", "x": 1}), "corrupt"),
    Case("turn-end-aborted-legacy", ended({"kind": "aborted"}), "accept"),
    Case("turn-end-aborted-legacy-extra-key", ended({"kind": "aborted", "x": 1}), "corrupt"),
    Case(
        "turn-end-aborted-current-extra-key",
        ended({"kind": "aborted", "reason": {"kind": "user"}, "x": 1}),
        "accept",
    ),
    Case("turn-end-unknown-kind-extra-key", ended({"kind": "future", "x": 1}), "accept"),
    Case("turn-end-error-current", ended({"kind": "error", "error": FAILURE}), "accept"),
    Case("turn-end-error-failure", ended({"kind": "error", "step": 1, "failure": FAILURE}), "accept"),
    Case(
        "turn-end-error-failure-optional-keys",
        ended(
            {
                "kind": "error",
                "step": 0,
                "failure": {**FAILURE, "status": 503, "providerRetryAfterMs": 10, "requestId": "r"},
            }
        ),
        "accept",
    ),
    Case("turn-end-error-message", ended({"kind": "error", "step": 1, "message": "boom"}), "accept"),
    Case(
        "turn-end-error-message-code",
        ended({"kind": "error", "step": 1, "message": "boom", "code": "X"}),
        "accept",
    ),
    Case(
        "turn-end-error-step-negative-zero", ended({"kind": "error", "step": -0.0, "message": "m"}), "accept"
    ),
    Case("turn-end-turn-negative-zero", turn({"turn": -0.0, "reason": {"kind": "completed"}}), "corrupt"),
    Case("turn-end-data-array", turn([1]), "accept"),
    Case("turn-end-reason-kind-empty", ended({"kind": ""}), "accept"),
    Case("turn-end-error-no-step", ended({"kind": "error", "message": "boom"}), "corrupt"),
    Case("turn-end-error-step-string", ended({"kind": "error", "step": "1", "message": "boom"}), "corrupt"),
    Case("turn-end-error-step-negative", ended({"kind": "error", "step": -1, "message": "boom"}), "corrupt"),
    Case("turn-end-error-no-message", ended({"kind": "error", "step": 1}), "corrupt"),
    Case("turn-end-error-message-number", ended({"kind": "error", "step": 1, "message": 5}), "corrupt"),
    Case(
        "turn-end-error-code-number",
        ended({"kind": "error", "step": 1, "message": "m", "code": 5}),
        "corrupt",
    ),
    Case("turn-end-error-extra-key", ended({"kind": "error", "step": 1, "message": "m", "x": 1}), "corrupt"),
    Case(
        "turn-end-error-failure-without-code",
        ended({"kind": "error", "step": 1, "failure": {"message": "boom"}}),
        "corrupt",
    ),
    Case(
        "turn-end-error-failure-extra-key",
        ended({"kind": "error", "step": 1, "failure": {**FAILURE, "x": 1}}),
        "corrupt",
    ),
    Case(
        "turn-end-error-failure-status-string",
        ended({"kind": "error", "step": 1, "failure": {**FAILURE, "status": "503"}}),
        "corrupt",
    ),
    # ---- turn/start with the retired trigger ------------------------------------------------
    Case("turn-start-trigger", started({"turn": 1, "trigger": {"kind": "user"}}), "accept"),
    Case(
        "turn-start-trigger-with-extra-trigger-key",
        started({"turn": 1, "trigger": {"kind": "user", "x": 1}}),
        "accept",
    ),
    Case(
        "turn-start-trigger-extra-data-key",
        started({"turn": 1, "trigger": {"kind": "user"}, "x": 1}),
        "corrupt",
    ),
    Case("turn-start-trigger-empty-kind", started({"turn": 1, "trigger": {"kind": ""}}), "corrupt"),
    Case("turn-start-trigger-kind-missing", started({"turn": 1, "trigger": {}}), "corrupt"),
    Case("turn-start-trigger-null", started({"turn": 1, "trigger": None}), "corrupt"),
    Case("turn-start-trigger-string", started({"turn": 1, "trigger": "user"}), "corrupt"),
    Case("turn-start-trigger-turn-0", started({"turn": 0, "trigger": {"kind": "user"}}), "corrupt"),
    Case("turn-start-trigger-turn-missing", started({"trigger": {"kind": "user"}}), "corrupt"),
    # ---- pre-identity user/message ----------------------------------------------------------
    Case("user-message-current", with_user(current_user(), surfaceOp="append"), "accept"),
    Case("user-message-legacy", with_user(dict(USER), surfaceOp="append"), "accept"),
    Case("user-message-legacy-with-turn", with_user({"turn": 1, **USER}, surfaceOp="append"), "accept"),
    Case("user-message-no-id-with-role", with_user({**USER, "role": "user"}, surfaceOp="append"), "corrupt"),
    Case(
        "user-message-no-id-with-message-key",
        with_user({**USER, "message": {}}, surfaceOp="append"),
        "corrupt",
    ),
    Case("user-message-no-id-no-source", with_user({"content": []}, surfaceOp="append"), "corrupt"),
    # ---- steering/message (retired; read as user/message) -----------------------------------
    Case(
        "steering-wrapped",
        with_user({"turn": 1, "message": current_user()}, "steering/message", surfaceOp="append"),
        "accept",
    ),
    Case(
        "steering-wrapped-pre-identity",
        with_user({"turn": 1, "message": dict(USER)}, "steering/message", surfaceOp="append"),
        "accept",
    ),
    Case(
        "steering-wrapped-without-surface-op",
        with_user({"turn": 1, "message": current_user()}, "steering/message"),
        "corrupt",
    ),
    Case(
        "steering-wrapped-extra-key",
        with_user({"turn": 1, "message": current_user(), "x": 1}, "steering/message", surfaceOp="append"),
        "corrupt",
    ),
    Case(
        "steering-wrapped-turn-string",
        with_user({"turn": "1", "message": current_user()}, "steering/message", surfaceOp="append"),
        "corrupt",
    ),
    Case(
        "steering-wrapped-turn-missing",
        with_user({"message": current_user()}, "steering/message", surfaceOp="append"),
        "corrupt",
    ),
    Case(
        "steering-flat-turn-0",
        with_user({"turn": 0, **USER}, "steering/message", surfaceOp="append"),
        "accept",
    ),
    Case("steering-flat", with_user({"turn": 1, **USER}, "steering/message", surfaceOp="append"), "accept"),
    Case(
        "steering-flat-missing-source",
        with_user({"turn": 1, "content": USER["content"]}, "steering/message", surfaceOp="append"),
        "corrupt",
    ),
    Case(
        "steering-flat-extra-key",
        with_user({"turn": 1, **USER, "role": "user"}, "steering/message", surfaceOp="append"),
        "corrupt",
    ),
    Case(
        "steering-flat-turn-missing", with_user(dict(USER), "steering/message", surfaceOp="append"), "corrupt"
    ),
    Case("steering-null-data", with_user(None, "steering/message", surfaceOp="append"), "corrupt"),
    Case("steering-array-data", with_user([USER], "steering/message", surfaceOp="append"), "corrupt"),
    # ---- pre-identity tool/result and assistant/message -------------------------------------
    Case("tool-result-legacy", with_result(dict(LEGACY_RESULT)), "accept"),
    Case(
        "tool-result-legacy-without-is-error",
        with_result({k: v for k, v in LEGACY_RESULT.items() if k != "isError"}),
        "corrupt",
    ),
    Case(
        "tool-result-legacy-without-content",
        with_result({k: v for k, v in LEGACY_RESULT.items() if k != "content"}),
        "corrupt",
    ),
    Case(
        "assistant-message-legacy",
        turn(
            {"turn": 1, "reason": {"kind": "completed"}},
            ev(
                "assistant/message",
                {"turn": 1, "step": 1, "content": [], "provenance": {"provider": "p", "model": "m"}},
                surfaceOp="append",
            ),
        ),
        "accept",
    ),
    Case(
        "assistant-message-legacy-without-provenance",
        turn(
            {"turn": 1, "reason": {"kind": "completed"}},
            ev("assistant/message", {"turn": 1, "step": 1, "content": []}, surfaceOp="append"),
        ),
        "corrupt",
    ),
    Case(
        "tool-result-legacy-rewrite-of-legacy",
        [*_RESULT_TURN[:5], legacy_rewrite(4), *_RESULT_TURN[5:]],
        "accept",
    ),
    Case(
        "tool-result-legacy-rewrite-start-integral-float",
        [*_RESULT_TURN[:5], legacy_rewrite(4.0), *_RESULT_TURN[5:]],
        "accept",
    ),
    Case(
        "tool-result-legacy-rewrite-of-a-non-message",
        [*_RESULT_TURN[:5], legacy_rewrite(3), *_RESULT_TURN[5:]],
        "corrupt",
    ),
    # ---- order: the message checks run with the legacy pass, before the unknown-type refusal
    Case(
        "message-problem-before-unknown-type",
        [*with_user({**USER, "role": "user"}, surfaceOp="append"), ev("future/x", {})],
        "corrupt",
    ),
    # ---- envelope -----------------------------------------------------------------------------
    Case("time-negative-zero", [{**ev("session/title", {"title": "t"}), "time": -0.0}], "accept"),
    Case("time-integral-float", [{**ev("session/title", {"title": "t"}), "time": 5.0}], "accept"),
    Case("seq-negative-zero", [{**ev("session/title", {"title": "t"}), "seq": -0.0}], "accept"),
    Case("type-empty-ignorable", [ev("", {}, ignorable=True)], "accept"),
    Case("type-empty-not-ignorable", [ev("", {})], "unsupported"),
]
