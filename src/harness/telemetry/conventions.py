"""The OpenTelemetry names harness emits: GenAI semantic conventions v1.41.0, plus ``harness.*``.

The GenAI conventions are in Development status; this module pins the version followed
(``SEMCONV_VERSION``) so that a change of names is one edit here. Attribute keys of the
conventions keep their registry spelling; harness's own details (turn numbers, compaction
tokens, crash repairs) live under ``harness.``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["SCHEMA_URL", "SCOPE_NAME", "SEMCONV_VERSION"]

SEMCONV_VERSION: Final = "1.41.0"
"""The semantic-conventions release whose GenAI span definitions the projection follows."""
SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
SCOPE_NAME: Final = "harness.telemetry"
"""The instrumentation scope of every span harness emits."""

# gen_ai.operation.name values
INVOKE_AGENT: Final = "invoke_agent"
CHAT: Final = "chat"
EXECUTE_TOOL: Final = "execute_tool"

OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION: Final = "gen_ai.conversation.id"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_TOP_P: Final = "gen_ai.request.top_p"
REQUEST_STOP: Final = "gen_ai.request.stop_sequences"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_ID: Final = "gen_ai.response.id"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
REASONING_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
ERROR_TYPE: Final = "error.type"
# opt-in content (off unless asked for)
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_RESULT: Final = "gen_ai.tool.call.result"
COMPACTION_SUMMARY: Final = "harness.compaction.summary"
CONTENT_KEYS: Final = frozenset(
    {INPUT_MESSAGES, OUTPUT_MESSAGES, SYSTEM_INSTRUCTIONS, TOOL_ARGUMENTS, TOOL_RESULT, COMPACTION_SUMMARY}
)
"""The attributes that hold message content: present only when content capture is on."""

# harness's own
SESSION_ID: Final = "session.id"
TURN: Final = "harness.turn"
STEP: Final = "harness.step"
SEQ: Final = "harness.seq"
END_REASON: Final = "harness.turn.end_reason"
INTERRUPTED: Final = "harness.interrupted"
INCOMPLETE: Final = "harness.incomplete"
HARNESS_PROVIDER: Final = "harness.provider"
REASONING_EFFORT: Final = "harness.request.reasoning_effort"
CONTEXT_WINDOW: Final = "harness.request.context_window"
RETRY: Final = "harness.retry"
RETRY_DELAY_MS: Final = "harness.retry.delay_ms"
COMPACTION_SPAN: Final = "harness.compaction"
COMPACTION_ID: Final = "harness.compaction.id"
COMPACTION_OUTCOME: Final = "harness.compaction.outcome"
TOKENS_BEFORE: Final = "harness.compaction.tokens_before"
TOKENS_AFTER: Final = "harness.compaction.tokens_after"
SHADOWED_NODES: Final = "harness.compaction.shadowed_nodes"
MANUAL: Final = "harness.compaction.manual"
BETWEEN_TURNS_SPAN: Final = "harness.between_turns"

# span event names
EVENT_APPROVAL_ASKED: Final = "harness.approval.asked"
EVENT_APPROVAL_DECIDED: Final = "harness.approval.decided"
EVENT_CRASH_REPAIR: Final = "harness.crash_repair"
EVENT_WORLD_CHECK: Final = "harness.recovery.check"
EVENT_PRUNE: Final = "harness.compaction.prune"
EVENT_RETRY: Final = "harness.llm.retry"

WELL_KNOWN_PROVIDERS: Final = {
    "deepseek-official": "deepseek",
    "deepseek": "deepseek",
    "openai": "openai",
    "anthropic": "anthropic",
}
"""harness/dsh provider routes -> the conventions' well-known ``gen_ai.provider.name`` values."""


def provider_name(route: str) -> str:
    """The ``gen_ai.provider.name`` for a provider route (the route itself when not well known)."""
    return WELL_KNOWN_PROVIDERS.get(route, route)
