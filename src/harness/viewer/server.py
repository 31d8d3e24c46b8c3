"""Running the viewer: ``serve`` checks the address and the token, then runs uvicorn.

The viewer binds 127.0.0.1 unless told otherwise. Any other address needs a token: the one
given, or one generated here and printed in the address to open (as Jupyter does); every
request must then carry it (``harness.viewer.security``).
"""

from __future__ import annotations

import ipaddress
import re
import secrets
import threading
import webbrowser
from collections.abc import Callable
from typing import Any, Final

from harness.errors import HarnessError
from harness.viewer.app import StoreOpener, create_app

__all__ = ["ViewerError", "check_token", "is_loopback", "plan", "serve"]

_TOKEN: Final = re.compile(r"[A-Za-z0-9._~-]{16,256}")


class ViewerError(HarnessError, ValueError):
    """The viewer cannot serve as asked (a bad token or address)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_token(token: str) -> str:
    """``token`` when it is 16 to 256 URL-safe characters (letters, digits, ``._~-``)."""
    if not _TOKEN.fullmatch(token):
        raise ViewerError("--token must be 16 to 256 characters from A-Z a-z 0-9 . _ ~ -")
    return token


def plan(host: str, token: str | None) -> tuple[str | None, list[str] | None, bool]:
    """``(token, hosts, generated)`` for serving on ``host``: loopback needs no token (one
    given is still enforced); any other address gets the given one or a new one. ``hosts`` is
    what the ``Host`` header may name (``None`` for a wildcard bind: the token guards it)."""
    if token is not None:
        check_token(token)
    generated = False
    if token is None and not is_loopback(host):
        token, generated = secrets.token_urlsafe(24), True
    wildcard = host in ("0.0.0.0", "::", "")
    return token, (None if wildcard else [host.strip("[]"), f"[{host.strip('[]')}]"]), generated


def serve(
    open_store: StoreOpener,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    open_browser: bool = False,
    say: Callable[[str], None] = print,
    announce: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Serve the viewer until interrupted (see the module doc). ``say`` gets the lines for
    people; ``announce``, when given, the address as JSON (``url``, ``host``, ``port``,
    ``token``, ``generatedToken``)."""
    import uvicorn

    token, hosts, generated = plan(host, token)
    app = create_app(open_store, token=token, hosts=hosts)
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    address = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    if announce is not None:
        announce({"url": address, "host": host, "port": port, "token": token, "generatedToken": generated})
    if generated:
        say("The viewer listens beyond this machine, so it needs a token; it made one.")
    say(f"harness viewer (read-only): {address}")
    say("Ctrl-C stops it.")
    if open_browser:
        threading.Timer(0.8, webbrowser.open, args=(address,)).start()
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")
