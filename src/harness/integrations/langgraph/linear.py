"""Linear storage of a growing list: msgpack array bytes split into a base and an extension.

LangGraph's serializer writes a list as one msgpack array: a header carrying the element count,
then each element's encoding, one after the other (msgpack is context-free: an element encodes to
the same bytes wherever it stands). So when a channel's new value is its previous value plus some
elements, the new serialization is ``header(n) + body(previous) + body(added)``, where
``body(added)`` is the serialization of the list of added elements without its own header. The
saver stores only ``dumps(added)`` and a reference to the previous value; ``join`` rebuilds the
exact bytes ``dumps(value)`` gave (tests/integrations/langgraph/test_linear.py checks the
equality on random values).

These functions know nothing of LangGraph: they work on bytes only.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["array_header", "join", "split_array"]

_FIX_ARRAY = 0x90  # 1001xxxx: up to 15 elements
_ARRAY16 = 0xDC
_ARRAY32 = 0xDD


def array_header(count: int) -> bytes:
    """The msgpack array header for ``count`` elements, in its shortest form (as msgpack
    encoders write it)."""
    if count < 0 or count >= 1 << 32:
        raise ValueError(f"a msgpack array holds 0 to 2^32-1 elements, not {count}")
    if count < 16:
        return bytes((_FIX_ARRAY | count,))
    if count < 1 << 16:
        return bytes((_ARRAY16,)) + count.to_bytes(2, "big")
    return bytes((_ARRAY32,)) + count.to_bytes(4, "big")


def split_array(data: bytes) -> tuple[int, bytes] | None:
    """``(count, body)`` of msgpack bytes that encode an array, ``None`` for anything else.

    Only the header is read; the body is what follows it. A header in a longer form than its
    count needs is refused (``None``): ``join`` would not give the same bytes back.
    """
    if not data:
        return None
    first = data[0]
    if first & 0xF0 == _FIX_ARRAY:
        return first & 0x0F, data[1:]
    if first == _ARRAY16 and len(data) >= 3:
        count = int.from_bytes(data[1:3], "big")
        return (count, data[3:]) if count >= 16 else None
    if first == _ARRAY32 and len(data) >= 5:
        count = int.from_bytes(data[1:5], "big")
        return (count, data[5:]) if count >= 1 << 16 else None
    return None


def join(count: int, bodies: Sequence[bytes]) -> bytes:
    """The msgpack bytes of an array of ``count`` elements whose encodings are ``bodies``
    concatenated."""
    return array_header(count) + b"".join(bodies)
