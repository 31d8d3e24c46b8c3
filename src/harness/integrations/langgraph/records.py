"""The events a LangGraph thread's harness session holds, and their value encodings.

Every event is log-only and ``ignorable`` (FORMAT §2), so ``harness log``, ``harness show`` and
dsh load the session; its data is lossless JSON like every event's (the event rules):

* ``langgraph/thread`` ``{threadId}``: the first event; the last one names the thread (a copied
  thread is a fork of its source followed by one naming the copy).
* ``langgraph/checkpoint`` ``{ns, id, parent, checkpoint, metadata, values}``: one ``put``.
  ``checkpoint`` is the checkpoint without its channel values and ``metadata`` the metadata, each
  as JSON (``{"json": ...}``) when it is lossless JSON, else serialized (``{"t", "b"}``, below).
  ``values`` holds, for each channel of ``new_versions``, ``{"v": version, ...spec}``. A
  checkpoint whose parent is stored is written relative to it, ``{"json": ..., "derived": [...]}``
  (``derive_skeleton``): ``id`` is the event's ``id`` and each ``channel_versions`` /
  ``versions_seen`` holds only the entries that differ from the parent's; this is used only when
  rebuilding gives the same keys in the same order with the same JSON values.
* ``langgraph/writes`` ``{ns, checkpoint, task, path, writes: [[idx, channel, spec], ...]}``:
  one ``put_writes`` (only the writes it stored: a repeated regular write is not stored twice).
* ``langgraph/prune`` / ``langgraph/deleted``: see ``saver.py``.

A value **spec** is one of

* ``{"t": type, "s": text}`` or ``{"t": type, "b": base64}``: the serializer's ``(type, bytes)``.
  Event data is JSON text and the bytes are binary (msgpack, or whatever the serde writes), so
  they are written as whichever of two lossless encodings is shorter: ``s``, the bytes read as
  Latin-1 (one code point U+0000..U+00FF per byte: a message's text stays readable in the log,
  and a text-heavy payload grows ~6% where base64 adds 33%), or ``b``, standard base64 (for
  payloads that are mostly not ASCII text: encrypted, compressed, arrays);
* ``{"empty": true}``: the channel has no value at this version (LangGraph's ``"empty"`` blob);
* ``{"ext": k, "t": "msgpack", "b": ...}``: **linear storage**: the value is the value of the same
  channel stored ``k`` events earlier, extended by the elements of the array ``b`` encodes
  (``linear.py``); a chain of extensions ends at a full value;
* ``{"same": [k, key], ...}`` instead of ``t`` and the payload: the payload is byte for byte the one of
  the spec ``key`` (a channel name, or a write's index) of the event ``k`` events earlier: a node's
  output is stored once, although LangGraph hands it over as a write and again as the next
  checkpoint's extension.

References count events backwards, so a run of events copied as a block keeps its meaning.
"""

from __future__ import annotations

import base64
from typing import Any, Final

import orjson

from harness.errors import CorruptSession, InvalidEventData
from harness.events.json import check_json, dumps, thaw

__all__ = [
    "CHECKPOINT",
    "DELETED",
    "PRUNE",
    "THREAD",
    "WRITES",
    "decode_bytes",
    "decode_jsonish",
    "derive_skeleton",
    "encode_bytes",
    "encode_jsonish",
    "has_payload",
    "payload_size",
    "rebuild_skeleton",
]

THREAD: Final = "langgraph/thread"
CHECKPOINT: Final = "langgraph/checkpoint"
WRITES: Final = "langgraph/writes"
PRUNE: Final = "langgraph/prune"
DELETED: Final = "langgraph/deleted"


def encode_bytes(data: bytes) -> dict[str, str]:
    """Serializer output as JSON text: ``{"s": latin-1}`` or ``{"b": base64}``, the shorter once
    written as JSON."""
    text = data.decode("latin-1")
    if len(orjson.dumps(text)) <= (len(data) + 2) // 3 * 4 + 2:
        return {"s": text}
    return {"b": base64.b64encode(data).decode("ascii")}


def decode_bytes(spec: Any, where: str) -> bytes:
    """The bytes ``encode_bytes`` wrote into ``spec``."""
    text = spec.get("s")
    if isinstance(text, str):
        try:
            return text.encode("latin-1")
        except UnicodeEncodeError:
            raise CorruptSession(f"{where}: payload text holds a code point above U+00FF") from None
    text = spec.get("b")
    if not isinstance(text, str):
        raise CorruptSession(f"{where}: payload is neither latin-1 text nor base64")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as error:
        raise CorruptSession(f"{where}: not base64 ({error})") from None


def has_payload(spec: Any) -> bool:
    return "s" in spec or "b" in spec


def payload_size(spec: Any) -> int:
    """About how many bytes the payload of ``spec`` holds (for the reuse threshold)."""
    if "s" in spec:
        return len(spec["s"])
    return len(spec["b"]) * 3 // 4 if "b" in spec else 0


def encode_jsonish(value: Any, dumps_typed: Any) -> dict[str, Any]:
    """``{"json": value}`` when ``value`` is lossless JSON (readable in the log), else the
    serializer's bytes ``{"t", "b"}`` (a tuple, bytes, a large int, a non-string key...)."""
    try:
        check_json(value)
    except InvalidEventData:
        kind, data = dumps_typed(value)
        return {"t": kind, **encode_bytes(data)}
    return {"json": value}


def decode_jsonish(record: Any, loads_typed: Any, where: str) -> Any:
    if not hasattr(record, "get"):
        raise CorruptSession(f"{where}: expected an object, got {type(record).__name__}")
    if "json" in record:
        return thaw(record["json"])
    kind = record.get("t")
    if not isinstance(kind, str):
        raise CorruptSession(f"{where}: neither json nor a serialized value")
    return loads_typed((kind, decode_bytes(record, where)))


_DERIVABLE: Final = ("channel_versions", "versions_seen")


def _changes(child: Any, parent: Any) -> dict[str, Any] | None:
    """The entries of ``child`` that ``{**parent, **changes}`` needs to give ``child`` back
    exactly (same keys, same order, same JSON), or ``None`` when no such changes exist."""
    if not isinstance(child, dict) or not isinstance(parent, dict) or any(k not in child for k in parent):
        return None
    changes = {k: v for k, v in child.items() if k not in parent or dumps(parent[k]) != dumps(v)}
    if list({**parent, **changes}) != list(child):
        return None
    return changes


def derive_skeleton(skeleton: dict[str, Any], parent: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint (without values, lossless JSON) written relative to its parent's."""
    stored: dict[str, Any] = {}
    derived: list[str] = []
    for key, value in skeleton.items():
        if key == "id":
            stored[key], derived = 0, [*derived, key]
            continue
        changes = _changes(value, parent.get(key)) if key in _DERIVABLE else None
        if changes is None:
            stored[key] = value
        else:
            stored[key], derived = changes, [*derived, key]
    return {"json": stored, "derived": derived}


def rebuild_skeleton(stored: Any, checkpoint_id: str, parent: dict[str, Any], where: str) -> dict[str, Any]:
    """The checkpoint ``derive_skeleton`` wrote (``parent``: the parent's, rebuilt already)."""
    body, derived = stored.get("json"), stored.get("derived")
    if not hasattr(body, "items") or not isinstance(derived, list | tuple):
        raise CorruptSession(f"{where}: malformed derived checkpoint")
    skeleton: dict[str, Any] = {}
    for key, value in body.items():
        if key not in derived:
            skeleton[key] = thaw(value)
        elif key == "id":
            skeleton[key] = checkpoint_id
        elif key in _DERIVABLE and isinstance(parent.get(key), dict):
            skeleton[key] = {**parent[key], **thaw(value)}
        else:
            raise CorruptSession(f"{where}: cannot derive {key!r} from the parent checkpoint")
    return skeleton
