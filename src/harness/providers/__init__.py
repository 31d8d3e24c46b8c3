"""Model providers: the ``Provider`` stream protocol and the DeepSeek (OpenAI-compatible) adapter.

``DeepSeekProvider`` imports the ``openai`` client, on first use only; ``ProviderConfigError``
is ``harness.errors``' (catching it loads no HTTP client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import exported_names, lazy_exports

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.errors import ProviderConfigError as ProviderConfigError
    from harness.providers.base import Provider as Provider
    from harness.providers.base import RetryingProvider as RetryingProvider
    from harness.providers.credentials import CredentialCheck as CredentialCheck
    from harness.providers.credentials import check_credentials as check_credentials
    from harness.providers.deepseek import DEEPSEEK_MODELS as DEEPSEEK_MODELS
    from harness.providers.deepseek import DeepSeekProvider as DeepSeekProvider
    from harness.providers.deepseek import OpenAICompatibleProvider as OpenAICompatibleProvider
    from harness.providers.retry import RetryPolicy as RetryPolicy

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

if not TYPE_CHECKING:  # at run time: the table's names, each imported on first use (PEP 562)
    __all__ = exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
