"""MCP server configuration: the common ``mcpServers`` file shape (docs/mcp.md).

::

    {"mcpServers": {
        "notes":  {"command": "python3", "args": ["server.py"], "env": {"TOKEN": "${NOTES_TOKEN}"}},
        "remote": {"type": "http", "url": "http://127.0.0.1:8000/mcp",
                   "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}}}}

A server with ``command`` is started as a subprocess and spoken to over its stdin/stdout
(``type`` ``stdio``, the default); one with ``url`` over streamable HTTP (``type`` ``http``
or ``streamable-http``). ``${VAR}`` and ``${VAR:-default}`` in ``command``, ``args``,
``env``, ``cwd``, ``url`` and ``headers`` are read from the environment, so a secret need
not be written into the file. Optional per-server keys: ``cwd``, ``timeoutSeconds`` (the
longest wait for one tool call, default 60), ``connectTimeoutSeconds`` (start, handshake
and tool listing, default 30) and ``disabled``. Keys other programs define are ignored;
a known key of the wrong type is refused (``McpConfigError``, naming the file, the server
and the key, never a value).

Without ``--mcp-config`` the workspace's ``.mcp.json`` is used when there is one
(``find_mcp_config``). Nothing here imports the MCP SDK.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from harness.errors import McpConfigError

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "WORKSPACE_CONFIG",
    "McpServerConfig",
    "find_mcp_config",
    "load_mcp_config",
    "parse_mcp_config",
    "shown_url",
]

WORKSPACE_CONFIG: Final = ".mcp.json"
"""The file looked for in the workspace root when no ``--mcp-config`` is given."""

DEFAULT_CALL_TIMEOUT_S: Final = 60.0
DEFAULT_CONNECT_TIMEOUT_S: Final = 30.0
_MAX_TIMEOUT_S: Final = 24 * 3600.0

_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SECRET_MIN = 4  # shorter values are not scrubbed from text: they would mangle ordinary words

Transport = Literal["stdio", "http"]


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One configured server, its ``${VAR}`` references resolved. ``env`` and ``headers``
    may hold secrets: they are passed to the server and never written to a log
    (``secrets`` lists the values to scrub from any text)."""

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S

    @property
    def endpoint(self) -> str:
        """What the server is, safe to log: the URL without credentials or query, or the
        program's file name (its arguments and environment are left out)."""
        if self.url is not None:
            return shown_url(self.url)
        return os.path.basename(self.command or "")

    def secrets(self) -> tuple[str, ...]:
        """Values to keep out of any text harness writes: the env and header values, and the
        URL's user info and query."""
        found = [*self.env.values(), *self.headers.values()]
        if self.url is not None:
            parts = urlsplit(self.url)
            found += [parts.password or "", parts.username or "", parts.query]
            found += [value for _, value in parse_qsl(parts.query)]
        for value in self.headers.values():  # "Bearer <token>": the token alone, too
            found += value.split()[1:]
        return tuple(sorted({value for value in found if len(value) >= _SECRET_MIN}, key=len, reverse=True))

    def scrub(self, text: str) -> str:
        """``text`` with every secret value replaced by ``***``."""
        for secret in self.secrets():
            text = text.replace(secret, "***")
        return text


def shown_url(url: str) -> str:
    """``url`` without user info, query or fragment (any of them may carry a credential)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def find_mcp_config(workspace: str | os.PathLike[str]) -> Path | None:
    """The workspace's ``.mcp.json``, or None when it has none."""
    path = Path(workspace) / WORKSPACE_CONFIG
    return path if path.is_file() else None


def load_mcp_config(
    path: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> list[McpServerConfig]:
    """The enabled servers of the file at ``path``, in file order (``McpConfigError`` when it
    cannot be read or is not valid)."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise McpConfigError(f"cannot read the MCP configuration {where}: {error}") from None
    try:
        document = json.loads(text)
    except ValueError as error:
        raise McpConfigError(f"the MCP configuration {where} is not JSON: {error}") from None
    return parse_mcp_config(document, where=where, environ=environ)


def parse_mcp_config(
    document: Any, *, where: str = "the MCP configuration", environ: Mapping[str, str] | None = None
) -> list[McpServerConfig]:
    """The enabled servers of an already decoded configuration (see the module doc)."""
    env = os.environ if environ is None else environ
    if not isinstance(document, Mapping) or not isinstance(document.get("mcpServers"), Mapping):
        raise McpConfigError(f'{where}: expected an object with an "mcpServers" object')
    servers: list[McpServerConfig] = []
    for name, entry in document["mcpServers"].items():
        if not isinstance(name, str) or not _SERVER_NAME.match(name):
            raise McpConfigError(
                f"{where}: server name {str(name)[:60]!r} must be 1-40 letters, digits, '_' or '-' "
                "(it becomes part of the tool names the model sees)"
            )
        if not isinstance(entry, Mapping):
            raise McpConfigError(f"{where}: server {name!r} must be an object")
        server = _server(name, entry, _Reader(where, name, env))
        if server is not None:
            servers.append(server)
    return servers


class _Reader:
    """Typed reads of one server's keys, with ``${VAR}`` expansion and errors naming the key."""

    def __init__(self, where: str, server: str, environ: Mapping[str, str]) -> None:
        self.where, self.server, self.environ = where, server, environ

    def fail(self, key: str, problem: str) -> McpConfigError:
        return McpConfigError(f"{self.where}: server {self.server!r}: {key!r} {problem}")

    def expand(self, key: str, value: str) -> str:
        def variable(match: re.Match[str]) -> str:
            found = self.environ.get(match.group(1))
            if found is None and match.group(2) is None:
                raise self.fail(key, f"uses ${{{match.group(1)}}}, which is not set")
            return found if found is not None else match.group(2)

        return _VARIABLE.sub(variable, value)

    def string(self, entry: Mapping[str, Any], key: str) -> str | None:
        value = entry.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise self.fail(key, "must be a non-empty string")
        return self.expand(key, value)

    def strings(self, entry: Mapping[str, Any], key: str) -> tuple[str, ...]:
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(key, "must be a list of strings")
        return tuple(self.expand(key, item) for item in value)

    def table(self, entry: Mapping[str, Any], key: str) -> dict[str, str]:
        value = entry.get(key, {})
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()
        ):
            raise self.fail(key, "must be an object of string values")
        return {k: self.expand(f"{key}.{k}", v) for k, v in value.items()}

    def seconds(self, entry: Mapping[str, Any], key: str, default: float) -> float:
        value = entry.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, "must be a number of seconds")
        if not math.isfinite(value) or not 0 < value <= _MAX_TIMEOUT_S:
            raise self.fail(key, f"must be more than 0 and at most {_MAX_TIMEOUT_S:g} seconds")
        return float(value)


def _server(name: str, entry: Mapping[str, Any], read: _Reader) -> McpServerConfig | None:
    disabled = entry.get("disabled", False)
    if not isinstance(disabled, bool):
        raise read.fail("disabled", "must be true or false")
    if disabled:
        return None
    kind = entry.get("type", "stdio" if "command" in entry else "http")
    if kind == "sse":
        raise read.fail("type", "is 'sse', which is not supported: use a streamable HTTP server ('http')")
    if kind not in ("stdio", "http", "streamable-http"):
        raise read.fail("type", "must be 'stdio', 'http' or 'streamable-http'")
    server = functools.partial(
        McpServerConfig,
        name,
        call_timeout_s=read.seconds(entry, "timeoutSeconds", DEFAULT_CALL_TIMEOUT_S),
        connect_timeout_s=read.seconds(entry, "connectTimeoutSeconds", DEFAULT_CONNECT_TIMEOUT_S),
    )
    if kind == "stdio":
        command = read.string(entry, "command")
        if command is None:
            raise read.fail("command", "is required for a stdio server")
        if "url" in entry:
            raise read.fail("url", "belongs to an HTTP server; a stdio server has a command")
        args, env, cwd = read.strings(entry, "args"), read.table(entry, "env"), read.string(entry, "cwd")
        return server("stdio", command=command, args=args, env=env, cwd=cwd)
    url = read.string(entry, "url")
    if url is None:
        raise read.fail("url", "is required for an HTTP server")
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
        raise McpConfigError(f"{read.where}: server {name!r}: 'url' must be an http(s) URL with a host")
    if "command" in entry:
        raise read.fail("command", "belongs to a stdio server; an HTTP server has a url")
    return server("http", url=url, headers=read.table(entry, "headers"))
