"""Model providers: the ``Provider`` stream protocol and the DeepSeek (OpenAI-compatible) adapter.

``DeepSeekProvider`` imports the ``openai`` client, on first use only; ``ProviderConfigError``
is ``harness.errors``' (catching it loads no HTTP client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.errors import ProviderConfigError
    from harness.providers.base import Provider, RetryingProvider
    from harness.providers.credentials import CredentialCheck, check_credentials
    from harness.providers.deepseek import (
        DEEPSEEK_MODELS,
        DeepSeekProvider,
        OpenAICompatibleProvider,
    )
    from harness.providers.retry import RetryPolicy

__all__ = [
    "DEEPSEEK_MODELS",
    "CredentialCheck",
    "DeepSeekProvider",
    "OpenAICompatibleProvider",
    "Provider",
    "ProviderConfigError",
    "RetryPolicy",
    "RetryingProvider",
    "check_credentials",
]

_EXPORTS = {
    "harness.errors": ("ProviderConfigError",),  # catching it must not load openai
    "harness.providers.base": ("Provider", "RetryingProvider"),
    "harness.providers.credentials": ("CredentialCheck", "check_credentials"),
    "harness.providers.deepseek": (
        "DEEPSEEK_MODELS",
        "DeepSeekProvider",
        "OpenAICompatibleProvider",
    ),
    "harness.providers.retry": ("RetryPolicy",),
}

if not TYPE_CHECKING:  # at run time each name is imported on first use (PEP 562)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
