"""The request header (``EpochHeader``), its canonical equality, and ``GenerateOptions``.

FORMAT §4: ``EpochHeader = {config, adapterDefaults?, system?, tools?}`` with
``config = {provider, model, reasoningEffort?, temperature?, maxTokens?, stop?}``.
Two headers are equal when their canonical forms are: config compared field by
field, the adapter-default markers, the system prompt, and the tools in order by
their serialized JSON. Canonical form drops an empty ``system``, empty ``tools``
and an all-false ``adapterDefaults``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

import msgspec

from harness.events.json import FrozenDict, dumps, snapshot
from harness.messages.model import Message

__all__ = [
    "EpochHeader",
    "GenerateOptions",
    "HeaderReason",
    "classify_request_header",
]

HeaderReason: TypeAlias = Literal["initial", "resume", "change"]


class EpochHeader:
    """A read-only view over request-header JSON with typed accessors."""

    __slots__ = ("_canonical", "_raw")
    _canonical: tuple[Any, ...] | None
    _raw: Mapping[str, Any]

    def __init__(self, raw: Mapping[str, Any]) -> None:
        frozen = raw if isinstance(raw, FrozenDict) else snapshot(dict(raw), "header")
        object.__setattr__(self, "_raw", frozen)
        object.__setattr__(self, "_canonical", None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("EpochHeader is read-only")

    @property
    def raw(self) -> Mapping[str, Any]:
        """The header's read-only JSON."""
        return self._raw

    @classmethod
    def build(
        cls,
        *,
        provider: str,
        model: str,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        reasoning_effort: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        adapter_defaults: Mapping[str, bool] | None = None,
    ) -> EpochHeader:
        """Make a header from fields; absent optionals are omitted, never ``null``."""
        config: dict[str, Any] = {"provider": provider, "model": model}
        if reasoning_effort is not None:
            config["reasoningEffort"] = reasoning_effort
        if temperature is not None:
            config["temperature"] = temperature
        if max_tokens is not None:
            config["maxTokens"] = max_tokens
        if stop is not None:
            config["stop"] = list(stop)
        raw: dict[str, Any] = {"config": config}
        markers = {k: True for k, v in (adapter_defaults or {}).items() if v}
        if markers:
            raw["adapterDefaults"] = markers
        if system:
            raw["system"] = system
        if tools:
            raw["tools"] = [dict(tool) for tool in tools]
        return cls(snapshot(raw, "header"))

    @property
    def config(self) -> Mapping[str, Any]:
        value = self.raw.get("config")
        return value if isinstance(value, Mapping) else FrozenDict()

    @property
    def provider(self) -> str:
        return str(self.config.get("provider", ""))

    @property
    def model(self) -> str:
        return str(self.config.get("model", ""))

    @property
    def system(self) -> str | None:
        value = self.raw.get("system")
        return value if isinstance(value, str) and value else None

    @property
    def tools(self) -> tuple[Mapping[str, Any], ...]:
        value = self.raw.get("tools")
        return tuple(value) if isinstance(value, list | tuple) else ()

    @property
    def adapter_defaults(self) -> Mapping[str, Any]:
        value = self.raw.get("adapterDefaults")
        return value if isinstance(value, Mapping) else FrozenDict()

    def canonical(self) -> tuple[Any, ...]:
        """The comparison key of FORMAT §4 (config, markers, system, tools)."""
        if self._canonical is None:
            markers = tuple(sorted(k for k, v in self.adapter_defaults.items() if v is True))
            tools = tuple(dumps(_json_numbers(tool)) for tool in self.tools)
            config = tuple(sorted((k, dumps(_json_numbers(v))) for k, v in self.config.items()))
            object.__setattr__(self, "_canonical", (config, markers, self.system or "", tools))
        assert self._canonical is not None
        return self._canonical

    def to_json(self) -> Mapping[str, Any]:
        return self.raw

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EpochHeader):
            return NotImplemented
        return self.canonical() == other.canonical()

    def __hash__(self) -> int:
        return hash(self.canonical())

    def __repr__(self) -> str:
        return f"EpochHeader({self.provider}/{self.model}, tools={len(self.tools)})"


def _json_numbers(value: Any) -> Any:
    """``value`` with integral floats as ints, so ``1`` and ``1.0`` (one JSON number) compare equal."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {key: _json_numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_numbers(item) for item in value]
    return value


def classify_request_header(
    previous: EpochHeader | None, current: EpochHeader, *, first_request_of_loop: bool
) -> HeaderReason | None:
    """Which ``request/header`` reason, if any, a request with ``current`` must record.

    ``initial``: the log has no header yet. ``resume``: the first request of a new
    loop over a log that has one. ``change``: a later request whose canonical header
    differs from the one in force. ``None``: nothing to record.
    """
    if previous is None:
        return "initial"
    if first_request_of_loop:
        return "resume"
    if previous != current:
        return "change"
    return None


class GenerateOptions(msgspec.Struct, frozen=True):
    """Everything one model request needs, frozen: built by ``build_request``."""

    header: EpochHeader
    messages: tuple[Message, ...]
    session_id: str | None = None
    purpose: str | None = None

    @property
    def config(self) -> Mapping[str, Any]:
        return self.header.config

    @property
    def system(self) -> str | None:
        return self.header.system

    @property
    def tools(self) -> tuple[Mapping[str, Any], ...]:
        return self.header.tools

