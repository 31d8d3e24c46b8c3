"""A TCP relay between a PostgreSQL client and the test server that can lose replies.

The relay runs in its own thread with its own event loop, so it keeps forwarding while the
test's loop is blocked in a backend call. Modes:

* ``"pass"``: forward both ways.
* ``"swallow"``: forward what the client sends; hold back every reply.
* ``"reset-after-reply"``: forward the request; when the server's reply arrives, drop it
  and reset the client's connection (a commit whose reply was lost, noticed at once).

``break_clients()`` resets every client connection now; ``replies_held`` counts the
server bytes the relay kept from clients.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Literal

Mode = Literal["pass", "swallow", "reset-after-reply"]


class Relay:
    """Forwards ``127.0.0.1:<port>`` to ``host:port`` (see the module docs)."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self.mode: Mode = "pass"
        self.replies_held = 0
        self._loop = asyncio.new_event_loop()
        self._clients: set[asyncio.StreamWriter] = set()
        self._ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._run, name="pg-relay", daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def set(self, mode: Mode) -> None:
        """Switch mode (connections already open follow it at once)."""
        self.mode = mode

    def break_clients(self) -> None:
        """Reset every client connection (as a cut that the client notices at once)."""
        done = threading.Event()

        def reset() -> None:
            for writer in list(self._clients):
                _reset(writer)
            done.set()

        self._loop.call_soon_threadsafe(reset)
        done.wait(5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._clients.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            _reset(writer)
            self._clients.discard(writer)
            return

        async def upstream() -> None:
            while data := await reader.read(65536):
                up_writer.write(data)
                await up_writer.drain()

        async def downstream() -> None:
            while data := await up_reader.read(65536):
                if self.mode == "pass":
                    writer.write(data)
                    await writer.drain()
                    continue
                self.replies_held += len(data)
                if self.mode == "reset-after-reply":
                    _reset(writer)
                    return

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except Exception:
            pass
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._clients.discard(writer)
            for closing in (up_writer, writer):
                closing.close()

    def close(self) -> None:
        """Stop the relay and drop every connection."""

        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for writer in list(self._clients):
                _reset(writer)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a broken link looks to the peer."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@contextmanager
def relay_to(host: str, port: int) -> Iterator[Relay]:
    """A running ``Relay`` to ``host:port``, stopped on exit."""
    relay = Relay(host, port)
    try:
        yield relay
    finally:
        relay.close()
