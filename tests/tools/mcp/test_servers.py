"""MCP client tools against real servers written with the SDK's server API: one over stdio
(a subprocess), one over streamable HTTP on 127.0.0.1. Results of every kind, approval
flags, a server that dies mid-call (a typed error at once, never a hung or cancelled turn),
a call timeout, and secrets kept out of what the tools return."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.tools.base import ToolContext, ToolError
from harness.tools.mcp import McpHub, McpTool, parse_mcp_config
from tests.tools.mcp.server import PNG
from tests.tools.mcp.support import (
    NOTES_SECRET,
    free_port,
    http_entry,
    http_server,
    kill,
    stdio_entry,
    write_spec,
)


@pytest.fixture(autouse=True)
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTES_SECRET", NOTES_SECRET)
    monkeypatch.setenv("REMOTE_TOKEN", "remote-token-value-5e2a")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def by_name(hub: McpHub) -> dict[str, McpTool]:
    return {tool.spec.name: tool for tool in hub.tools}


def test_a_stdio_server_lists_calls_and_dies_with_a_typed_error(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    spec = write_spec(tmp_path / "notes.json", name="notes-server", version="1.4", log=str(log))
    config = parse_mcp_config(
        {
            "mcpServers": {
                "notes": stdio_entry(spec, timeoutSeconds=4),
                "ghost": {"command": str(tmp_path / "nope")},
            }
        }
    )
    context = ToolContext(tmp_path)

    async def go() -> None:
        async with McpHub(config, cwd=tmp_path, taken=["read_file"]) as hub:
            notes, ghost = hub.states
            assert notes.reachable and (notes.server_name, notes.server_version) == ("notes-server", "1.4")
            assert (
                notes.protocol_version
                and notes.transport == "stdio"
                and notes.endpoint == Path(stdio_entry(spec)["command"]).name
            )
            assert not ghost.reachable and "nope" in (ghost.error or "") and ghost.tools == ()
            tools = by_name(hub)
            assert sorted(tools) == sorted(
                f"mcp__notes__{name}" for name in ("add", "note", "slow", "die", "picture", "fail", "whoami")
            )
            add, note = tools["mcp__notes__add"], tools["mcp__notes__note"]
            assert not add.changes_world and note.changes_world  # readOnlyHint, and its absence
            assert add.spec.parameters["required"] == ["a", "b"]
            assert add.spec.description.startswith("[MCP server notes] Add two integers")

            added = await add.run({"a": 2, "b": 3}, context)
            assert added.text == "5" and not added.is_error
            assert added.meta == {
                "mcp": {
                    "server": "notes",
                    "tool": "add",
                    "content": [{"type": "text", "chars": 1}],
                    "structuredContent": {"result": 5},
                }
            }
            assert (await note.run({"text": "hello"}, context)).text == "noted: hello"
            assert log.read_text() == "hello\n"

            picture = await tools["mcp__notes__picture"].run({}, context)
            assert "[image: image/png, 67 bytes, sha256 " in picture.text and "a single pixel" in picture.text
            image = picture.meta["mcp"]["content"][0] if picture.meta else {}
            assert image["type"] == "image" and image["bytes"] == len(PNG) and len(image["sha256"]) == 64

            with pytest.raises(ToolError) as failed:
                await tools["mcp__notes__fail"].run({}, context)
            assert failed.value.code == "MCP_TOOL_ERROR" and failed.value.meta is not None

            whoami = await tools["mcp__notes__whoami"].run({}, context)
            assert NOTES_SECRET not in whoami.text and whoami.text == "my secret is ***"

            with pytest.raises(ToolError) as slow:
                await tools["mcp__notes__slow"].run({"seconds": 30}, context)
            assert slow.value.code == "MCP_TIMEOUT"

            cancel = asyncio.Event()
            asyncio.get_running_loop().call_later(0.2, cancel.set)
            with pytest.raises(ToolError) as stopped:
                await tools["mcp__notes__slow"].run({"seconds": 30}, ToolContext(tmp_path, cancel=cancel))
            assert stopped.value.code == "CANCELLED"

            with pytest.raises(ToolError) as died:
                await asyncio.wait_for(tools["mcp__notes__die"].run({}, context), 20)
            assert died.value.code == "MCP_SERVER_GONE"
            with pytest.raises(ToolError) as after:
                await asyncio.wait_for(add.run({"a": 1, "b": 1}, context), 5)
            assert after.value.code == "MCP_SERVER_GONE"

    asyncio.run(go())


def test_an_http_server_gets_the_headers_and_its_death_mid_call_fails_only_the_call(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "remote.json", name="remote-server", version="2.0", log=str(tmp_path / "r.log")
    )
    port = free_port()
    with http_server(spec, port) as process:
        unauthorized = parse_mcp_config(
            {"mcpServers": {"remote": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp?key=abcdef123"}}}
        )
        config = parse_mcp_config({"mcpServers": {"remote": http_entry(port)}})
        context = ToolContext(tmp_path)

        async def go() -> None:
            async with McpHub(unauthorized) as hub:  # no token: the server answers 401
                (state,) = hub.states
                assert not state.reachable and "abcdef123" not in (state.error or "")
                assert state.endpoint == f"http://127.0.0.1:{port}/mcp"
            async with McpHub(config) as hub:
                (state,) = hub.states
                assert state.reachable and state.transport == "http"
                assert state.server_version == "2.0"
                tools = by_name(hub)
                assert (await tools["mcp__remote__add"].run({"a": 40, "b": 2}, context)).text == "42"
                started = tmp_path / "r.log.started"
                call = asyncio.ensure_future(tools["mcp__remote__slow"].run({"seconds": 60}, context))
                while not started.exists():
                    await asyncio.sleep(0.05)
                kill(process)
                with pytest.raises(ToolError) as gone:
                    await asyncio.wait_for(call, 30)
                assert gone.value.code == "MCP_SERVER_GONE"
                # the task running the calls was not cancelled by the transport's failure
                assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]

        asyncio.run(go())
