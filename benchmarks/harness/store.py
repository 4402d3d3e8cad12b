"""The row store of every benchmark: one JSON line per row, each stamped with how it was obtained.

A row records the commit, whether the tree was clean, the date, the machine's load and the machine
(:func:`stamp`), so a page quoting it can say where its numbers came from.

    from harness import append_row, load_rows
    append_row(folder / "rows.jsonl", {"problem": "schools", "log_z": -30.7})
    rows = load_rows(folder / "rows.jsonl")
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

from bdmc.caching import cached
from bdmc.experiments.store import read_jsonl
from bdmc.files import json_default

ROOT = Path(__file__).resolve().parents[2]


@cached(maxsize=1)
def tree_state() -> tuple[str, bool | None]:
    """The commit of this checkout and whether its tree is clean.

    Benchmarks count toward cleanliness; the results folder, which the runs themselves write, does not. Read
    once per process, when its first row is stamped.

    Returns
    -------
    (str, bool or None)
        The short commit hash and whether the tree is clean. A copied tree without git takes its commit from
        ``BDMC_BENCH_COMMIT`` (cleanliness then unknown: None).
    """
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    if not head:
        return os.environ.get("BDMC_BENCH_COMMIT", "unknown"), None
    dirty = subprocess.run(git + ["status", "--porcelain", "--", ".", ":!benchmarks/results"], capture_output=True,
                           text=True).stdout.strip()
    return head, not dirty


def bdmc_source() -> str:
    """The commit the imported bdmc comes from, with "+dirty" when its ``src/bdmc`` has uncommitted changes; its
    version where it is not a git checkout. A run may import bdmc from another tree than its own (PYTHONPATH)."""
    import bdmc

    root = Path(bdmc.__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "src/bdmc"], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return bdmc.__version__
    return head + ("+dirty" if dirty else "")


def stamp() -> dict:
    """The provenance fields of one row, taken now.

    Returns
    -------
    dict
        ``commit``, ``clean_tree``, ``date`` (UTC, ISO 8601), ``load`` (1-minute load average) and ``machine``.
    """
    commit, clean = tree_state()
    return {"commit": commit, "clean_tree": clean, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "load": os.getloadavg()[0], "machine": f"{platform.node()} ({os.cpu_count()} cores)"}


def jsonable(x):
    """``x`` as JSON can hold it (NumPy and JAX scalars and arrays as numbers and lists): ``bdmc.files``'s rule."""
    return json_default(x)


def append_row(path: str | os.PathLike, row: dict) -> None:
    """Append one stamped row to a JSON-lines file, atomically and durably.

    The line is written with a single ``write`` on an ``O_APPEND`` descriptor (atomic for one row, so concurrent
    writers never interleave) and synced before returning. A torn last line left by an interrupted writer is cut
    off first, so it never ends up inside the file (where :func:`load_rows` would refuse it).

    Parameters
    ----------
    path : path
        The JSON-lines file; created (with its folder) if missing.
    row : dict
        The row's fields. :func:`stamp`'s fields are added where the row does not already hold them (a row's own
        ``commit`` etc. win).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {**row, **{k: v for k, v in stamp().items() if k not in row}}
    line = (json.dumps(row, default=jsonable) + "\n").encode()
    _drop_torn_line(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def _drop_torn_line(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        f.seek(0)
        text = f.read()
        f.truncate(text.rfind(b"\n") + 1)
        f.flush()
        os.fsync(f.fileno())


def load_rows(path: str | os.PathLike) -> list[dict]:
    """The rows of a JSON-lines file, in file order; ``[]`` if it does not exist.

    A torn last line (an interrupted write) is reported and dropped; a damaged line before the last raises
    ``bdmc.experiments.store.StoreError``.

    Parameters
    ----------
    path : path

    Returns
    -------
    list of dict
    """
    return read_jsonl(path)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Replace a file's text atomically: a reader sees the old text or the new, never a partial one.

    Parameters
    ----------
    path : path
        The file; its folder is created if missing.
    text : str
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
