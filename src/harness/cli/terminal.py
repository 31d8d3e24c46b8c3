"""The terminal side of ``chat``, ``run`` and ``resume``: prompts, approvals and Ctrl-C.

Lines are read without blocking the event loop and without a worker thread stuck in
``input()``, so Ctrl-C acts at once at every prompt: ``Interrupts`` routes SIGINT to whatever
waits now (the ``you>`` prompt, or the running turn, whose cancel also withdraws an open
approval question). Text is checked at this boundary: a prompt that is empty, or that is
not valid UTF-8 (a model request cannot carry it), is refused before anything is appended.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from harness.agent.approval import ApprovalOutcome, ApprovalRequest
from harness.agent.loop import Agent, TurnOutcome
from harness.errors import InvalidMessage
from harness.messages.model import check_sendable

__all__ = [
    "CHAT_COMMANDS",
    "Interrupts",
    "LineReader",
    "PromptApprover",
    "PromptInterrupted",
    "ask_line",
    "chat_help",
    "checked_prompt",
    "confirm",
    "decode_line",
    "decode_text",
    "interruptible_turn",
    "is_chat_command",
]


class PromptInterrupted(Exception):
    """Ctrl-C was pressed while a prompt waited for a line."""


def checked_prompt(text: str, what: str = "the prompt") -> str:
    """``text`` when a model can be sent it; else ``InvalidMessage`` saying why: it is empty
    or whitespace only, or it holds bytes that are not valid UTF-8 (which argv and
    ``surrogateescape`` decoding keep as unpaired surrogates)."""
    check_sendable(text, what)
    if not text.strip():
        raise InvalidMessage(f"{what} is empty: say what the agent should do", path=what)
    return text


def decode_line(data: bytes, what: str = "the input") -> str:
    """One line of input as text (its line ending dropped); ``InvalidMessage`` naming the
    first byte that is not valid UTF-8."""
    return decode_text(data.removesuffix(b"\n").removesuffix(b"\r"), what)


def decode_text(data: bytes, what: str = "the input") -> str:
    """``data`` as UTF-8 text; ``InvalidMessage`` naming the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        byte = data[error.start]
        raise InvalidMessage(
            f"{what} is not valid UTF-8 text (byte {error.start} is 0x{byte:02x}): a model cannot be sent it",
            path=what,
        ) from None


def _selectable(fd: int) -> bool:
    """Whether the event loop can watch ``fd`` (a terminal, a pipe or a socket; not a file)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return os.isatty(fd) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class LineReader:
    """Reads lines of bytes from standard input without blocking the event loop.

    A terminal or a pipe is watched by the loop itself, so a pending read is cancelled at
    once and nothing is left behind. Any other input (a file, an in-memory stream) is read
    by a daemon thread; a cancelled read there keeps its line for the next call.
    """

    def __init__(self, stream: IO[Any] | None = None) -> None:
        self._stream = stream if stream is not None else sys.stdin
        self._buffer = b""
        self._eof = False
        self._pending: asyncio.Future[bytes] | None = None
        try:
            fd: int | None = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            fd = None
        self._fd = fd if fd is not None and _selectable(fd) else None

    async def readline(self) -> bytes | None:
        """The next line (with its ending), or ``None`` at the end of input."""
        if self._fd is None:
            return await self._readline_in_thread()
        while b"\n" not in self._buffer and not self._eof:
            try:
                data = await self._read_ready(self._fd)
            except NotImplementedError:  # an event loop that cannot watch file descriptors
                self._fd = None
                return await self._readline_in_thread()
            if data:
                self._buffer += data
            else:
                self._eof = True
        if not self._buffer:
            return None
        line, sep, rest = self._buffer.partition(b"\n")
        self._buffer = rest
        return line + sep

    async def _read_ready(self, fd: int) -> bytes:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[bytes] = loop.create_future()

        def on_readable() -> None:
            if ready.done():
                return
            # Non-blocking for this one read only (the terminal is shared with the shell): a
            # terminal may report itself readable with no line to read (after Ctrl-C, say), and
            # a blocking read would then hold the loop, and every later Ctrl-C, until Enter.
            blocking = os.get_blocking(fd)
            try:
                os.set_blocking(fd, False)
                data = os.read(fd, 65536)
            except BlockingIOError:
                return
            except OSError:  # EIO: the terminal went away
                data = b""
            finally:
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, blocking)
            ready.set_result(data)

        loop.add_reader(fd, on_readable)
        try:
            return await ready
        finally:
            loop.remove_reader(fd)

    async def _readline_in_thread(self) -> bytes | None:
        if self._pending is None:
            loop = asyncio.get_running_loop()
            pending: asyncio.Future[bytes] = loop.create_future()
            source = getattr(self._stream, "buffer", self._stream)

            def deliver(line: bytes | BaseException) -> None:
                if pending.done():
                    return
                if isinstance(line, BaseException):
                    pending.set_exception(line)
                else:
                    pending.set_result(line)

            def work() -> None:
                result: bytes | BaseException
                try:
                    line = source.readline()
                    if isinstance(line, str):  # a text stream with no bytes under it
                        line = line.encode("utf-8", "surrogateescape")
                    result = bytes(line)
                except Exception as error:
                    result = error
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(deliver, result)

            threading.Thread(target=work, name="harness-stdin", daemon=True).start()
            self._pending = pending
        line = await asyncio.shield(self._pending)
        self._pending = None
        return line or None


class Interrupts:
    """Routes Ctrl-C (SIGINT) to the one thing that waits now; with nothing routed, to
    ``default``, or (with no default) ``KeyboardInterrupt`` is raised as usual. A context
    manager inside the event loop; nested entries share the one handler."""

    def __init__(self, default: Callable[[], None] | None = None) -> None:
        self._default = default
        self._targets: list[Callable[[], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._depth = 0

    def __enter__(self) -> Interrupts:
        self._depth += 1
        if self._depth > 1:
            return self
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, self._fire)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals
            return self
        self._loop = loop
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0 and self._loop is not None:
            self._loop.remove_signal_handler(signal.SIGINT)
            self._loop = None

    @contextlib.contextmanager
    def routed_to(self, target: Callable[[], None]) -> Iterator[None]:
        """Within the block, Ctrl-C calls ``target`` (the innermost block wins)."""
        self._targets.append(target)
        try:
            yield
        finally:
            self._targets.remove(target)

    def _fire(self) -> None:
        if self._targets:
            self._targets[-1]()
        elif self._default is not None:
            self._default()
        else:
            raise KeyboardInterrupt


async def ask_line(
    console: Console, reader: LineReader, prompt: str, *, interrupts: Interrupts | None = None
) -> str:
    """Print ``prompt`` and read one line of text.

    Raises ``EOFError`` at the end of input, ``InvalidMessage`` for a line that is not valid
    UTF-8, and ``PromptInterrupted`` when Ctrl-C is routed here (``interrupts``) and pressed.
    """
    console.print(prompt, end="", highlight=False)
    console.file.flush()
    reading = asyncio.ensure_future(reader.readline())

    def interrupt() -> None:
        reading.cancel()

    with interrupts.routed_to(interrupt) if interrupts is not None else contextlib.nullcontext():
        try:
            await asyncio.wait((reading,))
        except asyncio.CancelledError:
            reading.cancel()
            raise
    if reading.cancelled():
        console.print()
        raise PromptInterrupted
    line = reading.result()
    if line is None:
        console.print()
        raise EOFError
    return decode_line(line)


async def interruptible_turn(
    agent: Agent,
    prompt: str,
    context: list[dict[str, Any]],
    interrupts: Interrupts,
    console: Console,
) -> TurnOutcome:
    """Run one turn. Ctrl-C cancels it (it ends ``aborted``, an open approval question is
    withdrawn as ``cancelled``); a second Ctrl-C stops it at once, and still every call gets
    its result and the step and the turn are closed, then ``KeyboardInterrupt`` is raised."""
    cancel = asyncio.Event()
    turn = asyncio.ensure_future(agent.run_turn(prompt, context=context, cancel=cancel))

    def interrupt() -> None:
        if not cancel.is_set():
            cancel.set()
            console.print("[yellow]cancelling the turn (Ctrl-C again stops at once)[/]", highlight=False)
        else:
            turn.cancel()

    with interrupts.routed_to(interrupt):
        try:
            await asyncio.wait((turn,))
        except asyncio.CancelledError:
            turn.cancel()
            raise
    if turn.cancelled():
        raise KeyboardInterrupt
    return turn.result()


CHAT_COMMANDS = {
    "/help": "list these commands",
    "/compact": "compact the history now (the model summarizes; offline when that fails)",
    "/exit": "leave (so do Ctrl-D, and Ctrl-C at the prompt)",
}
"""The commands ``harness chat`` runs itself. Any other single ``/word`` is refused as unknown,
never sent; a message that merely starts with ``/`` (``/tmp is full``) is sent as it is."""


def chat_help(console: Console) -> None:
    """Print the chat commands (``/help``): a description that wraps stays in its column."""
    console.print("[bold]commands[/]")
    grid = Table.grid(padding=(0, 1), pad_edge=False)
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for name, what in CHAT_COMMANDS.items():
        grid.add_row(Text(name), Text(what))
    console.print(Padding(grid, (0, 0, 0, 2)))
    console.print(
        Padding(
            Text(
                "Anything else is sent to the agent. Ctrl-C during a turn cancels it; "
                "a second Ctrl-C stops at once.",
                style="dim",
            ),
            (0, 0, 0, 2),
        )
    )


def is_chat_command(text: str) -> bool:
    """A single ``/word`` (a message such as ``/usr/bin is gone`` is sent as it is)."""
    word = text[1:]
    return text.startswith("/") and word.replace("-", "").replace("_", "").isalnum() and word.isascii()


async def confirm(
    console: Console, question: str, *, default: bool, reader: LineReader | None = None
) -> bool:
    """Ask a yes/no ``question`` at the terminal (an empty answer is ``default``); Ctrl-C or
    the end of input answers no, at once."""
    reader = reader or LineReader()
    hint = "\\[Y/n]" if default else "\\[y/N]"
    with Interrupts() as interrupts:
        while True:
            try:
                prompt = f"{question} [bold magenta]{hint}[/] "
                line = await ask_line(console, reader, prompt, interrupts=interrupts)
            except (EOFError, PromptInterrupted):
                return False
            except InvalidMessage:
                line = "?"
            answer = line.strip().lower()
            if answer in ("y", "yes", "n", "no", ""):
                return answer.startswith("y") or (answer == "" and default)
            console.print("[dim]answer y or n[/]")


class PromptApprover:
    """Asks the person at the terminal; only ``y``/``yes`` allows, an empty answer rejects.

    The question is a coroutine that never blocks the loop: when the turn is cancelled
    (Ctrl-C), the agent withdraws it at once and records ``cancelled``."""

    def __init__(self, console: Console, reader: LineReader | None = None) -> None:
        self.console = console
        self.reader = reader or LineReader()

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        question = (
            f"Allow [bold]{escape(request.tool_name)}[/] with {escape(_short(request.arguments))}? "
            "[bold magenta]\\[y/N][/] "
        )
        while True:
            try:
                answer = (await ask_line(self.console, self.reader, question)).strip().lower()
            except EOFError:
                return "cancelled"
            except InvalidMessage:
                answer = "?"
            if answer in ("y", "yes"):
                return "allowed-once"
            if answer in ("", "n", "no"):
                return "rejected"
            self.console.print("[dim]answer y or n[/]")


def _short(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
