"""The output store of every command: a settings file and an append-only file of finished rows, resumable.

One directory holds one run. ``settings.json`` (or another JSON name) records the settings on which every
row's numbers depend, what the rows file holds (``contents``) and named records such as a ground truth; it is
replaced atomically (:func:`bdmc.files.write_atomic`), so it is never half written. Rows are appended one
line each, flushed and synced as they finish (:func:`bdmc.files.append_lines`), so a killed run loses at most
the row being written. A row is a line of a CSV file with typed columns (:class:`CsvRows`) or a JSON object
on a line of its own (:class:`JsonLines`, for rows with nested values); both are read back alike. On resume:

- every finished row is kept (a key written twice keeps the later row);
- a damaged last line (no trailing newline, a value that does not parse, the wrong number of fields: a run
  killed mid-write) is reported with a :class:`DamagedRowWarning` naming the file and line, dropped (so the
  caller recomputes it) and the file rewritten without it before anything is appended; damage anywhere else
  is refused;
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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import BDMCError, OptionError
from ..files import append_lines, to_jsonable, write_atomic, write_json_atomic

__all__ = ["CsvRows", "DamagedRowWarning", "JsonLines", "RunStore", "StoreError", "prepare_output_dir",
           "read_jsonl", "settings_diff", "write_json_atomic"]

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


# ------------------------------------------------------------------------------------------------ row formats

class CsvRows:
    """Rows as lines of a CSV file with a header, one typed column each, parsed back exactly.

    Parameters
    ----------
    dtypes : mapping
        Column -> type (``int``, ``float``, ``bool`` or ``str``), in file order. Floats are written as
        shortest round-trip reprs, NaN as an empty field.
    """

    def __init__(self, dtypes: Mapping[str, Any]):
        self.dtypes, self.columns = dict(dtypes), list(dtypes)
        self.header: str | None = self._line(self.columns)

    def check_header(self, line: str, path: Path) -> None:
        """Refuse a file whose header names other columns (:class:`StoreError`)."""
        header = next(csv.reader([line]))
        if header != self.columns:
            raise StoreError(f"{path} has columns {header}, expected {self.columns}; {DISCARD_HINT}")

    def parse(self, line: str) -> dict:
        """One row from its line; :class:`StoreError` says what is damaged."""
        fields = next(csv.reader([line]), [])
        if len(fields) != len(self.columns):
            raise StoreError(f"{len(fields)} fields, expected {len(self.columns)}")
        return {c: _PARSE[self.dtypes[c]](v) for c, v in zip(self.columns, fields, strict=False)}

    def coerce(self, row: Mapping, path: Path) -> dict:
        """The row as stored: every column, each of its type (:class:`StoreError` for a missing one)."""
        missing = [c for c in self.columns if c not in row]
        if missing:
            raise StoreError(f"a row for {path.name} lacks the column(s) {missing}")
        return {c: _COERCE[self.dtypes[c]](row[c]) for c in self.columns}

    def format(self, row: Mapping) -> str:
        """The row's line, without its newline."""
        return self._line([_FORMAT[self.dtypes[c]](row[c]) for c in self.columns])

    @staticmethod
    def _line(fields: list) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(fields)
        return buf.getvalue()[:-1]


class JsonLines:
    """Rows as JSON objects, one a line (nested values allowed); no header.

    Parameters
    ----------
    key : sequence of str
        Fields every row must have (its key).
    """

    header: str | None = None
    columns = None

    def __init__(self, key: Sequence[str] = ()):
        self.key = tuple(key)

    def parse(self, line: str) -> dict:
        """One row from its line; a ``ValueError`` (:class:`StoreError`, or JSON's) says what is damaged."""
        row = json.loads(line)  # json.JSONDecodeError is a ValueError
        if not isinstance(row, dict):
            raise StoreError(f"a JSON {type(row).__name__}, not an object")
        missing = [k for k in self.key if k not in row]
        if missing:
            raise StoreError(f"no key field(s) {missing}")
        return row

    def coerce(self, row: Mapping, path: Path) -> dict:
        """The row as JSON values (:func:`bdmc.files.to_jsonable`); :class:`StoreError` without its key."""
        row = to_jsonable(dict(row))
        missing = [k for k in self.key if k not in row]
        if missing:
            raise StoreError(f"a row for {path.name} lacks its key column(s) {missing}")
        return row

    def format(self, row: Mapping) -> str:
        """The row's line, without its newline."""
        return json.dumps(row)


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The rows of a JSON-lines file written row by row; [] if it does not exist.

    A damaged last line (a run interrupted while writing it) is reported with a :class:`DamagedRowWarning`
    and dropped, so its row is recomputed on resume; the file is left as it is. A damaged line before the
    last is not an interruption and raises a :class:`StoreError` naming it.
    """
    return read_rows(path, JsonLines())[0]


def read_rows(path: str | os.PathLike, rows_format: CsvRows | JsonLines) -> tuple[list[dict], bool]:
    """Every row of a rows file, in file order, and whether its last line was damaged (reported, dropped).

    Parameters
    ----------
    path : path
        The rows file; a missing or empty file has no rows.
    rows_format : CsvRows or JsonLines

    Returns
    -------
    (list of dict, bool)

    Raises
    ------
    StoreError
        A line before the last is damaged, or a CSV header names other columns.
    """
    path = Path(path)
    # A crash inside a multi-byte character leaves an undecodable tail: it is on the cut-off last line.
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    if not text:
        return [], False
    lines = text.split("\n")
    complete = not lines[-1]  # after the last newline: "" when complete, a cut-off fragment otherwise
    if complete:
        lines.pop()
    first = 0
    if rows_format.header is not None:
        if not complete and len(lines) == 1:  # cut inside the header: no row was finished
            _report(path, 1, "its header is cut off")
            return [], True
        rows_format.check_header(lines[0], path)
        first = 1
    rows = []
    for number, line in enumerate(lines[first:], start=first + 1):
        last = number == len(lines)
        if last and not complete:
            _report(path, number, f"its last row is cut off ({_clip(line)!r})")
            return rows, True
        try:
            rows.append(rows_format.parse(line))
        except ValueError as err:
            if not last:
                raise StoreError(f"{path} line {number} is damaged ({err}); remove the line (its row is "
                                 f"recomputed) or {DISCARD_HINT}") from None
            _report(path, number, f"its last row is damaged ({err})")
            return rows, True
    return rows, False


def _report(path: Path, number: int, what: str) -> None:
    warnings.warn(f"{path}, line {number}: {what}; dropped, it will be recomputed", DamagedRowWarning,
                  stacklevel=4)


# ------------------------------------------------------------------------------------------------ the store

def settings_diff(old: Mapping[str, Any], new: Mapping[str, Any], keys: Sequence[str]) -> list[str]:
    """``key: old -> new`` for every key in ``keys`` whose values differ (compared as JSON values)."""
    def norm(value):  # tuples become lists; NaN compares equal to NaN
        return to_jsonable(value, nonfinite="string")

    return [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in keys if norm(old.get(k)) != norm(new.get(k))]


class RunStore:
    """One output directory: a JSON settings file and an append-only file of rows (CSV or JSON lines).

    Parameters
    ----------
    out : path
        The directory; created (and checked writable) if needed.
    csv_name : str, optional
        Name of the rows file, for rows as CSV with the columns of ``dtypes``.
    dtypes : mapping, optional
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
    jsonl_name : str, optional
        Name of the rows file, for rows as JSON objects one a line (nested values allowed), instead of
        ``csv_name`` and ``dtypes``.

    Attributes
    ----------
    rows : list of dict
        Finished rows, resumed and appended, one per key (in file order).
    rows_file : pathlib.Path
        The rows file (also ``csv``, its name when rows were always CSV).
    records : dict
        Named records saved beside the settings (see :meth:`record`).
    resumed : int
        How many rows were resumed from disk.

    Raises
    ------
    StoreError
        When the directory holds a run with other settings (each difference listed), its rows file is
        damaged before its last line, or it holds rows without settings.
    """

    def __init__(self, out: str | os.PathLike, *, csv_name: str | None = None,
                 dtypes: Mapping[str, Any] | None = None, key: Sequence[str], settings: Mapping[str, Any],
                 compare: Sequence[str], overwrite: bool = False, json_name: str = SETTINGS_NAME,
                 discard: Sequence[str] = (), legacy: Callable[[dict | None], dict | None] | None = None,
                 contents_key: Sequence[str] | None = None, jsonl_name: str | None = None):
        if (jsonl_name is None) == (csv_name is None) or (csv_name is None) != (dtypes is None):
            raise OptionError("give csv_name and dtypes (rows as CSV) or jsonl_name (rows as JSON lines)")
        self.dir = prepare_output_dir(out)
        self.row_format = CsvRows(dtypes) if csv_name is not None else JsonLines(key)
        self.rows_file, self.json = self.dir / (csv_name or jsonl_name), self.dir / json_name
        self.csv = self.rows_file
        self.dtypes = self.row_format.dtypes if isinstance(self.row_format, CsvRows) else None
        self.columns, self.key = self.row_format.columns, tuple(key)
        self._listed = len(contents_key) if contents_key is not None else len(self.key)
        self.settings, self.compare = to_jsonable(dict(settings)), tuple(compare)  # compared as they are saved
        self.records: dict[str, Any] = {}
        self._rows: dict[tuple, dict] = {}
        previous = None if overwrite else self._previous(legacy)
        damaged = False
        if previous is None:
            for name in (self.rows_file.name, *discard):
                (self.dir / name).unlink(missing_ok=True)
        else:
            diffs = settings_diff(previous, self.settings, self.compare)
            if diffs:
                raise StoreError(f"{self.dir} holds a run with different settings ({'; '.join(diffs)}); "
                                 f"{DISCARD_HINT}")
            rows, damaged = read_rows(self.rows_file, self.row_format)
            self._rows = {self._key(r): r for r in rows}
        self.resumed = len(self._rows)
        # A damaged last row is cut off now, so that the recomputed rows follow on whole lines.
        repaired = self._text(self.rows) if damaged else None
        self._write(rows_text=repaired)

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
        if recovered is None and self.rows_file.exists() and self.rows_file.stat().st_size > 0:
            raise StoreError(f"{self.rows_file} exists without {self.json.name}, so it cannot be resumed; "
                             f"{DISCARD_HINT}")
        return recovered

    def _key(self, row: Mapping) -> tuple:
        return tuple(row[k] for k in self.key)

    @property
    def rows(self) -> list[dict]:
        return list(self._rows.values())

    def has(self, row_key: Sequence) -> bool:
        """Whether a row with this key (values of :attr:`key`, in order) is stored."""
        return tuple(row_key) in self._rows

    def find(self, row_key: Sequence) -> dict | None:
        """The stored row with this key (values of :attr:`key`, in order), or None."""
        return self._rows.get(tuple(row_key))

    def table(self) -> pd.DataFrame:
        """Every stored row as a DataFrame (with the store's columns, for CSV rows)."""
        return pd.DataFrame(self.rows, columns=self.columns)

    def append(self, *rows: Mapping) -> list[dict]:
        """Append finished rows, flushed and synced to disk so that a killed run loses nothing finished.

        Returns
        -------
        list of dict
            The rows as stored (coerced to the columns' types, or to JSON values).
        """
        rows = [self.row_format.coerce(r, self.rows_file) for r in rows]
        new = not self.rows_file.exists() or self.rows_file.stat().st_size == 0
        head = [self.row_format.header] if new and self.row_format.header is not None else []
        keyed = {self._key(r): r for r in rows}
        self._write({**self._rows, **keyed}, appended=head + [self.row_format.format(r) for r in rows])
        return rows

    def rewrite(self, rows: Sequence[Mapping], *, records: Mapping[str, Any] | None = None) -> None:
        """Atomically replace every stored row by ``rows`` (e.g. with columns filled in after the run), and save
        ``records`` (named records, as :meth:`record`) with them."""
        rows = [self.row_format.coerce(r, self.rows_file) for r in rows]
        self._check_records(records or {})
        text, keyed = self._text(rows), {self._key(r): r for r in rows}
        self._write(keyed, rows_text=text, records=records)

    def update_settings(self, **values: Any) -> None:
        """Update informational settings (never one in ``compare``) and save the JSON file atomically."""
        fixed = sorted(set(values) & set(self.compare))
        if fixed:
            raise StoreError(f"settings {fixed} determine the rows and cannot change within a run")
        self.settings.update(values)
        self._write()

    def record(self, name: str, value: Any) -> None:
        """Save a named record (e.g. a ground truth) in the JSON file beside the settings, atomically."""
        self._check_records({name: value})
        self._write(records={name: value})

    def _check_records(self, records: Mapping[str, Any]) -> None:
        reserved = sorted(set(records) & {"settings", "contents"})
        if reserved:
            raise StoreError(f"{reserved[0]!r} is reserved in {self.json.name}")

    def _text(self, rows: Sequence[Mapping]) -> str:
        """The whole rows file holding ``rows``: the header (CSV), then one line a row."""
        head = [self.row_format.header] if self.row_format.header is not None else []
        return "".join(f"{line}\n" for line in head + [self.row_format.format(r) for r in rows])

    def _write(self, rows: dict | None = None, *, rows_text: str | None = None, appended: Sequence[str] = (),
               records: Mapping[str, Any] | None = None) -> None:
        """Every write of the store, in one place: the rows file (replaced by ``rows_text``, or ``appended`` to),
        then the settings file, which states exactly what the rows file holds (its row count and every row key).

        ``rows`` (by key) are the stored rows once the rows file is written (the stored ones if None); ``records``
        join the named records saved with the settings.
        """
        rows = self._rows if rows is None else rows
        keys = [list(k) for k in dict.fromkeys(k[:self._listed] for k in rows)]
        contents = {"rows": len(rows), "key": list(self.key[:self._listed]), "keys": keys}
        if rows_text is not None:
            write_atomic(self.rows_file, rows_text)
        if appended:
            append_lines(self.rows_file, appended)
        self._rows = rows
        self.records.update(records or {})
        write_json_atomic(self.json, {"settings": self.settings, "contents": contents, **self.records})


def _clip(text: str, width: int = 40) -> str:
    return text if len(text) <= width else "..." + text[-width:]


def _parse_float(v: str) -> float:
    return float(v) if v != "" else math.nan


def _parse_bool(v: str) -> bool:
    if v not in ("True", "False"):
        raise StoreError(f"{v!r} is not True or False")
    return v == "True"


def _format_float(v) -> str:
    v = float(v)
    return "" if math.isnan(v) else repr(v)  # repr: the shortest string that parses back to the same float


_PARSE = {int: int, float: _parse_float, bool: _parse_bool, str: str}
_COERCE = {int: int, float: float, bool: bool, str: str}
_FORMAT = {int: str, float: _format_float, bool: str, str: str}
