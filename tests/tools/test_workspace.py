"""Workspace confinement: paths resolve inside the root or are refused with PATH_ESCAPE."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from harness.tools.base import ToolError
from harness.tools.workspace import Workspace, file_sha256


def build_world(base: Path) -> tuple[Path, Path]:
    """A workspace ``root`` beside an ``outside`` directory, with links of every kind."""
    root, outside = base / "root", base / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "inside.txt").write_text("inside\n")
    (root / "sub" / "a.txt").write_text("a\n")
    (outside / "secret.txt").write_text("secret\n")
    os.symlink("sub", root / "link_in")
    os.symlink("inside.txt", root / "link_file_in")
    os.symlink("../outside", root / "link_out")
    os.symlink("../outside/secret.txt", root / "link_file_out")
    os.symlink("../outside/new.txt", root / "dangling_out")
    os.symlink(str(outside), root / "abs_link_out")
    os.symlink("link_out", root / "chain_out")
    return root, outside


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    return build_world(tmp_path)


@pytest.fixture(scope="module")
def shared_world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_world(tmp_path_factory.mktemp("ws"))


def test_resolves_relative_absolute_and_root(world: tuple[Path, Path]) -> None:
    root, _ = world
    workspace = Workspace(root)
    real_root = Path(os.path.realpath(root))
    assert workspace.root == real_root
    assert workspace.resolve("inside.txt") == real_root / "inside.txt"
    assert workspace.resolve(str(root / "sub" / "a.txt")) == real_root / "sub" / "a.txt"
    assert workspace.resolve(".") == real_root
    assert workspace.resolve("sub/../inside.txt") == real_root / "inside.txt"
    assert workspace.resolve("new/deeper/file.txt") == real_root / "new" / "deeper" / "file.txt"


def test_links_inside_the_root_are_followed(world: tuple[Path, Path]) -> None:
    root, _ = world
    workspace = Workspace(root)
    assert workspace.relative(workspace.resolve("link_in/a.txt")) == "sub/a.txt"
    assert workspace.relative(workspace.resolve("link_file_in")) == "inside.txt"
    # A link to a directory that leaves and re-enters through '..' stays inside.
    assert workspace.relative(workspace.resolve("link_in/../inside.txt")) == "inside.txt"


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "sub/../../outside",
        "..",
        "link_out",
        "link_out/secret.txt",
        "link_out/new/deeper.txt",
        "link_file_out",
        "dangling_out",
        "abs_link_out/secret.txt",
        "chain_out/secret.txt",
        "link_in/../link_out/x",
    ],
)
def test_escapes_are_refused(world: tuple[Path, Path], path: str) -> None:
    root, _ = world
    with pytest.raises(ToolError) as caught:
        Workspace(root).resolve(path)
    assert caught.value.code == "PATH_ESCAPE"
    assert repr(path) in caught.value.message
    assert "outside the workspace" in caught.value.message


def test_absolute_paths_outside_are_refused(world: tuple[Path, Path]) -> None:
    root, outside = world
    workspace = Workspace(root)
    for path in (str(outside / "secret.txt"), "/", "/etc/passwd", str(root) + "-sibling/x"):
        with pytest.raises(ToolError) as caught:
            workspace.resolve(path)
        assert caught.value.code == "PATH_ESCAPE"
        assert "absolute path" in caught.value.message


def test_messages_say_why(world: tuple[Path, Path]) -> None:
    root, _ = world
    workspace = Workspace(root)
    with pytest.raises(ToolError) as dots:
        workspace.resolve("../x")
    assert "'..'" in dots.value.message
    with pytest.raises(ToolError) as link:
        workspace.resolve("link_out/x")
    assert "symbolic link" in link.value.message


def test_a_root_given_through_a_link(world: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = world
    os.symlink(root, tmp_path / "root_link")
    workspace = Workspace(tmp_path / "root_link")
    assert workspace.root == Path(os.path.realpath(root))
    assert workspace.resolve(str(tmp_path / "root_link" / "inside.txt")) == workspace.root / "inside.txt"


def test_bad_paths_and_roots(world: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = world
    workspace = Workspace(root)
    for path in ("", "a\x00b"):
        with pytest.raises(ToolError) as caught:
            workspace.resolve(path)
        assert caught.value.code == "INVALID_ARGUMENTS"
    with pytest.raises(ToolError) as missing:
        Workspace(tmp_path / "nowhere")
    assert missing.value.code == "WORKSPACE_MISSING"


def test_relative(world: tuple[Path, Path]) -> None:
    root, outside = world
    workspace = Workspace(root)
    assert workspace.relative(workspace.root) == "."
    assert workspace.relative(workspace.root / "sub" / "a.txt") == "sub/a.txt"
    with pytest.raises(ToolError) as caught:
        workspace.relative(os.path.realpath(outside))
    assert caught.value.code == "PATH_ESCAPE"


def test_sha256_helpers(world: tuple[Path, Path]) -> None:
    root, _ = world
    workspace = Workspace(root)
    expected = hashlib.sha256(b"inside\n").hexdigest()
    assert file_sha256(root / "inside.txt") == expected
    assert workspace.sha256("inside.txt") == expected
    assert workspace.sha256("link_file_in") == expected
    assert workspace.sha256("missing.txt") is None
    assert workspace.sha256("sub") is None
    assert file_sha256(root / "inside.txt" / "below") is None
    with pytest.raises(ToolError):
        workspace.sha256("link_file_out")


SEGMENTS = ["..", ".", "", "sub", "link_in", "link_out", "link_file_out", "inside.txt", "new", "dangling_out"]


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6), absolute=st.booleans())
def test_never_resolves_outside(shared_world: tuple[Path, Path], parts: list[str], absolute: bool) -> None:
    root, _ = shared_world
    workspace = Workspace(root)
    path = "/".join(parts)
    if absolute:
        path = str(root) + "/" + path
    if not path:
        return
    expected = os.path.realpath(os.path.join(workspace.root, path))
    inside = expected == str(workspace.root) or expected.startswith(str(workspace.root) + os.sep)
    try:
        resolved = workspace.resolve(path)
    except ToolError as error:
        assert error.code == "PATH_ESCAPE"
        assert not inside
        return
    assert inside
    assert str(resolved) == expected
