"""Progress bars for long command-line work (rich), only when standard output is a terminal.

``with progress(total, "loading demo fleet") as advance: ... advance()`` draws a bar on a
terminal and does nothing otherwise (pipes, files, tests), so scripted output stays clean.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress"]


@contextmanager
def progress(total: int, description: str) -> Iterator[Callable[[], None]]:
    """Yield ``advance()``: one step of ``total``; a rich progress bar on a terminal."""
    if not sys.stdout.isatty() or total <= 1:
        yield lambda: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda: bar.advance(task)
