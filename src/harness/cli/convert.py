"""``harness export --to SPEC``: copy sessions into another store, in its own layout.

The target is a JSONL root (``DIR`` or ``jsonl:DIR``), an SQLite file (``sqlite:FILE``: the
layout an existing file holds, for a new one ``--layout harness`` or ``dsh``) or PostgreSQL.
Every session (or the ones named) is copied with ``harness.stores.transfer.copy_sessions``:
the committed events, validated, unchanged.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import typer

from harness.cli.app import _errors, _fail, _options, _spec
from harness.stores.backend import Backend
from harness.stores.open import open_backend
from harness.stores.transfer import CopiedSession, copy_sessions

__all__ = ["export_to"]


def _target(spec: str, layout: str, compression: str | None) -> Backend:
    """The store ``--to`` names, opened for writing (``--layout`` for a new SQLite file,
    ``--to-compression`` for a JSONL root)."""
    parsed = _spec(spec)
    options: dict[str, Any] = {}
    if parsed.scheme == "sqlite":
        options["layout"] = layout
    elif parsed.scheme == "jsonl":
        options["compression"] = compression
    return open_backend(parsed, **options)


def export_to(
    ctx: typer.Context,
    ids: list[str],
    spec: str,
    layout: str,
    compression: str | None,
    as_json: bool,
) -> None:
    """Copy ``ids`` (all sessions when empty) from the chosen store into the store ``spec``."""
    if layout not in ("harness", "dsh"):
        _fail(f"--layout must be harness or dsh, not {layout!r}", 2)
    if compression not in (None, "zstd", "none"):
        _fail(f"--to-compression must be zstd or none, not {compression!r}", 2)

    async def main() -> list[CopiedSession]:
        source = _options(ctx).backend(reading=True)
        try:
            target = _target(spec, layout, compression)
            try:
                return await copy_sessions(source, target, ids or None)
            finally:
                await target.close()
        finally:
            await source.close()

    with _errors():
        copied = asyncio.run(main())
    if as_json:
        document: dict[str, Any] = {
            "target": spec,
            "sessions": [{"id": item.id, "events": item.events} for item in copied],
        }
        sys.stdout.write(json.dumps(document, ensure_ascii=False) + "\n")
        return
    events = sum(item.events for item in copied)
    sessions = "session" if len(copied) == 1 else "sessions"
    typer.echo(f"exported {len(copied)} {sessions} ({events} events) to {spec}")
