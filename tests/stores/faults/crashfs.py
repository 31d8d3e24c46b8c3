"""Simulated power loss (the approach of ALICE, OSDI '14): record the file operations a
``JsonlBackend`` makes through its ``FileOps`` seam, then build the states a POSIX file system
may be left in by a crash at any point, and write each out as a directory tree to open.

The persistence model (a conservative reading of POSIX, per ALICE's "abstract persistence
model"):

* a file's data operations (write, pwrite, ftruncate) are durable up to its last completed
  fsync/fdatasync; of the later ones any *prefix* may have reached the disk, the last of them
  possibly torn (only its first bytes written);
* a directory's entry operations (mkdir, link, unlink in it) are durable up to its last
  completed fsync; of the later ones any prefix may have happened: a link that may or may not
  be there, an entry not yet synced;
* files and directories persist independently of each other; a name whose directory's own
  entry did not persist is gone with it.

Not modelled (the limits): reordering *within* one file's unsynced writes (ext4
``data=writeback`` may persist a later block before an earlier one, or a grown size before
the data, leaving zeros), garbage or zeroed sectors, a failing fsync that loses synced data,
and file systems that persist less than POSIX requires after a successful fsync. A crash
state is what a kernel and disk that keep their promises may leave, no more.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.stores.jsonl.fileio import FileOps


@dataclass
class Op:
    """One recorded operation: ``kind`` on inode ``target`` (data ops) or directory ``target``
    (entry ops); ``name``/``inode`` for entries, ``data``/``offset``/``size`` for data."""

    kind: str
    target: str
    name: str = ""
    inode: int = -1
    data: bytes = b""
    offset: int = -1  # -1: append at the end
    size: int = 0


@dataclass
class Recording:
    """What a workload did: the ops, and after which op each durable event count was returned."""

    ops: list[Op] = field(default_factory=list)
    returned: list[tuple[int, int]] = field(default_factory=list)  # (ops done, events durable)

    def durable_at(self, crash: int) -> int:
        """Events a returned call had promised durable when the crash came after ``crash`` ops."""
        return max((events for done, events in self.returned if done <= crash), default=0)


class RecordingOps(FileOps):
    """Performs every call for real and records it (inodes numbered in order of creation)."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._fds: dict[int, tuple[int, bool]] = {}  # fd -> (inode, append mode)
        self._inodes: dict[str, int] = {}  # path -> inode
        self._next = 0

    def _inode(self, path: str) -> int:
        if path not in self._inodes:
            self._inodes[path] = self._next
            self._next += 1
        return self._inodes[path]

    def _add(self, op: Op) -> None:
        self.recording.ops.append(op)

    def open(self, path: str, flags: int, mode: int = 0o600) -> int:
        created = bool(flags & os.O_CREAT) and not os.path.exists(path)
        fd = super().open(path, flags, mode)
        if created:
            self._inodes.pop(path, None)
            inode = self._inode(path)
            self._add(Op("link", os.path.dirname(path), name=os.path.basename(path), inode=inode))
        self._fds[fd] = (self._inode(path), bool(flags & os.O_APPEND))
        return fd

    def close(self, fd: int) -> None:
        self._fds.pop(fd, None)
        super().close(fd)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        written = super().write(fd, data)
        inode, _ = self._fds[fd]
        offset = os.lseek(fd, 0, os.SEEK_CUR) - written
        self._add(Op("write", str(inode), data=bytes(data[:written]), offset=offset))
        return written

    def pwrite(self, fd: int, data: bytes | memoryview, offset: int) -> int:
        written = super().pwrite(fd, data, offset)
        inode, _ = self._fds[fd]
        self._add(Op("write", str(inode), data=bytes(data[:written]), offset=offset))
        return written

    def ftruncate(self, fd: int, size: int) -> None:
        super().ftruncate(fd, size)
        inode, _ = self._fds[fd]
        self._add(Op("truncate", str(inode), size=size))

    def fsync(self, fd: int, *, directory: bool = False) -> None:
        super().fsync(fd, directory=directory)
        if fd in self._fds:
            self._add(Op("sync", str(self._fds[fd][0])))

    def fsync_dir(self, path: str) -> None:
        super().fsync_dir(path)
        self._add(Op("sync", path))

    def mkdir(self, path: str, mode: int) -> None:
        super().mkdir(path, mode)
        self._add(Op("mkdir", os.path.dirname(path), name=os.path.basename(path)))

    def link(self, source: str, target: str) -> None:
        super().link(source, target)
        inode = self._inode(source)
        self._inodes[target] = inode
        self._add(Op("link", os.path.dirname(target), name=os.path.basename(target), inode=inode))

    def unlink(self, path: str) -> None:
        super().unlink(path)
        self._inodes.pop(path, None)
        self._add(Op("unlink", os.path.dirname(path), name=os.path.basename(path)))


def _choices(ops: list[tuple[int, Op]], synced: int, crash: int) -> Iterator[tuple[int, int | None]]:
    """For one file or directory: (how many of its unsynced ops persist, torn length of the last
    one or ``None``) for every choice the model allows."""
    unsynced = [op for index, op in ops if synced < index < crash]
    for count in range(len(unsynced) + 1):
        yield count, None
        last = unsynced[count - 1] if count else None
        if last is not None and last.kind == "write" and len(last.data) > 1:
            # torn: its first byte, its first half, all but its last byte (a line without its newline)
            for tear in sorted({1, len(last.data) // 2, len(last.data) - 1} - {0, len(last.data)}):
                yield count, tear


def crash_states(recording: Recording, crash: int) -> Iterator[dict[str, bytes | None]]:
    """Every state after a crash once ``crash`` ops were done: ``{relative path: content}``
    (``None`` for a directory), paths relative to the directories the workload started in."""
    ops = recording.ops[:crash]
    by_target: dict[str, list[tuple[int, Op]]] = {}
    last_sync: dict[str, int] = {}
    for index, op in enumerate(ops):
        if op.kind == "sync":
            last_sync[op.target] = index
        else:
            by_target.setdefault(op.target, []).append((index, op))
    targets = sorted(by_target)
    options = [list(_choices(by_target[t], last_sync.get(t, -1), crash)) for t in targets]
    for combination in itertools.product(*options):
        kept: set[int] = set()
        torn: dict[int, int] = {}
        for target, (count, tear) in zip(targets, combination, strict=True):
            durable = [index for index, _ in by_target[target] if index <= last_sync.get(target, -1)]
            later = [index for index, _ in by_target[target] if index > last_sync.get(target, -1)]
            kept.update(durable)
            kept.update(later[:count])
            if tear is not None:
                torn[later[count - 1]] = tear
        yield _materialize(ops, kept, torn)


def _materialize(ops: list[Op], kept: set[int], torn: dict[int, int]) -> dict[str, bytes | None]:
    contents: dict[int, bytearray] = {}
    entries: dict[str, dict[str, int | None]] = {}  # directory -> name -> inode (None: directory)
    for index, op in enumerate(ops):
        if index not in kept:
            continue
        if op.kind == "write":
            content = contents.setdefault(int(op.target), bytearray())
            data = op.data[: torn[index]] if index in torn else op.data
            start = len(content) if op.offset < 0 else op.offset
            if len(content) < start:
                content.extend(b"\0" * (start - len(content)))
            content[start : start + len(data)] = data
        elif op.kind == "truncate":
            content = contents.setdefault(int(op.target), bytearray())
            del content[op.size :]
            content.extend(b"\0" * (op.size - len(content)))
        elif op.kind == "mkdir":
            entries.setdefault(op.target, {})[op.name] = None
        elif op.kind == "link":
            entries.setdefault(op.target, {})[op.name] = op.inode
        elif op.kind == "unlink":
            entries.setdefault(op.target, {}).pop(op.name, None)
    tree: dict[str, bytes | None] = {}

    def visible(directory: str) -> bool:
        parent, name = os.path.dirname(directory), os.path.basename(directory)
        if parent not in entries and parent != directory:
            return True  # outside what the workload created: taken as durable
        return name in entries.get(parent, {}) and visible(parent)

    for directory, names in entries.items():
        if not visible(directory):
            continue
        for name, inode in names.items():
            path = os.path.join(directory, name)
            tree[path] = None if inode is None else bytes(contents.get(inode, b""))
    return tree


def write_tree(tree: dict[str, bytes | None], source_root: Path, target_root: Path) -> None:
    """Write a crash state's files under ``target_root`` (paths re-rooted from ``source_root``)."""
    base = str(source_root)
    for path in sorted(tree, key=len):
        if os.path.commonpath([path, base]) != base:
            continue
        relative = os.path.relpath(path, base)
        where = target_root / relative
        content = tree[path]
        if content is None:
            where.mkdir(parents=True, exist_ok=True)
        else:
            where.parent.mkdir(parents=True, exist_ok=True)
            where.write_bytes(content)
