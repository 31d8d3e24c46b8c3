"""The read-only JSON containers harness hands out: ``FrozenDict`` and ``FrozenList``.

``harness.events.json`` re-exports both; import them from there. Their ``repr`` walks
iteratively, so a value nested thousands of levels deep (which a stored log may hold)
prints instead of raising ``RecursionError``.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["FrozenDict", "FrozenList"]


class FrozenDict(dict[str, Any]):
    """A read-only JSON object. Equal to a ``dict`` with the same items.

    Every mutating method raises ``TypeError``. Construct one with ``snapshot``
    (validating) or ``FrozenDict(mapping)`` (trusting the values to be frozen).
    Calling ``dict`` methods unbound (``dict.__setitem__(d, ...)``, ``d.__init__(...)``)
    bypasses the type on purpose and is not guarded: blocking it would cost every
    append a Python-level constructor.
    """

    __slots__ = ()

    def _refuse(self, *_args: object, **_kwargs: object) -> NoReturn:
        raise TypeError("this JSON object is read-only; thaw() it to get a mutable copy")

    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, Any]]]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self

    def __repr__(self) -> str:
        return _frozen_repr(self)


class FrozenList(tuple[Any, ...]):
    """A read-only JSON array (a ``tuple``). Equal to a ``list`` or ``tuple`` with the same items."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return _frozen_repr(self)


def _frozen_repr(value: FrozenDict | FrozenList) -> str:
    """``FrozenDict({'k': FrozenList([1])})``: the nested read-only containers are walked
    with an explicit stack; any other value is its own ``repr``."""
    out: list[str] = []
    # Each frame: (iterator over the container's items, is it a dict, is the next item the first).
    frames: list[list[Any]] = []

    def enter(container: FrozenDict | FrozenList) -> None:
        if type(container) is FrozenDict:
            out.append("FrozenDict({")
            frames.append([iter(container.items()), True, True])
        else:
            out.append("FrozenList([")
            frames.append([iter(container), False, True])

    enter(value)
    while frames:
        frame = frames[-1]
        item = next(frame[0], _END)
        if item is _END:
            frames.pop()
            out.append("})" if frame[1] else "])")
            continue
        if not frame[2]:
            out.append(", ")
        frame[2] = False
        if frame[1]:
            key, item = item
            out.append(f"{key!r}: ")
        if type(item) is FrozenDict or type(item) is FrozenList:
            enter(item)
        else:
            out.append(repr(item))
    return "".join(out)


_END: Any = object()
