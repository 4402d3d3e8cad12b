"""The benchmarks' harness: the row store with provenance, the peers' common problems, and page rendering.

Scripts run as ``python3 benchmarks/<script>.py``, which puts ``benchmarks/`` on ``sys.path``:

    from harness import append_row, load_rows, write_folder
"""

from harness.pages import render, render_folder, write_folder
from harness.store import append_row, load_rows, stamp, tree_state, write_text

__all__ = ["append_row", "load_rows", "render", "render_folder", "stamp", "tree_state", "write_folder", "write_text"]
