"""``HarnessSaver`` / ``AsyncHarnessSaver`` beyond the conformance suite: what lands in the
harness session, restarts, every backend (PostgreSQL on the real server), copies as forks,
prunes and run deletes that survive a reload, and the refusals."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from harness.errors import CorruptSession, HarnessError, SessionInUse, ThreadMoved
from harness.integrations.langgraph import (
    AsyncHarnessSaver,
    HarnessSaver,
    InvalidCheckpointConfig,
    LangGraphThreadExists,
    NotALangGraphThread,
)
from harness.stores.jsonl import JsonlBackend
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore
from tests.integrations.langgraph.support import BACKENDS, message, messages_graph
from tests.stores.pg import PgSchema, drop_schema, server_dsn

SERDE = JsonPlusSerializer()


def config(thread: str = "t", checkpoint_id: str | None = None, ns: str = "") -> Any:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def checkpoint(number: int, values: dict[str, Any]) -> Any:
    return {
        "v": 4, "id": f"{number:08d}", "ts": "2026-12-01T00:00:00+00:00", "channel_values": values,
        "channel_versions": dict.fromkeys(values, number), "versions_seen": {}, "updated_channels": None,
    }  # fmt: skip


async def run_invokes(saver: AsyncHarnessSaver, thread: str, count: int) -> list[Any]:
    graph = messages_graph(saver)
    for _ in range(count):
        await graph.ainvoke({"messages": []}, config(thread), durability="sync")
    state = await graph.aget_state(config(thread))
    return list(state.values["messages"])


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_thread_reads_back_after_a_restart(backend: str, tmp_path: Path) -> None:
    async def run() -> None:
        memory = MemoryBackend()  # the memory backend survives only as the same object

        def make() -> Any:
            return memory if backend == "memory" else BACKENDS[backend](tmp_path)

        store = SessionStore(make())
        written = await run_invokes(AsyncHarnessSaver(store), "chat", 12)
        await store.close()
        store = SessionStore(make())
        saver = AsyncHarnessSaver(store)
        read = (await messages_graph(saver).aget_state(config("chat"))).values["messages"]
        assert SERDE.dumps_typed(read) == SERDE.dumps_typed(written)
        assert len([t async for t in saver.alist(config("chat"))]) == 36
        await store.close()

    asyncio.run(run())


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    dsn = server_dsn()
    schema = PgSchema(dsn, f"langgraph_{uuid.uuid4().hex[:12]}")
    try:
        yield schema
    finally:
        drop_schema(dsn, schema.name)


def test_postgresql_holds_threads_like_the_embedded_backends(pg: PgSchema) -> None:
    async def run() -> None:
        store = SessionStore(pg.backend())
        written = await run_invokes(AsyncHarnessSaver(store), "pg-chat", 5)
        await store.close()
        store = SessionStore(pg.backend())
        saver = AsyncHarnessSaver(store)
        found = await saver.aget_tuple(config("pg-chat"))
        assert found is not None
        assert SERDE.dumps_typed(found.checkpoint["channel_values"]["messages"]) == SERDE.dumps_typed(written)
        await saver.adelete_thread("pg-chat")
        assert [info.id for info in await store.list()] == []
        await store.close()

    asyncio.run(run())


def test_the_session_is_a_harness_session_of_ignorable_langgraph_events(tmp_path: Path) -> None:
    async def run() -> None:
        store = SessionStore(JsonlBackend(tmp_path))
        saver = AsyncHarnessSaver(store)
        await run_invokes(saver, "chat", 3)
        assert saver.session_id("chat") == "langgraph:chat"
        await store.close()
        store = SessionStore(JsonlBackend(tmp_path))
        session = await store.inspect("langgraph:chat")  # the full load pipeline and validation
        kinds = {event.type for event in session.events if event.type != "session/end-seed"}
        assert kinds == {"langgraph/thread", "langgraph/checkpoint", "langgraph/writes"}
        assert all(e.ignorable for e in session.events if e.type.startswith("langgraph/"))
        assert session.events[0].data == {"threadId": "chat"}
        # the message text is readable in the log (latin-1 payloads), and stored once
        text = message(2).content
        assert isinstance(text, str)
        holding = [e for e in session.events if text.encode() in e.encode()]
        assert len(holding) == 1
        await store.close()

    asyncio.run(run())


def test_sync_saver_runs_a_graph_and_closes_its_store(tmp_path: Path) -> None:
    saver = HarnessSaver(SessionStore(JsonlBackend(tmp_path)))
    with saver:
        graph = messages_graph(saver)
        for _ in range(3):
            graph.invoke({"messages": []}, config("s"), durability="sync")
        assert len(graph.get_state(config("s")).values["messages"]) == 3
    with pytest.raises(InvalidCheckpointConfig, match="closed"):
        saver.get_tuple(config("s"))


def test_async_saver_refuses_sync_calls_on_its_own_loop() -> None:
    async def run() -> None:
        saver = AsyncHarnessSaver(SessionStore(MemoryBackend()))
        with pytest.raises(InvalidCheckpointConfig, match="another thread"):
            saver.get_tuple(config())
        # from a worker thread the sync API runs on the saver's loop
        await saver.aput(config(), checkpoint(1, {"x": 1}), {}, {"x": 1})
        found = await asyncio.to_thread(saver.get_tuple, config())
        assert found is not None and found.checkpoint["channel_values"] == {"x": 1}

    asyncio.run(run())


def test_bad_configs_are_refused_with_typed_errors() -> None:
    async def run() -> None:
        saver = AsyncHarnessSaver(SessionStore(MemoryBackend()))
        with pytest.raises(InvalidCheckpointConfig, match="thread_id"):
            await saver.aget_tuple({"configurable": {}})
        with pytest.raises(InvalidCheckpointConfig, match="configurable"):
            await saver.aput({}, checkpoint(1, {}), {}, {})
        with pytest.raises(InvalidCheckpointConfig, match="checkpoint_id"):
            await saver.aput_writes(config(), [("ch", 1)], "task")
        with pytest.raises(InvalidCheckpointConfig, match="strategy"):
            await saver.aprune(["t"], strategy="keep_everything")
        with pytest.raises(InvalidCheckpointConfig, match="linear"):
            AsyncHarnessSaver(SessionStore(MemoryBackend()), linear="sometimes")  # type: ignore[arg-type]
        assert issubclass(InvalidCheckpointConfig, HarnessError)

    asyncio.run(run())


def test_a_session_of_another_kind_is_never_taken_for_a_thread() -> None:
    async def run() -> None:
        store = SessionStore(MemoryBackend())
        other = await store.create(id="langgraph:mine")
        other.append("user/note", {"text": "not a thread"}, ignorable=True)
        await store.flush(other)
        saver = AsyncHarnessSaver(store)
        with pytest.raises(NotALangGraphThread):
            await saver.aput(config("mine"), checkpoint(1, {}), {}, {})
        with pytest.raises(NotALangGraphThread):
            await saver.adelete_thread("mine")
        assert [info.id for info in await store.list()] == ["langgraph:mine"]  # still there
        assert [t async for t in saver.alist(None)] == []  # and not listed as a thread

    asyncio.run(run())


def test_copy_thread_is_a_fork_and_refuses_a_target_with_checkpoints() -> None:
    async def run() -> None:
        store = SessionStore(MemoryBackend())
        saver = AsyncHarnessSaver(store)
        written = await run_invokes(saver, "src", 4)
        await saver.acopy_thread("src", "dst")
        infos = {info.id: info for info in await store.list()}
        assert infos["langgraph:dst"].parent == "langgraph:src"  # harness lineage shows the copy
        copied = await run_invokes(AsyncHarnessSaver(store), "dst", 1)  # a fresh saver goes on from it
        assert SERDE.dumps_typed(copied[:4]) == SERDE.dumps_typed(written) and len(copied) == 5
        with pytest.raises(LangGraphThreadExists):
            await saver.acopy_thread("src", "dst")
        await saver.adelete_thread("src")  # the copy keeps its own events
        assert (await AsyncHarnessSaver(store).aget_tuple(config("dst"))) is not None

    asyncio.run(run())


def test_prune_and_run_deletes_hold_after_a_reload() -> None:
    async def run() -> None:
        store = SessionStore(MemoryBackend())
        saver = AsyncHarnessSaver(store)
        parent = config("p")
        for number, run_id in enumerate(["r1", "r1", "r2", "r3"], 1):
            values: Any = {"n": number}
            parent = await saver.aput(parent, checkpoint(number, values), {"run_id": run_id}, values)
        await saver.adelete_for_runs(["r2"])
        fresh = AsyncHarnessSaver(store)
        assert [t.metadata["run_id"] async for t in fresh.alist(config("p"))] == ["r3", "r1", "r1"]
        await saver.aprune(["p"])
        fresh = AsyncHarnessSaver(store)
        kept = [t async for t in fresh.alist(config("p"))]
        assert [t.checkpoint["channel_values"] for t in kept] == [{"n": 4}]

    asyncio.run(run())


def test_a_second_writer_of_a_moved_thread_is_refused_and_then_reads_afresh(tmp_path: Path) -> None:
    async def run() -> None:
        first, second = SessionStore(JsonlBackend(tmp_path)), SessionStore(JsonlBackend(tmp_path))
        one, two = AsyncHarnessSaver(first), AsyncHarnessSaver(second)
        stored = await one.aput(config(), checkpoint(1, {"x": 1}), {}, {"x": 1})
        assert await two.aget_tuple(config()) is not None  # two reads the thread
        await one.aput(stored, checkpoint(2, {"x": 2}), {}, {"x": 2})  # one writes on
        with pytest.raises(ThreadMoved, match="moved on to checkpoint '00000002'"):
            await two.aput(stored, checkpoint(3, {"x": 3}), {}, {"x": 3})  # from a stale read: refused
        latest = await two.aget_tuple(config())  # and reads afresh: one's checkpoint, not its own
        assert latest is not None and latest.checkpoint["id"] == "00000002"
        await two.aput(latest.config, checkpoint(3, {"x": 3}), {}, {"x": 3})  # on the newest: written
        assert (await two.aget_tuple(config())).checkpoint["id"] == "00000003"  # type: ignore[union-attr]
        assert (await one.aget_tuple(config())).checkpoint["id"] == "00000003"  # type: ignore[union-attr]
        # a branch from an older checkpoint this saver read is LangGraph's time travel: written
        await two.aput(stored, checkpoint(4, {"x": 4}), {}, {"x": 4})
        await first.close()
        await second.close()

    asyncio.run(run())


def test_a_write_waits_for_the_owner_then_is_refused_after_wait(tmp_path: Path) -> None:
    async def run() -> None:
        first, second = SessionStore(JsonlBackend(tmp_path)), SessionStore(JsonlBackend(tmp_path))
        await AsyncHarnessSaver(first).aput(config(), checkpoint(1, {"x": 1}), {}, {"x": 1})
        holder = await first.load("langgraph:t")  # another writer owns the thread and keeps it
        with pytest.raises(SessionInUse):
            await AsyncHarnessSaver(second, wait=0.2).aget_tuple(config())
        await first.release(holder)
        assert await AsyncHarnessSaver(second, wait=0.2).aget_tuple(config()) is not None
        with pytest.raises(InvalidCheckpointConfig, match="wait must be"):
            AsyncHarnessSaver(second, wait=-1)
        await first.close()
        await second.close()

    asyncio.run(run())


def test_a_copy_with_a_stricter_allowlist_reads_and_writes_through_its_own_serde(tmp_path: Path) -> None:
    strict = JsonPlusSerializer(allowed_msgpack_modules=[("langchain_core.messages.ai", "AIMessage")])
    with HarnessSaver(SessionStore(JsonlBackend(tmp_path)), serde=strict) as saver:
        clone = saver.with_allowlist([("langchain_core.messages.human", "HumanMessage")])
        assert isinstance(clone, HarnessSaver) and clone is not saver
        assert clone._core.serde is clone.serde is not saver.serde
        graph = messages_graph(clone)
        graph.invoke({"messages": []}, config("strict"), durability="sync")
        found = saver.get_tuple(config("strict"))  # the original sees what the copy wrote
        assert found is not None and [m.id for m in found.checkpoint["channel_values"]["messages"]] == ["a-0"]
    with pytest.raises(InvalidCheckpointConfig, match="closed"):
        clone.get_tuple(config("strict"))  # closing the saver closed its copy's loop too


def test_two_branches_with_the_same_channel_version_keep_their_own_values() -> None:
    """Our versions are LangGraph's default integers, so two branches forked from one checkpoint
    give their channels the same next version: each checkpoint reads its own branch's value."""

    async def run() -> None:
        store = SessionStore(MemoryBackend())
        saver = AsyncHarnessSaver(store)
        root = await saver.aput(config("b"), checkpoint(1, {"a": "root", "m": [1]}), {}, {"a": 1, "m": 1})
        left_cp, right_cp = (
            checkpoint(2, {"a": "left", "m": [1, 2]}),
            checkpoint(3, {"a": "right", "m": [1, 3]}),
        )
        for cp in (left_cp, right_cp):
            cp["channel_versions"] = {"a": 2, "m": 2}
        left = await saver.aput(root, left_cp, {}, {"a": 2, "m": 2})
        right = await saver.aput(root, right_cp, {}, {"a": 2, "m": 2})
        for saver_ in (saver, AsyncHarnessSaver(store)):
            for stored, expected in (
                (left, {"a": "left", "m": [1, 2]}),
                (right, {"a": "right", "m": [1, 3]}),
            ):
                found = await saver_.aget_tuple(stored)
                assert found is not None and found.checkpoint["channel_values"] == expected

    asyncio.run(run())


@pytest.mark.parametrize(
    "spec",
    [
        {"v": 1, "same": [5, "a"]},  # a reference before the start of the log
        {"v": 1, "same": [0, "a"]},  # a reference to itself
        {"v": 1, "ext": 9, "t": "msgpack", "s": "\x90"},  # an extension of nothing
        {"v": 1, "t": "msgpack", "b": "not base64!"},
        {"v": 1, "t": "msgpack", "s": "\u0100"},  # not a byte
    ],
)
def test_a_checkpoint_whose_value_does_not_decode_is_a_corrupt_session(spec: dict[str, Any]) -> None:
    async def run() -> None:
        store = SessionStore(MemoryBackend())
        session = await store.create(id="langgraph:bad")
        session.append("langgraph/thread", {"threadId": "bad"}, ignorable=True)
        data: dict[str, Any] = {
            "ns": "", "id": "00000001", "parent": None, "metadata": {"json": {}}, "values": {"a": spec},
            "checkpoint": {"json": {"v": 4, "id": "00000001", "ts": "t", "channel_versions": {"a": 1},
                                    "versions_seen": {}}},
        }  # fmt: skip
        session.append("langgraph/checkpoint", data, ignorable=True)
        await store.flush(session)
        with pytest.raises(CorruptSession):
            await AsyncHarnessSaver(store).aget_tuple(config("bad"))

    asyncio.run(run())
