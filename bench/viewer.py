"""The viewer's time to first paint of a 100k-event session page, next to ``inspect``.

Builds the agent-shaped session of ``bench/query.py`` (100,000 events: streamed chunks, tool
calls, approvals, compactions, prunes), stores it as plain JSONL, then in one run times:

* ``SessionStore.inspect`` of it (read, decode, validate: what any viewer must at least do);
* the session page in headless Chromium (Debian's, through Playwright) against ``harness
  serve``'s app under uvicorn: navigation start to the first contentful paint, on a cold
  viewer (nothing cached) and on a warm one (the session restored already), and to the moment
  the chart and the compaction/check/repair sections (fetched after the paint) are in.

Prints each figure and its ratio to ``inspect``. Run ``.venv/bin/python bench/viewer.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import threading
import time
from pathlib import Path

from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.viewer import create_app
from query import _inspect, _store, build_session  # bench/ is on sys.path when run as a script


def _serve(root: Path, port: int) -> object:
    import uvicorn

    async def open_store() -> SessionStore:
        return SessionStore(JsonlBackend(root, compression="none"))

    server = uvicorn.Server(uvicorn.Config(create_app(open_store), port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--port", type=int, default=8799)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="harness-bench-viewer-") as tmp:
        root = Path(tmp)
        session = build_session(args.events, 25)
        asyncio.run(_store(root, session))
        started = time.perf_counter()
        restored = asyncio.run(_inspect(root, session.id))
        inspect_s = time.perf_counter() - started
        print(f"session: {len(restored):,} events, stored as plain JSONL")
        print(f"inspect:                       {inspect_s:7.3f} s  (1.00x)")
        server = _serve(root, args.port)
        url = f"http://127.0.0.1:{args.port}/session?id={session.id}"
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            for label in ("cold (restores the session)", "warm (session cached)"):
                page = browser.new_page()
                page.goto(url, wait_until="load", timeout=600_000)
                paint = page.evaluate(
                    "() => performance.getEntriesByName('first-contentful-paint')[0].startTime / 1000"
                )
                rows = page.eval_on_selector_all("#rows .row", "rows => rows.length")
                ratio = paint / inspect_s
                print(f"first paint, {label:28} {paint:7.3f} s  ({ratio:.2f}x)  {rows} rows in the page")
                page.wait_for_selector("#chart svg", timeout=600_000)
                page.wait_for_selector("#sections h2", timeout=600_000)
                done = page.evaluate("() => performance.now() / 1000")
                print(f"  chart and sections in, {'':17} {done:7.3f} s  ({done / inspect_s:.2f}x)")
                page.close()
            browser.close()
        server.should_exit = True  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
