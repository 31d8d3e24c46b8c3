"""Linear storage: what is read back serializes to exactly the bytes of what was put.

Random sequences of values on one channel, each derived from the previous one: extended with new
elements (the case linear storage stores as an extension), extended by no element, an element
replaced, shortened, reordered, or replaced by a value that is no list at all. Every checkpoint is
then read back cold (a fresh saver, rebuilding extension chains from the events) and warm (the
saver that wrote it) and serialized again with LangGraph's serde: the bytes must be those of the
value that was put. In ``linear="verify"`` mode elements are also mutated in place.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import ormsgpack
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from harness.integrations.langgraph import AsyncHarnessSaver
from harness.integrations.langgraph.linear import array_header, join, split_array
from harness.integrations.langgraph.records import CHECKPOINT, derive_skeleton, rebuild_skeleton
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore

SERDE = JsonPlusSerializer()
PLAIN = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=8,
)


@given(st.lists(PLAIN, max_size=40), st.integers(0, 40))
def test_an_array_splits_into_the_bytes_of_its_parts(items: list[Any], cut: int) -> None:
    whole = ormsgpack.packb(items)
    head, tail = ormsgpack.packb(items[:cut]), ormsgpack.packb(items[cut:])
    head_split, tail_split = split_array(head), split_array(tail)
    assert head_split is not None and tail_split is not None
    assert join(head_split[0] + tail_split[0], [head_split[1], tail_split[1]]) == whole


@pytest.mark.parametrize("count", [0, 1, 15, 16, 65535, 65536, 70000])
def test_array_headers_are_the_shortest_form_msgpack_writes(count: int) -> None:
    data = ormsgpack.packb([None] * count)
    assert data.startswith(array_header(count))
    assert split_array(data) == (count, data[len(array_header(count)) :])


def test_split_array_refuses_what_is_not_a_shortest_array_header() -> None:
    assert split_array(b"") is None
    assert split_array(ormsgpack.packb({"a": 1})) is None
    assert split_array(ormsgpack.packb("text")) is None
    assert split_array(b"\xdc\x00\x03\xc0\xc0\xc0") is None  # array16 holding 3: join would write 0x93
    assert split_array(b"\xdc\x00") is None  # truncated header
    with pytest.raises(ValueError):
        array_header(-1)


# ---- the saver ------------------------------------------------------------------------------

ELEMENT = st.one_of(
    st.builds(lambda t, i: AIMessage(content=t, id=f"a{i}"), st.text(max_size=30), st.integers(0, 10**6)),
    st.builds(lambda t: HumanMessage(content=t), st.text(max_size=30)),
    PLAIN,
    st.tuples(st.integers(-(2**63), 2**63 - 1), st.text(max_size=5)),
)
OPS = ("extend", "extend", "extend", "same", "replace", "shorten", "reorder", "not-a-list")
STEP = st.tuples(st.sampled_from(OPS), st.lists(ELEMENT, max_size=4), st.integers(0, 50), PLAIN)


def next_value(previous: Any, op: str, new: list[Any], at: int, other: Any) -> Any:
    if not isinstance(previous, list):
        previous = []
    if op == "extend":
        return [*previous, *new]  # the same element objects: stored as an extension
    if op == "same":
        return list(previous)
    if op == "replace" and previous:
        value = list(previous)
        value[at % len(value)] = new[0] if new else other
        return value
    if op == "shorten":
        return previous[: at % (len(previous) + 1)]
    if op == "reorder":
        return list(reversed(previous)) + new
    return other


def mutate(value: Any) -> None:
    """Change an element of ``value`` in place (``linear="verify"`` must notice)."""
    if isinstance(value, list):
        for item in value:
            if isinstance(item, AIMessage | HumanMessage):
                item.content = f"{item.content}!"
                return
            if isinstance(item, dict):
                item["mutated"] = True
                return


async def put_all(
    saver: AsyncHarnessSaver, steps: list[tuple[str, list[Any], int, Any]], verify: bool
) -> list[tuple[Any, bytes, bool]]:
    """Put one checkpoint per step; returns (config, expected bytes, an extension stored whole)."""
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    value: Any = []
    out = []
    for version, (op, new, at, other) in enumerate(steps, 1):
        if verify and op == "extend" and version % 3 == 0:
            mutate(value)
        extends = op == "extend" and version > 1 and isinstance(value, list)
        value = next_value(value, op, new, at, other)
        checkpoint = {
            "v": 4, "id": f"{version:08d}", "ts": "2026-12-01T00:00:00+00:00",
            "channel_values": {"messages": value, "fixed": "unchanged"},
            "channel_versions": {"messages": version, "fixed": 1},
            "versions_seen": {}, "updated_channels": ["messages"],
        }  # fmt: skip
        new_versions: Any = {"messages": version, "fixed": 1} if version == 1 else {"messages": version}
        checkpoint_: Any = checkpoint
        stored = await saver.aput(config, checkpoint_, {"source": "loop", "step": version}, new_versions)
        event = saver._core._threads["t"].session.events[-1]
        assert event.type == CHECKPOINT
        out.append(
            (
                stored,
                SERDE.dumps_typed(copy.deepcopy(value))[1],
                extends and "ext" not in event.data["values"]["messages"],
            )
        )
        config = stored
    return out


def check_round_trip(steps: list[tuple[str, list[Any], int, Any]], linear: Any) -> None:
    async def run() -> None:
        store = SessionStore(MemoryBackend())
        writer = AsyncHarnessSaver(store, linear=linear)
        stored = await put_all(writer, steps, verify=linear == "verify")
        if linear == "identity":
            assert not any(missed for _, _, missed in stored), (
                "an extended list must be stored as an extension"
            )
        cold = AsyncHarnessSaver(store, linear=linear)  # a fresh index: values rebuilt from the events
        for saver in (cold, writer):
            for config, expected, _ in stored:
                found = await saver.aget_tuple(config)
                assert found is not None
                assert SERDE.dumps_typed(found.checkpoint["channel_values"]["messages"])[1] == expected
                assert found.checkpoint["channel_values"]["fixed"] == "unchanged"
        await store.close()

    asyncio.run(run())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=1, max_size=15))
def test_every_checkpoint_reads_back_as_the_bytes_that_were_put(
    steps: list[tuple[str, list[Any], int, Any]],
) -> None:
    check_round_trip(steps, "identity")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=1, max_size=15))
def test_verify_mode_reads_back_exact_bytes_even_after_in_place_mutation(
    steps: list[tuple[str, list[Any], int, Any]],
) -> None:
    check_round_trip(steps, "verify")


def test_a_long_extended_list_is_stored_once() -> None:
    """300 extensions of one list: the session holds each element about once (a full copy per
    checkpoint, as SqliteSaver keeps, would be ~150 times more)."""

    async def run() -> int:
        store = SessionStore(MemoryBackend())
        saver = AsyncHarnessSaver(store)
        config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        value: list[Any] = []
        for version in range(1, 301):
            value = [*value, AIMessage(content="x" * 500, id=f"m{version}")]
            checkpoint = {
                "v": 4, "id": f"{version:08d}", "ts": "t", "channel_values": {"messages": value},
                "channel_versions": {"messages": version}, "versions_seen": {}, "updated_channels": None,
            }  # fmt: skip
            checkpoint_: Any = checkpoint
            config = await saver.aput(config, checkpoint_, {}, {"messages": version})
        session = saver._core._threads["t"].session
        size = sum(len(event.encode()) for event in session.events)
        one = len(SERDE.dumps_typed(value[0])[1])
        await store.close()
        return size // (300 * one)

    assert asyncio.run(run()) <= 2


VERSIONS = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]),
    st.one_of(st.integers(0, 5), st.booleans(), st.just(1.0), st.text(max_size=3)),
)
SEEN = st.dictionaries(st.sampled_from(["n", "m"]), VERSIONS)


@given(
    st.fixed_dictionaries(
        {"v": st.just(4), "id": st.just("x"), "channel_versions": VERSIONS, "versions_seen": SEEN}
    ),
    st.fixed_dictionaries({"channel_versions": VERSIONS, "versions_seen": SEEN}),
)
@example(  # equal in Python, not in JSON: 1, 1.0 and True
    {"v": 4, "id": "x", "channel_versions": {"a": True, "b": 1.0}, "versions_seen": {"n": {"a": True}}},
    {"channel_versions": {"a": 1, "b": 1}, "versions_seen": {"n": {"a": 1}}},
)
@example(  # the same entries in another order
    {"v": 4, "id": "x", "channel_versions": {"b": 1, "a": 1}, "versions_seen": {}},
    {"channel_versions": {"a": 1, "b": 1}, "versions_seen": {}},
)
def test_a_checkpoint_written_relative_to_its_parent_rebuilds_exactly(
    child: dict[str, Any], parent: dict[str, Any]
) -> None:
    stored = derive_skeleton(child, parent)
    rebuilt = rebuild_skeleton(stored, "x", parent, "test")
    assert rebuilt == child
    assert list(rebuilt) == list(child)
    for key in ("channel_versions", "versions_seen"):
        assert list(rebuilt[key]) == list(child[key])
        assert repr(rebuilt[key]) == repr(child[key])  # 1, 1.0 and True stay apart
