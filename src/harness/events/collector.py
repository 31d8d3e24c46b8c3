"""Pausing the cyclic garbage collector while large acyclic JSON trees are built.

Decoding or restoring a log allocates millions of containers that can never form
cycles; the collector would rescan the growing heap again and again for nothing.
``collector_paused()`` nests and works across threads: the collector is switched
off by the first holder and back on (if it was on) when the last one leaves.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
