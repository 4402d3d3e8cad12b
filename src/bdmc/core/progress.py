"""What a run shows while it works: a spinner while it compiles, a progress bar while it steps."""

from __future__ import annotations

import contextlib
import sys


@contextlib.contextmanager
def compiling(progress, description):
    """A spinner on a terminal while a run compiles (first run with these sizes, unless cached on disk)."""
    if callable(progress) or not (progress is True or (progress == "auto" and sys.stderr.isatty())):
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(f"compiling {description} (once per model and sizes)", spinner="dots"):
        yield


def progress_report(progress, work, description, total):
    if callable(progress):
        return progress
    if progress == "auto":
        progress = sys.stderr.isatty() and work >= 2_000_000
    if not progress:
        return None
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} steps"),
        TimeElapsedColumn(), TimeRemainingColumn(), transient=True,
    )
    bar.start()
    task = bar.add_task(description, total=total)

    class _Report:
        def __call__(self, done, _total):
            bar.update(task, completed=done)

        def close(self):
            bar.stop()

    return _Report()
