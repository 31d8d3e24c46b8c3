"""The MCP configuration file (the common ``mcpServers`` shape), the offered tool names, the
``mcp/connect`` record and the conversion of results: each rule refusing bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.errors import McpConfigError
from harness.tools.mcp import (
    McpServerState,
    McpToolRecord,
    exposed_name,
    find_mcp_config,
    load_mcp_config,
    parse_mcp_config,
    read_connect,
    result_outcome,
    tool_fingerprint,
)

ENV = {"TOKEN": "tok-123456", "HOME": "/home/x"}


def parse(servers: dict[str, Any]) -> list[Any]:
    return parse_mcp_config({"mcpServers": servers}, where="cfg.json", environ=ENV)


def test_stdio_and_http_servers_with_variables_expanded() -> None:
    stdio, http = parse(
        {
            "notes": {"command": "python3", "args": ["s.py", "${HOME}/x"], "env": {"K": "${TOKEN}"}},
            "remote": {
                "type": "http",
                "url": "https://u:pw@h.example:8443/mcp?key=abcd#f",
                "headers": {"Authorization": "Bearer ${TOKEN}"},
                "timeoutSeconds": 5,
            },
            "off": {"command": "x", "disabled": True},
        }
    )
    assert (stdio.transport, stdio.command, stdio.args, dict(stdio.env)) == (
        "stdio",
        "python3",
        ("s.py", "/home/x/x"),
        {"K": "tok-123456"},
    )
    assert stdio.call_timeout_s == 60 and stdio.endpoint == "python3"
    assert http.transport == "http" and http.call_timeout_s == 5
    assert http.endpoint == "https://h.example:8443/mcp"  # no user info, query or fragment
    assert dict(http.headers) == {"Authorization": "Bearer tok-123456"}
    assert {"tok-123456", "Bearer tok-123456", "abcd"} <= set(http.secrets())
    assert http.scrub("sent Bearer tok-123456 and key=abcd") == "sent *** and ***"
    assert parse({"x": {"command": "c", "env": {"D": "${UNSET:-fallback}"}}})[0].env == {"D": "fallback"}
    assert parse({"s": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"}})[0].transport == "http"


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({"bad.name": {"command": "c"}}, "server name 'bad.name'"),
        ({"": {"command": "c"}}, "server name ''"),
        ({"a" * 41: {"command": "c"}}, "1-40 letters"),
        ({"s": "python"}, "'s' must be an object"),
        ({"s": {"args": []}}, "'url' is required"),
        ({"s": {"type": "stdio"}}, "'command' is required"),
        ({"s": {"command": ""}}, "'command' must be a non-empty string"),
        ({"s": {"command": "c", "args": "x"}}, "'args' must be a list of strings"),
        ({"s": {"command": "c", "args": [1]}}, "'args' must be a list of strings"),
        ({"s": {"command": "c", "env": {"A": 1}}}, "'env' must be an object of string values"),
        ({"s": {"command": "c", "env": {"A": "${MISSING}"}}}, "'env.A' uses ${MISSING}, which is not set"),
        ({"s": {"command": "c", "url": "http://h/mcp"}}, "'url' belongs to an HTTP server"),
        ({"s": {"url": "http://h/mcp", "command": "c", "type": "http"}}, "'command' belongs to a stdio"),
        ({"s": {"type": "sse", "url": "http://h/sse"}}, "not supported"),
        ({"s": {"type": "ws", "url": "ws://h"}}, "'type' must be"),
        ({"s": {"url": "ftp://h/mcp"}}, "must be an http(s) URL"),
        ({"s": {"url": "http:///mcp"}}, "must be an http(s) URL"),
        ({"s": {"url": "http://h/mcp", "headers": ["x"]}}, "'headers' must be an object"),
        ({"s": {"command": "c", "timeoutSeconds": 0}}, "'timeoutSeconds' must be more than 0"),
        ({"s": {"command": "c", "timeoutSeconds": True}}, "must be a number of seconds"),
        ({"s": {"command": "c", "connectTimeoutSeconds": float("nan")}}, "'connectTimeoutSeconds'"),
        ({"s": {"command": "c", "disabled": "yes"}}, "'disabled' must be true or false"),
    ],
)
def test_a_bad_server_entry_is_refused_naming_the_server_and_key(
    servers: dict[str, Any], message: str
) -> None:
    with pytest.raises(McpConfigError) as refused:
        parse(servers)
    assert message in str(refused.value) and "cfg.json" in str(refused.value)


def test_a_refusal_never_shows_a_value() -> None:
    with pytest.raises(McpConfigError) as refused:
        parse({"s": {"url": "ftp://user:tok-123456@h/mcp"}})
    assert "tok-123456" not in str(refused.value)


@pytest.mark.parametrize("document", [[], {"servers": {}}, {"mcpServers": []}, "x"])
def test_a_file_without_an_mcp_servers_object_is_refused(document: Any) -> None:
    with pytest.raises(McpConfigError, match="mcpServers"):
        parse_mcp_config(document)


def test_files_that_cannot_be_read_or_decoded_are_refused(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match="cannot read"):
        load_mcp_config(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(McpConfigError, match="is not JSON"):
        load_mcp_config(tmp_path / "bad.json")
    assert find_mcp_config(tmp_path) is None
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"a": {"command": "c"}}}))
    assert find_mcp_config(tmp_path) == tmp_path / ".mcp.json"
    assert [server.name for server in load_mcp_config(tmp_path / ".mcp.json")] == ["a"]


def test_offered_names_fit_the_model_apis_and_never_collide() -> None:
    assert exposed_name("notes", "add") == "mcp__notes__add"
    odd = exposed_name("notes", "read.file/v2")
    assert odd.startswith("mcp__notes__read_file_v2_") and len(odd) == len("mcp__notes__read_file_v2_") + 8
    assert odd != exposed_name("notes", "read_file_v2")  # another tool whose cleaned name is the same
    long = exposed_name("s" * 40, "t" * 60)
    assert len(long) == 64 and long == exposed_name("s" * 40, "t" * 60)  # stable
    taken = {"mcp__notes__add"}
    other = exposed_name("notes", "add", taken)
    assert other != "mcp__notes__add" and other.startswith("mcp__notes__add_")
    for name in (odd, long, other):
        assert all(ch.isalnum() or ch in "_-" for ch in name) and len(name) <= 64


def test_the_connect_record_round_trips_and_malformed_parts_are_skipped() -> None:
    state = McpServerState(
        "notes",
        "stdio",
        "python3",
        True,
        "notes-server",
        "1.0",
        "2025-11-25",
        (McpToolRecord("add", "mcp__notes__add", "ab" * 32, True),),
        config="/w/.mcp.json",
    )
    data = json.loads(json.dumps(state.to_json()))
    back = read_connect(7, data)
    assert back is not None and back.seq == 7 and back.tools == state.tools and back.server_version == "1.0"
    assert read_connect(1, {"tools": []}) is None and read_connect(1, None) is None
    broken = read_connect(
        2, {"server": "x", "tools": [{"name": "a"}, 3, {"name": "b", "exposedAs": "e", "sha256": "h"}]}
    )
    assert broken is not None and [tool.name for tool in broken.tools] == ["b"] and not broken.reachable


def test_the_fingerprint_follows_the_definition_not_its_key_order() -> None:
    one = {
        "name": "a",
        "description": "d",
        "inputSchema": {"type": "object", "properties": {"x": {}, "y": {}}},
    }
    same = {
        "inputSchema": {"properties": {"y": {}, "x": {}}, "type": "object"},
        "description": "d",
        "name": "a",
    }
    assert tool_fingerprint(one) == tool_fingerprint(same)
    assert tool_fingerprint(one) != tool_fingerprint({**one, "description": "e"})
    assert tool_fingerprint(one) != tool_fingerprint({**one, "annotations": {"readOnlyHint": True}})


def test_results_of_every_kind_become_text_and_meta() -> None:
    result = {
        "content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "audio", "data": "!!", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "file:///b", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "file:///c", "blob": "aGk=", "mimeType": "x/y"}},
            {"type": "future"},
        ],
        "structuredContent": {"n": 1},
    }
    outcome = result_outcome("s", "t", result)
    lines = outcome.text.splitlines()
    assert lines[0] == "hello" and lines[1].startswith("[image: image/png, 2 bytes, sha256 ")
    assert "[resource link: file:///a]" in lines and "[resource file:///b]" in lines and "inside" in lines
    assert "[resource file:///c: x/y, 2 bytes]" in lines and "[future content]" in lines
    assert '{"n": 1}' not in outcome.text  # there is text: structured content stays in meta
    assert outcome.meta is not None and outcome.meta["mcp"]["structuredContent"] == {"n": 1}
    kinds = [record["type"] for record in outcome.meta["mcp"]["content"]]
    assert kinds == ["text", "image", "audio", "resource_link", "resource", "resource", "future"]
    only = result_outcome("s", "t", {"content": [], "structuredContent": {"n": 2}, "isError": True})
    assert only.text == '{"n": 2}' and only.is_error
    assert result_outcome("s", "t", {}).text == "(no content)"
    scrubbed = result_outcome(
        "s",
        "t",
        {"content": [{"type": "text", "text": "k=tok-123456"}], "structuredContent": {"k": "tok-123456"}},
        scrub=lambda text: text.replace("tok-123456", "***"),
    )
    assert scrubbed.text == "k=***" and scrubbed.meta == {
        "mcp": {
            "server": "s",
            "tool": "t",
            "content": [{"type": "text", "chars": 12}],
            "structuredContent": {"k": "***"},
        }
    }


def test_reading_configs_and_records_loads_no_mcp_sdk() -> None:
    """The SDK loads only when a server is connected: ``import harness``, the recovery layer
    (which reads ``mcp/connect`` records) and the CLI's MCP options leave it alone."""
    code = (
        "import sys, harness, harness.recovery.world, harness.tools.mcp.config, harness.cli.mcp_commands\n"
        "from harness.tools.mcp import McpServerConfig, load_mcp_config\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
