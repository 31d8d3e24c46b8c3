"""Trace and span ids derived from the session id and seqs: exporting twice gives the same trace.

A turn is one trace; its id and every span id in it are hashes of the session id, a kind and
the seq of the event that anchors the span (the ``turn/start``, the first chunk of a model
request, the ``tool/call``...). A fork has another session id, so its ids differ.
"""

from __future__ import annotations

import hashlib

__all__ = ["span_id", "trace_id"]


def _digest(*parts: str) -> bytes:
    text = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).digest()


def trace_id(session_id: str, anchor_seq: int) -> str:
    """32 lowercase hex digits (16 bytes, never all zero) for the trace anchored at a seq."""
    raw = _digest("harness-trace", session_id, str(anchor_seq))[:16]
    return (raw if any(raw) else b"\x00" * 15 + b"\x01").hex()


def span_id(session_id: str, kind: str, anchor_seq: int) -> str:
    """16 lowercase hex digits (8 bytes, never all zero) for a span of ``kind`` anchored at a seq."""
    raw = _digest("harness-span", session_id, kind, str(anchor_seq))[:8]
    return (raw if any(raw) else b"\x00" * 7 + b"\x01").hex()
