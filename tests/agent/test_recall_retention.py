"""What the retention evaluation calls *recoverable through the tool* is what an agent gets: a
scripted model, in the real agent loop, makes the evaluation's ``session_search`` calls over
the compacted session and reads the fact back from what the loop hands it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from harness.agent.loop import Agent, AgentSettings
from harness.compaction import ExtractiveSummarizer, compact_now, evaluate_retention, surface_text
from harness.compaction.probes import Probe
from harness.compaction.probesets import builtin_probeset
from harness.compaction.retention import copy_session
from harness.messages.request import GenerateOptions
from harness.messages.stream import StreamChunk
from harness.testing.scripted import ScriptedProvider, calls_reply, text_reply
from harness.tools.session_search import SessionSearch

SETTINGS = AgentSettings(model="m-1", system="You are terse.")


class ReplayingProvider(ScriptedProvider):
    """Makes ``calls`` one by one, each after reading the previous result; answers with the
    fact as soon as a tool result the loop sent holds it (or says it is not found)."""

    def __init__(self, calls: Sequence[dict[str, Any]], probe: Probe) -> None:
        super().__init__([], window=10**6)
        self.calls = list(calls)
        self.probe = probe
        self.results: list[str] = []

    async def stream(
        self, options: GenerateOptions, *, cancel: asyncio.Event | None = None
    ) -> AsyncIterator[StreamChunk]:
        self.requests.append(options)
        last = options.messages[-1].raw
        if last.get("source", {}).get("kind") == "tool":
            (result,) = last["content"]
            self.results.append("".join(block["text"] for block in result["content"]))
        if self.results and self.probe.found_in(self.results[-1]):
            chunks = text_reply(f"Found it: {self.probe.pattern}")
        elif self.calls:
            call = self.calls.pop(0)
            chunks = calls_reply((f"call-{len(self.results)}", "session_search", json.dumps(call)))
        else:
            chunks = text_reply("Not found.")
        for chunk in chunks:
            yield chunk


@pytest.mark.parametrize("case_id", ["fr-dns", "en-frontend-perf"])
def test_a_probe_the_evaluation_calls_recoverable_is_recovered_by_a_scripted_agent(case_id: str) -> None:
    case = next(c for c in builtin_probeset("holdout").cases if c.id == case_id)
    digest = ExtractiveSummarizer()
    report = asyncio.run(evaluate_retention(case.session, case.probes, {"extractive": digest}))
    recoverable = [o for o in report.probes if o.status["extractive"] == "recoverable"]
    assert recoverable, "the digest now keeps every probe of this case: pick another case"
    for outcome in recoverable:
        session = copy_session(case.session)
        assert asyncio.run(compact_now(session, digest)) is not None
        assert not outcome.probe.found_in(surface_text(session))  # out of the model's view
        provider = ReplayingProvider(outcome.recall["extractive"].calls, outcome.probe)
        agent = Agent(session, provider, [SessionSearch()], SETTINGS, workspace=".", record_baseline=False)
        turn = asyncio.run(agent.run_turn("Before we go on: what exactly did I say about that earlier?"))
        assert turn.kind == "completed"
        final = session.derive_messages()[-1]
        assert final.text == f"Found it: {outcome.probe.pattern}", outcome.probe.name
        assert len(provider.results) == len(outcome.recall["extractive"].calls)  # the same calls
        assert "shadowed: condensed away" in provider.results[-1]  # read from compacted history
