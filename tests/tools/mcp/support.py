"""Real MCP servers for the tests: spec files, the stdio command, an HTTP server process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

SERVER = Path(__file__).with_name("server.py")
NOTES_SECRET = "notes-secret-value-8c1f"
REMOTE_TOKEN = "remote-token-value-5e2a"


def write_spec(path: Path, **spec: Any) -> Path:
    """Write the server spec (see server.py) to ``path``."""
    path.write_text(json.dumps(spec))
    return path


def stdio_entry(spec: Path, **extra: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry starting server.py over stdio, with ``$NOTES_SECRET`` in its env."""
    return {
        "command": sys.executable,
        "args": [str(SERVER), str(spec)],
        "env": {"NOTES_SECRET": "${NOTES_SECRET}"},
        **extra,
    }


def http_entry(port: int, **extra: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry for the HTTP server on ``port``, with the token header."""
    return {
        "type": "http",
        "url": f"http://127.0.0.1:{port}/mcp",
        "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"},
        **extra,
    }


def write_config(path: Path, servers: Mapping[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": dict(servers)}))
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_server(spec: Path, port: int, timeout: float = 60.0) -> Iterator[subprocess.Popen[bytes]]:
    """server.py serving HTTP on ``port`` (requires the token), until the block ends."""
    env = {**os.environ, "REMOTE_TOKEN": REMOTE_TOKEN}
    process = subprocess.Popen(
        [sys.executable, str(SERVER), str(spec), "--http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the HTTP MCP server exited with {process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield process
    finally:
        kill(process)


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process (and its group) and reap it."""
    if process.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
