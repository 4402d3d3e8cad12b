"""Results pages rendered from their rows: a template per page, the values computed from the stored rows.

A results folder ``benchmarks/results/<name>/`` holds rows (JSON lines, CSV) and the pages quoting them. Each
page has a template of the same file name under ``benchmarks/pages/<name>/``: plain Markdown in which
``{{value}}`` or ``{{value:spec}}`` stands for a number. ``benchmarks/pages/<name>/values.py`` (and, for a
table with a module of its own, ``table_values.py``) defines ``values(folder) -> dict``, every value the templates
use, computed from the rows in ``folder``. A script that
writes rows calls :func:`write_folder` after writing; ``python3 -m harness.render NAME...`` re-renders.

A spec is a Python format spec (``.2f``, ``,.0f``, ``+.1f``, ``.1%``) or one of the harness's own:

- ``eN``: scientific notation with N mantissa decimals and an exponent without zero padding or ``+``
  (``{{p:e1}}`` gives ``1.5e-4``, ``2.0e5``); a leading ``+`` shows the sign of a positive value;
- a trailing ``u`` on any spec writes a minus sign as the typographic minus U+2212 (``{{d:.2fu}}`` gives
  ``−2128.90``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from bdmc.errors import MissingFileError, OptionError, OptionTypeError
from harness.store import write_text

BENCHMARKS = Path(__file__).resolve().parents[1]
RESULTS = BENCHMARKS / "results"
PAGES = BENCHMARKS / "pages"
PLACEHOLDER = re.compile(r"\{\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::(?P<spec>[^{}]*))?\}\}")
SCIENTIFIC = re.compile(r"^(?P<sign>\+?)e(?P<decimals>[0-9]+)$")
MINUS = "\u2212"


def placeholders(template: str) -> set[str]:
    """The value names a template uses.

    Parameters
    ----------
    template : str

    Returns
    -------
    set of str
    """
    return {match["name"] for match in PLACEHOLDER.finditer(template)}


def format_value(value: object, spec: str | None) -> str:
    """One value as a page shows it.

    Parameters
    ----------
    value : object
        A number (or, without a spec, anything: a pre-rendered table is a string).
    spec : str or None
        A Python format spec, or the harness's ``[+]eN`` (see the module docstring); a trailing ``u`` writes the
        minus sign as U+2212. None: ``str(value)``.

    Returns
    -------
    str

    Raises
    ------
    OptionError
        If the spec does not apply to the value.
    """
    if spec is None or spec == "":
        return str(value)
    typographic = spec.endswith("u")
    spec = spec[:-1] if typographic else spec
    scientific = SCIENTIFIC.match(spec)
    try:
        if scientific:
            mantissa, exponent = f"{float(value):.{int(scientific['decimals'])}e}".split("e")
            text = f"{mantissa}e{int(exponent)}"
            if scientific["sign"] and not text.startswith("-"):
                text = "+" + text
        else:
            text = format(value, spec)
    except (TypeError, ValueError) as error:
        raise OptionError(f"format spec {spec!r} does not apply to {value!r}: {error}") from error
    return text.replace("-", MINUS) if typographic else text


def render(template: str, values: Mapping[str, object]) -> str:
    """A template with every placeholder replaced by its value.

    Parameters
    ----------
    template : str
        Text with ``{{name}}`` / ``{{name:spec}}`` placeholders.
    values : mapping of str to object
        Exactly the values the template uses.

    Returns
    -------
    str

    Raises
    ------
    OptionError
        If a placeholder has no value, a value is used by no placeholder, or a spec does not apply.
    """
    used = placeholders(template)
    missing = sorted(used - set(values))
    if missing:
        raise OptionError(f"placeholders with no value: {missing}")
    unused = sorted(set(values) - used)
    if unused:
        raise OptionError(f"values no placeholder uses: {unused}")
    return PLACEHOLDER.sub(lambda match: format_value(values[match["name"]], match["spec"]), template)


def templates(name: str, *, pages: Path = PAGES) -> dict[Path, str]:
    """The templates of results folder ``name``, by path relative to the folder (``README.md``, ``table.md``, ...).

    Parameters
    ----------
    name : str
    pages : Path
        The folder holding one template folder per results folder.

    Returns
    -------
    dict of Path to str

    Raises
    ------
    MissingFileError
        If ``pages/<name>/`` holds no template.
    """
    folder = pages / name
    found = {path.relative_to(folder): path.read_text() for path in sorted(folder.rglob("*.md"))}
    if not found:
        raise MissingFileError(f"no page template under {folder}")
    return found


@contextlib.contextmanager
def _benchmarks_importable():
    """``benchmarks/`` on ``sys.path`` while a values module runs (it may import ``harness`` or ``pages.tables``)."""
    added = str(BENCHMARKS) not in sys.path
    if added:
        sys.path.insert(0, str(BENCHMARKS))
    try:
        yield
    finally:
        if added:
            sys.path.remove(str(BENCHMARKS))


def folder_values(name: str, folder: Path, *, pages: Path = PAGES) -> dict[str, object]:
    """What the values modules of ``pages/<name>/`` compute from the rows stored in ``folder``.

    ``values.py`` defines ``values(folder) -> dict``; a page's table may come from a module of its own,
    ``<page>_values.py`` (e.g. ``table_values.py``), with the same function. Their values are merged; a folder
    whose templates hold no placeholder may have none.

    Parameters
    ----------
    name : str
    folder : Path
        The results folder whose rows to read.
    pages : Path

    Returns
    -------
    dict of str to object

    Raises
    ------
    OptionTypeError
        If a ``values`` function does not return a mapping.
    OptionError
        If two values modules give the same name different values.
    """
    merged: dict[str, object] = {}
    for path in sorted((pages / name).glob("*values.py")):
        module_name = f"pages_{name.replace('/', '_')}_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        with _benchmarks_importable():
            spec.loader.exec_module(module)
            values = module.values(folder)
        if not isinstance(values, Mapping):
            raise OptionTypeError(f"{path}: values() returned {type(values).__name__}, not a mapping")
        # Two pages of a folder may quote the same number (computed by each page's module): they must agree.
        clash = sorted(k for k in set(values) & set(merged) if values[k] != merged[k])
        if clash:
            raise OptionError(f"{path}: values another values module of {pages / name} gives differently: {clash}")
        merged.update(values)
    return merged


def render_folder(name: str, *, results: Path = RESULTS, pages: Path = PAGES) -> dict[Path, str]:
    """Every page of results folder ``name``, rendered from its templates and the rows stored in the folder.

    Parameters
    ----------
    name : str
        The results folder's name (``benchmarks/results/<name>``).
    results : Path
        The folder holding the results folders (another place renders a copy).
    pages : Path
        The folder holding the template folders.

    Returns
    -------
    dict of Path to str
        Each page's text by its path under ``results``.

    Raises
    ------
    OptionError
        If a placeholder has no value or a value is used by no template.
    """
    found = templates(name, pages=pages)
    values = folder_values(name, results / name, pages=pages)
    unused = sorted(set(values) - set().union(*map(placeholders, found.values())))
    if unused:
        raise OptionError(f"{pages / name}: values no template uses: {unused}")
    return {results / name / relative: render(text, {k: values[k] for k in placeholders(text) if k in values})
            for relative, text in found.items()}


def write_folder(name: str, *, results: Path = RESULTS, pages: Path = PAGES,
                 written_to: Path | None = None) -> list[Path]:
    """Render the pages of results folder ``name`` and write those whose text changed.

    Parameters
    ----------
    name : str
    results, pages : Path
        As for :func:`render_folder`.
    written_to : Path, optional
        The folder a run just wrote its rows to (a script's ``--out``). The pages are rendered only when it is
        the results folder ``name`` or inside it: a trial run into another folder has no pages.

    Returns
    -------
    list of Path
        The pages written.
    """
    folder = (results / name).resolve()
    if written_to is not None and folder not in (Path(written_to).resolve(), *Path(written_to).resolve().parents):
        return []
    written = []
    for path, text in render_folder(name, results=results, pages=pages).items():
        if not path.exists() or path.read_text() != text:
            write_text(path, text)
            written.append(path)
    return written
