"""``SaverCore``: the checkpointer's operations over a ``SessionStore``, on the store's event loop.

One harness session per LangGraph thread, named ``session_prefix + thread_id`` (default
``langgraph:``); every namespace of the thread (``checkpoint_ns``: the root graph ``""`` and
each subgraph's) lives in that one session, each event naming its namespace, so a thread is
deleted, copied or listed as a whole. Each ``put`` and ``put_writes`` appends one event and
flushes: it has returned only once the event is durable (fsync'd by JSONL, committed by SQLite
or PostgreSQL). The events are described in ``records.py``, the index in ``index.py``.

Any number of savers, in any process, may use one thread. A saver owns a thread's session
only while a call runs (``harness.stores.shared``): it waits up to ``wait`` seconds for another
writer to let go, brings its index up to date with what others wrote (reading only the new
events), and lets go once its write is durable. A ``put`` whose parent is not the newest
checkpoint of its namespace, while that newest one was written by another writer after this
saver last read the thread, is refused (``ThreadMoved``, nothing written): two runs of one
thread at once never fork it silently. A deliberate branch from an older checkpoint the saver
read (LangGraph's time travel) is written as before.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
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
    SessionNotFound,
    ThreadMoved,
)
from harness.events.event import Event
from harness.integrations.langgraph.index import CheckpointRecord, LinearMode, ThreadIndex
from harness.integrations.langgraph.records import CHECKPOINT, DELETED, PRUNE, THREAD, WRITES
from harness.session.session import Session
from harness.stores.shared import shared_session
from harness.stores.store import SessionStore

__all__ = ["DEFAULT_PREFIX", "DEFAULT_WAIT_S", "SaverCore"]

DEFAULT_PREFIX = "langgraph:"
DEFAULT_WAIT_S = 30.0
"""How long a call waits, by default, for another writer of the thread to let go of it."""


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
        wait: float = DEFAULT_WAIT_S,
    ) -> None:
        if linear not in ("identity", "verify", "off"):
            raise InvalidCheckpointConfig(f"linear must be 'identity', 'verify' or 'off', not {linear!r}")
        if not (isinstance(wait, int | float) and wait >= 0 and math.isfinite(wait)):
            raise InvalidCheckpointConfig(f"wait must be a finite number of seconds >= 0, not {wait!r}")
        self.store = store
        self.serde = serde
        self.prefix = session_prefix
        self.linear: LinearMode = linear
        self.wait = float(wait)
        self._threads: dict[str, ThreadIndex] = {}  # follows the shared view of each thread
        self._read: dict[str, int] = {}  # events of the thread when this saver last read or put it

    def session_id(self, thread_id: str) -> str:
        """The harness session holding ``thread_id``."""
        return self.prefix + thread_id

    # ---- threads ------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def thread(
        self, thread_id: str, *, create: bool = False
    ) -> AsyncIterator[ThreadIndex | None]:
        """The index of the thread's session, owned by this store while the body runs (``None``
        when the thread has none and ``create`` is false)."""
        shared = shared_session(self.store, self.session_id(thread_id))
        try:
            session = await shared.enter(wait=self.wait, create=self._creator(thread_id) if create else None)
        except SessionNotFound:
            yield None
            return
        failed = False
        try:
            yield self._follow(thread_id, session)
        except Exception:
            failed = self.store.is_live(session) and self.store.pending(session) > 0
            raise
        finally:
            await shared.exit(failed=failed)

    def _creator(self, thread_id: str) -> Callable[[], Awaitable[Session]]:
        async def create() -> Session:
            session = await self.store.create(id=self.session_id(thread_id))
            session.append(THREAD, {"threadId": thread_id}, ignorable=True)
            return session

        return create

    def _follow(self, thread_id: str, session: Session) -> ThreadIndex:
        """The thread's index over ``session``: the one this saver keeps, moved on to the events
        others appended, or a new one when the session is not a continuation of it."""
        index = self._threads.get(thread_id)
        if index is not None and index.session is not session:
            if _continues(index.session, session, index.indexed):
                index.session = session
            else:
                index = None
        if index is None:
            index = ThreadIndex(session, self.serde, self.linear)
            self._read.pop(thread_id, None)  # what this saver read is not this session
        index.catch_up()
        if index.thread_id != thread_id:
            self._threads.pop(thread_id, None)
            raise NotALangGraphThread(
                f"session {session.id!r} exists and is not the session of LangGraph thread {thread_id!r}"
            )
        self._threads[thread_id] = index
        return index

    async def _thread_ids(self) -> list[str]:
        """The ids of the threads stored under this saver's prefix."""
        found = []
        for info in await self.store.list():
            if info.problem is None and info.id.startswith(self.prefix):
                found.append(info.id[len(self.prefix) :])
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
        async with self.thread(_thread_of(configurable)) as index:
            if index is None:
                return None
            self._read[_thread_of(configurable)] = index.indexed
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
            thread_ids = [_thread_of(configurable)]
            ns_filter = configurable.get("checkpoint_ns")
            id_filter = configurable.get("checkpoint_id")
        else:
            thread_ids, ns_filter, id_filter = await self._thread_ids(), None, None
        before_id = get_checkpoint_id(before) if before is not None else None
        found: list[CheckpointTuple] = []
        for thread_id in thread_ids:
            try:
                async with self.thread(thread_id) as index:
                    if index is None:
                        continue
                    self._read[thread_id] = index.indexed
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
            except NotALangGraphThread:
                if config is not None:
                    raise
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
        parent = configurable.get("checkpoint_id")
        async with self.thread(thread_id, create=True) as index:
            assert index is not None
            _check_not_moved(index, ns, parent, self._read.get(thread_id, 0))
            data, bases = index.encode_checkpoint(
                ns, checkpoint, get_checkpoint_metadata(config, metadata), parent, new_versions
            )
            event = await self._commit(index, CHECKPOINT, data)
            index.keep_bases(ns, event.seq, bases)
            self._read[thread_id] = index.indexed
        return _config(thread_id, ns, checkpoint["id"])

    async def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        configurable = _configurable(config)
        thread_id, ns = _thread_of(configurable), _ns_of(configurable)
        checkpoint_id = configurable.get("checkpoint_id")
        if not isinstance(checkpoint_id, str) or not checkpoint_id:
            raise InvalidCheckpointConfig("put_writes needs the config's checkpoint_id")
        async with self.thread(thread_id, create=True) as index:
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
            await self._commit(index, WRITES, data)

    async def _commit(self, index: ThreadIndex, kind: str, data: dict[str, Any]) -> Event:
        """Append one event to the thread's session, index it and make it durable. When the
        write fails, the session's view is dropped with what it did not write (``thread``),
        and the next call reads the thread afresh."""
        event = index.session.append(kind, data, ignorable=True)
        index.catch_up()
        await self.store.flush(index.session)
        return event

    # ---- whole threads ------------------------------------------------------------------

    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's session for good (``SessionStore.delete``); no error if none."""
        thread_id = str(thread_id)
        async with self.thread(thread_id) as index:
            if index is None:
                return
            self._threads.pop(thread_id, None)
            self._read.pop(thread_id, None)
            with contextlib.suppress(SessionNotFound):
                await self.store.delete(index.session.id, orphan_forks=True)

    async def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """The target thread becomes a harness fork of the source's session (every checkpoint
        and write, ``harness lineage`` shows the link). ``LangGraphThreadExists`` if the target has
        checkpoints; nothing happens when the source has no session."""
        target_id = str(target_thread_id)
        async with self.thread(str(source_thread_id)) as source:
            if source is None:
                return
            child = source.session.fork(id=self.session_id(target_id))
        async with self.thread(target_id) as target:
            if target is not None:
                if target.checkpoints or len(target.session) > 1:
                    raise LangGraphThreadExists(
                        f"thread {target_id!r} has checkpoints already: delete it first"
                    )
                self._threads.pop(target_id, None)
                self._read.pop(target_id, None)
                with contextlib.suppress(SessionNotFound):
                    await self.store.delete(target.session.id, orphan_forks=True)
        child.append(THREAD, {"threadId": target_id}, ignorable=True)
        session = await self.store.adopt(child)
        try:
            await self.store.flush(session)
        finally:
            await self.store.release(session)

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
            async with self.thread(str(thread_id)) as index:
                if index is None or all(len(ids) <= 1 for ids in index.checkpoints.values()):
                    continue
                await self._commit(index, PRUNE, {"keep": dict(index.latest)})

    async def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Drop every checkpoint whose metadata ``run_id`` is one of ``run_ids`` (and its
        writes), in every thread, by a ``langgraph/deleted`` event in each thread touched."""
        runs = set(run_ids)
        if not runs:
            return
        for thread_id in await self._thread_ids():
            try:
                async with self.thread(thread_id) as index:
                    if index is None:
                        continue
                    doomed = [[r.ns, r.id] for r in index.records() if r.metadata.get("run_id") in runs]
                    if doomed:
                        await self._commit(index, DELETED, {"checkpoints": doomed})
            except NotALangGraphThread:
                continue


def _continues(old: Session, new: Session, indexed: int) -> bool:
    """Whether ``new`` (read afresh) holds the ``indexed`` events of ``old`` as its first ones
    (the thread was appended to, not deleted and made again)."""
    if old.header != new.header or len(new.events) < indexed:
        return False
    return indexed == 0 or old.events[indexed - 1].encode() == new.events[indexed - 1].encode()


def _check_not_moved(index: ThreadIndex, ns: str, parent: object, seen: int) -> None:
    """``ThreadMoved`` when the newest checkpoint of ``ns`` was put by another writer after this
    saver last read the thread or put a checkpoint in it (when it held ``seen`` events), and
    ``parent`` is not that checkpoint. A ``put_writes`` is no read: it does not move ``seen``."""
    newest = index.latest.get(ns)
    if newest is None or newest == parent:
        return
    record = index.checkpoints[ns][newest]
    if record.seq >= seen:
        raise ThreadMoved(
            f"thread {index.thread_id!r} (namespace {ns!r}) moved on to checkpoint {newest!r}, "
            f"written by another writer after this saver last read it; this checkpoint's parent is "
            f"{parent!r}. Nothing was written: read the thread again and run from its newest checkpoint"
        )
