"""Lineage (issue 13 item 1): fork ancestors and descendants across a store, with missing parents
and cycles reported (typed), never an endless loop."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import harness
from harness.errors import InvalidQuery, SessionNotFound
from harness.query import Lineage, lineage, store_lineage
from harness.session.header import SessionHeader
from harness.stores import JsonlBackend, MemoryBackend, SessionStore
from tests.compaction.helpers import Builder, run


@dataclass(frozen=True)
class H:
    id: str
    parent_session: str | None = None
    created_at: int = 0


def tree() -> list[H]:
    """root -> a -> (a1, a2 -> a2x), root -> b; other is unrelated."""
    return [
        H("root", None, 1),
        H("b", "root", 5),
        H("a", "root", 2),
        H("a2", "a", 4),
        H("a1", "a", 3),
        H("a2x", "a2", 6),
        H("other", None, 7),
    ]


def test_ancestors_run_from_the_parent_outward_to_the_root() -> None:
    found = lineage(tree(), "a2x")
    assert found.ancestors == ("a2", "a", "root")
    assert found.end == "root" and found.complete and found.root == "root"
    assert found.missing_parent is None and found.cycle == () and found.descendants == ()


def test_descendants_are_a_tree_oldest_first() -> None:
    found = lineage(tree(), "root")
    assert found.ancestors == () and found.root == "root"
    assert [node.id for node in found.descendants] == ["a", "b"]
    a = found.descendants[0]
    assert [node.id for node in a.children] == ["a1", "a2"]
    assert [node.id for node in a.children[1].children] == ["a2x"]
    assert found.descendant_ids() == ["a", "a1", "a2", "a2x", "b"]
    assert found.to_json()["descendants"][:2] == [
        {"id": "a", "parent": "root", "depth": 1},
        {"id": "a1", "parent": "a", "depth": 2},
    ]
    assert lineage(tree(), "other").descendants == ()


def test_a_missing_parent_ends_the_chain_typed() -> None:
    headers = [H("child", "gone"), H("grandchild", "child")]
    found = lineage(headers, "grandchild")
    assert found.ancestors == ("child",)
    assert found.end == "missing" and found.missing_parent == "gone"
    assert not found.complete and found.root is None


@pytest.mark.parametrize(
    ("headers", "target", "ancestors", "cycle"),
    [
        ([H("x", "x")], "x", (), ("x",)),
        ([H("x", "y"), H("y", "x")], "x", ("y",), ("x", "y")),
        ([H("t", "a"), H("a", "b"), H("b", "c"), H("c", "a")], "t", ("a", "b", "c"), ("a", "b", "c")),
    ],
)
def test_a_cycle_ends_the_chain_typed(
    headers: list[H], target: str, ancestors: tuple[str, ...], cycle: tuple[str, ...]
) -> None:
    found = lineage(headers, target)
    assert found.end == "cycle" and found.ancestors == ancestors and found.cycle == cycle
    assert not found.complete and found.root is None


def test_descendants_stop_where_a_cycle_closes() -> None:
    found = lineage([H("x", "y"), H("y", "x"), H("z", "y")], "x")
    assert found.descendant_ids() == ["y", "z"]


def test_a_deep_fork_chain_needs_no_recursion() -> None:
    depth = 5_000
    headers = [H("s0")] + [H(f"s{i}", f"s{i - 1}", i) for i in range(1, depth)]
    assert len(lineage(headers, f"s{depth - 1}").ancestors) == depth - 1
    found = lineage(headers, "s0")
    assert len(found.descendant_ids()) == depth - 1
    flat = found.to_json()["descendants"]
    assert len(flat) == depth - 1 and flat[-1] == {
        "id": f"s{depth - 1}",
        "parent": f"s{depth - 2}",
        "depth": depth - 1,
    }


def test_an_unknown_target_and_duplicate_ids_are_refused() -> None:
    with pytest.raises(SessionNotFound, match="no session 'nope'"):
        lineage(tree(), "nope")
    with pytest.raises(InvalidQuery, match="two headers have the session id 'a'"):
        lineage([*tree(), H("a")], "a")


def test_session_headers_work_directly() -> None:
    parent = SessionHeader.new(id="p", created_at=1)
    session = Builder(harness.Session.create(parent)).closed_turn("hi", "hello").session
    forked = session.fork(id="c")
    found = lineage([session.header, forked.header], "c")
    assert found.ancestors == ("p",) and found.complete


async def forked_store(store: SessionStore) -> tuple[str, str, str]:
    parent = Builder(await store.create(id="parent")).closed_turn("plan the work", "planned").session
    await store.flush(parent)
    child = await store.adopt(parent.fork(id="child"))
    Builder(child).closed_turn("go on", "went on")
    await store.flush(child)
    grandchild = await store.adopt(child.fork(id="grandchild"))
    await store.flush(grandchild)
    return parent.id, child.id, grandchild.id


def test_store_lineage_over_a_memory_store() -> None:
    async def main() -> tuple[Lineage, Lineage]:
        store = SessionStore(MemoryBackend())
        parent, _, grandchild = await forked_store(store)
        return await store_lineage(store, grandchild), await store_lineage(store, parent)

    up, down = run(main())
    assert up.ancestors == ("child", "parent") and up.complete
    assert down.descendant_ids() == ["child", "grandchild"]


def test_store_lineage_over_a_jsonl_store_with_a_damaged_parent(tmp_path: Path) -> None:
    async def main() -> tuple[Lineage, Lineage]:
        store = SessionStore(JsonlBackend(tmp_path))
        _, _, grandchild = await forked_store(store)
        before = await store_lineage(store, grandchild)
        await store.close()
        damaged = [path for path in tmp_path.rglob("session.jsonl*") if path.parent.name == "parent"]
        assert len(damaged) == 1
        damaged[0].write_bytes(b"this is no session file\n")
        again = SessionStore(JsonlBackend(tmp_path))
        try:
            return before, await store_lineage(again, grandchild)
        finally:
            await again.close()

    before, after = run(main())
    assert before.ancestors == ("child", "parent") and before.complete
    assert after.ancestors == ("child",) and after.end == "missing" and after.missing_parent == "parent"
