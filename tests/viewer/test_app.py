"""The viewer's ASGI app through httpx (Starlette's TestClient): pages, fragments, exports,
escaping, ids that try to leave the store, the token, the read-only promise, bounded pages."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest

import harness
from harness.query import index_of, surface_at
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.viewer.security import CSP
from harness.viewer.server import ViewerError, plan
from harness.viewer.views import PAGE
from tests.viewer.helpers import (
    PAYLOADS,
    XSS_ID,
    client,
    demo_root,
    fixture_files,
    live_messages,
    place_fixture,
    snapshot,
)


class _Tags(HTMLParser):
    """Every start tag of a page with its attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags_of(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def assert_inert(html: str) -> None:
    """Nothing in ``html`` can run: the one script is the viewer's file, no event handler
    attribute, no ``javascript:`` address, no element a payload could have planted."""
    for tag, attrs in tags_of(html):
        if tag == "script":
            assert attrs == {"src": "/static/viewer.js", "defer": None}, attrs
        assert tag not in ("img", "svg", "iframe", "object", "embed", "textarea"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("href", "src", "action"):
                assert not (value or "").strip().lower().startswith("javascript:"), (tag, value)


def _seqs(html: str, tag: str, cls: str) -> list[int]:
    return [
        int(attrs.get("data-seq") or -1)
        for name, attrs in tags_of(html)
        if name == tag and cls in (attrs.get("class") or "").split()
    ]


def rows_of(html: str) -> list[int]:
    """The seqs of the log rows on a page."""
    return _seqs(html, "div", "row")


def nodes_of(html: str) -> list[int]:
    """The seqs of the Surface nodes on a page."""
    return _seqs(html, "li", "node")


def u(session_id: str) -> str:
    return quote(session_id, safe="")


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    demo_root(tmp_path / "root")
    return tmp_path / "root"


def session_urls(sid: str, length: int) -> list[str]:
    q = u(sid)
    last = length - 1
    return [
        f"/session?id={q}",
        f"/session?id={q}&seq={last}",
        f"/session?id={q}&seq=0&at=0",
        f"/e?id={q}&seq={last}",
        f"/session/log?id={q}&start=0",
        f"/session/log?id={q}&start=0&class=shadowed",
        f"/session/event?id={q}&seq={last}",
        f"/session/surface?id={q}&at={last}",
        f"/session/request?id={q}&at={last}",
        f"/session/sections?id={q}",
        f"/session/chart.svg?id={q}",
        f"/session/export.md?id={q}",
        f"/session/export.jsonl?id={q}",
        f"/session/export.openai.json?id={q}",
        f"/api/summary?id={q}",
    ]


# ---- pages over the demo's sessions -----------------------------------------------------------


def test_the_sessions_page_lists_every_session_newest_first(root: Path) -> None:
    with client(root) as c:
        page = c.get("/")
    assert page.status_code == 200
    for sid in ("demo-session", "demo-session-crash"):
        assert f'data-id="{sid}"' in page.text
    # the crash fork names its parent, and the parent lists the fork
    assert "fork of" in page.text and "forks:" in page.text
    assert page.headers["content-security-policy"] == CSP


def test_the_summary_counts_turns_and_the_stored_bytes(root: Path) -> None:
    with client(root) as c:
        demo = c.get("/api/summary?id=demo-session").json()
        crashed = c.get("/api/summary?id=demo-session-crash").json()
    stored = (root / "--home-dev-project--" / "demo-session" / "session.jsonl").read_bytes()
    header_line = stored.split(b"\n", 1)[0]
    assert demo == {"turns": 2, "wireBytes": len(stored) - len(header_line) - 1, "openTurn": False}
    # the crash fork's last turn is open in the store (the closers are only what a load would add)
    assert crashed["turns"] == 3 and crashed["openTurn"] is True


def test_the_sessions_page_filters_by_cwd_and_date(root: Path) -> None:
    with client(root) as c:
        kept = c.get("/?cwd=/home/dev")
        none = c.get("/?since=2999-01-01")
        bad = c.get("/?since=yesterday")
    assert 'data-id="demo-session"' in kept.text and "xss-" not in kept.text
    assert 'data-id="demo-session"' not in none.text
    assert bad.status_code == 400 and "YYYY-MM-DD" in bad.text


def test_the_session_page_shows_the_log_beside_the_surface(root: Path) -> None:
    session = inspected(root)
    with client(root) as c:
        page = c.get("/session?id=demo-session")
    assert page.status_code == 200
    html = page.text
    assert 'id="log"' in html and 'id="surface"' in html
    assert rows_of(html) == list(range(len(session)))
    assert nodes_of(html) == list(session.surface.nodes)
    # a shadowed event names the replace that took it out, as the query layer says
    record = index_of(session).record(13)
    assert record.classification == "shadowed"
    assert 'id="e-13" data-seq="13"' in html and f'data-shadowed-by="{record.shadowed_by}"' in html


def inspected(root: Path, sid: str = "demo-session") -> harness.Session:
    """The session as the viewer sees it: ``inspect`` of the stored log (closers included)."""

    async def read() -> harness.Session:
        store = SessionStore(JsonlBackend(root, compression="none"))
        try:
            return await store.inspect(sid)
        finally:
            await store.close()

    return asyncio.run(read())


def test_time_travel_gives_the_surface_and_the_request_at_a_seq(root: Path) -> None:
    session = inspected(root)
    with client(root) as c:
        for at in (2, 10, 13, len(session) - 1):
            fragment = c.get(f"/session/surface?id=demo-session&at={at}").text
            assert nodes_of(fragment) == list(surface_at(session, at).nodes)
        request = c.get("/session/request?id=demo-session&at=12")
        early = c.get("/session/request?id=demo-session&at=0")
        past = c.get(f"/session/surface?id=demo-session&at={len(session)}")
    assert "the latest request point at or before seq 12" in request.text
    assert "deepseek-v4-flash" in request.text and "&#34;messages&#34;" in request.text
    assert "no model request was sent" in early.text
    assert past.status_code == 404


def test_an_event_detail_shows_its_tool_chain_and_permalink(root: Path) -> None:
    with client(root) as c:
        detail = c.get("/session/event?id=demo-session&seq=12").text
        permalink = c.get("/e?id=demo-session&seq=12", follow_redirects=False)
        missing = c.get("/session/event?id=demo-session&seq=9999")
    assert "tool call read_file" in detail and "permalink" in detail
    assert permalink.status_code == 302
    assert permalink.headers["location"] == "/session?id=demo-session&seq=12#e-12"
    assert missing.status_code == 404 and "no event has seq 9999" in missing.text


def test_crash_repairs_are_marked_and_closers_a_load_adds_are_named(root: Path) -> None:
    with client(root) as c:
        sections = c.get("/session/sections?id=demo-session-crash").text
        page = c.get("/session?id=demo-session-crash").text
    assert "Crash repairs (3)" in sections
    assert "crash repair" in page and "closer a load adds" in page


def test_exports(root: Path) -> None:
    session = inspected(root)
    with client(root) as c:
        markdown = c.get("/session/export.md?id=demo-session")
        lines = c.get("/session/export.jsonl?id=demo-session")
        openai = c.get("/session/export.openai.json?id=demo-session")
        unknown = c.get("/session/export.html?id=demo-session")
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.text.startswith("# Session demo-session")
    # the stored log itself, byte for byte (the closer a load would add is not in the store)
    stored = (root / "--home-dev-project--" / "demo-session" / "session.jsonl").read_bytes()
    assert lines.content == stored
    assert len(lines.text.splitlines()) == len(session)  # the header line, no closer
    assert openai.json()["messages"][0]["role"] == "system"
    assert unknown.status_code == 400


def test_the_chart_is_svg_of_numbers(root: Path) -> None:
    with client(root) as c:
        chart = c.get("/session/chart.svg?id=demo-session")
    assert chart.headers["content-type"].startswith("image/svg+xml")
    assert chart.text.startswith("<svg") and "<polyline" in chart.text and "<script" not in chart.text


def test_store_wide_search_finds_events_in_every_session(root: Path) -> None:
    with client(root) as c:
        found = c.get("/?q=notes/todo.txt")
        shadowed = c.get("/?q=notes/todo.txt&class=shadowed")
        none = c.get("/?q=no%20such%20words%20anywhere")
        planted = c.get("/?q=window.__xss")
    links = [
        a["href"] or ""
        for t, a in tags_of(found.text)
        if t == "a" and "hit" in (a.get("class") or "").split()
    ]
    assert any(link.startswith("/session?id=demo-session&seq=") for link in links)
    assert any(link.startswith("/session?id=demo-session-crash&seq=") for link in links)
    shadowed_links = [
        a for t, a in tags_of(shadowed.text) if t == "a" and "hit" in (a.get("class") or "").split()
    ]
    assert shadowed_links and len(shadowed_links) < len(links)
    assert "cls-current" not in shadowed.text.split('id="search-results"')[1].split("</section>")[0]
    assert "No event contains" in none.text
    assert_inert(planted.text)
    assert "&lt;script&gt;window.__xss" in planted.text
    # the viewer's index is its own, beside the root: nothing was written into the store
    assert not list(root.rglob("*.sqlite"))
    assert Path(str(root) + ".viewer-index.sqlite").exists()


# ---- every dsh fixture --------------------------------------------------------------------------


@pytest.mark.parametrize("source", fixture_files(), ids=lambda p: p.name)
def test_every_dsh_fixture_opens_in_every_page(tmp_path: Path, source: Path) -> None:
    sid, compression = place_fixture(tmp_path, source)
    with client(tmp_path, compression) as c:
        listing = c.get("/")
        assert listing.status_code == 200 and sid in listing.text
        summary = c.get(f"/api/summary?id={u(sid)}").json()
        page = c.get(f"/session?id={u(sid)}")
        assert page.status_code == 200, page.text
        length = int(next(a["data-length"] or 0 for t, a in tags_of(page.text) if a.get("id") == "page"))
        assert summary["turns"] >= 1
        for url in session_urls(sid, length):
            response = c.get(url, follow_redirects=False)
            assert response.status_code in (200, 302), (url, response.text[:300])
        sections = c.get(f"/session/sections?id={u(sid)}").text
    if "compact" in source.name:
        assert "Compactions (0)" not in sections
        assert "Shadowed" in sections and "summary" in sections


def test_fixtures_are_found() -> None:
    assert len(fixture_files()) >= 19


# ---- escaping ------------------------------------------------------------------------------------


def test_a_planted_session_renders_inert_on_every_page(root: Path) -> None:
    with client(root) as c:
        page = c.get(f"/session?id={u(XSS_ID)}")
        length = int(next(a["data-length"] or 0 for t, a in tags_of(page.text) if a.get("id") == "page"))
        for url in [
            "/",
            *session_urls(XSS_ID, length),
            *[f"/session/event?id={u(XSS_ID)}&seq={s}" for s in range(length)],
        ]:
            response = c.get(url, follow_redirects=False)
            assert response.status_code in (200, 302), url
            assert response.headers["content-security-policy"] == CSP
            assert response.headers["x-content-type-options"] == "nosniff"
            kind = response.headers.get("content-type", "")
            if kind.startswith("text/html"):
                assert_inert(response.text)
            else:
                assert not kind.startswith("text/html")
        listing = c.get("/").text
        detail = c.get(f"/session/event?id={u(XSS_ID)}&seq=3").text  # the user message, whole
    # the payloads are shown, as text
    assert "&lt;script&gt;window.__xss = 1" in page.text
    assert "&lt;/textarea&gt;" in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in listing  # the id and the title
    assert (
        "{{ 7*7 }}" in detail and "&lt;/script&gt;&lt;script&gt;window.__xss = 5" in detail
    )  # a template in the content is not a template here


def test_the_error_page_escapes_what_the_address_said() -> None:
    from harness.viewer.app import href

    assert href("/session", id="<x>", seq=None) == "/session?id=%3Cx%3E"


def test_the_error_page_escapes_the_id(root: Path) -> None:
    with client(root) as c:
        response = c.get("/session?id=" + u(PAYLOADS[1]))
    assert response.status_code == 404
    assert_inert(response.text)


# ---- ids that try to leave the store ---------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        "../../../../etc/passwd",
        "..",
        "/etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        "%00",
        "a\x00b",
        "x" * 600,
        "line\nbreak",
        "",
    ],
)
def test_no_id_reaches_outside_the_store(tmp_path: Path, bad: str) -> None:
    root = tmp_path / "store" / "root"
    demo_root(root)
    # a real session log just outside the root, where a path-joining viewer would find it
    outside = tmp_path / "store" / "session.jsonl"
    outside.write_bytes((root / "--home-dev-project--" / "demo-session" / "session.jsonl").read_bytes())
    with client(root) as c:
        for url in (
            f"/session?id={u(bad)}",
            f"/session/export.jsonl?id={u(bad)}",
            f"/api/summary?id={u(bad)}",
        ):
            response = c.get(url)
            assert response.status_code == 404, (url, response.status_code)
            assert "demo-session" not in response.text or "no session" in response.text


def test_static_files_stay_in_the_package(root: Path) -> None:
    with client(root) as c:
        assert c.get("/static/viewer.js").status_code == 200
        for url in ("/static/../app.py", "/static/%2e%2e/app.py", "/static/..%2F..%2Fapp.py"):
            assert c.get(url).status_code == 404, url


# ---- the token, the host, read-only ----------------------------------------------------------------

TOKEN = "s3cret-token-0123456789"


def test_a_token_is_required_and_set_as_a_cookie(root: Path) -> None:
    with client(root, token=TOKEN) as c:
        assert c.get("/").status_code == 401
        assert c.get("/static/viewer.js").status_code == 401
        assert c.get("/?token=wrong").status_code == 401
        assert c.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
        entry = c.get(f"/session?id=demo-session&token={TOKEN}", follow_redirects=False)
        assert entry.status_code == 303
        assert entry.headers["location"] == "/session?id=demo-session"  # the token leaves the address
        assert "HttpOnly" in entry.headers["set-cookie"] and "SameSite=Strict" in entry.headers["set-cookie"]
        assert c.get("/session?id=demo-session").status_code == 200  # the cookie now
        c.cookies.clear()
        assert c.get("/session?id=demo-session").status_code == 401
        # the redirect's address is the request's, quoted: no header can be smuggled into it
        smuggled = c.get(f"/x%0d%0aSet-Cookie:%20evil=1?token={TOKEN}", follow_redirects=False)
        assert smuggled.headers["location"] == "/x%0D%0ASet-Cookie%3A%20evil%3D1"
        assert "evil" not in smuggled.headers.get("set-cookie", "")


def test_the_host_header_must_name_the_viewer(root: Path) -> None:
    with client(root, hosts=["127.0.0.1"]) as c:
        assert c.get("/").status_code == 200
        assert c.get("/", headers={"host": "localhost:8765"}).status_code == 200
        assert c.get("/", headers={"host": "attacker.example:8765"}).status_code == 400


def test_only_get_is_served(root: Path) -> None:
    with client(root) as c:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            assert c.request(method, "/session?id=demo-session").status_code == 405


def test_serving_beyond_loopback_needs_a_token() -> None:
    assert plan("127.0.0.1", None) == (None, ["127.0.0.1", "[127.0.0.1]"], False)
    assert plan("localhost", None)[0] is None
    token, hosts, generated = plan("0.0.0.0", None)
    assert generated and token is not None and len(token) >= 32 and hosts is None
    token, hosts, generated = plan("192.168.1.5", TOKEN)
    assert (token, generated) == (TOKEN, False) and hosts is not None and "192.168.1.5" in hosts
    for bad in ("short", "has space in it 123456", "semi;colon-0123456789", "x" * 300):
        with pytest.raises(ViewerError):
            plan("0.0.0.0", bad)


def test_browsing_everything_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    ids = demo_root(root)
    for source in fixture_files()[:6]:
        if source.name.endswith(".jsonl") and "DERIVED" not in source.name:
            place_fixture(root, source)
    torn = next(p for p in fixture_files() if p.name == "06-torn-tail-input-DERIVED.jsonl")
    torn_root = tmp_path / "torn"
    torn_id, _ = place_fixture(torn_root, torn)
    before, torn_before = snapshot(root), snapshot(torn_root)
    with client(root, live_limit=0.3, live_poll=0.05) as c:
        listed = [a["data-id"] for t, a in tags_of(c.get("/").text) if t == "tr" and a.get("data-id")]
        assert set(ids.values()) <= set(listed)
        for sid in listed:
            assert sid is not None
            page = c.get(f"/session?id={u(sid)}").text
            length = int(next(a["data-length"] or 0 for t, a in tags_of(page) if a.get("id") == "page"))
            for url in session_urls(sid, length):
                c.get(url)
            c.get(f"/session/live?id={u(sid)}&from=0")
        c.get("/?q=notes")
        c.get("/?q=the&class=shadowed")
    with client(torn_root) as c:
        assert c.get(f"/session?id={u(torn_id)}").status_code == 200  # a torn tail is shown, not cut
        c.get(f"/session/sections?id={u(torn_id)}")
    assert snapshot(root) == before
    assert snapshot(torn_root) == torn_before


# ---- large sessions: bounded pages ---------------------------------------------------------------


def _big_root(root: Path, turns: int) -> str:
    header = harness.SessionHeader.new(id="big", cwd="/w", created_at=1_767_225_600_000)
    session = harness.Session.create(header)
    for turn in range(1, turns + 1):
        session.append("turn/start", {"turn": turn})
        session.append("step/start", {"turn": turn, "step": 1})
        session.append(
            "user/message",
            harness.user_message(f"question {turn}", id=f"u-{turn}"),
            surface_op=harness.APPEND,
        )
        session.append("step/end", {"turn": turn, "step": 1})
        session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})

    async def store() -> None:
        backend = SessionStore(JsonlBackend(root, compression="none"))
        await backend.adopt(session)
        await backend.flush(session)
        await backend.close()

    asyncio.run(store())
    return session.id


def test_a_large_session_page_holds_one_page_of_the_log(tmp_path: Path) -> None:
    sid = _big_root(tmp_path, 1_000)  # 5,000 events
    with client(tmp_path) as c:
        page = c.get(f"/session?id={sid}").text
        assert len(rows_of(page)) == PAGE
        later = [a for t, a in tags_of(page) if t == "a" and "later" in (a.get("class") or "").split()]
        assert later and later[0]["data-start"] == str(PAGE)
        middle = c.get(f"/session?id={sid}&seq=2500").text
        seqs = rows_of(middle)
        assert 2500 in seqs and len(seqs) == PAGE and min(seqs) == 2480
        nxt = c.get(f"/session/log?id={sid}&start={PAGE}").text
        assert rows_of(nxt) == list(range(PAGE, 2 * PAGE))
        search = c.get(f"/session?id={sid}&q=question%20777").text
        assert rows_of(search) == [776 * 5 + 2]
        surface = c.get(f"/session?id={sid}").text
        assert len(nodes_of(surface)) == 400  # a page of the 1,000 nodes, the rest behind a link
        assert "more nodes (600 after these)" in surface


# ---- live ------------------------------------------------------------------------------------------


def test_the_live_state_names_the_owner_of_a_running_turn(tmp_path: Path) -> None:
    root = tmp_path / "root"
    demo_root(root)
    holding = threading.Event()
    done = threading.Event()

    def grow() -> None:
        async def append() -> None:
            store = SessionStore(JsonlBackend(root, compression="none"))
            session = await store.load("demo-session")
            time.sleep(0.3)
            session.append("turn/start", {"turn": 3})
            await store.flush(session)
            holding.set()
            done.wait(10)  # still the owner while the page looks
            await store.close()

        asyncio.run(append())

    with client(root, live_poll=0.05, live_limit=5.0) as c:
        length = len(inspected(root))
        try:
            messages = live_messages(c, length, grow, joined=False)
        finally:
            done.set()
    grown = messages[-1][1]
    assert grown["open"] is True
    assert grown["owner"] is not None and f"pid {os.getpid()} on host" in grown["owner"], grown


def test_a_growing_session_is_announced_live(tmp_path: Path) -> None:
    root = tmp_path / "root"
    demo_root(root)

    def grow() -> None:
        time.sleep(0.4)

        async def append() -> None:
            store = SessionStore(JsonlBackend(root, compression="none"))
            session = await store.load("demo-session")
            session.append("turn/start", {"turn": 3})
            await store.flush(session)
            await store.close()

        asyncio.run(append())

    with client(root, live_poll=0.05, live_limit=5.0) as c:
        length = len(inspected(root))
        messages = live_messages(c, length, grow)
    assert messages[0][0] == "state" and messages[0][1]["open"] is False
    assert messages[0][1]["last"]["reason"] == "completed" and messages[0][1]["owner"] is None
    grown = messages[-1]
    # the load committed its end-seed, then the writer appended a turn/start: a turn runs now
    assert grown[0] == "grown" and grown[1]["stored"] == messages[0][1]["stored"] + 2
    assert grown[1]["open"] is True and grown[1]["length"] > length
