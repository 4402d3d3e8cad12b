"""Every number a results page quotes through a marker is recomputed from the rows stored beside it.

A page under ``benchmarks/results/`` marks a quoted number as ``<!--q:NAME-->TEXT<!--/q-->``; the folder's
``quotes.py`` defines ``NAME(folder) -> float`` computing it from the stored rows. The test fails when the text
differs from the computed value rounded to the decimals the text shows (in scientific notation, those of the
mantissa: ``1.5e-4`` is 1.5e-4 to within 0.05e-4), when a marker names no function, or when a folder's ``quotes.py``
defines a quote no page uses (a stale quote). Every ``benchmarks/results/*/README.md`` must carry a marker unless
``EXEMPT`` names it with its reason, so a generator that rewrites a page without markers, or a new page, fails here
instead of dropping out of the check. Markers are HTML comments: invisible on a rendered page.
"""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
MARKER = re.compile(r"<!--q:([A-Za-z_][A-Za-z0-9_]*)-->(.*?)<!--/q-->", re.S)
NUMBER = re.compile(r"^[+-]?([0-9,]*\.?[0-9]+)([eE][+-]?[0-9]+)?$")

# Results pages that carry no marker, each with its reason. A page not named here and without a marker fails.
EXEMPT: dict[str, str] = {}


def pages_with_quotes():
    return sorted(p for p in RESULTS.rglob("*.md") if MARKER.search(p.read_text()))


def load_quotes(folder: Path):
    path = folder / "quotes.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"quotes_{folder.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shown_value(text: str) -> tuple[float, float]:
    """The number a quote shows, and half a unit of its last shown digit (of the mantissa, in scientific notation)."""
    clean = text.strip().replace(",", "").replace("\u2212", "-")
    match = NUMBER.match(clean)
    assert match, f"a quote must be a plain number, got {text!r}"
    mantissa, exponent = match.group(1), match.group(2)
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    scale = 10.0 ** int(exponent[1:]) if exponent else 1.0
    return float(clean), 0.5 * 10.0 ** -decimals * scale


@pytest.mark.parametrize("page", pages_with_quotes(), ids=lambda p: str(p.relative_to(RESULTS)))
def test_every_quoted_number_matches_its_rows(page):
    quotes = load_quotes(page.parent)
    assert quotes is not None, f"{page} quotes numbers but {page.parent}/quotes.py does not exist"
    for name, text in MARKER.findall(page.read_text()):
        compute = getattr(quotes, name, None)
        assert callable(compute), f"{page}: quote {name!r} is not defined in quotes.py"
        value = float(compute(page.parent))
        shown, half = shown_value(text)
        assert math.isfinite(value), f"{page}: quote {name!r} computes {value}"
        assert abs(shown - value) <= half * (1 + 1e-9), f"{page}: {name} shows {text!r}, the rows give {value!r}"


def test_every_results_page_carries_a_marker_or_an_exemption():
    """A page without markers is checked by nothing: it must be named in EXEMPT with its reason."""
    pages = {p.parent.name: p for p in RESULTS.glob("*/README.md")}
    unmarked = sorted(name for name, page in pages.items() if not MARKER.search(page.read_text()))
    missing = [name for name in unmarked if name not in EXEMPT]
    assert not missing, f"results pages with no <!--q:...--> marker and no exemption: {missing}"
    stale = sorted(name for name in EXEMPT if name not in pages or name not in unmarked)
    assert not stale, f"EXEMPT names pages that are gone or now carry markers: {stale}"


def test_every_quote_is_used():
    for quotes_file in sorted(RESULTS.rglob("quotes.py")):
        module = load_quotes(quotes_file.parent)
        defined = {n for n in getattr(module, "QUOTES", ())}
        used = {name for md in quotes_file.parent.glob("*.md") for name, _ in MARKER.findall(md.read_text())}
        assert defined <= used, f"{quotes_file}: quotes no page uses: {sorted(defined - used)}"


def test_the_checker_catches_a_wrong_number(tmp_path):
    """Negative control: a page whose number disagrees with its rows fails; one that agrees passes."""
    (tmp_path / "quotes.py").write_text("QUOTES = ('half',)\ndef half(folder):\n    return 0.5\n")
    quotes = load_quotes(tmp_path)
    for text, ok in (("0.5", True), ("0.50", True), ("0.6", False), ("1", True), ("0.49", False),
                     ("5e-1", True), ("5.0E-1", True), ("50e-2", True), ("6e-1", False), ("4.9e-1", False),
                     ("5e-2", False), ("0.5e0", True)):
        shown, half = shown_value(text)
        assert (abs(shown - quotes.half(tmp_path)) <= half) is ok, text
    for text in ("about 0.5", "5e", "e-4", "1.5e-4.0", "5 e-1"):
        with pytest.raises(AssertionError):
            shown_value(text)
