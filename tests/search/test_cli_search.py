"""``harness search`` and ``harness index`` through typer's CliRunner: 80 and 200 columns, --json,
the filters, paging with --cursor, content that looks like markup, and one-line refusals."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.cli.search_commands import fit_snippet
from harness.compaction import compact_now
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from tests.compaction.helpers import Builder, FixedSummarizer

runner = CliRunner()
MARKUP = "[red]alert[/red] and [bold]x[/] launch"
LONG_ID = "a-session-with-a-rather-long-identifier-" + "x" * 50


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("search-cli") / "root"

    async def build() -> None:
        async with SessionStore(JsonlBackend(path, compression="none")) as store:
            alpha = await store.create(id="alpha")
            builder = Builder(alpha)
            builder.closed_turn("the launch code is ZEBRA-4471 " + "filler words " * 40, "noted", tools=1)
            for turn in range(6):
                builder.closed_turn(f"launch attempt {turn}", f"launch attempt {turn} done")
            await compact_now(alpha, FixedSummarizer(), retain_tokens=0)
            builder.closed_turn("after the compaction: launch again", "launched")
            await store.flush(alpha)
            marked = await store.create(id=LONG_ID)
            Builder(marked).closed_turn(MARKUP, "检查点 ok launch", tools=1)
            await store.flush(marked)

    asyncio.run(build())
    return path


def invoke(root: Path, *args: str, columns: int = 80) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--store", str(root), *args], env={"COLUMNS": str(columns)})
    return result.exit_code, result.stdout, result.stderr


def test_search_reads_well_at_80_columns(root: Path) -> None:
    code, out, err = invoke(root, "search", "launch code")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("alpha  #") and "user/message" in lines[0]
    assert "the launch code is ZEBRA-4471" in lines[1]
    assert all(len(line) <= 80 for line in lines if LONG_ID not in line and "--cursor" not in line)
    assert "best first" in out


def test_the_hits_show_the_classification_and_markup_is_text(root: Path) -> None:
    code, out, _ = invoke(root, "search", "launch", "--limit", "50", columns=200)
    assert code == 0
    assert "  S  " in out and "  C  " in out
    assert MARKUP in out  # printed as it is, never parsed as rich markup
    assert LONG_ID in out  # an id is never cut
    code, shadowed, _ = invoke(root, "search", "launch", "--shadowed", "--json")
    assert {hit["classification"] for hit in json.loads(shadowed)["hits"]} == {"shadowed"}
    code, current, _ = invoke(root, "search", "launch", "--current", "--json")
    assert {hit["classification"] for hit in json.loads(current)["hits"]} == {"current"}
    code, typed, _ = invoke(root, "search", "launch", "--type", "assistant/*", "--json")
    assert {hit["type"] for hit in json.loads(typed)["hits"]} == {"assistant/message"}
    code, one, _ = invoke(root, "search", "launch", "--session", LONG_ID, "--json")
    assert {hit["session"] for hit in json.loads(one)["hits"]} == {LONG_ID}


def test_json_pages_with_the_cursor(root: Path) -> None:
    seen: list[tuple[str, int]] = []
    cursor: str | None = None
    pages = 0
    while True:
        args = ["search", "launch", "--limit", "3", "--json"] + (["--cursor", cursor] if cursor else [])
        code, out, err = invoke(root, *args)
        assert code == 0, err
        page = json.loads(out)
        assert page["query"] == "launch" and page["ranked"] is True and page["stale"] == []
        for hit in page["hits"]:
            assert set(hit) >= {"session", "seq", "type", "classification", "snippet", "match", "score"}
            start, end = hit["match"]
            assert hit["snippet"][start:end].lower() == "launch"
        seen += [(hit["session"], hit["seq"]) for hit in page["hits"]]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert pages > 2 and len(seen) == len(set(seen))
    code, out, _ = invoke(root, "search", "launch", "--json", "--limit", "200")
    assert sorted(seen) == sorted((hit["session"], hit["seq"]) for hit in json.loads(out)["hits"])


def test_refusals_are_one_line(root: Path) -> None:
    for args, needle in (
        (["search", "   "], "holds no word"),
        (["search", "launch", "--cursor", "nope"], "not a search cursor"),
        (["search", "launch", "--limit", "0"], "limit"),
        (["search", "launch", "--shadowed", "--current"], "exclude each other"),
        (["search", "launch", "--type", ""], "types[0]"),
    ):
        code, out, err = invoke(root, *args)
        assert code in (1, 2), args
        assert len(err.strip().splitlines()) == 1 and needle in err, (args, err)
        assert "Traceback" not in out + err
    code, out, err = invoke(root, "search", "launch", "--limit", "2", "--json")
    cursor = json.loads(out)["nextCursor"]
    code, out, err = invoke(root, "search", "launched", "--cursor", cursor)
    assert code == 1 and "another query" in err


def test_index_reports_and_rebuilds(root: Path, tmp_path: Path) -> None:
    code, out, err = invoke(root, "index")
    assert code == 0, err
    assert out.splitlines()[0].startswith("index caught up: ")
    assert "2 sessions in the store" in out
    code, out, _ = invoke(root, "index", "--rebuild", "--json")
    report = json.loads(out)
    assert report["rebuilt"] is True and report["reset"] == report["sessions"] == 2 and report["rows"] > 0
    code, out, _ = invoke(tmp_path, "index", "--store", str(root), "--json")
    assert json.loads(out)["updated"] == 0  # --store after the command chooses the store too
    code, out, _ = invoke(tmp_path, "search", "检查点", "--store", f"jsonl:{root}", "--json")
    assert [hit["session"] for hit in json.loads(out)["hits"]] == [LONG_ID]


def test_a_damaged_index_is_one_line_and_rebuild_mends_it(root: Path) -> None:
    (root / ".harness-index.sqlite").write_bytes(b"not a database" * 500)
    for suffix in ("-wal", "-shm"):
        (root / f".harness-index.sqlite{suffix}").unlink(missing_ok=True)
    code, out, err = invoke(root, "search", "launch")
    assert code == 1 and "rebuild" in err and len(err.strip().splitlines()) == 1
    code, out, err = invoke(root, "index", "--rebuild")
    assert code == 0, err
    code, out, _ = invoke(root, "search", "launch")
    assert code == 0 and "alpha" in out


def test_fit_snippet_keeps_the_match_in_view() -> None:
    text = "x" * 100 + "MATCH" + "y" * 100
    line, (start, end) = fit_snippet(text, (100, 105), 40)
    assert len(line) <= 40 and line[start:end] == "MATCH"
    assert line.startswith("…") and line.endswith("…")
    assert fit_snippet("short", (0, 5), 40) == ("short", (0, 5))


def test_a_missing_root_is_searched_without_creating_anything(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    code, out, err = invoke(missing, "search", "launch")
    assert code == 0, err
    assert " ".join(out.split()) == f"no stored sessions under {missing}"  # not "no event holds"
    code, out, _ = invoke(missing, "index")
    assert code == 0 and " ".join(out.split()) == f"no stored sessions under {missing}: nothing to index"
    code, out, _ = invoke(missing, "index", "--json")
    assert code == 0 and json.loads(out)["sessions"] == 0
    assert not missing.exists()
