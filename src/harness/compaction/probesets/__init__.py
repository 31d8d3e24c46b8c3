"""Probe sets for the retention evaluation: sessions with the facts planted in them.

Two ship with harness, and they are scored apart:

* ``tuned``: the generated sessions of ``harness.compaction.synthetic``, whose phrasing the
  extractive digest's rules were first written against;
* ``independent``: ``independent.json`` in this package, short scripted sessions in several
  languages (English, Chinese, German, Spanish, Japanese) written apart from the digest's
  rules, each padded with the same kind of bulk (file reads, test logs) so that a compaction
  has something to condense.

A probe-set document (``load_probeset_file`` reads one of your own) is JSON::

    {"probeset": "name", "about": "...", "cases": [
      {"id": "case-1", "language": "en",
       "turns": [{"user": "...", "reply": "...",
                  "steps": [[{"tool": "read_file", "arguments": {"path": "a.py"},
                              "result": "...", "error": false, "todos": [...]}]]}],
       "probes": [{"name": "...", "kind": "constraint", "pattern": "...", "query": "..."}]}]}

Each step is the tool calls one assistant message makes; ``todos`` (on a ``todo_write`` call)
also records a ``todo/write`` event. A document of the wrong shape raises ``InvalidProbe``
naming the place (``$.cases[0].turns[1].user``).
"""

from __future__ import annotations

import random
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import msgspec

from harness.compaction.probes import Probe
from harness.compaction.synthetic import _MODULES, _code, _test_log, _Writer, generate_sessions
from harness.errors import InvalidProbe
from harness.session.session import Session

__all__ = [
    "BUILTIN_PROBESETS",
    "ProbeCase",
    "ProbeSet",
    "ProbeSetName",
    "builtin_probeset",
    "load_probeset_file",
    "probeset_from_json",
]

ProbeSetName: TypeAlias = Literal["tuned", "independent", "holdout"]
BUILTIN_PROBESETS: Final[tuple[ProbeSetName, ...]] = ("tuned", "independent", "holdout")


class ProbeCase(msgspec.Struct, frozen=True, kw_only=True):
    """One session of a probe set and the probes planted in it."""

    id: str
    language: str
    session: Session
    probes: tuple[Probe, ...]


class ProbeSet(msgspec.Struct, frozen=True, kw_only=True):
    """A named set of cases; ``about`` says where its probes come from."""

    name: str
    about: str
    cases: tuple[ProbeCase, ...]

    @property
    def probe_count(self) -> int:
        """How many probes the cases hold."""
        return sum(len(case.probes) for case in self.cases)


# ---- the document's shape (decoded with msgspec: a wrong shape names its path) -------------


class _Todo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"


class _Call(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    tool: str
    arguments: dict[str, Any]
    result: str
    error: bool = False
    todos: list[_Todo] | None = None


class _Turn(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    user: str
    reply: str
    steps: list[list[_Call]] = msgspec.field(default_factory=list)
    context: str = ""

    @property
    def prompt(self) -> str:
        return f"{self.context}\n\n{self.user}" if self.context else self.user


class _Bulk(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    turns: int = 8
    reads_per_turn: int = 1
    file_lines: int = 160


class _ProbeDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    kind: str
    pattern: str
    query: str | None = None
    regex: bool = False


class _Case(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: str
    turns: list[_Turn]
    probes: list[_ProbeDoc]
    language: str = "en"


class _Document(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    probeset: str
    cases: list[_Case]
    about: str = ""
    version: int = 1
    bulk: _Bulk = msgspec.field(default_factory=_Bulk)


def _check(document: _Document, where: str) -> None:
    if document.version != 1:
        raise InvalidProbe(f"version {document.version} is not supported (1 is)", where=f"{where}: $.version")
    bulk = document.bulk
    if not (0 <= bulk.turns <= 200 and 1 <= bulk.reads_per_turn <= 10 and 10 <= bulk.file_lines <= 2000):
        raise InvalidProbe(
            "bulk must have 0-200 turns, 1-10 reads per turn and 10-2000 file lines", where=f"{where}: $.bulk"
        )
    if not document.cases:
        raise InvalidProbe("a probe set needs at least one case", where=f"{where}: $.cases")
    ids: set[str] = set()
    for index, case in enumerate(document.cases):
        at = f"{where}: $.cases[{index}]"
        if not case.id or case.id in ids:
            raise InvalidProbe(f"case id {case.id!r} is empty or used twice", where=at)
        ids.add(case.id)
        if not case.turns:
            raise InvalidProbe("a case needs at least one turn", where=f"{at}.turns")
        for number, turn in enumerate(case.turns):
            if not turn.user.strip() or not turn.reply.strip():
                raise InvalidProbe("a turn needs a user text and a reply", where=f"{at}.turns[{number}]")
        if not case.probes:
            raise InvalidProbe("a case needs at least one probe", where=f"{at}.probes")
        names = [probe.name for probe in case.probes]
        if len(set(names)) != len(names):
            raise InvalidProbe("probe names repeat within the case", where=f"{at}.probes")


def _session(case: _Case, seed: int, set_name: str, bulk: _Bulk) -> Session:
    """The case's turns in loop order, then ``bulk.turns`` turns of file reads and a test run,
    then a short closing turn (the tail a compaction keeps)."""
    rng = random.Random(f"{set_name}/{case.id}/{seed}")
    writer = _Writer(seed, rng, session_id=f"{set_name}-{case.id}")
    for turn in case.turns:
        writer.begin_turn(turn.prompt)
        for step in turn.steps:
            todos = next((call.todos for call in step if call.todos is not None), None)
            writer.calls_step(
                [(call.tool, call.arguments, call.result, call.error) for call in step],
                todos=None if todos is None else [msgspec.structs.asdict(todo) for todo in todos],
            )
        writer.reply_and_end(turn.reply)
    for index in range(bulk.turns):
        *modules, other = rng.sample(_MODULES, bulk.reads_per_turn + 1)
        targets = [f"src/service/{module}.py" for module in modules]
        writer.begin_turn(
            f"Next, look over {' and '.join(targets)} and run the {other} tests (check {index + 1})."
        )
        for module, target in zip(modules, targets, strict=True):
            code = _code(rng, module, bulk.file_lines, {})
            writer.calls_step([("read_file", {"path": target}, code, False)])
        test_file = f"tests/test_{other}.py"
        log = _test_log(rng, test_file, None, rng.randint(20, 50))
        writer.calls_step([("run_shell", {"command": f"python -m pytest -q {test_file}"}, log, False)])
        writer.reply_and_end(f"{' and '.join(targets)} look fine and the {other} tests pass.")
    writer.begin_turn("Thanks. Give me a one-line status.")
    writer.reply_and_end("Status: done with the checks; nothing else is open on my side.")
    return writer.session


def probeset_from_json(data: bytes | str, *, where: str = "probe set", seed: int = 0) -> ProbeSet:
    """Decode and check a probe-set document and build its sessions (see the module doc).
    ``where`` names the document in errors; ``seed`` varies the bulk turns."""
    try:
        document = msgspec.json.decode(data, type=_Document)
    except msgspec.ValidationError as error:
        raise InvalidProbe(str(error), where=where) from None
    except msgspec.DecodeError as error:
        raise InvalidProbe(f"not JSON: {error}", where=where) from None
    _check(document, where)
    cases = []
    for index, case in enumerate(document.cases):
        probes = []
        for number, doc in enumerate(case.probes):
            try:
                probes.append(
                    Probe(name=doc.name, kind=doc.kind, pattern=doc.pattern, query=doc.query, regex=doc.regex)  # type: ignore[arg-type]
                )
            except InvalidProbe as error:
                raise InvalidProbe(str(error), where=f"{where}: $.cases[{index}].probes[{number}]") from None
        session = _session(case, seed, document.probeset, document.bulk)
        cases.append(ProbeCase(id=case.id, language=case.language, session=session, probes=tuple(probes)))
    return ProbeSet(name=document.probeset, about=document.about, cases=tuple(cases))


def load_probeset_file(path: str | Path, *, seed: int = 0) -> ProbeSet:
    """``probeset_from_json`` of a file (``InvalidProbe`` when it cannot be read)."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise InvalidProbe(f"cannot read it: {error.strerror or error}", where=str(path)) from None
    return probeset_from_json(data, where=str(path), seed=seed)


_TUNED_ABOUT: Final = (
    "Generated coding-agent sessions (harness.compaction.synthetic) with planted facts; the "
    "extractive digest's first rules were written against their phrasing."
)


def builtin_probeset(name: str, *, generated: int = 6, seed: int = 0) -> ProbeSet:
    """A probe set that ships with harness: ``tuned`` (``generated`` synthetic sessions from
    ``seed``) or ``independent`` (the packaged document). Another name raises ``InvalidProbe``."""
    if name == "tuned":
        made = generate_sessions(generated, seed=seed)
        cases = tuple(
            ProbeCase(id=f"synthetic-{one.seed}", language="en", session=one.session, probes=one.probes)
            for one in made
        )
        return ProbeSet(name="tuned", about=_TUNED_ABOUT, cases=cases)
    if name in ("independent", "holdout"):
        data = resources.files(__name__).joinpath(f"{name}.json").read_bytes()
        return probeset_from_json(data, where=f"{name}.json", seed=seed)
    raise InvalidProbe(f"no built-in probe set is called {name!r} (there are {', '.join(BUILTIN_PROBESETS)})")
