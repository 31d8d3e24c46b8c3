"""Lazy re-exports for package ``__init__`` modules (PEP 562).

A package keeps one table, ``_EXPORTS``: per defining module, the names it re-exports. At
run time its ``__all__`` is ``exported_names(_EXPORTS)``, and ``lazy_exports`` returns the
module-level ``__getattr__`` and ``__dir__`` that import a module only when one of its
names is first used, then keep the value in the package's namespace. Type checkers and IDEs
cannot run the table, so the package also imports the same names under ``TYPE_CHECKING``,
each as ``from module import Name as Name`` (an explicit re-export);
``tests/test_public_api.py`` checks that those imports and the table agree.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["exported_names", "lazy_exports"]


def exported_names(exports: Mapping[str, Iterable[str]]) -> list[str]:
    """Every name of the table ``exports`` (module -> names), once, in the table's order:
    the ``__all__`` of the package that keeps it."""
    return list(dict.fromkeys(name for names in exports.values() for name in names))


def lazy_exports(
    package: str, namespace: dict[str, Any], exports: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose globals are ``namespace``;
    ``exports`` maps a module name to the names it provides."""
    where: dict[str, str] = {}
    for module, names in exports.items():
        for name in names:
            where.setdefault(name, module)

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later lookups find it without coming here
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
