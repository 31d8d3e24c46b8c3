"""Whether the provider's key is accepted now: ``CredentialCheck`` and ``check_credentials``.

A provider that can check its key implements ``check_key(timeout_s)`` (``DeepSeekProvider``
lists the models: one cheap authenticated ``GET /models``, nothing generated). The result
never holds the key: messages are scrubbed of it.

``status``: ``accepted``; ``rejected`` (401/403); ``missing`` (no key configured);
``unreachable`` (the endpoint did not answer); ``unknown`` (another answer, or a provider
that cannot check); ``unchecked`` (the caller chose not to, ``reason`` says why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

__all__ = ["CredentialCheck", "CredentialStatus", "KeyChecking", "check_credentials"]

CredentialStatus: TypeAlias = Literal[
    "accepted", "rejected", "missing", "unreachable", "unknown", "unchecked"
]

DEFAULT_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class CredentialCheck:
    """The outcome of one key check (see the module doc): the route and endpoint checked,
    the HTTP status when there was one, and a message without the key."""

    status: CredentialStatus
    route: str | None = None
    endpoint: str | None = None
    http_status: int | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "route": self.route,
            "endpoint": self.endpoint,
            "httpStatus": self.http_status,
            "reason": self.reason,
        }


@runtime_checkable
class KeyChecking(Protocol):
    """A provider that can say whether its key is accepted."""

    async def check_key(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> CredentialCheck: ...


async def check_credentials(provider: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> CredentialCheck:
    """``provider.check_key`` when it has one, else ``unknown``; never raises over the check."""
    route = getattr(provider, "route", None)
    if not isinstance(provider, KeyChecking):
        return CredentialCheck("unknown", route, reason=f"{type(provider).__name__} cannot check its key")
    try:
        return await provider.check_key(timeout_s)
    except Exception as error:  # a check must not fail the resume; say what happened instead
        return CredentialCheck("unknown", route, reason=f"the check failed: {type(error).__name__}")
