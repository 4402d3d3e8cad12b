"""Write an audit's report: ``report.html`` (self-contained), ``results.json`` and two CSV tables.

Every file is written to a temporary file in the output folder and renamed over its target, so a reader (or
a browser refreshing the page) never sees half a file and an interrupted write leaves the old one intact.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from ..errors import BDMCError, OptionTypeError
from ..files import to_jsonable, write_atomic
from ..version import __version__
from .report_html import render_html
from .result import AuditResult

# Bumped when the layout of results.json or the CSV files changes.
REPORT_VERSION = 1

REPORT_FILES = {"html": "report.html", "json": "results.json", "csv": "results.csv",
                "tables_csv": "results_tables.csv"}
CHECK_COLUMNS = ["name", "title", "verdict", "statistic", "level", "summary"]


def results_document(result: AuditResult) -> dict:
    """What ``results.json`` holds: ``result.to_dict()`` plus ``report_version`` and ``bdmc_version``."""
    return to_jsonable({"report_version": REPORT_VERSION, "bdmc_version": __version__, **result.to_dict()},
                       nonfinite="string")


def checks_frame(result: AuditResult) -> pd.DataFrame:
    """One row per check: name, title, verdict, statistic, level (empty when informative), summary."""
    return pd.DataFrame([{c: getattr(check, c) for c in CHECK_COLUMNS} for check in result.checks],
                        columns=CHECK_COLUMNS)


def tables_frame(result: AuditResult) -> pd.DataFrame:
    """Every check's ``table`` rows in one long table, with a leading ``check`` column (the check's name)."""
    rows = [{"check": check.name, **{str(k): to_jsonable(v) for k, v in row.items()}}
            for check in result.checks for row in check.table]
    cols = list(dict.fromkeys(k for row in rows for k in row)) or ["check"]
    return pd.DataFrame(rows, columns=cols)


class NotAFolderError(BDMCError, NotADirectoryError):
    """The report's folder is a file."""


def write_report(result: AuditResult, out_dir: str | os.PathLike, *, title: str | None = None) -> dict[str, Path]:
    """Write the audit's report files into ``out_dir`` (created if needed).

    Parameters
    ----------
    result : AuditResult
        The audit's outcomes, figures already rendered.
    out_dir : path
        The folder; existing report files in it are replaced atomically.
    title : str, optional
        The page's heading; default ``"bdmc audit: <model>"`` (``"bdmc audit"`` for a long model name).

    Returns
    -------
    dict of str to Path
        ``"html"``: ``report.html``, one self-contained page; ``"json"``: ``results.json``
        (``result.to_dict()`` with ``report_version`` and ``bdmc_version``; non-finite numbers as strings);
        ``"csv"``: ``results.csv``, one row per check; ``"tables_csv"``: ``results_tables.csv``, every
        check's table rows with a ``check`` column.
    """
    if not isinstance(result, AuditResult):
        raise OptionTypeError(f"write_report needs an AuditResult, got {type(result).__name__}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotAFolderError(f"write_report: out_dir {str(out)!r} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    paths = {k: out / name for k, name in REPORT_FILES.items()}
    # Render everything first, so that a failure leaves no new file half the set.
    texts = {
        "html": render_html(result, title=title),
        "json": json.dumps(results_document(result), indent=2, allow_nan=False) + "\n",
        "csv": checks_frame(result).to_csv(index=False),
        "tables_csv": tables_frame(result).to_csv(index=False),
    }
    for key, text in texts.items():
        write_atomic(paths[key], text)
    return paths
