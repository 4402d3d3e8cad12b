"""Rewrite a results page's quoted numbers from its rows: each ``<!--q:NAME-->value<!--/q-->`` gets the value of
``NAME(folder)`` from the folder's ``quotes.py``, shown with the decimals the page already uses (a count stays an
integer). Run after new rows land, then read the page's sentences again: a number can change what they may say.

    python benchmarks/fill_quotes.py benchmarks/results/audit_calibration
"""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

MARKER = re.compile(r"<!--q:(?P<name>[A-Za-z0-9_]+)-->(?P<value>.*?)<!--/q-->")


def formatted(value, shown: str) -> str:
    """``value`` written like ``shown``: its decimals, thousands separators and scientific notation."""
    if "e" in shown.lower():
        mantissa = shown.lower().split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return f"{float(value):.{decimals}e}".replace("e-0", "e-").replace("e+0", "e")
    digits = shown.replace(",", "").replace("\u2212", "-").lstrip("+-")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    text = f"{float(value):,.{decimals}f}" if "," in shown else f"{float(value):.{decimals}f}"
    if shown.startswith("+") and float(value) >= 0:
        text = "+" + text
    return text.replace("-", "\u2212") if "\u2212" in shown else text


def fill(folder: Path) -> int:
    spec = importlib.util.spec_from_file_location(f"quotes_{folder.name}", folder / "quotes.py")
    quotes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(quotes)
    page = folder / "README.md"
    text = page.read_text()
    changed = 0

    def replace(match):
        nonlocal changed
        new = formatted(getattr(quotes, match["name"])(folder), match["value"])
        changed += new != match["value"]
        return f"<!--q:{match['name']}-->{new}<!--/q-->"

    page.write_text(MARKER.sub(replace, text))
    return changed


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path)
    for folder in parser.parse_args(argv).folders:
        print(f"{folder}: {fill(folder)} quote(s) changed")


if __name__ == "__main__":
    main()
