"""One door into storage: a store spec names a backend, ``open_store`` opens it.

A spec is one string:

* ``DIR`` or ``jsonl:DIR``: a JSONL root (DeepSeek Harness's layout). Option
  ``compression`` (``zstd`` or ``none``; default: what the root's logs use, zstd when it
  holds none).
* ``sqlite:FILE``: an SQLite file, in the layout it holds (harness's or dsh's, told by its
  application id). Option ``layout`` (``harness`` or ``dsh``) for a file that is not a
  database yet.
* ``postgresql://…`` (or ``postgres://…``): PostgreSQL. ``?schema=NAME`` in the URL or the
  option ``schema`` names the schema; every other option goes to the backend
  (``lease_ttl_s``, ``io_timeout_s``, ``min_size``, …).
* ``memory:``: sessions in this process only.

Paths expand ``~`` and ``$VARS``. A word of two or more letters before a colon is a scheme:
one harness does not know is a ``StoreSpecError`` listing the known ones, never a folder
named after a typo (write ``jsonl:notes:2024`` or ``./notes:2024`` for such a folder).
With ``create=False`` (what read commands use) an SQLite file that does not exist is
``StoreNotFound`` instead of an empty database left behind; a JSONL root that does not
exist reads as empty. ``register_scheme`` adds a backend harness does not ship.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from harness.errors import StoreNotFound, StoreSpecError
from harness.stores.backend import Backend
from harness.stores.store import SessionStore
from harness.stores.writebehind import DEFAULT_WINDOW_S

__all__ = [
    "Scheme",
    "StoreSpec",
    "known_schemes",
    "open_backend",
    "open_store",
    "parse_store_spec",
    "register_scheme",
]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")


@dataclass(frozen=True)
class StoreSpec:
    """A parsed spec: the ``scheme`` (``jsonl``, ``sqlite``, ``postgresql``, ``memory``, or a
    registered one), its ``target`` (a path, or the URL without harness's own parameters) and
    the ``options`` the spec itself carries (``?schema=`` of a PostgreSQL URL)."""

    scheme: str
    target: str
    options: Mapping[str, Any] = field(default_factory=dict)


Opener = Callable[[StoreSpec, bool, dict[str, Any]], Backend]


@dataclass(frozen=True)
class Scheme:
    """How a spec's scheme opens: ``open(spec, create, options)`` returns the backend;
    ``options`` names the keyword options it takes (``None``: any, checked by the backend);
    ``usage`` shows the spec's form in messages."""

    name: str
    open: Opener
    usage: str
    options: frozenset[str] | None = frozenset()
    takes_path: bool = True


_SCHEMES: dict[str, Scheme] = {}
_ALIASES: dict[str, str] = {}


def register_scheme(scheme: Scheme, *, aliases: tuple[str, ...] = ()) -> None:
    """Make ``scheme.name:`` (and each alias) open with ``scheme``; replaces an earlier one."""
    if not _SCHEME.match(scheme.name + ":"):
        raise ValueError(f"a scheme name is a letter, then letters, digits, '+', '.' or '-': {scheme.name!r}")
    _SCHEMES[scheme.name] = scheme
    for alias in aliases:
        _ALIASES[alias] = scheme.name


def known_schemes() -> list[str]:
    """The form of each spec this process can open (for help and error messages)."""
    return ["DIR", *(scheme.usage for scheme in _SCHEMES.values())]


def _path(text: str) -> str:
    return os.path.expandvars(os.path.expanduser(text))


def parse_store_spec(spec: str) -> StoreSpec:
    """``spec`` as a ``StoreSpec`` (see the module docs); ``StoreSpecError`` names what is wrong."""
    if not isinstance(spec, str) or not spec.strip():
        raise StoreSpecError(f"a store spec is needed: one of {', '.join(known_schemes())}")
    if "\x00" in spec:
        raise StoreSpecError("a store spec cannot contain a NUL character")
    found = _SCHEME.match(spec)
    if found is None:
        return StoreSpec("jsonl", _path(spec))
    word = found.group(1).lower()
    name = _ALIASES.get(word, word)
    scheme = _SCHEMES.get(name)
    if scheme is None:
        close = difflib.get_close_matches(name, [*_SCHEMES, *_ALIASES], n=1, cutoff=0.75)
        hint = f"; did you mean {_ALIASES.get(close[0], close[0])}:?" if close else ""
        if "//" not in spec:
            hint += f"; a folder whose name has a colon is written ./{spec}"
        known = ", ".join(known_schemes())
        raise StoreSpecError(f"unknown store scheme {found.group(1)!r} in {spec!r}: known are {known}{hint}")
    rest = spec[found.end() :]
    if name == "postgresql":
        return _postgres_spec(spec)
    if not scheme.takes_path:
        if rest:
            raise StoreSpecError(f"{scheme.usage} takes nothing after the colon, not {rest!r}")
        return StoreSpec(name, "")
    if not rest:
        raise StoreSpecError(f"{spec!r} names no location: write {scheme.usage}")
    return StoreSpec(name, _path(rest))


def _postgres_spec(spec: str) -> StoreSpec:
    parts = urlsplit(spec)
    query = parse_qsl(parts.query, keep_blank_values=True)
    options: dict[str, Any] = {}
    kept = []
    for key, value in query:
        if key == "schema":
            if not value:
                raise StoreSpecError("?schema= needs a schema name")
            options["schema"] = value
        else:
            kept.append((key, value))
    target = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept), parts.fragment))
    return StoreSpec("postgresql", target, options)


def open_backend(spec: str | StoreSpec, *, create: bool = True, **options: Any) -> Backend:
    """The backend ``spec`` names, with ``options`` for it (see the module docs). ``create``:
    False for a reader, which must not leave a new empty store behind."""
    parsed = spec if isinstance(spec, StoreSpec) else parse_store_spec(spec)
    scheme = _SCHEMES.get(parsed.scheme)
    if scheme is None:
        known = ", ".join(known_schemes())
        raise StoreSpecError(f"unknown store scheme {parsed.scheme!r}: known are {known}")
    chosen = {key: value for key, value in options.items() if value is not None}
    for key, value in parsed.options.items():
        if key in chosen and chosen[key] != value:
            raise StoreSpecError(f"the spec says {key}={value!r} and the options say {chosen[key]!r}")
        chosen[key] = value
    if scheme.options is not None:
        unknown = sorted(set(chosen) - scheme.options)
        if unknown:
            allowed = ", ".join(sorted(scheme.options)) or "none"
            raise StoreSpecError(f"{scheme.usage} takes no option {', '.join(unknown)} (it takes: {allowed})")
    return scheme.open(parsed, create, chosen)


def open_store(
    spec: str | StoreSpec,
    *,
    create: bool = True,
    write_window_s: float = DEFAULT_WINDOW_S,
    **options: Any,
) -> SessionStore:
    """A ``SessionStore`` over the backend ``spec`` names (``open_backend``); ``write_window_s``
    is the store's write-behind window. Close it (``async with`` or ``await store.close()``)."""
    return SessionStore(open_backend(spec, create=create, **options), write_window_s=write_window_s)


# -- the schemes harness ships ---------------------------------------------------------------


def _open_jsonl(spec: StoreSpec, create: bool, options: dict[str, Any]) -> Backend:
    from harness.stores.jsonl.backend import JsonlBackend
    from harness.stores.jsonl.paths import Compression, root_compression

    compression = options.get("compression")
    if compression not in (None, "zstd", "none"):
        raise StoreSpecError(f"compression must be zstd or none, not {compression!r}")
    if os.path.exists(spec.target) and not os.path.isdir(spec.target):
        raise StoreSpecError(f"{spec.target} is a file, not a JSONL session root (sqlite:{spec.target}?)")
    chosen: Compression = "zstd" if compression in (None, "zstd") else "none"
    if compression is None:
        chosen = root_compression(spec.target) or "zstd"  # a mixed root is refused here, naming a log
    return JsonlBackend(spec.target, compression=chosen)


def _open_sqlite(spec: StoreSpec, create: bool, options: dict[str, Any]) -> Backend:
    from harness.stores.dsh_sqlite import open_sqlite_backend

    layout = options.get("layout")
    if layout not in (None, "harness", "dsh"):
        raise StoreSpecError(f"layout must be harness or dsh, not {layout!r}")
    if not create and not os.path.exists(spec.target):
        raise StoreNotFound(f"no SQLite file at {spec.target} (a reader creates none)")
    if os.path.isdir(spec.target):
        raise StoreSpecError(f"{spec.target} is a directory, not an SQLite file (jsonl:{spec.target}?)")
    return open_sqlite_backend(spec.target, layout=layout)


def _open_postgres(spec: StoreSpec, create: bool, options: dict[str, Any]) -> Backend:
    from harness.stores.postgres import PostgresBackend

    try:
        return PostgresBackend(spec.target, **options)
    except TypeError as error:  # an option the backend does not take
        raise StoreSpecError(f"postgresql://: {error}") from error


def _open_memory(spec: StoreSpec, create: bool, options: dict[str, Any]) -> Backend:
    from harness.stores.memory import MemoryBackend

    return MemoryBackend()


register_scheme(Scheme("jsonl", _open_jsonl, "jsonl:DIR", frozenset({"compression"})))
register_scheme(Scheme("sqlite", _open_sqlite, "sqlite:FILE", frozenset({"layout"})))
register_scheme(Scheme("postgresql", _open_postgres, "postgresql://URL", None), aliases=("postgres",))
register_scheme(Scheme("memory", _open_memory, "memory:", frozenset(), takes_path=False))
