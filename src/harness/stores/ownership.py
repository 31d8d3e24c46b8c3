"""Ownership: one live writer per session, and the lock files that make it so for files.

Every backend makes a session's writer its **owner** through ``claim`` and lets it go
through ``unclaim`` (``SessionStore.create``/``load`` and ``release``/``close`` call them).
A second claim from any other store, process or host raises ``SessionInUse`` naming the
owner, and writes nothing. ``claim(..., take_over=True)`` fences the owner off instead:
its next write raises ``LeaseLost`` naming who took over. ``owner`` tells a reader who
holds a session now, without taking anything.

``LockFiles`` is the mechanism of the file backends (JSONL, harness SQLite, dsh SQLite):
one small lock file per session in a directory of the backend's (``<root>/.harness-owners``
for JSONL, ``<database>-owners`` for SQLite), named by a hash of the id. The owner holds an
open-file-description lock (Linux ``F_OFD_SETLK``; ``flock`` elsewhere) on it for as long
as it owns the session. The kernel drops the lock when the process dies, however it dies,
so "the owner is gone" is exact and needs no clock. The file holds the owner's record
(pid, host, store id, since when), written in one ``pwrite`` of a fixed size.

A takeover cannot take a lock a live process holds. It writes a new lock file, locks it and
renames it over the old name while holding the backend's write lock (the log's ``flock`` for
JSONL, a ``BEGIN IMMEDIATE`` transaction for SQLite). Every write of an owner checks, under
that same write lock, that the name still points at the file it locked (one ``stat``); once
it does not, the write raises ``LeaseLost`` and nothing is written. The old owner's lock on
the replaced file then guards nothing.

Limits: locks on network file systems (NFS, SMB) are only as good as the server's lock
manager, and a host that is cut off may keep a lock its process no longer uses; keep a
root that several hosts share on PostgreSQL instead.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import secrets
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import replace
from typing import Final, Protocol

import msgspec

from harness.errors import LeaseLost, SessionInUse, SessionOwner, StorageError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "Claim",
    "LockFiles",
    "MemoryClaims",
    "OwningBackend",
    "new_owner",
    "owner_gone_note",
    "writing_as",
]

_WRITER: ContextVar[str | None] = ContextVar("harness_writer", default=None)


@contextlib.contextmanager
def writing_as(store: str | None) -> Iterator[None]:
    """Tell the backend which store a write comes from, for the writes made inside the block
    (the write-behind and the load's repair do). A backend object serves several stores of
    one process; this is how it tells their writes apart when one took over from another."""
    token = _WRITER.set(store)
    try:
        yield
    finally:
        _WRITER.reset(token)


def current_writer() -> str | None:
    """The store ``writing_as`` named for the running write, if any."""
    return _WRITER.get()


RECORD_SIZE: Final = 1024
"""A lock file's record: the owner's JSON, padded with spaces, one ``pwrite``."""
_RETRIES: Final = 50
_OFD: Final = fcntl is not None and hasattr(fcntl, "F_OFD_SETLK")
_FLOCK_STRUCT: Final = struct.Struct("hhqqi4x")  # struct flock on Linux (x86-64, arm64)

Fence = Callable[[Callable[[], None]], None]
"""Runs its argument while holding the backend's write lock on the session."""


class Claim(msgspec.Struct, frozen=True):
    """What ``claim`` did: ``owner`` is the record now held; ``previous`` the record the last
    owner left (one that died without releasing, or the one ``take_over`` fenced off), if
    any; ``taken_over`` is true when a live owner was fenced off."""

    owner: SessionOwner
    previous: SessionOwner | None = None
    taken_over: bool = False


class OwningBackend(Protocol):
    """The ownership half of the ``Backend`` protocol (every backend implements it)."""

    async def claim(self, session_id: str, owner: SessionOwner, *, take_over: bool = False) -> Claim:
        """Make ``owner`` the session's one live writer. ``SessionInUse`` when another live
        owner holds it and ``take_over`` is false; with ``take_over`` that owner is fenced
        off first (its next write raises ``LeaseLost``). Claiming again what this backend
        holds for the same store is a no-op."""
        ...

    async def unclaim(self, session_id: str) -> None:
        """Give the session up (a no-op when this backend does not own it)."""
        ...

    async def owner(self, session_id: str) -> SessionOwner | None:
        """The session's live owner, or ``None`` when no live writer holds it. Reads only."""
        ...


def new_owner(store: str) -> SessionOwner:
    """The record of a new owner in this process: pid, host name, ``store`` and now."""
    now = int(time.time() * 1000)
    return SessionOwner(pid=os.getpid(), host=socket.gethostname(), store=store, since=now)


def owner_gone_note(claim: Claim) -> dict[str, object]:
    """The data of the ``harness/repair`` record a crash repair commits after its closers
    (the session adds ``closedTurn``): whose turn it closed and why it could (the owner was
    gone, or was taken over)."""
    return {
        "reason": "taken-over" if claim.taken_over else "owner-gone",
        "previousOwner": None if claim.previous is None else _plain(claim.previous),
        "repairedBy": _plain(claim.owner),
    }


def _plain(owner: SessionOwner) -> dict[str, object]:
    data = owner.to_json()
    data.pop("tookOver", None)
    return data


# ---- the memory backend's claims ----------------------------------------------------------


class MemoryClaims:
    """Ownership within one process: one owner record per id, kept by the backend object."""

    def __init__(self) -> None:
        self._owners: dict[str, SessionOwner] = {}
        self._fenced: dict[str, dict[str, SessionOwner]] = {}  # id -> store -> who fenced it

    def claim(self, session_id: str, owner: SessionOwner, take_over: bool) -> Claim:
        current = self._owners.get(session_id)
        if current is not None and current.store == owner.store:
            return Claim(current)
        if current is not None and not take_over:
            raise in_use(session_id, current)
        mine = owner if current is None else replace(owner, took_over=replace(current, took_over=None))
        if current is not None and current.store is not None:
            self._fenced.setdefault(session_id, {})[current.store] = mine
        self._owners[session_id] = mine
        if owner.store is not None:
            self._fenced.get(session_id, {}).pop(owner.store, None)
        return Claim(mine, current, taken_over=current is not None)

    def unclaim(self, session_id: str, store: str | None) -> None:
        current = self._owners.get(session_id)
        if current is not None and current.store == store:
            del self._owners[session_id]

    def owner(self, session_id: str) -> SessionOwner | None:
        return self._owners.get(session_id)

    def check(self, session_id: str, store: str | None) -> None:
        """``LeaseLost`` when ``store`` was fenced off this session; ``SessionInUse`` when
        another store owns it. A write that names no store is the backend's own user's."""
        if store is None:
            return  # a write through the backend object itself, not through a store
        current = self._owners.get(session_id)
        if current is not None and current.store != store and store not in self._fenced.get(session_id, {}):
            raise in_use(session_id, current)
        by = self._fenced.get(session_id, {}).get(store)
        if by is not None:
            raise lost(session_id, by)

    def forget(self, session_id: str) -> None:
        self._owners.pop(session_id, None)
        self._fenced.pop(session_id, None)


# ---- the file backends' lock files -----------------------------------------------------------


class _Held:
    __slots__ = ("dev", "fd", "ino", "owner")

    def __init__(self, fd: int, dev: int, ino: int, owner: SessionOwner) -> None:
        self.fd = fd
        self.dev = dev
        self.ino = ino
        self.owner = owner


class LockFiles:
    """The lock files of one backend's sessions, in ``directory`` (made 0700 on first claim).

    The methods are blocking: the backends call them from their I/O threads.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._held: dict[str, _Held] = {}
        self._fenced: dict[tuple[str, str], SessionOwner] = {}  # (id, store) -> who took over
        self._mutex = threading.Lock()

    def path(self, session_id: str) -> str:
        """The lock file of ``session_id`` (a hash of the id: any id makes a short name)."""
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return os.path.join(self.directory, digest + ".lock")

    def holds(self, session_id: str) -> bool:
        return session_id in self._held

    def held_owner(self, session_id: str) -> SessionOwner | None:
        held = self._held.get(session_id)
        return None if held is None else held.owner

    def claim(self, session_id: str, owner: SessionOwner, take_over: bool, fence: Fence) -> Claim:
        """See ``OwningBackend.claim``; ``fence`` runs the takeover's rename under the
        backend's write lock."""
        with self._mutex:
            held = self._held.get(session_id)
            if held is not None:
                if held.owner.store == owner.store:
                    return Claim(held.owner)
                if not take_over:
                    raise in_use(session_id, held.owner)
                # Another store of this backend object owns it: the lock stays, the owner changes.
                previous = held.owner
                held.owner = replace(owner, took_over=replace(previous, took_over=None))
                _write_record(held.fd, held.owner)
                if previous.store is not None:
                    self._fenced[(session_id, previous.store)] = held.owner
                return Claim(held.owner, previous, taken_over=True)
            try:
                os.makedirs(self.directory, mode=0o700, exist_ok=True)
            except OSError as error:
                raise StorageError(f"cannot create the lock directory {self.directory}: {error}") from error
            path = self.path(session_id)
            for _ in range(_RETRIES):
                claim = self._try_claim(session_id, path, owner, take_over, fence)
                if claim is not None:
                    return claim
            raise StorageError(f"could not claim session {session_id!r}: its lock file {path} kept changing")

    def _try_claim(
        self, session_id: str, path: str, owner: SessionOwner, take_over: bool, fence: Fence
    ) -> Claim | None:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as error:
            raise StorageError(f"cannot open the lock file {path} of {session_id!r}: {error}") from error
        keep = False
        try:
            stat = os.fstat(fd)
            if not _try_lock(fd):
                current = read_record(fd)
                if not _names(path, stat):
                    return None  # replaced while we looked: look again
                if not take_over:
                    raise in_use(session_id, current)
                return self._take_over(session_id, path, owner, current, fence)
            if not _names(path, stat):
                return None  # removed or replaced before we locked it: look again
            previous = read_record(fd)
            _write_record(fd, owner)
            self._held[session_id] = _Held(fd, stat.st_dev, stat.st_ino, owner)
            keep = True
            return Claim(owner, previous)
        finally:
            if not keep:
                os.close(fd)

    def _take_over(
        self, session_id: str, path: str, owner: SessionOwner, current: SessionOwner | None, fence: Fence
    ) -> Claim:
        temp = f"{path}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        mine = owner if current is None else replace(owner, took_over=replace(current, took_over=None))
        try:
            if not _try_lock(fd):  # pragma: no cover - nobody else knows this name
                raise StorageError(f"cannot lock the new lock file {temp}")
            _write_record(fd, mine)
            stat = os.fstat(fd)
            fence(lambda: os.rename(temp, path))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            os.close(fd)
            raise
        self._held[session_id] = _Held(fd, stat.st_dev, stat.st_ino, mine)
        return Claim(mine, current, taken_over=True)

    def check(self, session_id: str, store: str | None = None) -> None:
        """Call under the backend's write lock before writing ``session_id``: ``LeaseLost``
        when this backend owned it and was taken over (or its lock file went); when it
        owns nothing of it, ``SessionInUse`` if another live owner holds it. ``store`` is
        the writing store (``current_writer()``), for a backend several stores share."""
        held = self._held.get(session_id)
        path = self.path(session_id)
        if store is not None:
            fenced = self._fenced.get((session_id, store))
            if fenced is not None:
                raise lost(session_id, fenced)
            if held is not None and held.owner.store != store:
                raise in_use(session_id, held.owner)
        if held is None:
            current = self.owner(session_id)
            if current is not None:
                raise in_use(session_id, current)
            return
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            raise LeaseLost(
                f"session {session_id!r} is no longer owned by this writer (its lock file {path} "
                "was removed): nothing was written"
            ) from None
        if (stat.st_dev, stat.st_ino) != (held.dev, held.ino):
            raise lost(session_id, self.owner(session_id))

    def release(self, session_id: str, *, remove: bool = True) -> None:
        """Give up the lock; its file is removed while still ours (``remove``)."""
        with self._mutex:
            held = self._held.pop(session_id, None)
            if held is None:
                return
            for key in [key for key in self._fenced if key[0] == session_id]:
                del self._fenced[key]
            try:
                if remove and _names(self.path(session_id), os.fstat(held.fd)):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.path(session_id))
            finally:
                os.close(held.fd)

    def release_all(self) -> None:
        for session_id in list(self._held):
            self.release(session_id)

    def owner(self, session_id: str) -> SessionOwner | None:
        """The live owner of ``session_id`` (its record), or ``None`` when nobody holds its lock."""
        held = self._held.get(session_id)
        if held is not None and _names(self.path(session_id), os.fstat(held.fd)):
            return held.owner  # still ours (a takeover renames another file over the name)
        try:
            fd = os.open(self.path(session_id), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise StorageError(f"cannot read the lock file of session {session_id!r}: {error}") from error
        try:
            if not _is_locked(fd):
                return None
            return read_record(fd) or SessionOwner(pid=None, host=None, store=None, since=None)
        finally:
            os.close(fd)


# ---- helpers ---------------------------------------------------------------------------------


def in_use(session_id: str, owner: SessionOwner | None) -> SessionInUse:
    who = owner.describe() if owner is not None else "another writer (its record is unreadable)"
    return SessionInUse(
        f"session {session_id!r} is in use by {who}: wait for it to finish, or take it over",
        owner=owner,
        session_id=session_id,
    )


def lost(
    session_id: str,
    by: SessionOwner | None,
    token: int | None = None,
    *,
    stored: int | None = None,
    written: str = "nothing was written",
) -> LeaseLost:
    """The ``LeaseLost`` of a writer fenced off by ``by``; ``written`` says what of its batch
    is stored (``stored``: the seq the log holds it up to)."""
    who = by.describe() if by is not None else "another writer"
    mine = f" (this writer's fencing token {token})" if token is not None else ""
    return LeaseLost(
        f"session {session_id!r} was taken over by {who}{mine}: {written}",
        token=token,
        by=by,
        stored=stored,
    )


def _names(path: str, stat: os.stat_result) -> bool:
    """True when ``path`` still names the file ``stat`` describes."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (stat.st_dev, stat.st_ino)


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` without waiting: False when another holds it."""
    assert fcntl is not None
    try:
        if _OFD:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK_STRUCT.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        else:  # pragma: no cover - not Linux
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise
    return True


def _is_locked(fd: int) -> bool:
    """True when a live holder has the lock on ``fd``'s file (nothing is taken on Linux)."""
    assert fcntl is not None
    if _OFD:
        got = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _FLOCK_STRUCT.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        return bool(_FLOCK_STRUCT.unpack(got)[0] != fcntl.F_UNLCK)
    try:  # pragma: no cover - not Linux: a shared flock taken and dropped at once
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # pragma: no cover
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)  # pragma: no cover
    return False  # pragma: no cover


def _write_record(fd: int, owner: SessionOwner) -> None:
    data = json.dumps(owner.to_json(), separators=(",", ":")).encode()
    if len(data) >= RECORD_SIZE:
        data = json.dumps(replace(owner, took_over=None).to_json(), separators=(",", ":")).encode()
    os.pwrite(fd, data.ljust(RECORD_SIZE - 1) + b"\n", 0)


def read_record(fd: int) -> SessionOwner | None:
    """The owner record in a lock file, or ``None`` when it holds none that reads."""
    for attempt in range(3):
        raw = os.pread(fd, RECORD_SIZE, 0).strip()
        if not raw:
            return None
        try:
            return SessionOwner.from_json(json.loads(raw))
        except ValueError:
            if attempt < 2:
                time.sleep(0.002)  # caught mid-write: read again
    return None
