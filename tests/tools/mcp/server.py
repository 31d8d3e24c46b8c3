"""A real MCP server for the tests, written with the SDK's server API (``MCPServer``).

``python server.py SPEC.json`` serves stdio; ``python server.py SPEC.json --http PORT``
serves streamable HTTP on 127.0.0.1 and refuses a request whose ``Authorization`` header is
not ``Bearer $REMOTE_TOKEN`` (when that is set). The spec file (read at start, so a test
changes the server by rewriting it before the next start) says::

    {"name": "notes", "version": "1.0", "tools": ["add", "note", ...], "addSchema": 1,
     "crash": false, "log": "/path/of/a/file the note tool appends to"}

Tools: ``add(a, b)`` (read-only; ``addSchema: 2`` adds a third parameter), ``note(text)``
(world-changing, appends to ``log``), ``slow(seconds)`` (writes its pid to ``log + ".started"``
first),
``die()`` (the process exits mid-call), ``picture()`` (an image and a text), ``fail()`` (an
error result), ``whoami()`` (prints ``$NOTES_SECRET``: the client must scrub it).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import ToolAnnotations

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def build(spec: dict[str, Any]) -> MCPServer:
    server: MCPServer = MCPServer(
        spec.get("name", "notes"), version=spec.get("version", "1.0"), log_level="CRITICAL"
    )
    wanted = set(spec.get("tools", ["add", "note", "slow", "die", "picture", "fail", "whoami"]))
    log = Path(spec.get("log", os.devnull))
    read_only = ToolAnnotations(read_only_hint=True)

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def add_v2(a: int, b: int, c: int = 0) -> int:
        """Add two or three integers."""
        return a + b + c

    def note(text: str) -> str:
        """Append a line to the notes file."""
        with log.open("a") as file:
            file.write(text + "\n")
        return f"noted: {text}"

    def slow(seconds: float) -> str:
        """Wait, then answer."""
        Path(f"{log}.started").write_text(str(os.getpid()))
        time.sleep(seconds)
        return "finally"

    def die() -> str:
        """Exit in the middle of the call."""
        os._exit(3)

    def picture() -> list[Any]:
        """A one-pixel PNG and a caption."""
        return [Image(data=PNG, format="png"), "a single pixel"]

    def fail() -> str:
        """Always fails."""
        raise ToolError("the tool refused on purpose")

    def whoami() -> str:
        """Says its secret (the client must not let it into the log)."""
        return f"my secret is {os.environ.get('NOTES_SECRET', '')}"

    tools: dict[str, Callable[..., Any]] = {
        "add": add_v2 if spec.get("addSchema") == 2 else add,
        "note": note,
        "slow": slow,
        "die": die,
        "picture": picture,
        "fail": fail,
        "whoami": whoami,
    }
    for name, function in tools.items():
        if name in wanted:
            server.add_tool(
                function,
                name=name,
                annotations=read_only if name == "add" else None,
                structured_output=False if name == "picture" else None,
            )
    return server


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    if spec.get("crash"):
        print("refusing to start (spec says crash)", file=sys.stderr)
        sys.exit(7)
    server = build(spec)
    if "--http" not in sys.argv:
        server.run()
        return
    import uvicorn
    from starlette.responses import PlainTextResponse

    port = int(sys.argv[sys.argv.index("--http") + 1])
    app = server.streamable_http_app()
    token = os.environ.get("REMOTE_TOKEN")

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "http" and token and headers.get(b"authorization") != f"Bearer {token}".encode():
            await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
            return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
