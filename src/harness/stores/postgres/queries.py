"""The SQL statements of ``PostgresBackend``, composed once for its schema."""

from __future__ import annotations

from psycopg import sql

__all__ = ["Queries"]

_EXPIRES_MS = "(extract(epoch FROM {col}) * 1000)::bigint"


class Queries:
    """Every statement the backend runs, with the schema name quoted in."""

    __slots__ = (
        "acquire",
        "append",
        "delete_events",
        "delete_lease",
        "delete_session",
        "header",
        "holder",
        "length",
        "lines",
        "lines_rest",
        "list",
        "owner",
        "release",
        "renew",
        "tail_lines",
    )

    def __init__(self, schema: str) -> None:
        s = sql.Identifier(schema)

        def q(text: str) -> bytes:
            return sql.SQL(text).format(s=s).as_string().encode("utf-8")

        self.append = q(
            "SELECT {s}.append_events(%s::text, %s::text, %s::bigint, %s::text, %s::bigint, %s::text, "
            "%s::bigint, %s::bigint, %s::bigint, %s::text, %s::boolean)"
        )
        self.length = q("SELECT length FROM {s}.sessions WHERE id = %s::text")
        self.header = q("SELECT key, header, length FROM {s}.sessions WHERE id = %s::text")
        # No ORDER BY: the reader places each row by its seq (a sort of a long log would
        # spill to disk); the last page is open-ended so rows past the length show up.
        self.lines = q(
            "SELECT seq, line FROM {s}.events "
            "WHERE session_key = %s::bigint AND seq >= %s::bigint AND seq < %s::bigint"
        )
        self.lines_rest = q(
            "SELECT seq, line FROM {s}.events WHERE session_key = %s::bigint AND seq >= %s::bigint"
        )
        self.tail_lines = q(
            "SELECT e.line FROM {s}.events AS e JOIN {s}.sessions AS x ON x.key = e.session_key "
            "WHERE x.id = %s::text AND e.seq >= %s::bigint ORDER BY e.seq LIMIT %s::bigint"
        )
        self.list = q(
            "SELECT x.header, x.length, x.last_time, e.line, x.id, x.created_at, x.cwd "
            "FROM {s}.sessions AS x "
            "LEFT JOIN {s}.events AS e ON e.session_key = x.key AND e.seq = x.title_seq "
            "WHERE x.length > 0 ORDER BY x.created_at, x.id"
        )
        # delete: the lease row first (as append_events locks it), then the session row.
        self.delete_lease = q(
            f"SELECT l.owner, l.token, {_EXPIRES_MS.format(col='l.expires_at')}, l.expires_at > now() "
            "FROM {s}.leases AS l WHERE l.session_id = %s::text FOR UPDATE"
        )
        self.delete_session = q("DELETE FROM {s}.sessions WHERE id = %s::text RETURNING key")
        self.delete_events = q("DELETE FROM {s}.events WHERE session_key = %s::bigint")
        expires = _EXPIRES_MS.format(col="l.expires_at")
        self.acquire = q(
            "INSERT INTO {s}.leases AS l (session_id, owner, token, expires_at) "
            "VALUES (%(id)s::text, %(owner)s::text, 1, now() + make_interval(secs => %(ttl)s::float8)) "
            "ON CONFLICT (session_id) DO UPDATE "
            "SET owner = excluded.owner, token = l.token + 1, expires_at = excluded.expires_at "
            "WHERE l.expires_at <= now() OR %(takeover)s::boolean OR l.token = %(mine)s::bigint "
            f"RETURNING l.token, {expires}"
        )
        self.holder = q(f"SELECT l.owner, {expires} FROM {{s}}.leases AS l WHERE l.session_id = %s::text")
        self.owner = q(
            f"SELECT l.owner, {expires}, l.expires_at > now(), l.token "
            "FROM {s}.leases AS l WHERE l.session_id = %s::text"
        )
        self.renew = q(
            "UPDATE {s}.leases AS l SET expires_at = now() + make_interval(secs => %s::float8) "
            "WHERE l.session_id = %s::text AND l.token = %s::bigint AND l.expires_at > now() "
            f"RETURNING {expires}"
        )
        self.release = q(
            "UPDATE {s}.leases SET expires_at = now() "
            "WHERE session_id = %s::text AND token = %s::bigint AND expires_at > now()"
        )
