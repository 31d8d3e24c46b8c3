"""``SaverCore``: the checkpointer's operations over a ``SessionStore``, on the store's event loop.

One harness session per LangGraph thread, named ``session_prefix + thread_id`` (default
``langgraph:``); every namespace of the thread (``checkpoint_ns``: the root graph ``""`` and
each subgraph's) lives in that one session, each event naming its namespace, so a thread is
deleted, copied or listed as a whole. Each ``put`` and ``put_writes`` appends one event and
flushes: it has returned only once the event is durable (fsync'd by JSONL, committed by SQLite
or PostgreSQL). The events are described in ``records.py``, the index in ``index.py``.

One process writes a thread at a time. A saver reads a thread's session on first use and then
follows its own writes; when another process has written the thread meanwhile, this saver's next
``put`` is refused by the store (``SessionConflict``, nothing of it written, never merged) and the
call after it reads the thread afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from harness.errors import (
    InvalidCheckpointConfig,
    LangGraphThreadExists,
    NotALangGraphThread,
    SessionExists,
    SessionInUse,
    SessionNotFound,
    StorageError,
    WriteRefused,
)
from harness.events.event import Event
from harness.integrations.langgraph.index import CheckpointRecord, LinearMode, ThreadIndex
from harness.integrations.langgraph.records import CHECKPOINT, DELETED, PRUNE, THREAD, WRITES
from harness.stores.store import SessionStore

__all__ = ["DEFAULT_PREFIX", "SaverCore"]

DEFAULT_PREFIX = "langgraph:"


def _configurable(config: RunnableConfig | None) -> dict[str, Any]:
    configurable = (config or {}).get("configurable")
    if not isinstance(configurable, dict):
        raise InvalidCheckpointConfig("the config has no 'configurable' mapping")
    return configurable


def _thread_of(configurable: dict[str, Any]) -> str:
    thread = configurable.get("thread_id")
    if thread is None or thread == "":
        raise InvalidCheckpointConfig("the config's 'configurable' has no thread_id")
    return str(thread)


def _ns_of(configurable: dict[str, Any]) -> str:
    ns = configurable.get("checkpoint_ns") or ""
    if not isinstance(ns, str):
        raise InvalidCheckpointConfig(f"checkpoint_ns must be a string, got {type(ns).__name__}")
    return ns


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


class SaverCore:
    """The saver's state and operations; every coroutine runs on one event loop."""

    def __init__(
        self,
        store: SessionStore,
        serde: SerializerProtocol,
        *,
        session_prefix: str = DEFAULT_PREFIX,
        linear: LinearMode = "identity",
    ) -> None:
        if linear not in ("identity", "verify", "off"):
            raise InvalidCheckpointConfig(f"linear must be 'identity', 'verify' or 'off', not {linear!r}")
        self.store = store
        self.serde = serde
        self.prefix = session_prefix
        self.linear: LinearMode = linear
        self._threads: dict[str, ThreadIndex] = {}
        self._opening = asyncio.Lock()

    def session_id(self, thread_id: str) -> str:
        """The harness session holding ``thread_id``."""
        return self.prefix + thread_id

    # ---- threads ------------------------------------------------------------------------

    async def thread(self, thread_id: str, *, create: bool = False) -> ThreadIndex | None:
        """The index of the thread's session (loaded live on first use), or ``None`` when the
        thread has none and ``create`` is false."""
        index = self._threads.get(thread_id)
        if index is not None:
            index.catch_up()
            return index
        async with self._opening:
            index = self._threads.get(thread_id)
            if index is None:
                index = await self._open(thread_id, create)
                if index is None:
                    return None
                if index.owned:
                    self._threads[thread_id] = index
        index.catch_up()
        return index

    async def _open(self, thread_id: str, create: bool) -> ThreadIndex | None:
        session_id = self.session_id(thread_id)
        for _ in range(2):
            try:
                session = await self.store.load(session_id)
            except SessionInUse:
                if create:
                    raise  # another live writer owns the thread: a write must wait for it
                # A read while another writer owns it: the stored thread, read afresh each time.
                index = ThreadIndex(await self.store.inspect(session_id), self.serde, self.linear)
                index.owned = False
                index.catch_up()
                return index
            except SessionNotFound:
                if not create:
                    return None
                try:
                    session = await self.store.create(id=session_id)
                except SessionExists:
                    continue  # created meanwhile by another writer: load it
                session.append(THREAD, {"threadId": thread_id}, ignorable=True)
            index = ThreadIndex(session, self.serde, self.linear)
            index.catch_up()
            if index.thread_id != thread_id:
                raise NotALangGraphThread(
                    f"session {session_id!r} exists and is not the session of LangGraph thread {thread_id!r}"
                )
            return index
        raise StorageError(f"session {session_id!r} could neither be created nor loaded")

    async def _all_threads(self) -> list[ThreadIndex]:
        found = []
        for info in await self.store.list():
            if info.problem is not None or not info.id.startswith(self.prefix):
                continue
            thread_id = info.id[len(self.prefix) :]
            try:
                index = await self.thread(thread_id)
            except NotALangGraphThread:
                continue
            if index is not None:
                found.append(index)
        return found

    # ---- reads --------------------------------------------------------------------------

    def _tuple(self, index: ThreadIndex, record: CheckpointRecord, *, remember: bool) -> CheckpointTuple:
        thread_id = index.thread_id or ""
        parent = _config(thread_id, record.ns, record.parent) if record.parent is not None else None
        values = index.channel_values(record, remember=remember)
        checkpoint: Any = {**record.checkpoint, "channel_values": values}
        metadata: Any = dict(record.metadata)
        return CheckpointTuple(
            config=_config(thread_id, record.ns, record.id),
            checkpoint=checkpoint,
            metadata=metadata,
            parent_config=parent,
            pending_writes=index.pending_writes(record.ns, record.id),
        )

    async def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = _configurable(config)
        index = await self.thread(_thread_of(configurable))
        if index is None:
            return None
        record = index.record(_ns_of(configurable), get_checkpoint_id(config))
        return self._tuple(index, record, remember=True) if record is not None else None

    async def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> list[CheckpointTuple]:
        if config is not None:
            configurable = _configurable(config)
            one = await self.thread(_thread_of(configurable))
            threads = [one] if one is not None else []
            ns_filter = configurable.get("checkpoint_ns")
            id_filter = configurable.get("checkpoint_id")
        else:
            threads, ns_filter, id_filter = await self._all_threads(), None, None
        before_id = get_checkpoint_id(before) if before is not None else None
        found: list[CheckpointTuple] = []
        for index in threads:
            for ns in index.namespaces():
                if ns_filter is not None and ns != ns_filter:
                    continue
                for record in index.newest_first(ns):
                    if limit is not None and len(found) >= limit:
                        return found
                    if id_filter and record.id != id_filter:
                        continue
                    if before_id and record.id >= before_id:
                        continue
                    if filter and not all(record.metadata.get(k) == v for k, v in filter.items()):
                        continue
                    found.append(self._tuple(index, record, remember=False))
        return found

    # ---- writes -------------------------------------------------------------------------

    async def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        configurable = _configurable(config)
        thread_id, ns = _thread_of(configurable), _ns_of(configurable)
        index = await self.thread(thread_id, create=True)
        assert index is not None
        parent = configurable.get("checkpoint_id")
        data, bases = index.encode_checkpoint(
            ns, checkpoint, get_checkpoint_metadata(config, metadata), parent, new_versions
        )
        event = await self._commit(thread_id, index, CHECKPOINT, data)
        index.keep_bases(ns, event.seq, bases)
        return _config(thread_id, ns, checkpoint["id"])

    async def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        configurable = _configurable(config)
        thread_id, ns = _thread_of(configurable), _ns_of(configurable)
        checkpoint_id = configurable.get("checkpoint_id")
        if not isinstance(checkpoint_id, str) or not checkpoint_id:
            raise InvalidCheckpointConfig("put_writes needs the config's checkpoint_id")
        index = await self.thread(thread_id, create=True)
        assert index is not None
        new: list[tuple[int, str, Any]] = []
        for position, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, position)
            if idx >= 0 and index.has_write(ns, checkpoint_id, task_id, idx):
                continue  # a regular write is stored once (a retried task writes it again)
            new.append((idx, channel, value))
        if not new:
            return
        data = {
            "ns": ns,
            "checkpoint": checkpoint_id,
            "task": task_id,
            "path": task_path,
            "writes": index.encode_writes(new),
        }
        await self._commit(thread_id, index, WRITES, data)

    async def _commit(self, thread_id: str, index: ThreadIndex, kind: str, data: dict[str, Any]) -> Event:
        """Append one event to the thread's session, index it and make it durable. When the
        store refuses the write (another writer got there first, the session was deleted, a
        lease was lost), nothing of it was written: the session is discarded unwritten, and the
        next call reads the thread afresh."""
        event = index.session.append(kind, data, ignorable=True)
        index.catch_up()
        try:
            await self.store.flush(index.session)
        except WriteRefused:
            if self._threads.get(thread_id) is index:
                del self._threads[thread_id]
            with contextlib.suppress(SessionNotFound):
                await self.store.discard(index.session)
            raise
        return event

    # ---- whole threads ------------------------------------------------------------------

    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's session for good (``SessionStore.delete``); no error if none."""
        thread_id = str(thread_id)
        index = await self.thread(thread_id)
        if index is None:
            return
        self._threads.pop(thread_id, None)
        with contextlib.suppress(SessionNotFound):
            await self.store.delete(index.session.id, orphan_forks=True)

    async def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """The target thread becomes a harness fork of the source's session (every checkpoint
        and write, ``harness lineage`` shows the link). ``LangGraphThreadExists`` if the target has
        checkpoints; nothing happens when the source has no session."""
        source = await self.thread(str(source_thread_id))
        if source is None:
            return
        target_id = str(target_thread_id)
        target = await self.thread(target_id)
        if target is not None:
            if target.checkpoints or len(target.session) > 1:
                raise LangGraphThreadExists(f"thread {target_id!r} has checkpoints already: delete it first")
            await self.delete_thread(target_id)
        await self.store.flush(source.session)
        child = source.session.fork(id=self.session_id(target_id))
        child.append(THREAD, {"threadId": target_id}, ignorable=True)
        session = await self.store.adopt(child)
        await self.store.flush(session)

    async def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"delete"``: delete each thread. ``"keep_latest"``: keep the newest checkpoint of
        each namespace (and its writes) and drop the others from every read, by a
        ``langgraph/prune`` event (the log keeps the bytes; docs/integrations/langgraph.md)."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidCheckpointConfig(f"unknown prune strategy {strategy!r} (keep_latest or delete)")
        for thread_id in thread_ids:
            if strategy == "delete":
                await self.delete_thread(thread_id)
                continue
            index = await self.thread(str(thread_id))
            if index is None or all(len(ids) <= 1 for ids in index.checkpoints.values()):
                continue
            await self._commit(str(thread_id), index, PRUNE, {"keep": dict(index.latest)})

    async def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Drop every checkpoint whose metadata ``run_id`` is one of ``run_ids`` (and its
        writes), in every thread, by a ``langgraph/deleted`` event in each thread touched."""
        runs = set(run_ids)
        if not runs:
            return
        for index in await self._all_threads():
            doomed = [[r.ns, r.id] for r in index.records() if r.metadata.get("run_id") in runs]
            if doomed:
                await self._commit(index.thread_id or "", index, DELETED, {"checkpoints": doomed})
