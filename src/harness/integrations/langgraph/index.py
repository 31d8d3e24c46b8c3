"""``ThreadIndex``: what one LangGraph thread's harness session holds, indexed in memory.

The index is built from the session's events alone (``catch_up``), whether they were just
appended by this saver or read back from the store, so what a saver answers after a restart is
what it answered before. It also encodes new values (``encode_values``, ``encode_writes``):
that needs what is stored already, for linear storage and for payload reuse (``records.py``).

Linear storage trusts identity for the part already stored: a new list value whose first
``n`` elements are the very objects (``is``) of a value this index stored or read (the last two
per channel) is stored as that value plus ``value[n:]``. Like LangGraph's own versioned blobs,
which are written once per channel version, this assumes a value is not mutated in place once
checkpointed (LangGraph's reducers build new lists). ``AsyncHarnessSaver(..., linear="verify")``
drops the assumption: it compares the serialized bytes instead (exact, but it serializes the whole
value at every put).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    PendingWrite,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from harness.errors import CorruptSession
from harness.events.event import Event
from harness.integrations.langgraph.linear import array_header, join, split_array
from harness.integrations.langgraph.records import (
    CHECKPOINT,
    DELETED,
    PRUNE,
    THREAD,
    WRITES,
    decode_bytes,
    decode_jsonish,
    derive_skeleton,
    encode_bytes,
    encode_jsonish,
    has_payload,
    payload_size,
    rebuild_skeleton,
)
from harness.session.session import Session

__all__ = ["CheckpointRecord", "LinearMode", "ThreadIndex"]

LinearMode = Literal["identity", "verify", "off"]

_REUSE_MIN = 64  # payloads shorter than this are stored again rather than referenced
_REUSE_KEEP = 16  # recent payloads remembered for reuse
_CANDIDATES = 2  # values per channel a new value may extend


@dataclass(slots=True)
class CheckpointRecord:
    """One stored checkpoint: where it is, its parent, its decoded parts, its channel blobs."""

    seq: int
    ns: str
    id: str
    parent: str | None
    checkpoint: dict[str, Any]  # without channel_values
    metadata: dict[str, Any]
    resolved: dict[str, tuple[Any, int]]  # channel -> (version, seq of the event holding it)


@dataclass(slots=True)
class _Write:
    task_id: str
    channel: str
    seq: int
    position: int
    task_path: str
    idx: int


@dataclass(slots=True)
class _Linear:
    seq: int  # the event holding the value
    elements: list[Any]
    data: bytes | None = None  # the serialized value, kept for linear="verify"


@dataclass(slots=True)
class _Base:
    channel: str
    value: list[Any]
    data: bytes | None


@dataclass
class ThreadIndex:
    session: Session
    serde: SerializerProtocol
    linear: LinearMode = "identity"
    thread_id: str | None = None
    indexed: int = 0
    owned: bool = True  # False: a read-only view of a thread another live writer owns
    checkpoints: dict[str, dict[str, CheckpointRecord]] = field(default_factory=dict)
    latest: dict[str, str] = field(default_factory=dict)
    blobs: dict[tuple[str, str, Any], int] = field(default_factory=dict)
    writes: dict[tuple[str, str], dict[tuple[str, int], _Write]] = field(default_factory=dict)
    _recent: OrderedDict[tuple[str, bytes], tuple[int, str | int]] = field(default_factory=OrderedDict)
    _linear: dict[tuple[str, str], list[_Linear]] = field(default_factory=dict)
    _parts: dict[tuple[int, str], tuple[tuple[int, str] | None, int, bytes]] = field(default_factory=dict)

    # ---- indexing the events ------------------------------------------------------------

    def catch_up(self) -> None:
        """Index the events appended since the last call."""
        events = self.session.events
        for seq in range(self.indexed, len(events)):
            self._apply(events[seq])
        self.indexed = len(events)

    def _apply(self, event: Event) -> None:
        kind = event.type
        if kind == CHECKPOINT:
            self._apply_checkpoint(event)
        elif kind == WRITES:
            self._apply_writes(event)
        elif kind == THREAD:
            thread = event.data.get("threadId") if hasattr(event.data, "get") else None
            if not isinstance(thread, str):
                raise CorruptSession(
                    f"session {self.session.id!r}: {THREAD} at seq {event.seq} has no threadId"
                )
            self.thread_id = thread
        elif kind in (PRUNE, DELETED):
            self._apply_removal(event)

    def _where(self, event: Event) -> str:
        return f"session {self.session.id!r}, {event.type} at seq {event.seq}"

    def _apply_checkpoint(self, event: Event) -> None:
        data = event.data
        where = self._where(event)
        ns, cid, parent = data.get("ns"), data.get("id"), data.get("parent")
        values = data.get("values")
        if not isinstance(ns, str) or not isinstance(cid, str) or not hasattr(values, "items"):
            raise CorruptSession(f"{where}: malformed checkpoint")
        if parent is not None and not isinstance(parent, str):
            raise CorruptSession(f"{where}: malformed parent")
        loads = self.serde.loads_typed
        in_ns = self.checkpoints.setdefault(ns, {})
        parent_record = in_ns.get(parent) if parent is not None else None
        stored = data.get("checkpoint")
        if hasattr(stored, "get") and "derived" in stored:
            if parent_record is None:
                raise CorruptSession(f"{where}: checkpoint derived from a parent that is not stored")
            checkpoint = rebuild_skeleton(stored, cid, parent_record.checkpoint, where)
        else:
            checkpoint = decode_jsonish(stored, loads, where)
        metadata = decode_jsonish(data.get("metadata"), loads, where)
        if not isinstance(checkpoint, dict) or not isinstance(metadata, dict):
            raise CorruptSession(f"{where}: checkpoint and metadata must be objects")
        resolved = dict(parent_record.resolved) if parent_record is not None else {}
        for channel, spec in values.items():
            version = spec.get("v") if hasattr(spec, "get") else None
            if version is None:
                raise CorruptSession(f"{where}: value of channel {channel!r} has no version")
            resolved[channel] = (version, event.seq)
            self.blobs[(ns, channel, version)] = event.seq
            self._remember_payload(spec, event.seq, channel)
        in_ns[cid] = CheckpointRecord(event.seq, ns, cid, parent, checkpoint, metadata, resolved)
        if cid > self.latest.get(ns, ""):
            self.latest[ns] = cid

    def _apply_writes(self, event: Event) -> None:
        data = event.data
        ns, cid, task, path, writes = (data.get(k) for k in ("ns", "checkpoint", "task", "path", "writes"))
        if not (isinstance(ns, str) and isinstance(cid, str) and isinstance(task, str)) or not isinstance(
            path, str
        ):
            raise CorruptSession(f"{self._where(event)}: malformed writes")
        stored = self.writes.setdefault((ns, cid), {})
        for position, item in enumerate(writes or ()):
            if not isinstance(item, list | tuple) or len(item) != 3 or not isinstance(item[1], str):
                raise CorruptSession(f"{self._where(event)}: malformed write {position}")
            idx, channel, spec = item
            stored[(task, idx)] = _Write(task, channel, event.seq, position, path, idx)
            self._remember_payload(spec, event.seq, position)

    def _apply_removal(self, event: Event) -> None:
        """``langgraph/prune`` ``{keep: {ns: id}}`` keeps one checkpoint per namespace (none for
        a namespace it does not name); ``langgraph/deleted`` ``{checkpoints: [[ns, id], ...]}``
        removes those."""
        data = event.data
        if event.type == PRUNE:
            keep = data.get("keep") or {}
            doomed = [(ns, cid) for ns, ids in self.checkpoints.items() for cid in ids if keep.get(ns) != cid]
        else:
            doomed = [(ns, cid) for ns, cid in data.get("checkpoints") or ()]
        for ns, cid in doomed:
            self.checkpoints.get(ns, {}).pop(cid, None)
            self.writes.pop((ns, cid), None)
        for ns in {ns for ns, _ in doomed}:
            remaining = self.checkpoints.get(ns)
            if remaining:
                self.latest[ns] = max(remaining)
            else:
                self.checkpoints.pop(ns, None)
                self.latest.pop(ns, None)

    def _remember_payload(self, spec: Any, seq: int, key: str | int) -> None:
        if not has_payload(spec) or payload_size(spec) < _REUSE_MIN:
            return
        payload = (spec["t"], decode_bytes(spec, f"session {self.session.id!r} seq {seq}"))
        self._recent[payload] = (seq, key)
        self._recent.move_to_end(payload)
        while len(self._recent) > _REUSE_KEEP:
            self._recent.popitem(last=False)

    # ---- reading ------------------------------------------------------------------------

    def record(self, ns: str, checkpoint_id: str | None) -> CheckpointRecord | None:
        in_ns = self.checkpoints.get(ns)
        if not in_ns:
            return None
        if checkpoint_id is None:
            checkpoint_id = self.latest.get(ns)
        return in_ns.get(checkpoint_id) if checkpoint_id is not None else None

    def namespaces(self) -> list[str]:
        return list(self.checkpoints)

    def newest_first(self, ns: str) -> list[CheckpointRecord]:
        in_ns = self.checkpoints.get(ns, {})
        return [in_ns[cid] for cid in sorted(in_ns, reverse=True)]

    def _spec(self, seq: int, key: str | int) -> Any:
        data = self.session.events[seq].data
        try:
            if isinstance(key, str):
                return data["values"][key]
            return data["writes"][key][2]
        except (KeyError, IndexError, TypeError):
            raise CorruptSession(f"session {self.session.id!r}: no value {key!r} at seq {seq}") from None

    def _payload(self, spec: Any, seq: int) -> tuple[str, bytes]:
        """The serialized bytes a spec stores (for an extension: the added elements)."""
        same = spec.get("same")
        if same is not None:
            back, key = same if isinstance(same, list | tuple) and len(same) == 2 else (0, None)
            if type(back) is not int or not 0 < back <= seq or not isinstance(key, str | int):
                raise CorruptSession(
                    f"session {self.session.id!r}: a payload reference at seq {seq} is malformed"
                )
            seq -= back
            spec = self._spec(seq, key)
        kind = spec.get("t")
        if not isinstance(kind, str):
            raise CorruptSession(f"session {self.session.id!r}: value at seq {seq} has no type")
        return kind, decode_bytes(spec, f"session {self.session.id!r} seq {seq}")

    def value_bytes(self, seq: int, channel: str) -> tuple[str, bytes] | None:
        """The serialized value of ``channel`` stored at ``seq`` (``None``: the empty blob),
        extensions joined back onto their base: the bytes the serializer gave at ``put``."""
        spec = self._spec(seq, channel)
        if "ext" not in spec:
            return None if spec.get("empty") else self._payload(spec, seq)
        bodies: list[bytes] = []
        count = 0
        key: tuple[int, str] | None = (seq, channel)
        while key is not None:
            part = self._parts.get(key)
            if part is None:
                part = self._parts[key] = self._part(*key)
            key, added, body = part
            count += added
            bodies.append(body)
        bodies.reverse()
        return "msgpack", join(count, bodies)

    def _part(self, seq: int, channel: str) -> tuple[tuple[int, str] | None, int, bytes]:
        """One link of an extension chain: the link below it (``None`` at the full value), the
        elements it adds and their bytes. Links are decoded once and kept (``_parts``)."""
        spec = self._spec(seq, channel)
        if spec.get("empty"):
            raise CorruptSession(f"session {self.session.id!r}: an extension at seq {seq} extends no value")
        kind, data = self._payload(spec, seq)
        split = split_array(data) if kind == "msgpack" else None
        if split is None:
            raise CorruptSession(
                f"session {self.session.id!r}: value at seq {seq} extends or is extended, not an array"
            )
        below = (seq - spec["ext"], channel) if "ext" in spec else None
        if below is not None and not 0 <= below[0] < seq:
            raise CorruptSession(
                f"session {self.session.id!r}: extension at seq {seq} points outside the log"
            )
        return below, split[0], split[1]

    def channel_values(self, record: CheckpointRecord, *, remember: bool) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for channel, version in record.checkpoint.get("channel_versions", {}).items():
            found = record.resolved.get(channel)
            seq = found[1] if found is not None and found[0] == version else None
            if seq is None:
                seq = self.blobs.get((record.ns, channel, version))
            if seq is None:
                continue
            cached = self._cached(record.ns, channel, seq)
            if cached is not None:
                values[channel] = cached
                continue
            typed = self.value_bytes(seq, channel)
            if typed is None:
                continue
            value = self.serde.loads_typed(typed)
            values[channel] = value
            if remember and self.linear != "off" and type(value) is list and typed[0] == "msgpack":
                self._keep_linear(
                    record.ns, channel, seq, value, typed[1] if self.linear == "verify" else None
                )
        return values

    def _cached(self, ns: str, channel: str, seq: int) -> list[Any] | None:
        if self.linear != "identity":
            return None
        for candidate in self._linear.get((ns, channel), ()):
            if candidate.seq == seq:
                return list(candidate.elements)
        return None

    def pending_writes(self, ns: str, checkpoint_id: str) -> list[PendingWrite]:
        stored = self.writes.get((ns, checkpoint_id), {})
        ordered = sorted(stored.values(), key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
        loads = self.serde.loads_typed
        return [
            (w.task_id, w.channel, loads(self._payload(self._spec(w.seq, w.position), w.seq)))
            for w in ordered
        ]

    def has_write(self, ns: str, checkpoint_id: str, task_id: str, idx: int) -> bool:
        return (task_id, idx) in self.writes.get((ns, checkpoint_id), {})

    # ---- encoding new events ------------------------------------------------------------

    def _payload_spec(self, kind: str, data: bytes, seq: int) -> dict[str, Any]:
        if len(data) >= _REUSE_MIN:
            found = self._recent.get((kind, data))
            if found is not None:
                return {"same": [seq - found[0], found[1]]}
        return {"t": kind, **encode_bytes(data)}

    def encode_checkpoint(
        self,
        ns: str,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        parent: str | None,
        new_versions: Mapping[str, Any],
    ) -> tuple[dict[str, Any], list[_Base]]:
        """The data of the ``langgraph/checkpoint`` event for this put (to be appended next),
        and the list values that later values may extend (``keep_bases`` once appended)."""
        seq = len(self.session.events)
        values = checkpoint["channel_values"]
        skeleton = {key: value for key, value in checkpoint.items() if key != "channel_values"}
        specs: dict[str, Any] = {}
        bases: list[_Base] = []
        for channel, version in new_versions.items():
            if channel not in values:
                specs[channel] = {"v": version, "empty": True}
                continue
            spec, base = self._encode_value(ns, channel, values[channel], seq)
            specs[channel] = {"v": version, **spec}
            if base is not None:
                bases.append(base)
        dumps = self.serde.dumps_typed
        parent_record = self.checkpoints.get(ns, {}).get(parent) if parent is not None else None
        stored = encode_jsonish(skeleton, dumps)
        if "json" in stored and parent_record is not None:
            stored = derive_skeleton(skeleton, parent_record.checkpoint)
        data = {
            "ns": ns,
            "id": checkpoint["id"],
            "parent": parent,
            "checkpoint": stored,
            "metadata": encode_jsonish(dict(metadata), dumps),
            "values": specs,
        }
        return data, bases

    def _encode_value(
        self, ns: str, channel: str, value: Any, seq: int
    ) -> tuple[dict[str, Any], _Base | None]:
        """The spec of one channel value, and the value as a base for later ones (a list whose
        serialization is a msgpack array), or ``None``."""
        if type(value) is not list or self.linear == "off":
            return self._payload_spec(*self.serde.dumps_typed(value), seq), None
        full = self.serde.dumps_typed(value) if self.linear == "verify" else None
        for candidate in self._linear.get((ns, channel), ()):
            added = self._extension(value, candidate, full)
            if added is not None:
                spec = {"ext": seq - candidate.seq, **self._payload_spec(*added, seq)}
                return spec, _Base(channel, value, full[1] if full is not None else None)
        if full is None:
            full = self.serde.dumps_typed(value)
        is_array = full[0] == "msgpack" and split_array(full[1]) is not None
        base = _Base(channel, value, full[1] if self.linear == "verify" else None) if is_array else None
        return self._payload_spec(*full, seq), base

    def _extension(
        self, value: list[Any], base: _Linear, full: tuple[str, bytes] | None
    ) -> tuple[str, bytes] | None:
        """The serialized added elements when ``value`` extends ``base``, else ``None``."""
        stored = len(base.elements)
        if len(value) < stored:
            return None
        if full is not None:  # linear="verify": the bytes decide
            split = split_array(full[1]) if full[0] == "msgpack" else None
            old = split_array(base.data) if base.data is not None else None
            if split is None or old is None or not split[1].startswith(old[1]):
                return None
            return "msgpack", array_header(split[0] - old[0]) + split[1][len(old[1]) :]
        if not all(new is old for new, old in zip(value, base.elements, strict=False)):
            return None
        added = self.serde.dumps_typed(value[stored:])
        if added[0] != "msgpack" or split_array(added[1]) is None:
            return None
        return added

    def encode_writes(self, writes: list[tuple[int, str, Any]]) -> list[list[Any]]:
        """The ``writes`` member of a ``langgraph/writes`` event (to be appended next)."""
        seq = len(self.session.events)
        dumps = self.serde.dumps_typed
        return [[idx, channel, self._payload_spec(*dumps(value), seq)] for idx, channel, value in writes]

    def keep_bases(self, ns: str, seq: int, bases: list[_Base]) -> None:
        """After the checkpoint event at ``seq`` is appended: its list values (the caller's own
        objects) become values the next ones may extend."""
        for base in bases:
            self._keep_linear(ns, base.channel, seq, base.value, base.data)

    def _keep_linear(self, ns: str, channel: str, seq: int, value: list[Any], data: bytes | None) -> None:
        entry = _Linear(seq, list(value), data)
        kept = [c for c in self._linear.get((ns, channel), ()) if c.seq != seq]
        self._linear[(ns, channel)] = [entry, *kept][:_CANDIDATES]

    def records(self) -> Iterator[CheckpointRecord]:
        for in_ns in self.checkpoints.values():
            yield from in_ns.values()
