"""The output store of every command: a settings file and an append-only CSV of finished rows, resumable.

One directory holds one run. ``settings.json`` (or another JSON name) records the settings on which every
row's numbers depend, what the CSV holds (``contents``) and named records such as a ground truth; it is
replaced atomically (written to a temporary file, then renamed), so it is never half written. Rows are
appended to the CSV one line each, flushed and synced as they finish, so a killed run loses at most the row
being written. On resume:

- every finished row is kept (a key written twice keeps the later row);
- a damaged last row (no trailing newline, a value that does not parse, the wrong number of fields: a run
  killed mid-write) is dropped with a :class:`DamagedRowWarning` and the file rewritten without it, so the
  caller recomputes it; damage anywhere else is refused;
- settings that determine the rows must match the saved ones, else :class:`StoreError` lists each difference
  as ``key: old -> new``; ``overwrite=True`` discards the directory's results instead.

:func:`prepare_output_dir` checks that a directory can hold results before any computing starts.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from ..errors import BDMCError

SETTINGS_NAME = "settings.json"
DISCARD_HINT = "pass --overwrite (overwrite=True) to discard it, or choose another output directory"


class StoreError(BDMCError, ValueError):
    """An output directory cannot be used: not writable, damaged, or holding a run with other settings."""


class DamagedRowWarning(UserWarning):
    """The last row of a results file was cut off (a run killed mid-write); it is dropped and recomputed."""


def prepare_output_dir(out: str | os.PathLike) -> Path:
    """Create ``out`` if needed and check that files can be written in it, before any computing.

    Parameters
    ----------
    out : path
        The output directory.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    StoreError
        When ``out`` is a file, cannot be created, or is not writable.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise StoreError(f"the output directory {out} is a file; choose another output directory (--out)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(f"cannot create the output directory {out} ({err.strerror or err}); choose another "
                         "output directory (--out)") from None
    try:
        with tempfile.NamedTemporaryFile(dir=out, prefix=".bdmc-write-test-"):
            pass
    except OSError as err:
        raise StoreError(f"cannot write in the output directory {out} ({err.strerror or err}); fix its "
                         "permissions or choose another output directory (--out)") from None
    return out


def read_jsonl(path: Path) -> list[dict]:
    """The rows of a JSON-lines file written row by row; [] if it does not exist.

    A last line cut short by an interrupted run is dropped (its row is recomputed on resume); a damaged line
    before the last is not an interruption and raises a :class:`StoreError` naming it.
    """
    path = Path(path)
    if not path.exists():
        return []
    rows, lines = [], path.read_text().splitlines()
    for i, line in enumerate(lines):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i != len(lines) - 1:
                raise StoreError(f"{path}, line {i + 1}, is not JSON: the file was edited or damaged; remove "
                                 "the line (its row is recomputed) or the file") from None
    return rows


def write_json_atomic(path: Path, body: Any) -> None:
    """Replace ``path`` by ``body`` as JSON: written to a temporary file, synced, then renamed."""
    _replace(path, json.dumps(body, indent=2, default=_json_default) + "\n")


def settings_diff(old: Mapping[str, Any], new: Mapping[str, Any], keys: Sequence[str]) -> list[str]:
    """``key: old -> new`` for every key in ``keys`` whose values differ (compared as JSON values)."""
    norm = lambda v: json.loads(json.dumps(v, default=_json_default))  # noqa: E731  tuples become lists
    return [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in keys if norm(old.get(k)) != norm(new.get(k))]


class RunStore:
    """One output directory: a JSON settings file and an append-only CSV of rows.

    Parameters
    ----------
    out : path
        The directory; created (and checked writable) if needed.
    csv_name : str
        Name of the rows file.
    dtypes : mapping
        Column -> type (``int``, ``float``, ``bool`` or ``str``), in file order; rows are parsed back to these
        types exactly (floats are written as shortest round-trip reprs, NaN as an empty field).
    key : sequence of str
        Columns identifying a row (e.g. chain length and direction).
    settings : mapping
        The run's settings, saved under ``"settings"`` in the JSON file.
    compare : sequence of str
        Settings on which the rows' numbers depend; a resumed run must agree on each of them. The others are
        informational and updated to this run's values.
    overwrite : bool
        Discard whatever the directory holds instead of resuming.
    json_name : str
        Name of the settings file.
    discard : sequence of str
        Other files derived from the rows (figures, summaries), deleted when a fresh run starts.
    legacy : callable, optional
        ``legacy(previous_settings) -> settings`` normalizes settings saved by an older version; called with
        ``None`` when the JSON file is missing, it may return settings recovered from elsewhere (else None).
    contents_key : sequence of str, optional
        The leading key columns listed under ``contents`` in the JSON file (default: the whole key); e.g. a
        run's condition and chain length without every chain number.

    Attributes
    ----------
    rows : list of dict
        Finished rows, resumed and appended, one per key (in file order).
    records : dict
        Named records saved beside the settings (see :meth:`record`).
    resumed : int
        How many rows were resumed from disk.
    """

    def __init__(self, out: str | os.PathLike, *, csv_name: str, dtypes: Mapping[str, Any], key: Sequence[str],
                 settings: Mapping[str, Any], compare: Sequence[str], overwrite: bool = False,
                 json_name: str = SETTINGS_NAME, discard: Sequence[str] = (),
                 legacy: Callable[[dict | None], dict | None] | None = None, contents_key: Sequence[str] | None = None):
        self.dir = prepare_output_dir(out)
        self.csv, self.json = self.dir / csv_name, self.dir / json_name
        self.dtypes, self.columns, self.key = dict(dtypes), list(dtypes), tuple(key)
        self._listed = len(contents_key) if contents_key is not None else len(self.key)
        self.settings, self.compare = dict(settings), tuple(compare)
        self.records: dict[str, Any] = {}
        self._rows: dict[tuple, dict] = {}
        previous = None if overwrite else self._previous(legacy)
        if previous is None:
            for name in (csv_name, *discard):
                (self.dir / name).unlink(missing_ok=True)
        else:
            diffs = settings_diff(previous, self.settings, self.compare)
            if diffs:
                raise StoreError(f"{self.dir} holds a run with different settings ({'; '.join(diffs)}); "
                                 f"{DISCARD_HINT}")
            self._read_rows()
        self.resumed = len(self._rows)
        self._write_json()

    # ------------------------------------------------------------------------------------------------ reading

    def _previous(self, legacy) -> dict | None:
        """The saved settings of a run to resume, or None for a fresh directory."""
        if self.json.exists():
            try:
                doc = json.loads(self.json.read_text())
            except (OSError, ValueError) as err:
                raise StoreError(f"{self.json} is unreadable ({err}); {DISCARD_HINT}") from None
            if not isinstance(doc, dict):
                raise StoreError(f"{self.json} is not a settings file; {DISCARD_HINT}")
            nested = isinstance(doc.get("settings"), dict)
            previous = doc["settings"] if nested else doc  # flat files came from older versions
            self.records = {k: v for k, v in doc.items() if k not in ("settings", "contents")} if nested else {}
            return legacy(dict(previous)) if legacy is not None else dict(previous)
        recovered = legacy(None) if legacy is not None else None
        if recovered is None and self.csv.exists() and self.csv.stat().st_size > 0:
            raise StoreError(f"{self.csv} exists without {self.json.name}, so it cannot be resumed; {DISCARD_HINT}")
        return recovered

    def _read_rows(self) -> None:
        if not self.csv.exists() or self.csv.stat().st_size == 0:
            return
        text = self.csv.read_text()
        lines = text.split("\n")
        complete = text.endswith("\n")
        lines = lines[:-1]  # after the last newline: "" when complete, a cut-off fragment otherwise
        if not complete and not lines:  # cut inside the header: no row was finished
            warnings.warn(f"{self.csv}: its header is cut off; rewritten", DamagedRowWarning, stacklevel=3)
            self._rewrite([])
            return
        header = next(csv.reader([lines[0]]))
        if header != self.columns:
            raise StoreError(f"{self.csv} has columns {header}, expected {self.columns}; {DISCARD_HINT}")
        damaged = None if complete else f"the last line is cut off ({_clip(text.rsplit(chr(10), 1)[-1])!r})"
        body = lines[1:]
        for i, line in enumerate(body):
            try:
                row = self._parse(line)
            except ValueError as err:
                if i < len(body) - 1 or damaged is not None:
                    raise StoreError(f"{self.csv} line {i + 2} is damaged ({err}); {DISCARD_HINT}") from None
                damaged = f"its last row is damaged ({err})"
                break
            self._rows[self._key(row)] = row
        if damaged is not None:
            warnings.warn(f"{self.csv}: {damaged}; dropped, it will be recomputed", DamagedRowWarning,
                          stacklevel=3)
            self._rewrite(list(self._rows.values()))

    def _parse(self, line: str) -> dict:
        fields = next(csv.reader([line]), [])
        if len(fields) != len(self.columns):
            raise ValueError(f"{len(fields)} fields, expected {len(self.columns)}")
        return {c: _PARSE[self.dtypes[c]](v) for c, v in zip(self.columns, fields)}

    def _key(self, row: Mapping) -> tuple:
        return tuple(row[k] for k in self.key)

    # ------------------------------------------------------------------------------------------------ writing

    @property
    def rows(self) -> list[dict]:
        return list(self._rows.values())

    def has(self, row_key: Sequence) -> bool:
        """Whether a row with this key (values of :attr:`key`, in order) is stored."""
        return tuple(row_key) in self._rows

    def table(self) -> pd.DataFrame:
        """Every stored row as a DataFrame with the store's columns."""
        return pd.DataFrame(self.rows, columns=self.columns)

    def append(self, *rows: Mapping) -> None:
        """Append finished rows, flushed and synced to disk so that a killed run loses nothing finished."""
        rows = [self._coerce(r) for r in rows]
        new = not self.csv.exists() or self.csv.stat().st_size == 0
        with open(self.csv, "a", newline="") as f:
            f.write(self._format(rows, header=new))
            f.flush()
            os.fsync(f.fileno())
        for r in rows:
            self._rows[self._key(r)] = r
        self._write_json()

    def rewrite(self, rows: Sequence[Mapping]) -> None:
        """Atomically replace every stored row by ``rows`` (e.g. with columns filled in after the run)."""
        rows = [self._coerce(r) for r in rows]
        self._rewrite(rows)
        self._rows = {self._key(r): r for r in rows}
        self._write_json()

    def update_settings(self, **values: Any) -> None:
        """Update informational settings (never one in ``compare``) and save the JSON file atomically."""
        fixed = sorted(set(values) & set(self.compare))
        if fixed:
            raise StoreError(f"settings {fixed} determine the rows and cannot change within a run")
        self.settings.update(values)
        self._write_json()

    def record(self, name: str, value: Any) -> None:
        """Save a named record (e.g. a ground truth) in the JSON file beside the settings, atomically."""
        if name in ("settings", "contents"):
            raise StoreError(f"{name!r} is reserved in {self.json.name}")
        self.records[name] = value
        self._write_json()

    def _rewrite(self, rows: list[dict]) -> None:
        _replace(self.csv, self._format(rows, header=True))

    def _coerce(self, row: Mapping) -> dict:
        missing = [c for c in self.columns if c not in row]
        if missing:
            raise StoreError(f"a row for {self.csv.name} lacks the column(s) {missing}")
        return {c: _COERCE[self.dtypes[c]](row[c]) for c in self.columns}

    def _format(self, rows: list[dict], *, header: bool) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        if header:
            writer.writerow(self.columns)
        for r in rows:
            writer.writerow([_FORMAT[self.dtypes[c]](r[c]) for c in self.columns])
        return buf.getvalue()

    def _write_json(self) -> None:
        """The settings file states exactly what the CSV holds: its row count and every row key."""
        keys = [list(k) for k in dict.fromkeys(k[:self._listed] for k in self._rows)]
        contents = {"rows": len(self._rows), "key": list(self.key[:self._listed]), "keys": keys}
        body = {"settings": self.settings, "contents": contents,
                **self.records}
        write_json_atomic(self.json, body)


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _json_default(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def _clip(text: str, width: int = 40) -> str:
    return text if len(text) <= width else "..." + text[-width:]


def _parse_float(v: str) -> float:
    return float(v) if v != "" else math.nan


def _parse_bool(v: str) -> bool:
    if v not in ("True", "False"):
        raise ValueError(f"{v!r} is not True or False")
    return v == "True"


def _format_float(v) -> str:
    v = float(v)
    return "" if math.isnan(v) else repr(v)  # repr: the shortest string that parses back to the same float


_PARSE = {int: int, float: _parse_float, bool: _parse_bool, str: str}
_COERCE = {int: int, float: float, bool: bool, str: str}
_FORMAT = {int: str, float: _format_float, bool: str, str: str}
