"""``capture_baseline``: the workspace/baseline data for real git repositories and plain
directories, and the two log-only events surviving a store round trip."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import harness
from harness.recovery import (
    RECOVERY_CHECK,
    WORKSPACE_BASELINE,
    capture_baseline,
    check_world,
    record_baseline,
    record_report,
)
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.tools.registry import default_tools
from tests.recovery.helpers import agent_turn_async, git, make_repo, write_files


def test_a_clean_repository_records_its_head_branch_and_a_clean_tree(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.txt": "alpha\n"})
    baseline = capture_baseline(ws)
    assert baseline == {
        "root": os.path.realpath(ws),
        "git": {"head": git(ws, "rev-parse", "HEAD"), "dirty": False, "branch": "main"},
    }


def test_edits_staged_changes_and_untracked_files_make_it_dirty_ignored_files_do_not(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.txt": "alpha\n", ".gitignore": "*.log\n"})
    (ws / "build.log").write_text("ignored\n")
    assert capture_baseline(ws)["git"]["dirty"] is False
    (ws / "a.txt").write_text("edited\n")
    assert capture_baseline(ws)["git"]["dirty"] is True
    git(ws, "add", "a.txt")
    assert capture_baseline(ws)["git"]["dirty"] is True
    git(ws, "reset", "-q", "--hard")
    (ws / "new.txt").write_text("untracked\n")
    assert capture_baseline(ws)["git"]["dirty"] is True


def test_a_detached_head_has_no_branch(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.txt": "alpha\n"})
    git(ws, "checkout", "-q", "--detach")
    assert capture_baseline(ws)["git"] == {"head": git(ws, "rev-parse", "HEAD"), "dirty": False}


def test_a_repository_without_commits_has_a_null_head(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("alpha\n")
    assert capture_baseline(ws)["git"] == {"head": None, "dirty": True, "branch": "main"}


def test_a_plain_directory_has_no_git(tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    assert capture_baseline(ws) == {"root": os.path.realpath(ws), "git": None}


def test_without_git_on_the_path_the_baseline_still_comes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_repo(tmp_path / "ws", {"a.txt": "alpha\n"})
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert capture_baseline(ws) == {"root": os.path.realpath(ws), "git": None}


def test_a_subdirectory_workspace_sees_the_repository_head_but_only_its_own_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"sub/a.txt": "alpha\n", "other.txt": "x\n"})
    (repo / "other.txt").write_text("edited outside the workspace\n")
    baseline = capture_baseline(repo / "sub")
    assert baseline["root"] == os.path.realpath(repo / "sub")
    assert baseline["git"] == {"head": git(repo, "rev-parse", "HEAD"), "dirty": False, "branch": "main"}
    write_files(repo, {"sub/b.txt": "new\n"})
    assert capture_baseline(repo / "sub")["git"]["dirty"] is True


def test_a_symlinked_workspace_is_recorded_by_its_real_path(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.txt": "alpha\n"})
    link = tmp_path / "link"
    link.symlink_to(ws)
    assert capture_baseline(link)["root"] == os.path.realpath(ws)


def test_both_events_are_ignorable_and_survive_a_jsonl_round_trip(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.txt": "alpha\n"})
    root = tmp_path / "sessions"

    async def write() -> tuple[str, list[dict[str, object]]]:
        store = SessionStore(JsonlBackend(root))
        try:
            session = await store.create(cwd=str(ws))
            await agent_turn_async(
                session, ws, [("read_file", {"path": "a.txt"})], baseline=False, checkpoint=store.flush
            )
            baseline = record_baseline(session, ws)
            report = check_world(session, ws, default_tools(), None)
            checked = record_report(session, report)
            await store.flush(session)
            return session.id, [baseline.to_json(), checked.to_json()]
        finally:
            await store.close()

    async def read(session_id: str) -> harness.Session:
        store = SessionStore(JsonlBackend(root))
        try:
            return await store.load(session_id)
        finally:
            await store.close()

    session_id, written = asyncio.run(write())
    loaded = asyncio.run(read(session_id))
    kept = [e.to_json() for e in loaded.events if e.type in (WORKSPACE_BASELINE, RECOVERY_CHECK)]
    assert kept == written
    assert all(item["ignorable"] is True for item in kept)
    assert kept[0]["data"]["git"]["head"] == git(ws, "rev-parse", "HEAD")
