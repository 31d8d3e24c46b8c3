"""``AsyncHarnessSaver`` and ``HarnessSaver``: LangGraph checkpointers over a harness ``SessionStore``.

Both implement every method of ``BaseCheckpointSaver``, sync and async, over ``SaverCore``
(``core.py``); they differ in where the store's event loop is:

* ``AsyncHarnessSaver(store)`` uses the caller's loop (``graph.ainvoke``, ``astream``). Its
  sync methods may be called from other threads (LangGraph's sync API in a worker thread) and
  run on that loop; called on the loop's own thread they raise ``InvalidCheckpointConfig``, as
  blocking there would deadlock.
* ``HarnessSaver(store)`` runs the store on a private loop in a daemon thread it owns
  (``graph.invoke``, ``stream``); its async methods wait for that loop without blocking theirs.
  Close it (``close()``, or ``with``), which closes the store.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import AsyncIterator, Collection, Coroutine, Iterator, Sequence
from types import TracebackType
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from harness.errors import InvalidCheckpointConfig
from harness.integrations.langgraph.core import DEFAULT_PREFIX, DEFAULT_WAIT_S, SaverCore
from harness.integrations.langgraph.index import LinearMode
from harness.stores.open import open_store
from harness.stores.store import SessionStore

__all__ = ["AsyncHarnessSaver", "HarnessSaver"]

T = TypeVar("T")


class _Bridged(BaseCheckpointSaver[int]):
    """Every checkpointer method, sync and async, as a call of the core on its loop."""

    _core: SaverCore

    def __init__(
        self,
        store: SessionStore,
        *,
        serde: SerializerProtocol | None = None,
        session_prefix: str = DEFAULT_PREFIX,
        linear: LinearMode = "identity",
        wait: float = DEFAULT_WAIT_S,
    ) -> None:
        super().__init__(serde=serde)
        self._core = SaverCore(store, self.serde, session_prefix=session_prefix, linear=linear, wait=wait)
        self._start()

    def _start(self) -> None:
        """Set up the loop the core runs on (each saver its own way)."""
        raise NotImplementedError

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> BaseCheckpointSaver[int]:
        """LangGraph's copy of the saver with a stricter msgpack allowlist (``compile`` asks for
        it when the graph declares one): the copy reads and writes through the new serde, over
        the same store and loop."""
        clone = super().with_allowlist(extra_allowlist)
        if clone is not self and isinstance(clone, _Bridged):
            core = self._core
            clone._core = SaverCore(
                core.store, clone.serde, session_prefix=core.prefix, linear=core.linear, wait=core.wait
            )
        return clone

    @property
    def store(self) -> SessionStore:
        """The harness store the threads are kept in."""
        return self._core.store

    def session_id(self, thread_id: str) -> str:
        """The id of the harness session holding ``thread_id`` (``harness log`` shows it)."""
        return self._core.session_id(str(thread_id))

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T:
        raise NotImplementedError

    async def _async(self, coro: Coroutine[Any, Any, T]) -> T:
        raise NotImplementedError

    # ---- sync API -----------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._sync(self._core.get_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        yield from self._sync(self._core.list(config, filter=filter, before=before, limit=limit))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._sync(self._core.put(config, checkpoint, metadata, new_versions))

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self._sync(self._core.put_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._sync(self._core.delete_thread(thread_id))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._sync(self._core.copy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._sync(self._core.prune(thread_ids, strategy=strategy))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._sync(self._core.delete_for_runs(run_ids))

    # ---- async API ----------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._async(self._core.get_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in await self._async(self._core.list(config, filter=filter, before=before, limit=limit)):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._async(self._core.put(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await self._async(self._core.put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._async(self._core.delete_thread(thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._async(self._core.copy_thread(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._async(self._core.prune(thread_ids, strategy=strategy))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._async(self._core.delete_for_runs(run_ids))


class AsyncHarnessSaver(_Bridged):
    """A LangGraph checkpointer over ``store``, used from the caller's event loop.

    ``serde`` is LangGraph's serializer (default ``JsonPlusSerializer``); ``session_prefix``
    names the sessions (``prefix + thread_id``); ``linear`` chooses how a growing list is
    recognised: ``"identity"`` (default), ``"verify"`` (by its bytes) or ``"off"`` (every value
    stored whole). See docs/integrations/langgraph.md.
    """

    _loop: asyncio.AbstractEventLoop | None

    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(cls, spec: str, **options: Any) -> AsyncIterator[AsyncHarnessSaver]:
        """A saver over the store ``spec`` names (as ``--store`` and ``open_store`` take it:
        ``DIR``, ``sqlite:FILE``, ``postgresql://…``; ``~`` expanded), closed on exit with its
        store: ``async with AsyncHarnessSaver.from_conn_string("sqlite:graph.db") as saver:``.
        ``options`` as for the constructor."""
        store = open_store(spec)
        try:
            yield cls(store, **options)
        finally:
            await store.close()

    def _start(self) -> None:
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None  # bound on the first async call

    async def _async(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            coro.close()
            raise InvalidCheckpointConfig("this AsyncHarnessSaver is used from another event loop")
        return await coro

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = self._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or running is loop or not loop.is_running():
            coro.close()
            raise InvalidCheckpointConfig(
                "AsyncHarnessSaver's sync methods run on its event loop from another thread; "
                "use the async methods (ainvoke, astream) on the loop, or HarnessSaver"
            )
        return asyncio.run_coroutine_threadsafe(coro, loop).result()


class HarnessSaver(_Bridged):
    """A LangGraph checkpointer over ``store``, which it runs on a private event loop.

    For the sync API (``graph.invoke``) and for use from any thread or loop. The saver owns the
    store from now on: use it only through the saver, and ``close()`` the saver (or use it as a
    context manager) to close the store. Options as for ``AsyncHarnessSaver``.
    """

    @classmethod
    @contextlib.contextmanager
    def from_conn_string(cls, spec: str, **options: Any) -> Iterator[HarnessSaver]:
        """A saver over the store ``spec`` names (as ``--store`` and ``open_store`` take it:
        ``DIR``, ``sqlite:FILE``, ``postgresql://…``; ``~`` expanded), closed on exit with its
        store: ``with HarnessSaver.from_conn_string("sqlite:graph.db") as saver:``. ``options``
        as for the constructor."""
        store = open_store(spec)
        try:
            saver = cls(store, **options)
        except BaseException:
            asyncio.run(store.close())
            raise
        with saver:
            yield saver

    def _start(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="harness-saver", daemon=True)
        self._thread.start()

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self._loop.is_closed():  # closed by this saver or a copy of it (with_allowlist)
            coro.close()
            raise InvalidCheckpointConfig("this HarnessSaver is closed")
        if threading.current_thread() is self._thread:
            coro.close()
            raise InvalidCheckpointConfig("HarnessSaver was called from its own loop thread")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._submit(coro).result()

    async def _async(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(self._submit(coro))

    def close(self) -> None:
        """Close the store (every event is durable already) and stop the loop thread."""
        if self._loop.is_closed():
            return
        try:
            self._sync(self._core.store.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def __enter__(self) -> HarnessSaver:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
