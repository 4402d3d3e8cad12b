"""Table 2 of each ``bdmc generative`` run directory (``run/``, ``run-gan/``, ``gap-curve/``, ...), rendered from its
``rows.jsonl`` and ``settings.json`` as ``bdmc generative`` writes it (``bdmc.experiments.generative_store``): the
value ``table2_<run>`` (the directory's name made an identifier) fills ``<run>/table2.md``."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bdmc.experiments.generative_store import markdown_table, table2
from bdmc.experiments.store import read_jsonl


def runs(folder: Path) -> list[Path]:
    """The run directories of ``folder``: those holding a ``table2.md`` beside their rows."""
    return sorted(p.parent for p in folder.glob("*/table2.md"))


def ident(run: Path) -> str:
    """``table2_<run>`` with the directory's name made an identifier (``-`` becomes ``_``)."""
    return "table2_" + re.sub(r"[^A-Za-z0-9_]", "_", run.name)


def values(folder: Path) -> dict:
    """Each run directory's Table 2 as Markdown, at its largest number of steps, over its models.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/generative`` or a copy of it).

    Returns
    -------
    dict
        ``table2_<run>``: the table's Markdown.
    """
    out = {}
    for run in runs(folder):
        settings = json.loads((run / "settings.json").read_text())["settings"]
        top = max(settings["steps"])
        out[ident(run)] = markdown_table(table2(read_jsonl(run / "rows.jsonl"), models=settings["models"], steps=top),
                                         steps=top)
    return out
