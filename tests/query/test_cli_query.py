"""The query commands of the CLI (issue 13 item 3): trace, show, surface --at, request, lineage.

Each is run through typer's CliRunner over a JSONL root holding a compacted session, a session
whose content looks like rich markup and a fork chain, at 80 and 200 columns, with --json, with
a session file path and with the dsh fixtures; refusals are one line and exit 1.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.messages.request import EpochHeader
from harness.providers.deepseek import DeepSeekProvider, OpenAICompatibleProvider
from harness.query import index_of, messages_at, request_at, request_points, surface_at, trace, window
from harness.session.header import SessionHeader
from harness.session.session import Session
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.reader import read_session_file
from harness.stores.store import SessionStore
from tests.compaction.helpers import Builder
from tests.query.helpers import Compacted, compacted
from tests.test_fixtures_dsh import FIXTURES

runner = CliRunner()

MARKUP = "[red]alert[/red] and [bold]x[/]"


class Root:
    """The store of the tests and what is in it."""

    def __init__(self, path: Path, built: Compacted, markup: Session) -> None:
        self.path = path
        self.built = built
        self.session = built.session
        self.markup = markup

    def file_of(self, session_id: str) -> Path:
        (found,) = [p for p in self.path.rglob("session.jsonl") if p.parent.name == session_id]
        return found


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Root:
    path = tmp_path_factory.mktemp("query-cli")
    built = compacted()

    async def build() -> Session:
        store = SessionStore(JsonlBackend(path, compression="none"))
        await store.adopt(built.session)
        await store.flush(built.session)
        markup = (
            Builder(await store.create(id="markup")).closed_turn(MARKUP, f"echo {MARKUP}", tools=1).session
        )
        await store.flush(markup)
        parent = Builder(await store.create(id="parent")).closed_turn("plan the work", "planned").session
        await store.flush(parent)
        child = await store.adopt(parent.fork(id="child"))
        Builder(child).closed_turn("go on", "went on")
        await store.flush(child)
        grandchild = await store.adopt(child.fork(id="grandchild"))
        await store.flush(grandchild)
        await store.close()
        return markup

    markup = asyncio.run(build())
    return Root(path, built, markup)


def invoke(root: Root, *args: str, columns: int = 80) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--store", str(root.path), *args], env={"COLUMNS": str(columns)})
    return result.exit_code, result.stdout, result.stderr


def fits(out: str, columns: int) -> bool:
    return all(len(line) <= columns for line in out.splitlines())


def stored(root: Root, session_id: str) -> Session:
    """The session as the CLI reads it (``inspect`` adds the end-seed a restore appends)."""
    return read_session_file(str(root.file_of(session_id)))


# ---- trace ---------------------------------------------------------------------------------


def test_trace_json_is_the_query_layers_trace(root: Root) -> None:
    session = stored(root, root.session.id)
    seq = root.built.pruned_original
    code, out, _ = invoke(root, "trace", root.session.id, str(seq), "--json")
    assert code == 0
    found = json.loads(out)
    expected = trace(index_of(session), seq)
    assert found == {"session": session.id, **expected.to_json(), "event": session.events[seq].to_json()}
    assert found["prune"] is not None and found["replacementChain"][0] == root.built.pruned_replacement
    assert found["tools"] and found["tools"][0]["results"] == [seq, root.built.pruned_replacement]


@pytest.mark.parametrize("columns", [80, 200])
def test_trace_text_names_sources_tool_chain_compaction_and_turn(root: Root, columns: int) -> None:
    seq = root.built.pruned_original
    code, out, _ = invoke(root, "trace", root.session.id, str(seq), columns=columns)
    assert code == 0 and fits(out, columns)
    assert f"seq {seq}  tool/result" in out
    assert "pruned by" in out and "run_shell" in out and "turn 101" in out
    checkpoint = root.built.first.checkpoint_seq
    code, out, _ = invoke(root, "trace", root.session.id, str(checkpoint), columns=columns)
    assert code == 0 and fits(out, columns)
    flat = " ".join(out.split())
    assert root.built.first.compaction_id in flat.replace(" ", "") or root.built.first.compaction_id in flat
    assert "own bracket" in out and "compaction" in out and "between turns" in out


# ---- show ----------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", [80, 200])
def test_show_is_a_bounded_window_with_classification_marks(root: Root, columns: int) -> None:
    session = stored(root, root.session.id)
    seq = root.built.pruned_original
    code, out, _ = invoke(
        root, "show", root.session.id, str(seq), "--before", "3", "--after", "2", columns=columns
    )
    assert code == 0 and fits(out, columns)
    rows = {
        line.split()[0]: line.split()[1]
        for line in out.splitlines()
        if line.split()[:1] and line.split()[0].lstrip(">").isdigit()
    }
    records = window(index_of(session), seq, before=3, after=2).records
    marks = {"current": "C", "shadowed": "S", "log-only": "-"}
    assert rows == {(">" if r.seq == seq else "") + str(r.seq): marks[r.classification] for r in records}


def test_show_json_holds_each_record_with_its_event(root: Root) -> None:
    code, out, _ = invoke(root, "show", root.session.id, "0", "--before", "2", "--after", "4", "--json")
    assert code == 0
    found = json.loads(out)
    assert (found["target"], found["first"], found["last"]) == (0, 0, 4)
    assert [r["seq"] for r in found["records"]] == [0, 1, 2, 3, 4]
    assert all(r["event"]["seq"] == r["seq"] and "classification" in r for r in found["records"])


# ---- surface --at --------------------------------------------------------------------------


def test_surface_at_is_the_surface_and_history_right_after_seq(root: Root) -> None:
    session = stored(root, root.session.id)
    at = root.built.first.checkpoint_seq - 1  # before the first compaction: the whole history
    code, out, _ = invoke(root, "surface", root.session.id, "--at", str(at), "--json")
    assert code == 0
    found = json.loads(out)
    fold = surface_at(session, at)
    assert found["at"] == at and found["nodes"] == list(fold.nodes)
    assert found["replaceGeneration"] == fold.replace_generation == 0
    assert len(found["messages"]) == len(messages_at(session, at)) > len(session.derive_messages())
    for columns in (80, 200):
        code, out, _ = invoke(root, "surface", root.session.id, "--at", str(at), columns=columns)
        assert code == 0 and fits(out, columns) and f"right after seq {at}" in out
    code, now, _ = invoke(root, "surface", root.session.id, "--json")  # without --at: now, as before
    assert code == 0 and "at" not in json.loads(now)


# ---- request -------------------------------------------------------------------------------


def test_request_json_is_the_body_the_provider_sends(root: Root) -> None:
    session = stored(root, root.session.id)
    provider = DeepSeekProvider(DeepSeekProvider.default_base_url, api_key="unused: nothing is sent")
    points = request_points(session)
    assert len(points) > 3
    for point in (points[0], points[len(points) // 2], points[-1]):
        code, out, _ = invoke(root, "request", root.session.id, str(point), "--json")
        assert code == 0
        assert json.loads(out) == provider.request_body(request_at(session, point))


def test_request_json_materializes_a_header_as_the_provider_does(root: Root) -> None:
    # the Builder's header names no reasoning effort: DeepSeekProvider fills in its default
    session = stored(root, "markup")
    point = request_points(session)[0]
    assert request_at(session, point).config.get("reasoningEffort") is None
    code, out, err = invoke(root, "request", "markup", str(point), "--json")
    assert code == 0, err
    provider = DeepSeekProvider(DeepSeekProvider.default_base_url, api_key="unused: nothing is sent")
    body = json.loads(out)
    assert body == provider.request_body(request_at(session, point)) and "thinking" in body


def test_request_json_of_an_openai_compatible_route_has_no_thinking_fields(tmp_path: Path) -> None:
    session = Session.create(SessionHeader.new(id="plain"))
    header = EpochHeader.build(provider="openai-compatible", model="gpt-x", system="be brief")
    session.append("request/header", {"header": header.to_json(), "reason": "initial"})
    point = session.append("request/context", {"provider": "openai-compatible", "model": "gpt-x"}).seq
    path = tmp_path / "plain.jsonl"
    lines = [json.dumps(session.header.to_json(line=True)).encode(), *(e.encode() for e in session.events)]
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    result = runner.invoke(app, ["request", str(path), str(point), "--json"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    provider = OpenAICompatibleProvider(OpenAICompatibleProvider.default_base_url, api_key="unused")
    assert body == provider.request_body(request_at(read_session_file(str(path)), point))
    assert "thinking" not in body and body["messages"] == [{"role": "system", "content": "be brief"}]


def test_request_before_finds_the_request_behind_an_event(root: Root) -> None:
    session = stored(root, root.session.id)
    points = request_points(session)
    message = next(e.seq for e in session.events if e.type == "assistant/message" and e.seq not in points)
    code, _, err = invoke(root, "request", root.session.id, str(message))
    assert code == 1 and "not a request point" in err and len(err.strip().splitlines()) == 1
    assert err.rstrip().endswith("(--before shows it)")
    assert "Traceback" not in err
    for columns in (80, 200):
        code, out, _ = invoke(root, "request", root.session.id, str(message), "--before", columns=columns)
        assert code == 0 and fits(out, columns)
        assert f"(the one behind seq {message})" in out and "deepseek" in out and "tools:" in out


# ---- lineage -------------------------------------------------------------------------------


def test_lineage_shows_ancestors_and_descendants(root: Root) -> None:
    code, out, _ = invoke(root, "lineage", "child", "--json")
    assert code == 0
    found = json.loads(out)
    assert found["ancestors"] == ["parent"] and found["end"] == "root"
    assert found["descendants"] == [{"id": "grandchild", "parent": "child", "depth": 1}]
    code, out, _ = invoke(root, "lineage", "child")
    lines = [line.rstrip() for line in out.splitlines()]
    assert code == 0 and fits(out, 80)
    assert lines[:3] == ["parent", "  └ child  (this session)", "    └ grandchild"]
    assert "1 ancestor, 1 descendant" in out


def test_lineage_of_a_session_file_places_it_in_the_store(root: Root) -> None:
    code, out, _ = invoke(root, "lineage", str(root.file_of("grandchild")), "--json")
    assert code == 0 and json.loads(out)["ancestors"] == ["child", "parent"]


def test_lineage_of_a_file_whose_parent_the_store_lacks_ends_missing(root: Root, tmp_path: Path) -> None:
    orphan = Builder(Session.create(SessionHeader.new(id="ghost"))).closed_turn("hi", "hello").session
    orphan = orphan.fork(id="orphan")
    path = tmp_path / "orphan.jsonl"
    lines = [json.dumps(orphan.header.to_json(line=True)).encode(), *(e.encode() for e in orphan.events)]
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    code, out, err = invoke(root, "lineage", str(path), "--json")
    assert code == 0, err
    found = json.loads(out)
    assert (found["target"], found["end"], found["missingParent"]) == ("orphan", "missing", "ghost")
    code, out, _ = invoke(root, "lineage", str(path))
    lines_out = [line.rstrip() for line in out.splitlines()]
    assert lines_out[:2] == ["ghost  (missing from the store)", "  └ orphan  (this session)"]


# ---- errors, markup, files -----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("trace", "no-such-session", "1"),
        ("trace", "{s}", "100000"),
        ("show", "{s}", "999999"),
        ("show", "{s}", "3", "--before", "5000"),
        ("surface", "{s}", "--at", "100000"),
        ("request", "{s}", "100000"),
        ("request", "{s}", "0", "--before"),
        ("lineage", "no-such-session"),
    ],
)
def test_refusals_are_one_line_and_exit_1(root: Root, args: tuple[str, ...]) -> None:
    argv = [arg.replace("{s}", root.session.id) for arg in args]
    code, out, err = invoke(root, *argv)
    assert code == 1, (argv, out, err)
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_seq_that_is_no_integer_is_a_usage_error(root: Root) -> None:
    code, _, err = invoke(root, "show", root.session.id, "twelve")
    assert code == 2 and "Traceback" not in err and "SEQ" in err


def test_session_content_is_printed_literally_never_as_markup(root: Root) -> None:
    session = stored(root, "markup")
    prompt = next(e.seq for e in session.events if e.type == "user/message")
    point = request_points(session)[0]
    for args in (
        ("trace", "markup", str(prompt)),
        ("show", "markup", str(prompt)),
        ("surface", "markup", "--at", str(prompt + 2)),
        ("request", "markup", str(point + 2), "--before"),
    ):
        code, out, err = invoke(root, *args, columns=200)
        assert code == 0, (args, err)
        assert "[red]alert[/red]" in out, args


@pytest.mark.parametrize(
    "name", ["02-tool-call.jsonl", "03-manual-compact.jsonl.zstd", "03-auto-compaction.jsonl"]
)
def test_the_commands_read_dsh_session_files(root: Root, name: str) -> None:
    path = str(FIXTURES / name)
    session = read_session_file(path)
    index = index_of(session)
    last_result = max(e.seq for e in session.events if e.type in ("tool/result", "user/message"))
    code, out, _ = invoke(root, "trace", path, str(last_result), "--json")
    assert code == 0 and json.loads(out)["record"] == index.record(last_result).to_json(event=False)
    code, out, _ = invoke(root, "show", path, str(last_result))
    assert code == 0 and fits(out, 80) and f">{last_result}" in out
    code, out, _ = invoke(root, "surface", path, "--at", str(last_result), "--json")
    assert code == 0 and json.loads(out)["nodes"] == list(surface_at(session, last_result).nodes)
    points = request_points(session)
    if points:
        code, out, _ = invoke(root, "request", path, str(points[-1]), "--json")
        assert code == 0 and json.loads(out)["messages"][0]["role"] in ("system", "user")
        code, out, _ = invoke(root, "request", path, str(points[-1]))
        assert code == 0 and fits(out, 80)
    code, out, _ = invoke(root, "lineage", path, "--json")
    assert code == 0 and json.loads(out)["target"] == session.id
