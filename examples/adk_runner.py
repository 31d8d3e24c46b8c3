"""A Google ADK agent whose sessions live in a harness store (``HarnessSessionService``).

    python examples/adk_runner.py /tmp/adk-sessions

An ``LlmAgent`` with one tool runs two turns through ADK's ``Runner``; a scripted model stands
in for Gemini (no key, no network). Then a fresh store and service read the session back (as
another process would), and ``harness log`` prints the log the turns left: every ADK event is
a harness event, the tool call and its answer included. Needs ``[adk]``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types

from harness import open_store
from harness.integrations.adk import HarnessSessionService


def get_weather(city: str) -> dict[str, Any]:
    """The weather in ``city`` (a fixed answer: this is an example)."""
    return {"city": city, "temp_c": 21.5, "sky": "clear"}


class ScriptedModel(BaseLlm):
    """Calls the tool when the last turn is the user's, else answers from the tool's result."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        answered = [part.function_response for part in last.parts or () if part.function_response]
        if answered:
            result = answered[0].response or {}
            text = f"It is {result.get('temp_c')} °C and {result.get('sky')} in {result.get('city')}."
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        city = (last.parts[0].text or "").rsplit(" ", 1)[-1].strip("?") if last.parts else "Paris"
        call = types.FunctionCall(name="get_weather", args={"city": city})
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


async def main(root: Path) -> None:
    agent = LlmAgent(
        name="forecaster",
        model=ScriptedModel(),
        instruction="Answer weather questions with the get_weather tool.",
        tools=[get_weather],
        output_key="user:last_answer",  # user state: shared by every session of this user
    )
    async with open_store(f"jsonl:{root}", compression="none") as store:
        service = HarnessSessionService(store)
        runner = Runner(app_name="weather", agent=agent, session_service=service)
        await service.create_session(app_name="weather", user_id="ann", session_id="trip")
        for question in ("Weather in Paris?", "And in Oslo?"):
            message = types.Content(role="user", parts=[types.Part(text=question)])
            async for event in runner.run_async(user_id="ann", session_id="trip", new_message=message):
                if event.is_final_response() and event.content and event.content.parts:
                    print(f"{question} -> {event.content.parts[0].text}")
        await service.close()

    # a fresh store and service: what another process reads
    async with open_store(f"jsonl:{root}", compression="none") as store:
        reader = HarnessSessionService(store)
        session = await reader.get_session(app_name="weather", user_id="ann", session_id="trip")
        assert session is not None
        state = await reader.get_user_state(app_name="weather", user_id="ann")
        print(f"read back: {len(session.events)} events; user state: {state}")
        for event in session.events:
            parts = event.content.parts if event.content and event.content.parts else []
            kinds = [
                "text"
                if part.text
                else "call"
                if part.function_call
                else "result"
                if part.function_response
                else "?"
                for part in parts
            ]
            print(f"  {event.author}: {', '.join(kinds)}")
        await reader.close()


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "adk-sessions")
    asyncio.run(main(target))
    sys.stdout.flush()
    subprocess.run(
        [sys.executable, "-m", "harness", "--store", str(target), "log", "adk/weather/ann/trip"], check=True
    )
