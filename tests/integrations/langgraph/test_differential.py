"""``AsyncHarnessSaver`` answers as LangGraph's ``InMemorySaver`` does: random sequences of
``put`` (threads, namespaces, parents, channels and versions, values that grow or not) and
``put_writes`` (regular and special channels, repeated tasks), then every ``get_tuple`` and a
set of ``list`` queries (filters, ``before``, ``limit``, all threads), on both savers and on a
fresh ``AsyncHarnessSaver`` that rebuilds everything from the store's events."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Interrupt

from harness.integrations.langgraph import AsyncHarnessSaver
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore

THREADS = st.sampled_from(["t1", "t2"])
NAMESPACES = st.sampled_from(["", "", "child:1"])
CHANNELS = st.sampled_from(["messages", "a", "b"])
VALUES = st.one_of(st.integers(0, 9), st.text(max_size=5), st.lists(st.integers(0, 9), max_size=3), st.none())
PUT = st.tuples(
    st.just("put"), THREADS, NAMESPACES, st.dictionaries(CHANNELS, VALUES, max_size=3),
    st.booleans(), st.sampled_from(["input", "loop", "update"]), st.integers(0, 3),
)  # fmt: skip
WRITES = st.tuples(
    st.just("writes"), THREADS, NAMESPACES,
    st.lists(st.tuples(st.sampled_from(["a", "b", "__error__", "__interrupt__"]), VALUES), max_size=3),
    st.sampled_from(["task-1", "task-2"]), st.sampled_from(["", "~path, a"]),
)  # fmt: skip
OPS = st.lists(st.one_of(PUT, WRITES), min_size=1, max_size=20)


def shape(found: CheckpointTuple | None) -> Any:
    """What a tuple says, comparable across savers."""
    if found is None:
        return None
    checkpoint = found.checkpoint
    return (
        found.config["configurable"],
        {k: checkpoint[k] for k in ("id", "channel_versions", "versions_seen", "channel_values")},
        found.metadata,
        found.parent_config["configurable"] if found.parent_config else None,
        found.pending_writes,
    )


async def apply(savers: list[Any], ops: list[Any]) -> None:
    heads: dict[tuple[str, str], str] = {}
    versions: dict[tuple[str, str, str], int] = {}
    number = 0
    for op in ops:
        if op[0] == "put":
            _, thread, ns, values, with_parent, source, step = op
            number += 1
            channel_versions = {}
            for channel in ("messages", "a", "b"):
                key = (thread, ns, channel)
                if channel in values:
                    versions[key] = versions.get(key, 0) + 1
                if key in versions:
                    channel_versions[channel] = versions[key]
            new_versions = {c: channel_versions[c] for c in values}
            full = {c: v for c, v in values.items()}
            checkpoint: Any = {
                "v": 4, "id": f"{number:06d}", "ts": f"2026-12-01T00:00:{number % 60:02d}+00:00",
                "channel_values": full, "channel_versions": channel_versions,
                "versions_seen": {"node": dict(channel_versions)}, "updated_channels": sorted(values),
            }  # fmt: skip
            configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
            if with_parent and (thread, ns) in heads:
                configurable["checkpoint_id"] = heads[(thread, ns)]
            for saver in savers:
                await saver.aput(
                    {"configurable": configurable}, checkpoint, {"source": source, "step": step}, new_versions
                )
            heads[(thread, ns)] = checkpoint["id"]
        else:
            _, thread, ns, writes, task, path = op
            if (thread, ns) not in heads:
                continue
            writes = [(c, Interrupt(value=v) if c == "__interrupt__" else v) for c, v in writes]
            target = {
                "configurable": {
                    "thread_id": thread,
                    "checkpoint_ns": ns,
                    "checkpoint_id": heads[(thread, ns)],
                }
            }
            for saver in savers:
                await saver.aput_writes(target, writes, task, path)


async def answers(saver: Any, ops: list[Any]) -> list[Any]:
    out: list[Any] = []
    for thread in ("t1", "t2"):
        for ns in ("", "child:1"):
            base: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
            out.append(shape(await saver.aget_tuple(base)))
            listed = [t async for t in saver.alist(base)]
            out.append([shape(t) for t in listed])
            for t in listed:
                out.append(shape(await saver.aget_tuple(t.config)))
            if len(listed) > 1:
                before = listed[len(listed) // 2].config
                out.append([shape(t) async for t in saver.alist(base, before=before, limit=2)])
            out.append([shape(t) async for t in saver.alist(base, filter={"source": "loop"})])
            out.append(
                [shape(t) async for t in saver.alist(base, filter={"step": 1, "source": "input"}, limit=1)]
            )
        out.append([shape(t) async for t in saver.alist({"configurable": {"thread_id": thread}})])
    out.append(sorted([repr(shape(t)) async for t in saver.alist(None)]))  # every thread
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_harness_saver_answers_as_in_memory_saver_does(ops: list[Any]) -> None:
    async def run() -> None:
        store = SessionStore(MemoryBackend())
        ours, theirs = AsyncHarnessSaver(store), InMemorySaver()
        await apply([ours, theirs], ops)
        expected = await answers(theirs, ops)
        assert await answers(ours, ops) == expected
        assert await answers(AsyncHarnessSaver(store), ops) == expected  # rebuilt from the events
        await store.close()

    asyncio.run(run())
