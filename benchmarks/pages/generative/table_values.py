"""The values of ``generative``'s tables: the ablation of the Table 2 gap, train against test, mode collapse.

``ablation/table.md`` and ``train_test/table.md`` are rendered from the ``table.csv`` beside them (one line per
cell and evaluation, which ``generative_ablation.py`` and ``generative_train_test.py`` compute from their
``rows.jsonl`` together with the trained cells' settings and the stored runs); ``mode_collapse/table.md`` from
``mode_collapse/rows.jsonl``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from pages.tables import rows

# generative_mode_collapse.py's VARIANTS: the mode-collapse table's order (a variant not named here follows).
VARIANTS = ("vae", "gmmn", "gan", "gan-plain", "gan-smooth-noise")


def _lines(path: Path) -> list[dict]:
    """The lines of a ``table.csv``, empty cells as None."""
    frame = pd.read_csv(path, dtype={"commit": str})
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in line.items()}
            for line in frame.to_dict("records")]


def ablation_table(path: Path) -> str:
    """One line per (cell, evaluation): sigma, the AIS mean, the paired difference from the baseline, the paper."""
    text = ["| cell | factor | decoder | train images | epochs | sigma rule | sigma | T x chains | AIS test "
            "| vs baseline | higher on | paper (full MNIST, 16 x 10,000) | train s | AIS s | commit | load |",
            "|---|---|---|---:|---:|---|---:|---|---|---|---:|---:|---:|---:|---|---:|"]
    for line in _lines(path):
        diff = f"{line['diff']:+.1f} +- {line['diff_se']:.1f}" if line["diff"] is not None else "-"
        wins = f"{int(line['wins'])}/{line['images']}" if line["wins"] is not None else "-"
        load = line["load"]
        text.append(f"| {line['cell']} | {line['factor']} | {line['architecture']} | {line['num_train']} "
                    f"| {line['epochs']} | {line['sigma_rule']} | {line['sigma']:g} "
                    f"| {line['steps']} x {line['chains']} "
                    f"| {line['mean']:.1f} +- {line['stderr']:.1f} | {diff} | {wins} | {line['paper']} "
                    f"| {line['train_seconds']:.0f} | {line['ais_seconds']:.0f} | {line['commit']} "
                    f"| {load if load is None else f'{load:.1f}'} |")
    return "\n".join(text)


def train_test_table(path: Path) -> str:
    """One line per (model, T, chains, images): both splits' means, train minus test, the check on Table 2."""
    text = ["| model | sigma | T x chains | images per split | AIS train | AIS test | train - test | z "
            "| vs Table 2 (train) | vs Table 2 (test) | paper, test | stored samples diff | s | commit | load |",
            "|---|---:|---|---:|---|---|---|---:|---|---|---:|---:|---:|---|---:|"]
    for ln in _lines(path):
        vs = {s: (f"{ln[f'vs_table_{s}']:+.1f} +- {ln[f'vs_table_{s}_se']:.1f}"
                  if ln.get(f"vs_table_{s}") is not None else "-") for s in ("train", "test")}
        load = f"{ln['load']:.1f}" if ln["load"] is not None else "-"
        text.append(f"| {ln['model']} | {ln['sigma']:g} | {ln['steps']} x {ln['chains']} | {ln['images']} "
                    f"| {ln['train']:.1f} +- {ln['train_se']:.1f} | {ln['test']:.1f} +- {ln['test_se']:.1f} "
                    f"| {ln['train_minus_test']:+.1f} +- {ln['train_minus_test_se']:.1f} | {ln['z']:+.1f} "
                    f"| {vs['train']} | {vs['test']} | {ln['paper_test']} "
                    f"| {'-' if ln['stored_diff'] is None else format(ln['stored_diff'], '.1g')} "
                    f"| {ln['seconds']:.0f} | {ln['commit']} "
                    f"| {load} |")
    return "\n".join(text)


def fmt_options(options: dict) -> str:
    """Trainer options as ``k=v`` pairs, ``defaults`` when there are none."""
    return ", ".join(f"{k}={v}" for k, v in options.items()) or "defaults"


def mode_collapse_table(stored: list[dict]) -> str:
    """One line per (variant, samples, epochs), the latest row of each, in ``VARIANTS`` order."""
    latest: dict = {}
    for row in stored:
        latest[row["variant"], row["samples"], row["epochs"]] = row
    keyed = sorted(latest.items(), key=lambda kv: (VARIANTS.index(kv[0][0]) if kv[0][0] in VARIANTS
                                                   else len(VARIANTS), kv[0][0], kv[0][1], kv[0][2]))
    lines = ["| variant | trainer options | epochs | samples | top class (count, share) "
             "| classes >= 2% | shares of those | entropy (nats) | distinct nearest | counts of 0-9 | d_real "
             "| stored | train s | commit |",
             "|---|---|---:|---:|---|---:|---|---:|---:|---|---:|---|---:|---|"]
    for (variant, samples, epochs), row in keyed:
        low = row.get("min_fraction_covered")
        shares = f"{100 * low:.1f}-{100 * row['max_fraction']:.1f}%" if low is not None else "-"
        d_real = f"{row['d_real']:.3f}" if row.get("d_real") is not None else "-"
        stored_samples = row.get("stored_samples")
        stored_text = (f"{stored_samples['max_abs_diff']:.2g} ({stored_samples['file'].split('/')[-3]})"
                       if stored_samples else "-")
        commit = f"{row.get('commit', '?')}{'' if row.get('clean_tree') else ' (dirty)'}"
        lines.append(f"| {variant} | {fmt_options(row.get('options', {}))} | {epochs} | {samples} "
                     f"| {row['top_class']} ({row['top_count']}, {100 * row['top_fraction']:.1f}%) "
                     f"| {row['classes_min_share']} | {shares} | {row['entropy_nats']:.2f} | {row['distinct_nearest']} "
                     f"| {' '.join(map(str, row['counts']))} | {d_real} | {stored_text} | {row['train_seconds']:.0f}"
                     f"{' (reloaded)' if row.get('reloaded') else ''} | {commit} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``ablation_table``, ``train_test_table``, ``mode_collapse_table`` and ``log_10`` (the largest entropy)."""
    folder = Path(folder)
    return {"ablation_table": ablation_table(folder / "ablation" / "table.csv"),
            "train_test_table": train_test_table(folder / "train_test" / "table.csv"),
            "mode_collapse_table": mode_collapse_table(rows(folder / "mode_collapse")),
            "log_10": math.log(10)}
