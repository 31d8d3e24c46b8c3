"""The provider key re-checked at resume: one ``GET /models`` against the fake DeepSeek
server; a refused key (401) blocks before anything is sent to the model, an accepted key
reports nothing, and neither key is written anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from tests.agent.cli_support import cli, offline_env

KEY = "sk-test-accepted-key-1234"
WRONG = "sk-test-revoked-key-9876"


def test_a_refused_key_blocks_the_resume_and_an_accepted_one_reports_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offline_env(monkeypatch, KEY)
    root, ws = tmp_path / "sessions", tmp_path / "ws"
    ws.mkdir()
    with FakeDeepSeek([Reply.text("hello"), Reply.text("again")], api_key=KEY) as model:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", model.base_url)
        ran = cli(root, "run", "say hello", "-w", str(ws), "--json")
        session_id = json.loads(ran.stdout.strip().splitlines()[-1])["session"]
        monkeypatch.setenv("DEEPSEEK_API_KEY", WRONG)
        refused = cli(root, "resume", session_id, "-w", str(ws), "--json")
        chats_after_refusal = len(model.requests)
        checked = cli(root, "check", session_id, "-w", str(ws), "--credentials", "--json")
        monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
        accepted = cli(root, "resume", session_id, "-w", str(ws), "--json")
        listings = [r.header("authorization") for r in model.model_listings]
        monkeypatch.delenv("DEEPSEEK_API_KEY")
        missing = cli(root, "check", session_id, "-w", str(ws), "--credentials", "--json")
        unasked = cli(root, "check", session_id, "-w", str(ws), "--json")
    assert refused.exit_code == 3, refused.output
    document = json.loads(refused.stdout)
    (finding,) = [f for f in document["check"]["findings"] if f["kind"] == "credentials-rejected"]
    assert finding["severity"] == "block" and finding["evidence"]["httpStatus"] == 401
    assert chats_after_refusal == 1  # only the first run's request: the resume sent nothing
    assert checked.exit_code == 1 and "credentials-rejected" in checked.stdout
    assert accepted.exit_code == 0, accepted.output
    assert not [f for f in json.loads(accepted.stdout)["check"]["findings"] if "credentials" in f["kind"]]
    assert listings == [f"Bearer {WRONG}", f"Bearer {WRONG}", f"Bearer {KEY}"]
    assert missing.exit_code == 1 and [f["kind"] for f in json.loads(missing.stdout)["findings"]] == [
        "credentials-missing"
    ]
    assert unasked.exit_code == 0 and "credentials" in json.loads(unasked.stdout)["skipped"]
    for path in (p for p in root.rglob("*") if p.is_file()):
        assert KEY.encode() not in path.read_bytes() and WRONG.encode() not in path.read_bytes(), path
