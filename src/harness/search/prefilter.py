"""The SQL prefilter of a candidate query, shared by the SQLite and PostgreSQL indexes.

Both indexes narrow their candidates with the same conditions on the ``rows`` alias ``r``
(session, seq and time ranges, types with ``/*`` prefixes, classifications, turns, steps);
only the spelling differs. A :class:`PrefilterDialect` says how one backend spells them.
The conditions keep a superset of what ``query.where`` admits: the engine checks each
candidate against the filter itself afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.query.index import QueryIndex
from harness.search.backing import CandidateQuery


@dataclass(frozen=True, slots=True)
class PrefilterDialect:
    """How one SQL backend spells the prefilter's pieces.

    ``integer`` and ``text`` are the placeholders of a bound integer and a bound encoded
    text; ``true`` is the literal of an always-true condition; ``session_column`` is
    compared with ``encode_text(session id)``; ``prefix_match(column, encoded)`` spells
    "``column`` starts with the encoded prefix", which it binds as one ``text`` placeholder;
    ``any_of(column, sql_type, values, params)`` spells "``column`` (of integer type
    ``sql_type``) is one of the integers ``values``" (sorted, without repeats), binding
    into ``params`` what it needs."""

    integer: str
    text: str
    true: str
    session_column: str
    encode_text: Callable[[str], Any]
    prefix_match: Callable[[str, Any], str]
    any_of: Callable[[str, str, Sequence[int], list[Any]], str]


def build_prefilter(query: CandidateQuery, params: list[Any], dialect: PrefilterDialect) -> str:
    """The SQL conditions (ANDed; ``dialect.true`` when there are none) that keep a superset
    of what ``query`` admits, appending their bound values to ``params`` in order."""
    where = query.where
    encode = dialect.encode_text
    clauses: list[str] = []
    if query.session is not None:
        clauses.append(f"{dialect.session_column} = {dialect.text}")
        params.append(encode(query.session))
    for column, ranges in (("r.seq", where.seqs), ("r.time", where.times)):
        if ranges:
            parts = []
            for value in ranges:
                bounds = []
                if value.start is not None:
                    bounds.append(f"{column} >= {dialect.integer}")
                    params.append(value.start)
                if value.end is not None:
                    bounds.append(f"{column} <= {dialect.integer}")
                    params.append(value.end)
                parts.append(" AND ".join(bounds) or dialect.true)
            clauses.append("(" + " OR ".join(f"({part})" for part in parts) + ")")
    if where.types:
        parts = []
        for kind in where.types:
            if kind.endswith("/*"):
                prefix = encode(kind[:-1])
                parts.append(dialect.prefix_match("r.type", prefix))
                params.append(prefix)
            else:
                parts.append(f"r.type = {dialect.text}")
                params.append(encode(kind))
        clauses.append("(" + " OR ".join(parts) + ")")
    if where.classifications:
        codes = sorted({QueryIndex.code_of(name) for name in where.classifications})
        clauses.append(dialect.any_of("r.class", "smallint", codes, params))
    for column, values in (("r.turn", where.turns), ("r.step", where.steps)):
        if values:
            clauses.append(dialect.any_of(column, "integer", sorted(set(values)), params))
    return " AND ".join(clauses) if clauses else dialect.true
