"""The viewer in a real browser: headless Chromium from Debian's packages, driven by Playwright
(``executable_path``: no downloaded browser build). Screenshots go to
``test-artifacts/viewer/``. Without Chromium these tests skip, except under ``CI=true``, where
they fail: ``.ci/run`` installs it."""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from rich.console import Console

from harness.query import filter_events, index_of, surface_at
from harness.query.filters import EventFilter
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.paths import Compression
from harness.stores.store import SessionStore
from harness.viewer import create_app
from tests.test_fixtures_dsh import FIXTURES
from tests.viewer.helpers import XSS_ID, demo_root, place_fixture

T = TypeVar("T")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "viewer"
CHROMIUM = os.environ.get("HARNESS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def _browser_or_reason() -> str | None:
    if not os.path.exists(CHROMIUM):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (the test extra)"
    return None


_MISSING = _browser_or_reason()
if _MISSING and os.environ.get("CI") == "true":
    raise RuntimeError(f"the browser tests cannot run in CI: {_MISSING}")
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


def off_loop(work: Callable[[], T]) -> T:
    """``work()`` in a thread of its own: Playwright's sync API runs an event loop in this one,
    so ``asyncio.run`` cannot be called here."""
    out: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            out.append(work())
        except BaseException as error:
            failure.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return out[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Served:
    """A viewer served by uvicorn in a thread, over one JSONL root."""

    def __init__(self, root: Path, compression: Compression) -> None:
        import uvicorn

        self.root = root
        self.compression = compression
        port = _free_port()

        async def open_store() -> SessionStore:
            return SessionStore(JsonlBackend(root, compression=compression))

        index = str(root) + ".viewer-index.sqlite"  # the viewer's own search index, outside the store
        app = create_app(
            open_store, hosts=["127.0.0.1"], live_poll=0.1, live_limit=30.0, search_index_path=index
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the viewer did not start")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{port}"

    def inspect(self, sid: str) -> Any:
        async def read() -> Any:
            store = SessionStore(JsonlBackend(self.root, compression=self.compression))
            try:
                return await store.inspect(sid)
            finally:
                await store.close()

        return off_loop(lambda: asyncio.run(read()))

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def agent_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The sessions ``harness demo`` writes (the crash and resume, the compaction)."""
    from harness.demos.agent import run_agent_demo

    sessions = tmp_path_factory.mktemp("agent-demo") / "sessions"
    off_loop(lambda: run_agent_demo(Console(file=io.StringIO(), width=100), sessions=sessions))
    served = Served(sessions, "zstd")
    yield served
    served.stop()


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The engine demo's sessions, the XSS session and a dsh fixture with a compaction."""
    root = tmp_path_factory.mktemp("plain")
    off_loop(lambda: demo_root(root))
    place_fixture(root, FIXTURES / "03-auto-compaction.jsonl")
    served = Served(root, "none")
    yield served
    served.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


class Tab:
    """A page that records dialogs, page errors and console messages."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.console: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda message: self.console.append(message.text))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, url: str) -> Any:
        self.page.goto(url)
        self.page.wait_for_load_state("networkidle")
        return self.page

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    def close(self) -> None:
        assert self.errors == [], self.errors
        self.page.close()


@pytest.fixture()
def tab(browser: Any) -> Iterator[Tab]:
    opened = Tab(browser)
    yield opened
    opened.close()


def _session_ids(page: Any) -> list[str]:
    ids: list[str] = page.eval_on_selector_all("#sessions tbody tr", "rows => rows.map(r => r.dataset.id)")
    return ids


def test_the_demo_sessions_open_with_both_panes(agent_demo: Served, tab: Tab) -> None:
    page = tab.open(agent_demo.url + "/")
    ids = _session_ids(page)
    assert len(ids) == 2
    page.wait_for_function(
        "() => [...document.querySelectorAll('#sessions .turns')].every(c => c.textContent !== '…')"
    )
    tab.shot("01-sessions")
    for number, sid in enumerate(ids):
        page.click(f'#sessions tr[data-id="{sid}"] td.sid a')
        page.wait_for_selector("#page[data-ready]")
        session = agent_demo.inspect(sid)
        rows = page.eval_on_selector_all("#rows .row", "rows => rows.map(r => Number(r.dataset.seq))")
        nodes = page.eval_on_selector_all(
            "#surface li.node", "nodes => nodes.map(n => Number(n.dataset.seq))"
        )
        assert rows == list(range(min(len(session), 200)))
        assert nodes == list(session.surface.nodes)
        page.wait_for_selector("#chart svg polyline.tokens")
        page.wait_for_selector("#sections h2")
        tab.shot(f"02-demo-session-{number}")
        page.go_back()


def test_world_check_and_crash_repair_are_shown(agent_demo: Served, tab: Tab) -> None:
    sid = next(s for s in _ids_by_type(agent_demo, "recovery/check"))
    page = tab.open(f"{agent_demo.url}/session?id={_q(sid)}")
    page.wait_for_selector("#checks table.findings")
    findings = page.inner_text("#checks")
    assert "file-changed" in findings and "notes.md" in findings
    assert "Crash repairs (0)" not in page.inner_text("#repairs")
    page.locator("#checks").scroll_into_view_if_needed()
    tab.shot("03-world-check-and-repairs")


def _ids_by_type(served: Served, kind: str) -> list[str]:
    found = []
    for path in served.root.rglob("session.jsonl*"):
        from harness.stores.jsonl.reader import read_session_file

        session = read_session_file(str(path))
        if any(event.type == kind for event in session.events):
            found.append(session.id)
    return found


def _q(sid: str) -> str:
    from urllib.parse import quote

    return quote(sid, safe="")


def test_following_a_compaction(agent_demo: Served, tab: Tab) -> None:
    sid = _ids_by_type(agent_demo, "compaction/summary")[0]
    session = agent_demo.inspect(sid)
    bracket = index_of(session).brackets[0]
    assert bracket.checkpoint is not None and bracket.replaced
    page = tab.open(f"{agent_demo.url}/session?id={_q(sid)}")
    page.wait_for_selector("#compactions article.compaction")
    # the checkpoint: select it from the compaction, its event detail opens, the shadowed events light up
    page.click(f'#compactions a[data-seq="{bracket.checkpoint}"]')
    page.wait_for_selector(f'.event-detail[data-seq="{bracket.checkpoint}"]')
    assert page.get_attribute(f"#e-{bracket.checkpoint}", "class") is not None
    assert "selected" in (page.get_attribute(f"#e-{bracket.checkpoint}", "class") or "")
    lit = page.eval_on_selector_all("#rows .row.lit", "rows => rows.map(r => Number(r.dataset.seq))")
    assert set(bracket.replaced) <= set(lit)
    tab.shot("04-compaction-checkpoint")
    # a shadowed event says which replace took it out
    shadowed = bracket.replaced[0]
    page.click(f"#e-{shadowed} a.seq")
    page.wait_for_selector(f'.event-detail[data-seq="{shadowed}"]')
    assert f"replaced by seq {bracket.checkpoint}" in page.inner_text("#detail")
    # the Surface before the compaction holds the nodes the checkpoint replaced
    assert bracket.start is not None
    page.click(f'#compactions a[data-at="{bracket.start - 1}"]')
    page.wait_for_selector(f'.surface-view[data-at="{bracket.start - 1}"]')
    nodes = page.eval_on_selector_all("#surface li.node", "nodes => nodes.map(n => Number(n.dataset.seq))")
    assert nodes == list(surface_at(session, bracket.start - 1).nodes)
    assert set(bracket.replaced) <= set(nodes)
    tab.shot("05-compaction-surface-before")


def test_the_time_travel_slider(agent_demo: Served, tab: Tab) -> None:
    sid = _ids_by_type(agent_demo, "compaction/summary")[0]
    session = agent_demo.inspect(sid)
    page = tab.open(f"{agent_demo.url}/session?id={_q(sid)}")
    for at in (5, len(session) // 2, len(session) - 1):
        page.eval_on_selector(
            "#tt",
            "(el, at) => { el.value = String(at); el.dispatchEvent(new Event('input', {bubbles: true})); }",
            at,
        )
        page.wait_for_selector(f'.surface-view[data-at="{at}"]')
        nodes = page.eval_on_selector_all(
            "#surface li.node", "nodes => nodes.map(n => Number(n.dataset.seq))"
        )
        assert nodes == list(surface_at(session, at).nodes)[:400]
    page.click("#request summary")
    page.wait_for_selector("#request .request-view")
    assert '"messages"' in page.inner_text("#request")
    assert f"at={len(session) - 1}" in page.url
    tab.shot("06-time-travel")


def test_search_in_a_session_and_across_the_store(agent_demo: Served, tab: Tab) -> None:
    sid = _ids_by_type(agent_demo, "recovery/check")[0]
    session = agent_demo.inspect(sid)
    page = tab.open(f"{agent_demo.url}/session?id={_q(sid)}")
    page.fill('#log-filter input[name="q"]', "notes.md")
    page.click("#log-filter button")
    page.wait_for_selector("#page[data-ready]")
    rows = page.eval_on_selector_all("#rows .row", "rows => rows.map(r => Number(r.dataset.seq))")
    expected = [r.seq for r in filter_events(index_of(session), EventFilter(text=("notes.md",)))]
    assert rows == expected[:200] and rows
    tab.shot("07-search-in-session")
    page = tab.open(agent_demo.url + "/?q=notes.md")
    hits = page.query_selector_all("#search-results a.hit")
    assert len(hits) >= 2 and "notes.md" in page.inner_text("#search-results .snippet")
    tab.shot("08-search-store")
    target = hits[0].get_attribute("href") or ""
    hits[0].click()
    page.wait_for_selector("#page[data-ready]")
    seq = int(target.split("seq=")[1].split("#")[0])
    page.wait_for_selector(f"#e-{seq}.selected")
    assert f'data-seq="{seq}"' in (page.inner_html("#detail") or "")


def test_a_dsh_fixture_opens_with_both_panes(plain: Served, tab: Tab) -> None:
    sid = next(s for s in _ids_by_type(plain, "compaction/summary"))
    session = plain.inspect(sid)
    page = tab.open(f"{plain.url}/session?id={_q(sid)}")
    page.wait_for_selector("#page[data-ready]")
    nodes = page.eval_on_selector_all("#surface li.node", "nodes => nodes.map(n => Number(n.dataset.seq))")
    assert nodes == list(session.surface.nodes)
    assert page.eval_on_selector_all("#rows .row", "rows => rows.length") > 0
    page.wait_for_selector("#compactions article.compaction")
    # select a Surface node: its events light up in the log
    first = session.surface.nodes[0]
    page.click(f"#n-{first} .role")
    page.wait_for_selector(f"#e-{first}.lit")  # loaded into the log pane when it was not on the page
    tab.shot("09-dsh-fixture")


def test_the_xss_session_runs_nothing(plain: Served, tab: Tab) -> None:
    page = tab.open(f"{plain.url}/")
    tab.shot("10-xss-sessions")
    page = tab.open(f"{plain.url}/session?id={_q(XSS_ID)}")
    page.wait_for_selector("#page[data-ready]")
    page.wait_for_selector("#sections h2")
    seqs = page.eval_on_selector_all("#rows .row", "rows => rows.map(r => Number(r.dataset.seq))")
    for seq in seqs:  # open every event's detail
        page.click(f"#e-{seq} a.seq")
        page.wait_for_selector(f'.event-detail[data-seq="{seq}"]')
    page.click("#request summary")
    page.wait_for_selector("#request .request-view")
    for link in page.query_selector_all("#detail a"):  # the planted javascript: link is text, not a link
        assert not (link.get_attribute("href") or "").lower().startswith("javascript:")
    assert page.evaluate("() => window.__xss") is None
    assert tab.dialogs == []
    assert "&lt;script&gt;" not in page.inner_text("#detail")  # shown once as text, not double-escaped
    assert "<script>window.__xss" in page.inner_text("body")
    tab.shot("11-xss-session")
    # and if some markup ever slipped through, the policy would still stop it: inline code is refused
    page.evaluate(
        "() => { const d = document.createElement('div');"
        " d.innerHTML = '<img src=x onerror=\"window.__xss = 9\">'; document.body.appendChild(d); }"
    )
    page.wait_for_function("() => Number(document.documentElement.dataset.cspViolations || 0) > 0")
    assert page.evaluate("() => window.__xss") is None
    assert tab.dialogs == []


def test_a_running_session_updates_without_reload(plain: Served, tab: Tab) -> None:
    page = tab.open(f"{plain.url}/session?id=demo-session")
    page.wait_for_selector("#page[data-live]")
    assert page.get_attribute("#page", "data-live") == "ended"
    assert "ended" in page.inner_text("#live-state")
    before = int(page.get_attribute("#page", "data-length") or 0)

    async def append() -> None:
        store = SessionStore(JsonlBackend(plain.root, compression="none"))
        session = await store.load("demo-session")
        session.append("turn/start", {"turn": 3})
        await store.flush(session)
        await store.close()

    off_loop(lambda: asyncio.run(append()))
    page.wait_for_selector("#page[data-grown]", timeout=15_000)
    page.wait_for_function("() => document.querySelector('#page').dataset.live === 'running'")
    assert "running" in page.inner_text("#live-state")
    assert int(page.inner_text("#length")) > before
    tab.shot("12-live")
