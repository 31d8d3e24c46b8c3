"""The one error hierarchy of harness.

Every error the public API raises on bad input or a refused operation is a
``HarnessError``; each message says what was wrong and, where it can, where::

    HarnessError
    ├── InvalidEvent              an append refused (bad type, legacy format, bad option)
    │   ├── InvalidEventData      event data that is not lossless JSON (names the path)
    │   └── SurfaceRuleError      a Surface rule broken (FORMAT §6 wording in ``.detail``)
    ├── InvalidHeader             a session header that breaks FORMAT §1 / §7.1
    ├── InvalidSeed               a restore seed refused (names the index and the rule)
    ├── ForkError                 a fork refused (``.code``: INVALID_BOUNDARY, OPEN_TURN)
    ├── NoRequestHeader           a request built with no header given and none in the log
    ├── InvalidMessage            message text a model cannot be sent (not valid Unicode, an empty prompt)
    ├── ProviderConfigError       a provider that cannot be built as configured (no API key,
    │                             a base URL that is not http(s), a retry policy out of range)
    ├── McpError                  an MCP server that cannot be used as configured
    │   ├── McpConfigError        a server configuration file that is not valid (ValueError)
    │   └── McpConnectError       a server that could not be started or reached
    ├── QueryError                a question about a log that cannot be answered as asked
    │   ├── InvalidQuery          a filter, range, limit, cursor or window out of bounds, a seq
    │   │                         that is not a model request, no header in force (ValueError)
    │   └── EventNotFound         no event of the session has that seq (LookupError)
    ├── TelemetryError            telemetry that cannot be exported as asked (``harness.telemetry``)
    │   ├── TelemetryConfigError  an OTLP endpoint that is not http(s), a malformed header (ValueError)
    │   └── TelemetryExportFailed the collector refused the spans or could not be reached
    ├── LangGraphError            a LangGraph checkpointer refused (``harness.integrations.langgraph``)
    │   ├── InvalidCheckpointConfig  a config without thread_id / checkpoint_id, a bad option (ValueError)
    │   ├── NotALangGraphThread   a thread's session name held by another session (also StorageError)
    │   ├── LangGraphThreadExists copy_thread onto a thread with checkpoints (also StorageError)
    │   └── ThreadMoved           another writer advanced the thread since this saver read it (WriteRefused)
    ├── CompactionError           a compaction refused or failed (``.code`` names the phase)
    │   ├── CompactionBusy        a live compaction lock, or (manual) an open turn: ``busy``
    │   ├── CompactionCancelled   the caller's cancel stopped it: ``cancelled``
    │   ├── CompactionChanged     the Surface changed while summarizing: ``changed``
    │   ├── SummaryFailed         no usable summary (error, truncated, not smaller): ``summary``
    │   ├── CommitFailed          the summary/checkpoint/end could not be appended: ``commit``
    │   ├── CompactionPersistenceFailed  the bracket closed but its flush failed: ``persistence``
    │   │                         (also a ``PersistenceFailed``)
    │   ├── InvalidRegion         a region that is absent, reversed or splits a tool pair: ``region``
    │   ├── CompactionConfigError a policy or pruner setting out of range: ``config``
    │   └── InvalidProbe          a retention probe or probe set that cannot be evaluated: ``probe``
    └── StorageError              a store or backend could not do what was asked
        ├── SessionNotFound       no stored session has that id
        │   └── SessionDeleted    the session a live writer writes was deleted (also WriteRefused)
        ├── SessionHasForks       a delete refused: stored forks name the session as their parent
        ├── SessionExists         create() with an id that is already known
        ├── InvalidSessionId      an id that cannot be stored (empty, or escaping the root)
        ├── SessionConflict       another writer got there first (expected seq mismatch)
        ├── CorruptSession        stored bytes break the format (``.offset``, ``.path``)
        ├── UnsupportedFormat     a foreign format version or an unknown event type
        ├── PersistenceFailed     a write or fsync failed; the batch stays queued
        │   └── OutcomeUnknown    a failed fsync or rollback: the batch may or may not be stored
        ├── UnsafeStorage         a store file or folder others can reach, or a symbolic link
        ├── StoreSpecError        a store spec harness cannot open (an unknown scheme, a bad option)
        ├── StoreNotFound         a reader named a store that does not exist (none is created)
        ├── SessionInUse          another live writer owns the session (``.owner`` names it)
        │   └── LeaseHeld         another owner holds an unexpired lease (also WriteRefused)
        ├── LeaseLost             this writer's ownership expired or was taken over; nothing written
        └── SearchIndexError      a store's full-text index cannot be read or written
            └── SearchIndexCorrupt  the index is damaged or not an index: rebuild it

Every class also derives from ``ValueError`` where the cause is bad input, so code
that only knows the standard library can still catch it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "CommitFailed",
    "CompactionBusy",
    "CompactionCancelled",
    "CompactionChanged",
    "CompactionConfigError",
    "CompactionError",
    "CompactionPersistenceFailed",
    "CorruptSession",
    "EventNotFound",
    "ForkError",
    "HarnessError",
    "InvalidCheckpointConfig",
    "InvalidEvent",
    "InvalidEventData",
    "InvalidHeader",
    "InvalidMessage",
    "InvalidProbe",
    "InvalidQuery",
    "InvalidRegion",
    "InvalidSeed",
    "InvalidSessionId",
    "LangGraphError",
    "LangGraphThreadExists",
    "LeaseHeld",
    "LeaseLost",
    "McpConfigError",
    "McpConnectError",
    "McpError",
    "NoRequestHeader",
    "NotALangGraphThread",
    "OutcomeUnknown",
    "PersistenceFailed",
    "ProviderConfigError",
    "QueryError",
    "SearchIndexCorrupt",
    "SearchIndexError",
    "SessionConflict",
    "SessionDeleted",
    "SessionExists",
    "SessionHasForks",
    "SessionInUse",
    "SessionNotFound",
    "SessionOwner",
    "StorageError",
    "StoreNotFound",
    "StoreSpecError",
    "SummaryFailed",
    "SurfaceRuleError",
    "TelemetryConfigError",
    "TelemetryError",
    "TelemetryExportFailed",
    "ThreadMoved",
    "UnsafeStorage",
    "UnsupportedFormat",
    "WriteRefused",
]


class HarnessError(Exception):
    """Root of every error harness raises on purpose."""


class InvalidEvent(HarnessError, ValueError):
    """An event was refused: bad envelope, a legacy type, or a broken Surface rule.

    A refused event changes nothing: the log, the Surface and the derived messages
    are exactly as they were before the call.
    """


class InvalidEventData(InvalidEvent):
    """Event data is not lossless JSON, or holds a tool call id that is not a non-empty
    string. ``path`` names the first bad value."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class SurfaceRuleError(InvalidEvent):
    """A candidate event breaks a Surface rule. ``detail`` is the rule's wording."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidHeader(HarnessError, ValueError):
    """A session header is malformed (FORMAT §1, §7.1)."""


class InvalidSeed(HarnessError, ValueError):
    """A restore seed was refused as a whole.

    ``index`` is the position of the offending event (``None`` when the header is at
    fault) and ``rule`` a short name of the rule broken (``envelope``, ``surface``, ...).
    """

    def __init__(self, message: str, *, index: int | None, rule: str) -> None:
        super().__init__(message)
        self.index = index
        self.rule = rule


class ForkError(HarnessError, ValueError):
    """A fork was refused. ``code`` is one of INVALID_BOUNDARY, OPEN_TURN."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class NoRequestHeader(HarnessError):
    """``build_request`` found no header: pass one, or append a ``request/header`` first."""


class InvalidMessage(HarnessError, ValueError):
    """Message text refused before anything was appended: it holds a lone surrogate (bytes
    that were not valid UTF-8, kept as surrogate escapes), which no model request can carry,
    or it is a prompt with no text. ``path`` names the offending value."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class ProviderConfigError(HarnessError, ValueError):
    """A provider cannot be built as configured (for example, no API key).

    It lives here, not beside the provider, so that catching it loads no HTTP client."""


class McpError(HarnessError):
    """An MCP server (``harness.tools.mcp``) that cannot be used as configured."""


class McpConfigError(McpError, ValueError):
    """A server configuration file that is not valid: names the file, the server and the key
    (never a value: values may be secrets)."""


class McpConnectError(McpError):
    """A server that could not be started, reached or initialised in time."""


class QueryError(HarnessError):
    """A question about a session's log (``harness.query``) that cannot be answered as asked."""


class InvalidQuery(QueryError, ValueError):
    """A query refused: a reversed range, an unknown classification, blank text, a limit or
    window size out of bounds, a cursor that does not belong to the query; in time travel, a
    seq outside the log, a seq where no model request was sent, no request header in force.
    The message says which clause or value was at fault."""


class EventNotFound(QueryError, LookupError):
    """No event of the session has this seq. ``seq`` is the one asked for, ``length`` the
    number of events the log holds."""

    def __init__(self, seq: object, length: int) -> None:
        held = f"the log holds seqs 0..{length - 1}" if length else "the log is empty"
        super().__init__(f"no event has seq {seq!r}: {held}")
        self.seq = seq
        self.length = length


class StorageError(HarnessError):
    """A store or backend could not do what was asked."""


class SessionNotFound(StorageError, KeyError):
    """No stored (or live) session has this id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "session not found"


class SessionExists(StorageError):
    """``create`` was given an id that is already known to the store."""


class InvalidSessionId(StorageError, ValueError):
    """The id cannot be stored (empty, not a string, or it would escape the storage root)."""


class WriteRefused(StorageError):
    """A backend refused a write outright: nothing of it was written (a conflict, or a lease
    another writer holds or took). Unlike a failed write, its outcome is never in doubt."""


class SessionConflict(WriteRefused):
    """Another writer got there first: a batch's first seq is not the stored length.

    Nothing of the batch was written. ``expected`` is the seq the backend holds next,
    ``got`` the first seq of the refused batch.
    """

    def __init__(self, message: str, *, expected: int | None = None, got: int | None = None) -> None:
        super().__init__(message)
        self.expected = expected
        self.got = got


class CorruptSession(StorageError):
    """Stored bytes break the format where the rules call it corruption (not a torn tail).

    ``offset`` is the byte offset of the damage when known; the file is left untouched.
    """

    def __init__(self, message: str, *, path: str | None = None, offset: int | None = None) -> None:
        where = []
        if path is not None:
            where.append(path)
        if offset is not None:
            where.append(f"byte {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)
        self.path = path
        self.offset = offset


class UnsupportedFormat(StorageError):
    """A session written in another format version, or holding an unknown non-ignorable type."""


class PersistenceFailed(StorageError):
    """A write or fsync failed. The events stay queued; the next flush retries them."""


class OutcomeUnknown(PersistenceFailed):
    """A write failed where its outcome cannot be known: an fsync (or the rollback after
    one) failed, so the batch may be stored, partly written or absent, now or after a crash.

    The events stay queued. The next attempt first learns what storage really holds
    (``stored_length``, then the stored events compared with the queued ones) and either
    adopts the batch, made durable again, or cuts it back and writes it anew. If the
    process dies first, a fresh one sees this batch whole or none of it (after a power
    loss, a plain JSONL log may keep a prefix of its lines, as of any unsynced write).
    """


class SessionDeleted(SessionNotFound, WriteRefused):
    """The session a live writer persists was deleted from the store (``SessionStore.delete``,
    here or by another process): its flush was refused and nothing was written. The events
    it still held stay in the detached session in memory; they have nowhere to go."""


class SessionHasForks(StorageError):
    """``SessionStore.delete`` refused: stored sessions name this one as their fork parent.

    Nothing was deleted. ``forks`` are their ids. A fork holds a copy of the events it
    inherited, so deleting the parent loses none of them, only the parent's later history and
    the forks' link to it: pass ``orphan_forks=True`` (``harness delete --orphan-forks``) to
    delete it anyway, or delete the forks first."""

    def __init__(self, message: str, *, forks: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.forks = forks


class UnsafeStorage(StorageError):
    """A store refused its location: a file or folder another user owns or may reach (group or
    world permission bits), a symbolic link, or not a regular file (the dsh SQLite rules)."""


class StoreSpecError(StorageError, ValueError):
    """A store spec (``open_store``, ``--store``) that names no store harness can open: an
    unknown scheme (the message lists the known ones), a missing location, an option the
    backend does not take."""


class StoreNotFound(StorageError):
    """A reader (``open_store(spec, create=False)``, a CLI read command) named a store that
    does not exist; none was created."""


@dataclass(frozen=True)
class SessionOwner:
    """Who owns a live session: the one writer a store made it (``SessionStore.create``/``load``).

    ``pid`` and ``host`` name the process, ``store`` the ``SessionStore`` inside it (a random
    id), ``since`` when it took ownership (epoch ms, its own clock), ``token`` the fencing
    token where the backend keeps one (PostgreSQL), and ``took_over`` the owner it fenced off
    with ``take_over=True``, if any (the ``pid``/``host``/``store`` of that one, no deeper).
    """

    pid: int | None
    host: str | None
    store: str | None
    since: int | None
    token: int | None = None
    took_over: SessionOwner | None = None

    def describe(self) -> str:
        """``pid 4242 on host x (store 1f2e…) since 2026-12-02 12:01:03 UTC``."""
        parts = [f"pid {self.pid if self.pid is not None else '?'} on host {self.host or '?'}"]
        if self.store:
            parts.append(f"(store {self.store})")
        if self.since is not None:
            stamp = datetime.fromtimestamp(self.since / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            parts.append(f"since {stamp}")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The record's JSON form (what lock files, lease rows and repair notes hold)."""
        out: dict[str, Any] = {"pid": self.pid, "host": self.host, "store": self.store, "since": self.since}
        if self.token is not None:
            out["token"] = self.token
        if self.took_over is not None:
            out["tookOver"] = self.took_over.to_json()
        return out

    @classmethod
    def from_json(cls, value: Any, *, depth: int = 0) -> SessionOwner | None:
        """The record ``to_json`` made, or ``None`` for anything else (a record is advisory:
        an unreadable one names no owner, it never fails a load)."""
        if not isinstance(value, dict):
            return None

        def pick(key: str, kind: type) -> Any:
            item = value.get(key)
            return item if isinstance(item, kind) and not isinstance(item, bool) else None

        took = cls.from_json(value.get("tookOver"), depth=depth + 1) if depth == 0 else None
        return cls(
            pid=pick("pid", int),
            host=pick("host", str),
            store=pick("store", str),
            since=pick("since", int),
            token=pick("token", int),
            took_over=took,
        )


class SessionInUse(StorageError):
    """Another live writer owns the session: a second ``create``/``load`` from another store,
    process or host was refused and nothing was written. ``owner`` names the holder when its
    record could be read. Wait for it (``harness run --wait``), or fence it off with
    ``load(id, take_over=True)`` (``--take-over``)."""

    def __init__(
        self, message: str, *, owner: SessionOwner | None = None, session_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.owner = owner
        self.session_id = session_id


class LeaseHeld(SessionInUse, WriteRefused):
    """Another owner holds an unexpired PostgreSQL lease on the session (``acquire`` without
    ``takeover``, or an append by a writer holding no lease). ``holder`` is the lease row's
    owner text, ``expires_at`` the end of its lease in epoch ms (server clock), when known."""

    def __init__(
        self,
        message: str,
        *,
        holder: str | None = None,
        expires_at: int | None = None,
        session_id: str | None = None,
    ) -> None:
        super().__init__(message, owner=_owner_from_text(holder), session_id=session_id)
        self.holder = holder
        self.expires_at = expires_at

    @staticmethod
    def describe(holder: str | None) -> str:
        """A lease row's owner text for people: the owner record described, else the text."""
        owner = _owner_from_text(holder)
        return owner.describe() if owner is not None else repr(holder)


def _owner_from_text(text: str | None) -> SessionOwner | None:
    if not text or not text.startswith("{"):
        return None
    try:
        return SessionOwner.from_json(json.loads(text))
    except ValueError:
        return None


class LeaseLost(WriteRefused):
    """The writer's ownership of the session expired or was taken over: its append was refused
    and nothing was written. Unflushed events stay queued in memory; load the session again to
    go on. ``token`` is the fencing token the refused writer held (PostgreSQL), ``by`` the
    owner that took over, when known. ``stored`` is the seq up to which the log holds the
    refused batch (an earlier attempt of it committed: those events are stored, not refused),
    when the backend knows it."""

    def __init__(
        self,
        message: str,
        *,
        token: int | None = None,
        by: SessionOwner | None = None,
        stored: int | None = None,
    ) -> None:
        super().__init__(message)
        self.token = token
        self.by = by
        self.stored = stored


# ---- compaction (SPEC §5, FORMAT §11) -----------------------------------------------------


class CompactionError(HarnessError):
    """A compaction was refused or failed. ``code`` names the phase (``busy``, ``cancelled``,
    ``changed``, ``summary``, ``commit``, ``persistence``, ``region``, ``config``, or
    ``state`` / ``threshold`` for the trigger helpers); ``compaction_id`` is set once a
    ``compaction/start`` was written."""

    code: str = "compaction"

    def __init__(self, message: str, *, code: str | None = None, compaction_id: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.compaction_id = compaction_id


class CompactionBusy(CompactionError):
    """A live (unmatched, after the last end-seed) ``compaction/start`` holds the lock, or a
    manual compaction was asked for while a turn is open. Nothing was written."""

    code = "busy"


class CompactionCancelled(CompactionError):
    """The caller's cancel signal stopped the compaction; the bracket was closed with an error."""

    code = "cancelled"


class CompactionChanged(CompactionError):
    """The Surface changed while the summary was being made; nothing was replaced."""

    code = "changed"


class SummaryFailed(CompactionError):
    """The summarizer gave no usable summary. ``reason`` is a provider or rule code when
    known (``MAX_TOKENS``, ``UNSUPPORTED_CONTENT``, ``EMPTY_SUMMARY``, ``NOT_SMALLER`` ...)."""

    code = "summary"

    def __init__(
        self, message: str, *, reason: str | None = None, compaction_id: str | None = None
    ) -> None:
        super().__init__(message, compaction_id=compaction_id)
        self.reason = reason


class CommitFailed(CompactionError):
    """Appending the summary, the checkpoint or the closing ``compaction/end`` failed. Says
    nothing about partial mutation: inspect the log."""

    code = "commit"


class CompactionPersistenceFailed(CompactionError, PersistenceFailed):
    """The bracket was appended in memory but making it durable (the ``checkpoint``) failed."""

    code = "persistence"


class InvalidRegion(CompactionError, ValueError):
    """A compaction region whose seqs are not current Surface nodes, are reversed, or would
    split a tool call from its result. Nothing was written."""

    code = "region"


class CompactionConfigError(CompactionError, ValueError):
    """A compaction policy or pruner setting is out of range (FORMAT §11.3, §11.7)."""

    code = "config"


class InvalidProbe(CompactionError, ValueError):
    """A retention probe or probe set that cannot be evaluated: an unknown kind, an empty
    pattern, a bad regular expression, a regex probe with no recall query, or a probe-set
    document of the wrong shape (``where`` names the place in it)."""

    code = "probe"

    def __init__(self, message: str, *, where: str | None = None) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where


class SearchIndexError(StorageError):
    """A store's full-text index (``harness.search``) cannot be read or written: a locked,
    read-only or full disk, a lost database connection. The store itself is untouched."""


class SearchIndexCorrupt(SearchIndexError):
    """The full-text index is damaged, or the file where it must live is not an index.
    ``SearchIndex.rebuild()`` (``harness index --rebuild``) makes it again from the store:
    it holds nothing the store does not."""


class TelemetryError(HarnessError):
    """Session telemetry (``harness.telemetry``) that could not be exported as asked."""


class TelemetryConfigError(TelemetryError, ValueError):
    """An OTLP endpoint that is not an http(s) URL, a header that is not ``name=value``, or a
    protocol harness does not speak. Header values are never part of the message."""


class TelemetryExportFailed(TelemetryError):
    """The OTLP endpoint refused the export (``.status``: the HTTP status, 0 when it could not
    be reached). Nothing in the session changes."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class LangGraphError(HarnessError):
    """A LangGraph checkpointer (``harness.integrations.langgraph``) refused a call."""


class InvalidCheckpointConfig(LangGraphError, ValueError):
    """A config without the ``configurable`` keys the call needs (``thread_id``; and
    ``checkpoint_id`` for ``put_writes``), an unknown prune strategy or ``linear`` mode, or a
    call the saver cannot run where it was made (a sync call on the async saver's own loop, a
    closed saver)."""


class NotALangGraphThread(LangGraphError, StorageError):
    """The session a thread id maps to exists but is not that LangGraph thread's session: it is
    neither read nor written nor deleted as one."""


class LangGraphThreadExists(LangGraphError, StorageError):
    """``copy_thread`` was asked to copy onto a thread that has checkpoints already."""


class ThreadMoved(LangGraphError, WriteRefused):
    """A ``put`` whose parent is not the newest checkpoint of its namespace, while that newest
    one was written by another writer after this saver last read the thread: two runs of one
    thread at once. Nothing is written; the thread is never forked silently. Read the thread
    again (``get_tuple``) and run from its newest checkpoint."""
