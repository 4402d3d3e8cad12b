"""The benchmarks' harness: the row store with provenance, the peers' common problems, and page rendering.

Scripts run as ``python3 benchmarks/<script>.py``, which puts ``benchmarks/`` on ``sys.path``:

    from harness import append_row, load_rows, write_folder
"""

import os

# A benchmark measures pilots as they run: none is loaded from a store an earlier run of it left on disk
# (bdmc.core.pilot_store). peers_cold.py turns the store on for the cold calls whose caches are warm.
os.environ.setdefault("BDMC_PILOT_CACHE", "0")

from harness.pages import render, render_folder, write_folder  # noqa: E402
from harness.store import append_row, load_rows, stamp, tree_state, write_text  # noqa: E402

__all__ = ["append_row", "load_rows", "render", "render_folder", "stamp", "tree_state", "write_folder", "write_text"]
