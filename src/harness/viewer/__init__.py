"""The audit viewer behind ``harness serve`` (``docs/viewer.md``): a local, read-only web app
over any store, built on ``harness.query``. It needs the ``[viewer]`` extra (Starlette,
Jinja2, uvicorn); ``import harness`` never imports it, and this package imports nothing until
a name is used.

- ``create_app(open_store, token=..., hosts=...)``: the ASGI application;
- ``serve(open_store, host=..., port=..., token=..., open_browser=...)``: run it with uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import exported_names, lazy_exports

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.viewer.app import create_app as create_app
    from harness.viewer.server import serve as serve

_EXPORTS = {"harness.viewer.app": ("create_app",), "harness.viewer.server": ("serve",)}

if not TYPE_CHECKING:  # at run time: the table's names, each imported on first use (PEP 562)
    __all__ = exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
