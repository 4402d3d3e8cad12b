"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
import statistics
from pathlib import Path


def _rows(folder: Path):
    return [json.loads(line) for line in (Path(folder) / "rows.jsonl").read_text().splitlines() if line.strip()]


def _warm(folder, call, devices):
    return statistics.median(r["seconds"] for r in _rows(folder)
                             if r["call"] == call and r["devices"] == devices and r["repeat"] > 0)


def _busy(folder, call, devices):
    """Cores kept busy by the warm calls: their processor seconds over their wall seconds."""
    rows = [r for r in _rows(folder) if r["call"] == call and r["devices"] == devices and r["repeat"] > 0]
    return sum(r["processor_seconds"] for r in rows) / sum(r["seconds"] for r in rows)


def _first(folder, call, devices):
    (row,) = [r for r in _rows(folder) if r["call"] == call and r["devices"] == devices and r["repeat"] == 0]
    return row["seconds"]


def devices(folder):
    return max(r["devices"] for r in _rows(folder))


def cores(folder):
    (count,) = {r["cpu_count"] for r in _rows(folder)}
    return count


def repeats(folder):
    return max(r["repeat"] for r in _rows(folder))


def commit(folder):
    (value,) = {r["commit"] for r in _rows(folder)}
    return value


def clean(folder):
    return "yes" if all(r.get("clean_tree") for r in _rows(folder)) else "no"


def times(folder):
    stamps = sorted(r["date"] for r in _rows(folder))
    return f"{stamps[0]} to {stamps[-1]}"


def load_range(folder):
    loads = [r["load"] for r in _rows(folder)]
    return f"{min(loads):.1f} to {max(loads):.1f}"


def largest_difference(folder):
    return max(r["max_difference"] for r in _rows(folder))


def table(folder):
    """One line per call: warm medians on one device and split, their ratio, the first calls."""
    n = devices(folder)
    lines = [f"| call | one device, warm (s) | {n} devices, warm (s) | speed-up | cores busy, one device | "
             f"cores busy, {n} devices | first call, one device (s) | first call, {n} devices (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for call in dict.fromkeys(r["call"] for r in _rows(folder)):
        one, split = _warm(folder, call, 1), _warm(folder, call, n)
        lines.append(f"| {call} | {one:.3f} | {split:.3f} | {one / split:.2f}x | {_busy(folder, call, 1):.2f} | "
                     f"{_busy(folder, call, n):.2f} | {_first(folder, call, 1):.2f} | {_first(folder, call, n):.2f} |")
    return "\n".join(lines)


def speedups(folder):
    n = devices(folder)
    calls = dict.fromkeys(r["call"] for r in _rows(folder))
    return " and ".join(f"{_warm(folder, c, 1) / _warm(folder, c, n):.2f}x" for c in calls)


def _collectives(folder):
    return [json.loads(line) for line in (Path(folder) / "collectives.jsonl").read_text().splitlines() if line.strip()]


def split_all_reduces(folder):
    """The all-reduces of each split program of steps, in the order compiled (one per call)."""
    counts = [str(c["all_reduce"]) for c in _collectives(folder) if c["devices"] > 1]
    return ", ".join(counts[:-1]) + " and " + counts[-1] if len(counts) > 1 else "".join(counts)


def one_device_collectives(folder):
    return sum(c["all_reduce"] + c["all_gather"] for c in _collectives(folder) if c["devices"] == 1)


def split_all_gathers(folder):
    return sum(c["all_gather"] for c in _collectives(folder) if c["devices"] > 1)


QUOTES = ("devices", "cores", "repeats", "commit", "clean", "times", "load_range", "largest_difference", "table",
          "speedups", "split_all_reduces", "one_device_collectives", "split_all_gathers")


def values(folder: Path) -> dict:
    """Every number README.md quotes (``QUOTES``), computed from the rows stored in ``folder``."""
    return {name: globals()[name](folder) for name in QUOTES}
