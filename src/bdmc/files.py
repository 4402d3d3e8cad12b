"""Writing result files so that a crash leaves the old content or the new, never half of either; the one JSON
normalizer.

- :func:`write_atomic` (and :func:`replacing`, for a writer that needs a path): the new content goes to a
  uniquely named temporary file in the target's folder, is flushed and synced, renamed over the target, and
  the folder is synced where the operating system allows, so the rename itself survives a power cut. On an
  error the temporary file is removed and the target is untouched.
- :func:`append_lines`: rows appended to a log, flushed and synced before it returns, so a killed process
  loses at most the line being written (a cut-off last line, which the reader reports and drops).
- :func:`to_jsonable` / :func:`json_default`: NumPy and JAX scalars and arrays, paths, tuples, mappings and
  anything else as JSON values; non-finite floats kept (Python's ``NaN``/``Infinity``) or, for strict JSON,
  written as the strings ``"nan"``, ``"inf"``, ``"-inf"`` (``float()`` reads them back).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from .errors import OptionError

__all__ = ["append_lines", "json_default", "replacing", "to_jsonable", "write_atomic", "write_json_atomic"]


@contextlib.contextmanager
def replacing(path: str | os.PathLike, *, durable: bool = True) -> Iterator[Path]:
    """A temporary path beside ``path`` to write; on a normal exit it replaces ``path`` atomically.

    Use it when a writer needs a file name (a compiler's output, ``DataFrame.to_csv``); the writer creates
    the file, so its permissions are the writer's usual ones.

    Parameters
    ----------
    path : path
        The file to replace (its folder must exist).
    durable : bool
        Sync the file and its folder to disk before and after the rename, so a power cut keeps the new file or the
        old. Off, the replacement is still atomic for readers and a crash, but a power cut may lose it: for a cache,
        whose lost or unreadable file is computed again (the two syncs cost a millisecond or two a file).

    Yields
    ------
    pathlib.Path
        Where to write: a name unique to this call, in the same folder (a rename never crosses file systems).

    Raises
    ------
    FileNotFoundError
        When the block exits normally without creating the temporary file.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        yield tmp
        if durable:
            _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(path.parent)


def write_atomic(path: str | os.PathLike, content: str | bytes | Callable[[BinaryIO], Any], *,
                 durable: bool = True) -> Path:
    """Replace ``path`` by ``content``, atomically: a reader, or a crash, sees the old file or the new one.

    Parameters
    ----------
    path : path
        The file to write (its folder must exist).
    content : str, bytes or callable
        Text (written as UTF-8, newlines untranslated), bytes, or ``write(handle)`` that writes to a binary
        file handle (e.g. ``lambda f: np.savez(f, **arrays)``).
    durable : bool
        Synced to disk (:func:`replacing`); off only for a cache.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    with replacing(path, durable=durable) as tmp, open(tmp, "xb") as handle:
        if callable(content):
            content(handle)
        else:
            handle.write(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def write_json_atomic(path: str | os.PathLike, body: Any, *, indent: int | None = 2) -> Path:
    """Replace ``path`` by ``body`` as JSON (normalized by :func:`json_default`), atomically, ending in a newline."""
    return write_atomic(path, json.dumps(body, indent=indent, default=json_default) + "\n")


def append_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """Append ``lines`` (each without its newline) to ``path`` in one write, flushed and synced.

    A new file's folder entry is synced too. A crash during the write leaves at most a cut-off last line.
    """
    path = Path(path)
    text = "".join(f"{line}\n" for line in lines)
    created = not path.exists()
    with open(path, "ab") as handle:
        handle.write(text.encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())
    if created:
        _fsync_dir(path.parent)


def to_jsonable(value: Any, *, nonfinite: str = "keep") -> Any:
    """``value`` as JSON values: dicts with string keys, lists, strings, numbers, booleans and None.

    Parameters
    ----------
    value : any
        NumPy and JAX scalars and arrays (anything with ``tolist``) become Python numbers and lists; tuples
        lists; mappings dicts with ``str`` keys; paths strings; anything else its ``str``.
    nonfinite : {"keep", "string"}
        ``"keep"`` leaves NaN and infinities as floats (``json.dumps`` writes ``NaN``, ``Infinity``);
        ``"string"`` writes them as ``"nan"``, ``"inf"``, ``"-inf"``, for strict JSON.

    Returns
    -------
    any
    """
    if nonfinite not in ("keep", "string"):
        raise OptionError(f"nonfinite must be 'keep' or 'string', got {nonfinite!r}")
    return _normalize(value, nonfinite == "string")


def json_default(value: Any) -> Any:
    """The ``default=`` of :func:`json.dumps`: what :func:`to_jsonable` makes of a value JSON cannot write."""
    return to_jsonable(value)


def _normalize(value: Any, strict: bool) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if strict and not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): _normalize(v, strict) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalize(v, strict) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "tolist") and not isinstance(value, bytes):
        return _normalize(value.tolist(), strict)
    return str(value)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    """Sync a folder's entries (a rename or a new file); skipped where folders cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
