"""A progress bar for reading a large stored session (shown only on a terminal)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

__all__ = ["loading_bar"]


@contextmanager
def loading_bar(console: Console, label: str) -> Iterator[Callable[[int, int], None]]:
    """Yield a ``progress(done, total)`` callback that draws a transient bar on
    ``console``. Nothing is drawn when ``console`` is not a terminal."""
    if not console.is_terminal:
        yield lambda done, total: None
        return
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    task = bar.add_task(label, total=None)
    with bar:

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total or None)

        yield advance
