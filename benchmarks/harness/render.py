"""Re-render results pages from their stored rows.

    python3 -m harness.render peers audit        # run from benchmarks/
    python3 benchmarks/harness/render.py --all
    python3 benchmarks/harness/render.py --check --all   # exit 1 if a stored page differs from its rendering
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: benchmarks/ on the path in place of harness/ (whose pages.py would
    # hide the benchmarks/pages/ folder)
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from harness.pages import PAGES, RESULTS, render_folder, write_folder  # noqa: E402


def main(argv=None) -> int:
    """Render (or, with ``--check``, compare) the pages of the named results folders; the exit status."""
    parser = argparse.ArgumentParser(description="Re-render benchmarks/results/<NAME>/ pages from their rows.")
    parser.add_argument("names", nargs="*", help="results folders (benchmarks/results/<NAME>)")
    parser.add_argument("--all", action="store_true", help="every folder with templates under benchmarks/pages/")
    parser.add_argument("--check", action="store_true", help="write nothing; report pages that differ")
    args = parser.parse_args(argv)
    names = sorted(p.name for p in PAGES.iterdir() if p.is_dir()) if args.all else args.names
    if not names:
        parser.error("name a results folder or pass --all")
    stale = []
    for name in names:
        if args.check:
            differ = [p for p, text in render_folder(name).items() if not p.exists() or p.read_text() != text]
            stale += differ
            print(f"{name}: {len(differ)} page(s) differ from their rendering")
        else:
            written = write_folder(name)
            print(f"{name}: {len(written)} page(s) rewritten")
    for path in stale:
        print(f"  stale: {path.relative_to(RESULTS.parent.parent)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
