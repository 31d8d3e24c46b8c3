"""``harness serve``: the audit viewer in a browser (``harness.viewer``, the ``[viewer]`` extra)."""

from __future__ import annotations

import json
import os

import typer

from harness.cli.app import _fail, _options, _store_option, app
from harness.stores.store import SessionStore

__all__: list[str] = []


@app.command()
def serve(
    ctx: typer.Context,
    store: str | None = _store_option(),
    host: str = typer.Option(
        "127.0.0.1", "--host", metavar="ADDR", help="Address to bind (default 127.0.0.1)."
    ),
    port: int = typer.Option(8765, "--port", min=1, max=65535, metavar="N", help="Port (default 8765)."),
    open_browser: bool = typer.Option(False, "--open", help="Open the viewer in a web browser."),
    token: str | None = typer.Option(
        None,
        "--token",
        metavar="T",
        envvar="HARNESS_VIEWER_TOKEN",
        help="Require this token (any address but 127.0.0.1 gets a generated one without it).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the address as one JSON line first."),
) -> None:
    """Browse the store's sessions in a web browser: read-only, local by default.

    The Event Log beside the Surface, compactions, time travel, world checks, exports,
    live updates. Needs the viewer extra: pip install 'harness-sessions[viewer]'."""
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as missing:
        _fail(
            f"harness serve needs the viewer extra ({missing.name} is not installed): "
            "pip install 'harness-sessions[viewer]'",
            2,
        )
    from harness.viewer.server import ViewerError
    from harness.viewer.server import serve as run

    options = _options(ctx)
    if options.sqlite and not os.path.exists(options.sqlite):
        _fail(f"no SQLite file at {options.sqlite} (the viewer creates none)", 2)
    if options.spec.scheme == "jsonl" and not os.path.isdir(options.root):
        _fail(f"no JSONL session root at {options.root} (the viewer creates none)", 2)
    backend_of = options.backend

    async def open_store() -> SessionStore:
        return SessionStore(backend_of(reading=True))

    try:
        run(
            open_store,
            host=host,
            port=port,
            token=token,
            open_browser=open_browser,
            say=(lambda line: typer.echo(line, err=True)) if as_json else typer.echo,
            announce=(lambda value: typer.echo(json.dumps(value))) if as_json else None,
        )
    except ViewerError as error:
        _fail(str(error), 2)
    except OSError as error:
        _fail(f"cannot serve on {host}:{port}: {error.strerror or error}", 2)
