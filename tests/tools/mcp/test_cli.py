"""MCP servers end to end through the CLI: ``harness run`` offers a stdio and an HTTP server's
tools to the scripted model (the real openai client against the fake DeepSeek server), the
log records them and none of their secrets; between the run and ``harness resume`` the
servers are changed, killed and restarted, and the world check reports each change (and
nothing but the lost session state when nothing changed). ``harness mcp list`` too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from tests.agent.cli_support import cli, offline_env, stored
from tests.tools.mcp.support import (
    NOTES_SECRET,
    REMOTE_TOKEN,
    free_port,
    http_entry,
    http_server,
    stdio_entry,
    write_config,
    write_spec,
)

KEY = "sk-test-mcp-never-logged-77"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    offline_env(monkeypatch, KEY)
    monkeypatch.setenv("NOTES_SECRET", NOTES_SECRET)
    monkeypatch.setenv("REMOTE_TOKEN", REMOTE_TOKEN)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def finding_kinds(document: dict[str, Any]) -> list[str]:
    return sorted(item["kind"] for item in document["findings"])


def test_run_check_and_resume_through_changed_killed_and_restarted_servers(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    notes = write_spec(
        tmp_path / "notes.json", name="notes-server", version="1.0", log=str(tmp_path / "n.log")
    )
    remote = write_spec(tmp_path / "remote.json", name="remote-server", version="2.0")
    port = free_port()
    write_config(env / ".mcp.json", {"notes": stdio_entry(notes), "remote": http_entry(port)})
    script = [
        Reply.tool_calls(
            [("c1", "mcp__notes__add", '{"a":2,"b":3}'), ("c2", "mcp__remote__add", '{"a":40,"b":2}')]
        ),
        Reply.tool_calls([("c3", "mcp__notes__note", '{"text":"hi"}')]),
        Reply.tool_calls([("c4", "mcp__notes__whoami", "{}")]),
        Reply.text("Done."),
        Reply.text("Resumed."),
    ]
    with FakeDeepSeek(script, api_key=KEY) as model:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", model.base_url)
        with http_server(remote, port):
            ran = cli(root, "run", "use the servers", "-w", str(env), "--yes", "--json")
            assert ran.exit_code == 0, ran.output
            session_id = json.loads(ran.stdout.strip().splitlines()[-1])["session"]
            listed = cli(root, "mcp", "list", "-w", str(env), "--json")
            quiet = cli(root, "check", session_id, "-w", str(env), "--json")
        assert listed.exit_code == 0, listed.output
        assert quiet.exit_code == 0, quiet.output
        assert finding_kinds(json.loads(quiet.stdout)) == ["mcp-session-lost"]  # nothing else changed
        servers = {server["server"]: server for server in json.loads(listed.stdout)["servers"]}
        assert servers["remote"]["reachable"] and servers["notes"]["serverInfo"]["version"] == "1.0"

        # the notes server loses a tool and changes another; the HTTP server is killed
        write_spec(
            notes,
            name="notes-server",
            version="1.1",
            log=str(tmp_path / "n.log"),
            tools=["add", "whoami"],
            addSchema=2,
        )
        changed = cli(root, "check", session_id, "-w", str(env), "--json")
        assert changed.exit_code == 0, changed.output
        document = json.loads(changed.stdout)
        assert finding_kinds(document) == [
            "mcp-server-unreachable",
            "mcp-server-version-changed",
            "mcp-session-lost",
            *["mcp-tool-removed"] * 5,
            "mcp-tool-schema-changed",
        ]
        removed = {
            f["evidence"]["tool"]: f["severity"]
            for f in document["findings"]
            if f["kind"] == "mcp-tool-removed"
        }
        assert removed == {"note": "warn", "slow": "info", "die": "info", "picture": "info", "fail": "info"}
        (unreachable,) = [f for f in document["findings"] if f["kind"] == "mcp-server-unreachable"]
        assert unreachable["evidence"]["server"] == "remote" and unreachable["severity"] == "warn"

        # the HTTP server restarted, at another version: resume reports and continues
        write_spec(remote, name="remote-server", version="3.0")
        with http_server(remote, port):
            resumed = cli(root, "resume", session_id, "-w", str(env), "--yes")
        assert resumed.exit_code == 0, resumed.output
        for text in ("mcp-tool-schema-changed", "mcp-server-version-changed", "mcp-session-lost"):
            assert text in resumed.output, text
        last = model.requests[-1]
        assert len(model.model_listings) == 1  # the resume checked the key once
    session = stored(root, session_id)
    events = list(session.events)
    results = {e.data["message"]["source"]["callId"]: e for e in events if e.type == "tool/result"}
    said = {cid: e.data["message"]["content"][0]["content"][0]["text"] for cid, e in results.items()}
    assert said["c1"] == "5" and said["c2"] == "42" and said["c3"] == "noted: hi"
    assert said["c4"] == "my secret is ***"
    asked = [e.data["toolName"] for e in events if e.type == "approval/asked"]
    assert asked == ["mcp__notes__note", "mcp__notes__whoami"]  # the read-only adds ran without asking
    headers = [e.data for e in events if e.type == "request/header"]
    offered = [tool["name"] for tool in headers[0]["header"]["tools"]]
    assert "read_file" in offered and "mcp__notes__add" in offered and "mcp__remote__add" in offered
    assert [h["reason"] for h in headers][-1] == "resume"
    connects = [e for e in events if e.type == "mcp/connect"]
    assert all(e.ignorable for e in connects) and len(connects) == 4  # two at the run, two at the resume
    assert connects[-1].data["serverInfo"] == {"name": "remote-server", "version": "3.0"}
    checks = [e for e in events if e.type == "recovery/check"]
    assert "mcp-server-version-changed" in [f["kind"] for f in checks[-1].data["findings"]]
    drift = [m["content"] for m in last.messages if m["role"] == "user"][-2]
    assert "did not survive" in drift and "mcp__notes__note" in drift
    for path in (p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for secret in (NOTES_SECRET, REMOTE_TOKEN, KEY):
            assert secret.encode() not in data, (path, secret)


def test_mcp_list_says_which_server_is_unreachable_and_needs_a_configuration(
    env: Path, tmp_path: Path
) -> None:
    root = tmp_path / "sessions"
    nothing = cli(root, "mcp", "list", "-w", str(env))
    assert nothing.exit_code == 2 and "no MCP configuration" in nothing.output
    missing = cli(root, "mcp", "list", "--mcp-config", str(tmp_path / "none.json"))
    assert missing.exit_code == 2 and "no such file" in missing.output
    bad = write_config(tmp_path / "bad.json", {"x y": {"command": "c"}})
    refused = cli(root, "mcp", "list", "--mcp-config", str(bad))
    assert refused.exit_code == 1 and "server name 'x y'" in refused.output
    config = write_config(tmp_path / "ghost.json", {"ghost": {"command": str(tmp_path / "no-such-server")}})
    listed = cli(root, "mcp", "list", "--mcp-config", str(config), "-w", str(env))
    assert listed.exit_code == 1, listed.output
    assert "ghost" in listed.output and "no-such-server" in listed.output and " no " in listed.output
    refused_run = cli(root, "run", "x", "-w", str(env), "--mcp-config", str(tmp_path / "none.json"))
    assert refused_run.exit_code == 2 and "no such file" in refused_run.output


def test_a_server_the_session_used_is_reported_when_no_configuration_is_left(
    env: Path, tmp_path: Path
) -> None:
    import asyncio

    from harness.stores.jsonl.backend import JsonlBackend
    from harness.stores.store import SessionStore
    from harness.tools.mcp import MCP_CONNECT, McpServerState, McpToolRecord

    root = tmp_path / "sessions"
    used = McpServerState(
        "notes",
        "stdio",
        "python3",
        True,
        "notes-server",
        "1.0",
        "2025-11-25",
        (McpToolRecord("add", "mcp__notes__add", "a" * 64, True),),
        config=str(env / ".mcp.json"),
    )

    async def save() -> str:
        async with SessionStore(JsonlBackend(root)) as store:
            session = await store.create(cwd=str(env))
            session.append(MCP_CONNECT, used.to_json(), ignorable=True)
            await store.flush(session)
            return session.id

    session_id = asyncio.run(save())
    checked = cli(root, "check", session_id, "-w", str(env), "--json")  # no .mcp.json, no --mcp-config
    assert checked.exit_code == 0, checked.output
    document = json.loads(checked.stdout)
    (gone,) = [f for f in document["findings"] if f["kind"] == "mcp-server-unreachable"]
    assert gone["evidence"]["configured"] is False and "no longer configured" in gone["summary"]
    assert "mcp" not in document["skipped"]
