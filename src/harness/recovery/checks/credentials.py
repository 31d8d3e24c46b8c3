"""Credentials: the provider key is present and accepted now (``CredentialCheck``, made by
the caller with ``harness.providers.check_credentials`` before the world check)."""

from __future__ import annotations

from harness.providers.credentials import CredentialCheck
from harness.recovery.findings import Finding, finding
from harness.recovery.vocabulary import FindingKind, Severity

__all__ = ["check_credentials_finding"]


def check_credentials_finding(check: CredentialCheck) -> list[Finding]:
    """``block`` when the key is missing or refused, ``warn`` when it could not be told,
    nothing when it was accepted (or the caller chose not to check)."""
    evidence = check.to_json()
    where = check.endpoint or check.route or "the provider"
    if check.status in ("accepted", "unchecked"):
        return []
    if check.status == "missing":
        return [
            finding(
                FindingKind.CREDENTIALS_MISSING,
                Severity.BLOCK,
                f"No API key is configured for {where}: the session cannot call its model.",
                "Set the key (e.g. $DEEPSEEK_API_KEY) before continuing.",
                **evidence,
            )
        ]
    if check.status == "rejected":
        return [
            finding(
                FindingKind.CREDENTIALS_REJECTED,
                Severity.BLOCK,
                f"{where} refused the API key (HTTP {check.http_status}): "
                f"{check.reason or 'no reason given'}.",
                "The key expired, was revoked or belongs to another account: set a valid one before "
                "continuing.",
                **evidence,
            )
        ]
    return [
        finding(
            FindingKind.CREDENTIALS_UNCHECKED,
            Severity.WARN,
            f"Whether {where} accepts the API key could not be told ({check.status}"
            f"{f', HTTP {check.http_status}' if check.http_status else ''}): {check.reason or 'no answer'}.",
            "The next model request may fail; check the endpoint and the key if it does.",
            **evidence,
        )
    ]
