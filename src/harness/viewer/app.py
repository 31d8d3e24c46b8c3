"""The viewer's ASGI application: ``create_app(open_store)`` (Starlette, Jinja2 templates).

Pages and fragments (a session is named by the ``id`` query parameter, so ids holding ``/``
work, and ids never become paths):

* ``/``: the sessions list, with filters, lineage and search;
* ``/session?id=…[&seq=N][&at=N]``: the Event Log beside the Surface; ``seq`` selects an
  event (the permalink ``/e?id=…&seq=N`` lands here), ``at`` sets time travel;
* fragments the page's script fetches: ``/session/log`` (a page of rows), ``/session/event``
  (an event's detail), ``/session/surface`` and ``/session/request`` (time travel),
  ``/session/sections`` (compactions, world checks, crash repairs), ``/session/chart.svg``;
* ``/session/export.md``, ``.jsonl``, ``.openai.json``; ``/session/live`` (server-sent events);
* ``/api/summary?id=…`` (turns and size for the list).

Everything rendered is autoescaped; the only markup built outside a template is the chart's
SVG, which holds numbers and our own labels. Nothing here writes to the store.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Final
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from harness.errors import EventNotFound, HarnessError, InvalidQuery, SessionNotFound
from harness.stores.store import SessionStore
from harness.viewer import views
from harness.viewer.catalog import Catalog, Loaded, in_thread, valid_session_id
from harness.viewer.chart import chart_svg, series
from harness.viewer.security import Guard

__all__ = ["create_app"]

StoreOpener = Callable[[], Awaitable[SessionStore]]


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("harness.viewer", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["href"] = href
    env.filters["when"] = when
    env.filters["size"] = human_size
    return env


def href(path: str, **params: Any) -> str:
    """``path`` with the query parameters that are not ``None`` or empty (URL-encoded; a list
    repeats its key; ``cls`` stands for ``class``)."""
    given: list[tuple[str, str]] = []
    for key, value in params.items():
        name = "class" if key == "cls" else key
        for item in value if isinstance(value, list | tuple) else [value]:
            if item is not None and item != "":
                given.append((name, str(item)))
    return path + ("?" + urlencode(given) if given else "")


def when(ms: int | None) -> str:
    """Epoch milliseconds as ``YYYY-MM-DD HH:MM:SS`` UTC (``—`` for none)."""
    if not isinstance(ms, int) or isinstance(ms, bool):
        return "—"
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def human_size(count: int | None) -> str:
    if count is None:
        return "—"
    size = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{count} B"


def _int(request: Request, name: str, default: int | None = None, least: int = 0) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidQuery(f"{name} must be an integer, got {raw[:40]!r}") from None
    if value < least:
        raise InvalidQuery(f"{name} must be at least {least}, got {value}")
    return value


def _date_ms(raw: str | None, *, end: bool = False) -> int | None:
    if not raw:
        return None
    try:
        day = datetime.strptime(raw, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise InvalidQuery(f"a date is YYYY-MM-DD, got {raw[:40]!r}") from None
    return int(day.timestamp() * 1000) + (86_400_000 - 1 if end else 0)


class Viewer:
    """The state behind the routes: the catalog over the store, the templates."""

    def __init__(
        self,
        open_store: StoreOpener,
        live_poll: float = 0.5,
        live_limit: float = 300.0,
        search_index_path: str | None = None,
    ) -> None:
        self._open_store = open_store
        self._search_index_path = search_index_path
        self._store_search: Any = None
        self.live_poll = live_poll
        self.live_limit = live_limit
        self._catalog: Catalog | None = None
        self.env = _env()

    @property
    def catalog(self) -> Catalog:
        assert self._catalog is not None, "the viewer's store is opened by the app's lifespan"
        return self._catalog

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        store = await self._open_store()
        self._catalog = Catalog(store)
        try:
            yield
        finally:
            self._catalog = None
            if self._store_search is not None:
                await self._store_search.close()
                self._store_search = None
            await store.close()

    def page(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**values), status_code=status)

    async def session(self, request: Request) -> tuple[str, Loaded]:
        session_id = request.query_params.get("id")
        if not session_id:
            raise SessionNotFound("no session id given (?id=…)")
        valid_session_id(session_id)
        return session_id, await self.catalog.load(session_id)

    # ---- pages ---------------------------------------------------------------------------

    async def sessions(self, request: Request) -> Response:
        params = request.query_params
        cwd = params.get("cwd", "").strip()
        since, until = _date_ms(params.get("since")), _date_ms(params.get("until"), end=True)
        infos = await self.catalog.list()
        lineages = await self.catalog.lineages(infos)
        shown = [
            info
            for info in infos
            if (not cwd or cwd in (info.cwd or ""))
            and (since is None or (info.last_activity or 0) >= since)
            and (until is None or (info.created_at or 0) <= until)
        ]
        children: dict[str, list[str]] = {}
        for sid, found in lineages.items():
            if found.ancestors:
                children.setdefault(found.ancestors[0], []).append(sid)
        query = params.get("q", "").strip()
        classes = params.getlist("class")
        search = await self._search(query, params.get("cursor"), classes) if query else None
        return self.page(
            "sessions.html",
            infos=shown,
            total=len(infos),
            lineages=lineages,
            children=children,
            cwd=cwd,
            since=params.get("since", ""),
            until=params.get("until", ""),
            q=query,
            search=search,
            classes=classes,
        )

    async def _search(self, query: str, cursor: str | None, classes: list[str]) -> dict[str, Any]:
        """Store-wide full-text search through the query index (``harness.viewer.search``)."""
        from harness.viewer.search import StoreSearch

        if self._store_search is None:
            self._store_search = StoreSearch(self.catalog.store, self._search_index_path)
        where = views.parse_filter((), classes, None)
        found: dict[str, Any] = await self._store_search.search(query, cursor=cursor, where=where)
        return found

    async def session_page(self, request: Request) -> Response:
        session_id, loaded = await self.session(request)
        length = len(loaded.session)
        seq = _int(request, "seq")
        if seq is not None and seq >= length:
            raise EventNotFound(seq, length)
        at = _int(request, "at", seq if seq is not None else (length - 1 if length else None))
        if at is not None and length and at >= length:
            raise InvalidQuery(f"at {at} is past the log (seqs 0..{length - 1})")
        where = views.parse_filter(
            request.query_params.getlist("type"),
            request.query_params.getlist("class"),
            request.query_params.get("q"),
        )
        start = _int(request, "start")
        if start is None:
            start = views.page_start_for(seq) if seq is not None else 0
        stored = loaded.stored_length

        def build(session: Any) -> dict[str, Any]:
            log = views.log_page(session, stored, start=start, where=where)
            out: dict[str, Any] = {"log": log, "counts": views.counts(session)}
            out["surface"] = views.surface_view(session, at) if at is not None and length else None
            out["detail"] = views.event_detail(session, seq, stored) if seq is not None else None
            out["open_turn"] = _open_turn(session.events[:stored])
            return out

        built = await in_thread(loaded, build)
        header = loaded.session.header
        return self.page(
            "session.html",
            sid=session_id,
            header=header,
            title=_title(loaded),
            length=length,
            stored=stored,
            at=at,
            seq=seq,
            where=where,
            q=request.query_params.get("q", ""),
            types=request.query_params.getlist("type"),
            classes=request.query_params.getlist("class"),
            files=self.catalog.files,
            **built,
        )

    async def permalink(self, request: Request) -> Response:
        session_id = request.query_params.get("id", "")
        seq = _int(request, "seq", 0)
        valid_session_id(session_id)
        return RedirectResponse(href("/session", id=session_id, seq=seq) + f"#e-{seq}", status_code=302)

    # ---- fragments -----------------------------------------------------------------------

    async def log_fragment(self, request: Request) -> Response:
        session_id, loaded = await self.session(request)
        where = views.parse_filter(
            request.query_params.getlist("type"),
            request.query_params.getlist("class"),
            request.query_params.get("q"),
        )
        cursor = request.query_params.get("cursor") or None
        start = _int(request, "start", 0) or 0
        log = await in_thread(
            loaded, lambda s: views.log_page(s, loaded.stored_length, start=start, cursor=cursor, where=where)
        )
        return self.page("_log.html", sid=session_id, log=log, where=where, **self._filters(request))

    def _filters(self, request: Request) -> dict[str, Any]:
        return {
            "q": request.query_params.get("q", ""),
            "types": request.query_params.getlist("type"),
            "classes": request.query_params.getlist("class"),
        }

    async def event_fragment(self, request: Request) -> Response:
        session_id, loaded = await self.session(request)
        seq = _int(request, "seq")
        if seq is None:
            raise InvalidQuery("seq is required")
        detail = await in_thread(loaded, lambda s: views.event_detail(s, seq, loaded.stored_length))
        return self.page("_event.html", sid=session_id, detail=detail)

    async def surface_fragment(self, request: Request) -> Response:
        session_id, loaded = await self.session(request)
        at = _int(request, "at")
        offset = _int(request, "offset", 0) or 0
        if at is None or at >= len(loaded.session):
            raise EventNotFound(at if at is not None else -1, len(loaded.session))
        surface = await in_thread(loaded, lambda s: views.surface_view(s, at, offset))
        return self.page("_surface.html", sid=session_id, surface=surface)

    async def request_fragment(self, request: Request) -> Response:
        session_id, loaded = await self.session(request)
        at = _int(request, "at")
        if at is None or at >= len(loaded.session):
            raise EventNotFound(at if at is not None else -1, len(loaded.session))
        found = await in_thread(loaded, lambda s: views.request_view(s, at))
        return self.page("_request.html", sid=session_id, request=found)

    async def sections_fragment(self, request: Request) -> Response:
        session_id, loaded = await self.session(request)

        def build(session: Any) -> dict[str, Any]:
            return {
                "compactions": views.compactions(session),
                "checks": views.world_checks(session),
                "repairs": views.crash_repairs(session, loaded.stored_length),
            }

        return self.page("_sections.html", sid=session_id, **await in_thread(loaded, build, "sections"))

    async def chart(self, request: Request) -> Response:
        _, loaded = await self.session(request)
        svg = await in_thread(loaded, lambda s: chart_svg(series(s), len(s)), "chart")
        return Response(svg, media_type="image/svg+xml")

    async def summary(self, request: Request) -> Response:
        session_id = request.query_params.get("id", "")
        valid_session_id(session_id)
        found = await self.catalog.summary(session_id)
        return JSONResponse(
            {"turns": found.turns, "wireBytes": found.wire_bytes, "openTurn": found.open_turn}
        )

    # ---- exports -------------------------------------------------------------------------

    async def export(self, request: Request) -> Response:
        from harness.viewer.exports import export

        session_id, loaded = await self.session(request)
        kind = request.path_params["kind"]
        body, media = await in_thread(loaded, lambda s: export(s, kind, loaded.stored_length))
        name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in session_id)[:100] or "session"
        return Response(
            body,
            media_type=media,
            headers={"content-disposition": f'inline; filename="{name}.{kind}"'},
        )

    # ---- live ----------------------------------------------------------------------------

    async def live(self, request: Request) -> Response:
        from harness.viewer.live import live_response

        session_id, loaded = await self.session(request)
        since = _int(request, "from", len(loaded.session)) or 0
        return live_response(
            self.catalog, session_id, since, request, poll=self.live_poll, limit=self.live_limit
        )


def _open_turn(events: Any) -> bool:
    for event in reversed(events):
        if event.type == "turn/end":
            return False
        if event.type == "turn/start":
            return True
    return False


def _title(loaded: Loaded) -> str | None:
    for event in reversed(loaded.session.events):
        if event.type == "session/title":
            data = event.data
            title = data.get("title") if hasattr(data, "get") else None
            return title if isinstance(title, str) else None
    return None


_STATUS: Final = {SessionNotFound: 404, EventNotFound: 404, InvalidQuery: 400}


def create_app(
    open_store: StoreOpener,
    *,
    token: str | None = None,
    hosts: list[str] | None = None,
    live_poll: float = 0.5,
    live_limit: float = 300.0,
    search_index_path: str | None = None,
) -> Any:
    """The viewer over the store ``open_store()`` opens (in the app's lifespan, on its loop).

    ``token``: every request must carry it (see ``harness.viewer.security``); ``hosts``: the
    host names requests may address besides localhost (``None``: any). ``live_poll`` and
    ``live_limit``: how often a file store is polled for growth and how long one live stream
    lasts (seconds); ``search_index_path``: where the viewer keeps its own search index of a
    file store (default: the user's cache directory, ``harness.viewer.search``)."""
    viewer = Viewer(open_store, live_poll, live_limit, search_index_path)

    def guarded(
        handler: Callable[[Request], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            try:
                response = await handler(request)
            except HarnessError as error:
                status = next((code for kind, code in _STATUS.items() if isinstance(error, kind)), 500)
                if request.url.path.startswith("/api/"):
                    return JSONResponse({"error": str(error)}, status_code=status)
                if request.url.path.startswith("/session/") and request.url.path != "/session":
                    return PlainTextResponse(str(error), status_code=status)
                return viewer.page("error.html", status=status, message=str(error), status_code=status)
            response.headers["server-timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
            return response

        return endpoint

    static = resources.files("harness.viewer") / "static"
    routes = [
        Route("/", guarded(viewer.sessions)),
        Route("/session", guarded(viewer.session_page)),
        Route("/e", guarded(viewer.permalink)),
        Route("/session/log", guarded(viewer.log_fragment)),
        Route("/session/event", guarded(viewer.event_fragment)),
        Route("/session/surface", guarded(viewer.surface_fragment)),
        Route("/session/request", guarded(viewer.request_fragment)),
        Route("/session/sections", guarded(viewer.sections_fragment)),
        Route("/session/chart.svg", guarded(viewer.chart)),
        Route("/session/export.{kind:str}", guarded(viewer.export)),
        Route("/session/live", guarded(viewer.live)),
        Route("/api/summary", guarded(viewer.summary)),
        Mount("/static", StaticFiles(directory=str(static)), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=viewer.lifespan)
    app.state.viewer = viewer
    return Guard(app, token=token, hosts=hosts)


def dumps_json(value: Any) -> str:
    """JSON for a ``<script type="application/json">`` block: ``<``, ``>`` and ``&`` escaped,
    so no text in it can close the element."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
