"""Workspace drift between runs: files the session read or wrote edited, deleted or
created behind its back, git HEAD moved, the tree dirtied or cleaned, the workspace moved
— each raised, and each absent when nothing changed."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

import harness
from harness.recovery import FindingKind
from tests.recovery.helpers import agent_turn, check, commit_all, git, kinds, make_repo, restart

FILES = {"a.txt": "alpha\n", "b.txt": "beta\n", "src/c.py": "print('c')\n"}
WORKSPACE_KINDS = (
    FindingKind.WORKSPACE_MOVED,
    FindingKind.FILE_CHANGED,
    FindingKind.FILE_VANISHED,
    FindingKind.GIT_HEAD_MOVED,
    FindingKind.GIT_DIRTY,
    FindingKind.BASELINE_MISSING,
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def first_run(ws: Path) -> harness.Session:
    """A session that read a.txt and src/c.py and created out.txt, then stopped cleanly."""
    session = harness.Session.create()
    agent_turn(
        session,
        ws,
        [
            ("read_file", {"path": "a.txt"}),
            ("read_file", {"path": "src/c.py"}),
            ("write_file", {"path": "out.txt", "content": "result\n"}),
        ],
    )
    return restart(session)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "ws", FILES)


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    ws = tmp_path / "plain"
    for name, text in FILES.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    return ws


@pytest.mark.parametrize("kind", WORKSPACE_KINDS)
def test_nothing_changed_in_a_repository_means_no_workspace_finding(repo: Path, kind: FindingKind) -> None:
    session = first_run(repo)
    assert "out.txt" in git(repo, "status", "--porcelain")  # the session's own write dirties the tree
    assert check(session, repo).of_kind(kind) == ()


@pytest.mark.parametrize("kind", WORKSPACE_KINDS)
def test_nothing_changed_in_a_plain_directory_means_no_workspace_finding(
    plain: Path, kind: FindingKind
) -> None:
    assert check(first_run(plain), plain).of_kind(kind) == ()


@pytest.mark.parametrize("where", ["repo", "plain"])
def test_a_file_the_session_read_and_someone_edited_is_changed(
    where: str, request: pytest.FixtureRequest
) -> None:
    ws: Path = request.getfixturevalue(where)
    session = first_run(ws)
    (ws / "a.txt").write_text("alpha, edited by hand\n")
    (item,) = check(session, ws).of_kind(FindingKind.FILE_CHANGED)
    assert item.severity == "warn"
    assert item.evidence["path"] == "a.txt"
    assert item.evidence["access"] == "read"
    assert item.evidence["tool"] == "read_file"
    assert item.evidence["recorded"] == sha("alpha\n")
    assert item.evidence["now"] == sha("alpha, edited by hand\n")
    assert item.evidence["shellCallsAfter"] == 0


def test_a_file_the_session_wrote_and_someone_edited_is_changed(repo: Path) -> None:
    session = first_run(repo)
    (repo / "out.txt").write_text("overwritten\n")
    (item,) = check(session, repo).of_kind(FindingKind.FILE_CHANGED)
    assert (item.evidence["path"], item.evidence["access"], item.evidence["tool"]) == (
        "out.txt",
        "write",
        "write_file",
    )
    assert item.evidence["recorded"] == sha("result\n")


def test_a_file_the_session_changed_itself_with_run_shell_is_flagged_with_a_hint(repo: Path) -> None:
    session = harness.Session.create()
    agent_turn(
        session,
        repo,
        [("read_file", {"path": "a.txt"}), ("run_shell", {"command": "printf more >> a.txt"})],
    )
    (item,) = check(restart(session), repo).of_kind(FindingKind.FILE_CHANGED)
    assert item.evidence["shellCallsAfter"] == 1
    assert "run_shell" in item.summary


def test_a_deleted_file_is_vanished_and_not_also_counted_as_dirt(repo: Path) -> None:
    session = first_run(repo)
    (repo / "src" / "c.py").unlink()
    report = check(session, repo)
    (item,) = report.of_kind(FindingKind.FILE_VANISHED)
    assert item.evidence["path"] == "src/c.py"
    assert item.evidence["now"] is None
    assert report.of_kind(FindingKind.FILE_CHANGED) == ()
    assert report.of_kind(FindingKind.GIT_DIRTY) == ()  # the file check already reports it


def test_a_file_replaced_by_a_link_out_of_the_workspace_cannot_be_checked(repo: Path, tmp_path: Path) -> None:
    session = first_run(repo)
    outside = tmp_path / "outside.txt"
    outside.write_text("alpha\n")
    (repo / "a.txt").unlink()
    (repo / "a.txt").symlink_to(outside)
    (item,) = check(session, repo).of_kind(FindingKind.FILE_CHANGED)
    assert item.evidence["now"] is None
    assert "outside the workspace" in item.evidence["problem"]


def test_a_commit_between_runs_moves_head(repo: Path) -> None:
    session = first_run(repo)
    before = git(repo, "rev-parse", "HEAD")
    (repo / "b.txt").write_text("beta, committed later\n")
    after = commit_all(repo, "second")
    report = check(session, repo)
    (item,) = report.of_kind(FindingKind.GIT_HEAD_MOVED)
    assert item.severity == "warn"
    assert (item.evidence["before"], item.evidence["now"]) == (before, after)
    assert (item.evidence["added"], item.evidence["dropped"]) == (1, 0)
    assert "1 new commit" in item.summary
    assert report.of_kind(FindingKind.FILE_CHANGED) == ()  # b.txt was never read by the session


def test_a_reset_to_an_older_commit_is_reported_as_taken_back(repo: Path) -> None:
    (repo / "b.txt").write_text("beta 2\n")
    commit_all(repo, "second")
    session = first_run(repo)
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    (item,) = check(session, repo).of_kind(FindingKind.GIT_HEAD_MOVED)
    assert (item.evidence["added"], item.evidence["dropped"]) == (0, 1)
    assert "taken back" in item.summary


def test_another_branch_checked_out_is_reported_with_both_names(repo: Path) -> None:
    session = first_run(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "b.txt").write_text("feature work\n")
    commit_all(repo, "feature")
    (item,) = check(session, repo).of_kind(FindingKind.GIT_HEAD_MOVED)
    assert (item.evidence["branchBefore"], item.evidence["branchNow"]) == ("main", "feature")


def test_a_repository_that_is_gone_is_reported(repo: Path) -> None:
    session = first_run(repo)
    shutil.rmtree(repo / ".git")
    (item,) = check(session, repo).of_kind(FindingKind.GIT_HEAD_MOVED)
    assert item.evidence["now"] is None


def test_files_the_session_never_touched_dirty_the_tree(repo: Path) -> None:
    session = first_run(repo)
    (repo / "b.txt").write_text("beta, edited by hand\n")
    (repo / "notes").mkdir()
    (repo / "notes" / "todo.md").write_text("new\n")
    (item,) = check(session, repo).of_kind(FindingKind.GIT_DIRTY)
    assert item.severity == "warn"
    assert item.evidence["paths"] == ["b.txt", "notes/todo.md"]  # out.txt is the session's own
    assert (item.evidence["before"], item.evidence["now"]) == ("clean", "dirty")


def test_uncommitted_changes_reverted_between_runs_are_reported(repo: Path) -> None:
    (repo / "b.txt").write_text("work in progress\n")  # dirty before the session starts
    session = harness.Session.create()
    agent_turn(session, repo, [("read_file", {"path": "a.txt"})])
    git(repo, "checkout", "-q", "--", "b.txt")
    (item,) = check(restart(session), repo).of_kind(FindingKind.GIT_DIRTY)
    assert (item.evidence["before"], item.evidence["now"]) == ("dirty", "clean")


def test_a_moved_workspace_is_reported_and_its_files_checked_at_the_new_place(
    repo: Path, tmp_path: Path
) -> None:
    session = first_run(repo)
    moved = repo.rename(tmp_path / "moved")
    report = check(session, moved)
    (item,) = report.of_kind(FindingKind.WORKSPACE_MOVED)
    assert item.severity == "warn"
    assert item.evidence["recorded"] == str(repo)
    assert item.evidence["now"] == str(moved)
    assert report.of_kind(FindingKind.FILE_CHANGED) == report.of_kind(FindingKind.FILE_VANISHED) == ()


def test_a_missing_workspace_blocks(repo: Path, tmp_path: Path) -> None:
    session = first_run(repo)
    report = check(session, tmp_path / "nowhere")
    (item,) = report.of_kind(FindingKind.WORKSPACE_MOVED)
    assert item.severity == "block" and report.blocking


def test_a_log_without_a_baseline_says_git_cannot_be_compared(repo: Path) -> None:
    session = harness.Session.create()
    agent_turn(session, repo, [("read_file", {"path": "a.txt"})], baseline=False)
    git(repo, "commit", "-q", "--allow-empty", "-m", "unseen")
    report = check(restart(session), repo)
    assert kinds(report) == [FindingKind.BASELINE_MISSING]
    assert report.findings[0].severity == "info"


def test_a_session_that_never_ran_a_turn_needs_no_baseline(repo: Path) -> None:
    assert kinds(check(restart(harness.Session.create()), repo)) == []
