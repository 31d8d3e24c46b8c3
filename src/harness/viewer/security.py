"""The viewer's guards, as one ASGI middleware around every request.

* **Headers**: a strict Content-Security-Policy (scripts and styles only from the viewer's own
  static files, no inline script, no plugins, no framing, no form posting elsewhere), and
  ``nosniff``, ``no-referrer``, ``DENY`` framing.
* **Host**: the ``Host`` header must name the address the viewer serves (or localhost), so a
  page on another site cannot reach it through DNS rebinding.
* **Token**: when the viewer has a token (always when bound to an address other than
  loopback), every request must carry it: ``?token=T`` once (answered by a redirect that sets
  an HttpOnly, SameSite=Strict cookie and drops the token from the address), the cookie after
  that, or ``Authorization: Bearer T``. Compared in constant time.
* **Read-only**: any method other than GET and HEAD is refused (405).
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from http.cookies import SimpleCookie
from typing import Any, Final
from urllib.parse import parse_qsl, quote, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["COOKIE", "CSP", "Guard"]

CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'; object-src 'none'"
)
"""The Content-Security-Policy of every response: nothing inline, nothing from elsewhere."""

COOKIE: Final = "harness_viewer_token"

_HEADERS: Final = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)

_LOCAL_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def _host_name(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:8765
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """The middleware (see the module doc). ``hosts``: the host names a request may address
    besides localhost (the bound address; ``None``: any, for a wildcard bind with a token)."""

    def __init__(self, app: ASGIApp, *, token: str | None, hosts: Iterable[str] | None) -> None:
        self._app = app
        self._token = token.encode() if token else None
        self._hosts = None if hosts is None else {h.lower() for h in hosts} | _LOCAL_HOSTS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [*message.get("headers", ()), *_HEADERS]
            await send(message)

        if self._hosts is not None and _host_name(headers.get("host", "")) not in self._hosts:
            await _plain(guarded, 400, "this viewer is not served under that host name")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(guarded, 405, "the viewer is read-only: GET only")
            return
        if self._token is not None:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            given = query.get("token")
            if given is not None and self._matches(given):
                rest = urlencode(
                    [(k, v) for k, v in parse_qsl(scope["query_string"].decode("latin-1")) if k != "token"]
                )
                path = quote(scope.get("root_path", "") + scope["path"], safe="/")  # never a raw CR or LF
                location = path + (f"?{rest}" if rest else "")
                await _redirect(guarded, location, self._token.decode())
                return
            if not (self._cookie_matches(headers.get("cookie", "")) or self._bearer_matches(headers)):
                await _plain(
                    guarded, 401, "this viewer needs its token: open the address it printed (?token=…)"
                )
                return
        await self._app(scope, receive, guarded)

    def _matches(self, given: str) -> bool:
        assert self._token is not None
        return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), self._token)

    def _cookie_matches(self, header: str) -> bool:
        if not header:
            return False
        cookie: SimpleCookie = SimpleCookie()
        try:
            cookie.load(header)
        except Exception:
            return False
        morsel = cookie.get(COOKIE)
        return morsel is not None and self._matches(morsel.value)

    def _bearer_matches(self, headers: dict[str, str]) -> bool:
        value = headers.get("authorization", "")
        scheme, _, credential = value.partition(" ")
        return scheme.lower() == "bearer" and bool(credential) and self._matches(credential.strip())


async def _plain(send: Any, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Any, location: str, token: str) -> None:
    cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode("latin-1", "replace")),
                (b"set-cookie", cookie.encode()),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})
