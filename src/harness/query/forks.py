"""Fork lineage across a store: a session's ancestors (through ``parentSession``) and its
descendants.

``lineage(headers, session_id)`` is a pure function over headers (``SessionHeader`` or any
value with ``id`` and ``parent_session``; ``created_at`` orders children when present). The
ancestor chain runs from the immediate parent outward and ends one of three ways, told by
``Lineage.end``: ``root`` (the last ancestor has no parent), ``missing`` (a parent id no
header has: a deleted or foreign session; ``missing_parent`` names it) or ``cycle`` (a
parent chain that comes back to a session already on it; ``cycle`` lists the loop). The
descendants are every session whose chain of parents reaches the target, as a tree; a
cycle there is cut where it closes. Nothing loops forever and nothing raises on a damaged
store, except an unknown target (``SessionNotFound``) or two headers with one id
(``InvalidQuery``).

``store_lineage(store, session_id)`` reads the headers of every session a ``SessionStore``
lists (a session whose header cannot be read counts as absent) and calls ``lineage``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, Protocol

import msgspec

from harness.errors import HarnessError, InvalidQuery, SessionNotFound

if TYPE_CHECKING:
    from harness.stores.store import SessionStore

__all__ = ["Lineage", "LineageNode", "lineage", "store_lineage"]


class _Headed(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def parent_session(self) -> str | None: ...


class LineageNode(msgspec.Struct, frozen=True):
    """A descendant and its own children (forks of it), oldest first."""

    id: str
    children: tuple[LineageNode, ...] = ()

    def walk(self, parent: str | None = None) -> Iterator[tuple[LineageNode, str | None, int]]:
        """``(node, its parent's id, depth)`` for this node (depth 0, parent ``parent``) and
        every descendant, depth first, without recursion (a fork chain may be very deep)."""
        stack: list[tuple[LineageNode, str | None, int]] = [(self, parent, 0)]
        while stack:
            node, up, depth = stack.pop()
            yield node, up, depth
            stack.extend((child, node.id, depth + 1) for child in reversed(node.children))

    def ids(self) -> list[str]:
        """This node's id and every descendant's, depth first."""
        return [node.id for node, _, _ in self.walk()]


class Lineage(msgspec.Struct, frozen=True, kw_only=True):
    """Where ``target`` comes from and what was forked from it (see the module doc): ``root``
    is the top of a complete chain (the target itself when it has no parent)."""

    target: str
    ancestors: tuple[str, ...]
    end: Literal["root", "missing", "cycle"]
    root: str | None = None
    missing_parent: str | None = None
    cycle: tuple[str, ...] = ()
    descendants: tuple[LineageNode, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether the ancestor chain reaches a root session."""
        return self.end == "root"

    def descendant_ids(self) -> list[str]:
        """Every descendant's id, depth first."""
        return [sid for node in self.descendants for sid in node.ids()]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; ``descendants`` is flat (depth first, each with its parent and
        its depth below the target, from 1), so no reader has to recurse."""
        return {
            "target": self.target,
            "ancestors": list(self.ancestors),
            "end": self.end,
            "root": self.root,
            "missingParent": self.missing_parent,
            "cycle": list(self.cycle),
            "descendants": [
                {"id": node.id, "parent": up, "depth": depth + 1}
                for top in self.descendants
                for node, up, depth in top.walk(self.target)
            ],
        }


def lineage(headers: Iterable[_Headed], session_id: str) -> Lineage:
    """The lineage of ``session_id`` among ``headers`` (see the module doc)."""
    parent: dict[str, str | None] = {}
    order: dict[str, tuple[int, int, str]] = {}
    for position, header in enumerate(headers):
        sid = header.id
        if sid in parent:
            raise InvalidQuery(f"two headers have the session id {sid!r}")
        parent[sid] = header.parent_session
        created = getattr(header, "created_at", None)
        order[sid] = (created if isinstance(created, int) else 0, position, sid)
    if session_id not in parent:
        raise SessionNotFound(f"no session {session_id!r} among the {len(parent)} given")

    ancestors: list[str] = []
    seen = {session_id: 0}
    end: Literal["root", "missing", "cycle"] = "root"
    missing: str | None = None
    cycle: tuple[str, ...] = ()
    current = session_id
    while True:
        up = parent[current]
        if up is None:
            break
        if up in seen:
            end = "cycle"
            chain = [session_id, *ancestors]
            cycle = tuple(chain[seen[up] :])
            break
        if up not in parent:
            end, missing = "missing", up
            break
        seen[up] = len(ancestors) + 1
        ancestors.append(up)
        current = up
    root = (ancestors[-1] if ancestors else session_id) if end == "root" else None

    children: dict[str, list[str]] = {}
    for sid, up in parent.items():
        if up is not None and up != sid:
            children.setdefault(up, []).append(sid)
    for kids in children.values():
        kids.sort(key=order.__getitem__)
    placed = {session_id}

    def grow(top: str) -> tuple[LineageNode, ...]:
        # iteratively (a fork chain thousands deep must not reach the recursion limit): the
        # descendants in depth-first order, then frozen bottom-up, children before parents
        kids_of: dict[str, list[str]] = {}
        order_found: list[str] = []
        pending = [(kid, top) for kid in reversed(children.get(top, []))]
        while pending:
            kid, up = pending.pop()
            if kid in placed:  # a parent chain that loops back to the target
                continue
            placed.add(kid)
            order_found.append(kid)
            kids_of.setdefault(up, []).append(kid)
            pending.extend((grand, kid) for grand in reversed(children.get(kid, [])))
        nodes: dict[str, LineageNode] = {}
        for sid in reversed(order_found):
            nodes[sid] = LineageNode(sid, tuple(nodes[kid] for kid in kids_of.get(sid, ())))
        return tuple(nodes[kid] for kid in kids_of.get(top, ()))

    return Lineage(
        target=session_id,
        ancestors=tuple(ancestors),
        end=end,
        root=root,
        missing_parent=missing,
        cycle=cycle,
        descendants=grow(session_id),
    )


async def store_lineage(store: SessionStore, session_id: str) -> Lineage:
    """``lineage`` over the headers of every session ``store`` lists. Each header is read with
    the backend's ``read`` (a JSONL root decodes just the header line; other backends read the
    whole log); a session that cannot be read counts as absent."""
    headers = []
    for info in await store.list():
        if info.problem is not None:
            continue
        try:
            log = await store.backend.read(info.id)
        except HarnessError:
            continue
        headers.append(log.header)
    return lineage(headers, session_id)
