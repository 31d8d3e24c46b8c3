"""``harness compact`` and ``harness eval-compaction`` on stored sessions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import harness
from harness.agent.loop import Agent, AgentSettings
from harness.cli import app
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from harness.testing.scripted import ScriptedProvider, text_reply

KEY = "sk-compaction-test"


def long_session(root: Path, turns: int = 4, *, close_last: bool = True) -> str:
    async def go() -> str:
        store = SessionStore(JsonlBackend(root))
        session = await store.create(cwd=str(root))
        provider = ScriptedProvider([text_reply("answer " * 300) for _ in range(turns)])
        agent = Agent(
            session, provider, [], AgentSettings(model="m"), workspace=root,
            checkpoint=store.flush, record_baseline=False,
        )  # fmt: skip
        for index in range(turns):
            await agent.run_turn(f"request {index}: keep the file path src/app_{index}.py " + "x " * 300)
        if not close_last:
            session.append("turn/start", {"turn": turns + 1})
        await store.close()
        return session.id

    return asyncio.run(go())


def cli(root: Path, *args: str) -> object:
    return CliRunner().invoke(app, ["--store", str(root), *args], catch_exceptions=False)


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_compact_replaces_the_head_of_the_surface_and_keeps_every_event(tmp_path: Path) -> None:
    session_id = long_session(tmp_path)
    result = CliRunner().invoke(app, ["--store", str(tmp_path), "compact", session_id, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["compacted"] is True and data["summarizer"] == "extractive"

    async def read() -> harness.Session:
        store = SessionStore(JsonlBackend(tmp_path))
        try:
            return await store.inspect(session_id)
        finally:
            await store.close()

    session = asyncio.run(read())
    kinds = [e.type for e in session.events]
    assert kinds.count("compaction/start") == kinds.count("compaction/end") == 1
    assert session.surface.replace_generation == 1
    assert "src/app_0.py" in (session.derive_messages()[0].text or "")
    assert sum(1 for k in kinds if k == "user/message") == 5  # four prompts and the checkpoint


def test_compact_of_a_crashed_session_repairs_it_first(tmp_path: Path) -> None:
    session_id = long_session(tmp_path, close_last=False)
    result = CliRunner().invoke(app, ["--store", str(tmp_path), "compact", session_id, "--json"])
    assert result.exit_code == 0, result.output

    async def read() -> harness.Session:
        store = SessionStore(JsonlBackend(tmp_path))
        try:
            return await store.inspect(session_id)
        finally:
            await store.close()

    kinds = [e.type for e in asyncio.run(read()).events]
    closer = max(i for i, k in enumerate(kinds) if k == "turn/end")
    assert closer < kinds.index("compaction/start")  # the open turn was closed (interrupted) first


def test_compact_with_the_model_and_the_offline_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = long_session(tmp_path / "a")
    second = long_session(tmp_path / "b")
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    summary = "## Goal\nKeep src/app_0.py working.\n## State\nFour requests answered."
    with FakeDeepSeek([Reply.text(summary), Reply.error(400, "bad request")], api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        used_model = CliRunner().invoke(
            app, ["--store", str(tmp_path / "a"), "compact", first, "--summarizer", "llm", "--json"]
        )
        fell_back = CliRunner().invoke(
            app, ["--store", str(tmp_path / "b"), "compact", second, "--fallback", "--json"]
        )
        compact_headers = [r.header("x-deepseek-harness-compact") for r in server.requests]
    assert used_model.exit_code == 0, used_model.output
    assert json.loads(used_model.stdout)["summarizer"] == "llm"
    assert fell_back.exit_code == 0, fell_back.output
    assert json.loads(fell_back.stdout.strip().splitlines()[-1])["summarizer"] == "extractive"
    assert compact_headers == ["1", "1"]


def test_eval_compaction_reports_retention_for_generated_sessions(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval-compaction", "--generated", "2", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summary"]["extractive"]
    assert summary["total"] > 0 and summary["retention"] > 0.5 and summary["reduction"] > 0.3
    table = CliRunner().invoke(app, ["eval-compaction", "--probes", "tuned", "--generated", "1"])
    assert table.exit_code == 0 and "extractive" in table.stdout


def test_eval_compaction_scores_each_probe_set_apart_at_80_columns(tmp_path: Path) -> None:
    env = {"COLUMNS": "80"}
    result = CliRunner().invoke(app, ["eval-compaction", "--probes", "holdout"], env=env)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= 80
    assert lines[0].startswith("holdout probe set: 7 sessions, 44 probes")
    every = CliRunner().invoke(app, ["eval-compaction", "--probes", "independent"], env=env)
    assert "independent probe set: 8 sessions, 56 probes" in every.stdout  # a title on one line
    assert max(len(line) for line in every.stdout.splitlines()) <= 80
    for label in ("all probes kept", "recoverable via the tool", "lost (must be 0)", "invalid probes"):
        assert label in result.stdout
    assert "holdout probe set, extractive digest" in result.stdout and "via tool" in result.stdout
    as_json = CliRunner().invoke(app, ["eval-compaction", "--probes", "holdout", "--json"], env=env)
    data = json.loads(as_json.stdout)
    (section,) = data["probeSets"]
    statuses = section["summary"]["extractive"]["statuses"]
    assert section["name"] == "holdout" and sum(statuses.values()) == section["probes"] == 44
    assert statuses["lost"] == 0 and statuses["invalid"] == 0
    probe = section["reports"][0]["probes"][0]
    assert set(probe) >= {"name", "kind", "pattern", "query", "before", "after", "status", "recall"}


def test_eval_compaction_takes_a_probe_set_file_and_refuses_bad_choices(tmp_path: Path) -> None:
    document = {
        "probeset": "mine",
        "bulk": {"turns": 2},
        "cases": [
            {
                "id": "c",
                "turns": [{"user": "Never edit gen/out.txt. The code word is OTTER-7.", "reply": "ok"}],
                "probes": [
                    {"name": "rule", "kind": "constraint", "pattern": "gen/out.txt", "query": "Never edit"},
                    {"name": "ghost", "kind": "identifier", "pattern": "NOT-THERE", "query": "code word"},
                ],
            }
        ],
    }
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(app, ["eval-compaction", "--probes", str(path), "--json"])
    assert result.exit_code == 0, result.output
    (section,) = json.loads(result.stdout)["probeSets"]
    assert section["name"] == "mine" and section["summary"]["extractive"]["statuses"]["invalid"] == 1
    table = CliRunner().invoke(app, ["eval-compaction", "--probes", str(path)], env={"COLUMNS": "80"})
    assert table.exit_code == 0 and "invalid probes" in table.stdout
    bad = CliRunner().invoke(app, ["eval-compaction", "--probes", "everything"])
    assert bad.exit_code == 2 and "--probes must be" in bad.output
    path.write_text('{"probeset": "mine", "cases": []}', encoding="utf-8")
    empty = CliRunner().invoke(app, ["eval-compaction", "--probes", str(path)])
    assert empty.exit_code == 1 and "at least one case" in empty.output
    alone = CliRunner().invoke(app, ["eval-compaction", "--probe", "path:x.py"])
    assert alone.exit_code == 2 and "needs the IDs" in alone.output


def test_eval_compaction_on_a_stored_session_with_probes(tmp_path: Path) -> None:
    session_id = long_session(tmp_path)
    result = CliRunner().invoke(
        app,
        ["--store", str(tmp_path), "eval-compaction", session_id, "--probe", "path:src/app_0.py", "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["summary"]["extractive"]["kept"] == 1
    assert data["probeSets"][0]["name"] == "given"
    assert data["reports"][0]["probes"][0]["status"] == {"extractive": "kept"}
    refused = CliRunner().invoke(app, ["--store", str(tmp_path), "eval-compaction", session_id])
    assert refused.exit_code == 2
    both = [session_id, "--probe", "path:x", "--probes", "tuned"]
    mixed = CliRunner().invoke(app, ["--store", str(tmp_path), "eval-compaction", *both])
    assert mixed.exit_code == 2 and "give no IDs" in mixed.output
    kinds = CliRunner().invoke(
        app, ["--store", str(tmp_path), "eval-compaction", session_id, "--probe", "decision:src", "--json"]
    )
    assert kinds.exit_code == 0, kinds.output  # the new kinds are accepted
