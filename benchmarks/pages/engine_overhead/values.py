"""Numbers quoted by README.md (the peers page quotes some from the same rows), recomputed from rows.jsonl; the
cold seconds, which the rows do not hold, from summary.json (tests/test_results_pages.py checks them)."""

import json
import statistics
from pathlib import Path

CONTENDERS = {"hand": "hand", "handopt": "hand-run-options", "anneal": "anneal", "chunk": "anneal-1chunk",
              "unrec": "anneal-unrecorded", "handais": "hand-ais", "est": "estimator"}
LABELS = {"hand": "hand scan", "hand-run-options": "hand scan, the engine's compile options",
          "anneal": "`bdmc.anneal`", "anneal-1chunk": "`anneal`, one chunk",
          "anneal-unrecorded": "`anneal`, no failure recording",
          "hand-ais": "hand-written forward AIS (prior draws, scan, log-mean-exp)", "estimator": "`bdmc.forward_ais`"}


def _rows(folder: Path):
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


def warm(folder: Path, chains: int, contender: str) -> float:
    """Median warm seconds of one contender's calls."""
    return statistics.median(r["seconds"] for r in _rows(folder)
                             if r["chains"] == chains and r["contender"] == contender)


def ratio(folder: Path, chains: int, contender: str) -> float:
    """A contender's warm median over the hand scan's."""
    return warm(folder, chains, contender) / warm(folder, chains, "hand")


def _num_steps(folder: Path) -> int:
    (steps,) = {r["num_steps"] for r in _rows(folder)}
    return steps


def _make(chains, short, contender):
    def warm_s(folder):
        """Median warm seconds."""
        return warm(folder, chains, contender)

    def x_hand(folder):
        """Warm median over the hand scan's."""
        return ratio(folder, chains, contender)

    def us(folder):
        """Microseconds per chain and step (T - 1 transitions) of the warm median."""
        return 1e6 * warm(folder, chains, contender) / (chains * (_num_steps(folder) - 1))

    def cold(folder):
        """The first call's seconds (summary.json: the rows keep warm calls only)."""
        summary = json.loads((folder / "summary.json").read_text())
        return next(s["cold_s"] for s in summary if s["chains"] == chains and s["contender"] == contender)

    return {f"c{chains}_{short}_{k}": f for k, f in dict(warm=warm_s, x=x_hand, us=us, cold=cold).items()}


_made = {}
for _chains in (16, 256):
    for _short, _contender in CONTENDERS.items():
        _made.update(_make(_chains, _short, _contender))
globals().update(_made)


def repeats(folder):
    """Warm repeats per contender (the most of any cell)."""
    return max(r["repeat"] for r in _rows(folder)) + 1


def over_256(folder):
    """Percent by which `anneal` is slower than the hand scan at 256 chains."""
    return 100 * (ratio(folder, 256, "anneal") - 1)


def over_16(folder):
    """Percent by which `anneal` is slower than the hand scan at 16 chains."""
    return 100 * (ratio(folder, 16, "anneal") - 1)


def recording_points(folder):
    """At 256 chains: points of the ratio that failure recording costs (anneal less its unrecorded ablation)."""
    return 100 * (ratio(folder, 256, "anneal") - ratio(folder, 256, "anneal-unrecorded"))


def chunking_points(folder):
    """At 256 chains: points of the ratio that chunking costs (anneal less its one-chunk ablation)."""
    return 100 * (ratio(folder, 256, "anneal") - ratio(folder, 256, "anneal-1chunk"))


def us_per_step_16(folder):
    """At 16 chains: microseconds per step that `anneal` spends over the hand scan."""
    return 1e6 * (warm(folder, 16, "anneal") - warm(folder, 16, "hand")) / (_num_steps(folder) - 1)


def _short(folder: Path):
    return [json.loads(line) for line in (folder / "short_rows.jsonl").read_text().splitlines() if line.strip()]


def _short_warm(folder, chains, contender):
    return statistics.median(r["seconds"] for r in _short(folder) if r["chains"] == chains
                             and r["contender"] == contender)


def short_table(folder):
    """The short runs: each contender's median warm milliseconds and its excess over the two hand scans."""
    lines = ["| chains | contender | warm median (ms) | over the hand scan (ms) | over the hand scan with the engine's "
             "options (ms) |", "|---|---|---|---|---|"]
    for chains in sorted({r["chains"] for r in _short(folder)}):
        hand, handopt = _short_warm(folder, chains, "hand"), _short_warm(folder, chains, "hand-run-options")
        for contender in CONTENDERS.values():
            w = _short_warm(folder, chains, contender)
            lines.append(f"| {chains} | {LABELS[contender]} | {1e3 * w:.3f} | {1e3 * (w - hand):+.3f} | "
                         f"{1e3 * (w - handopt):+.3f} |")
    return "\n".join(lines)


def short_steps(folder):
    (steps,) = {r["num_steps"] for r in _short(folder)}
    return steps


def short_repeats(folder):
    return max(r["repeat"] for r in _short(folder)) + 1


def _excess_ms(folder, chains, contender, base):
    return 1e3 * (warm(folder, chains, contender) - warm(folder, chains, base))


def commit(folder):
    (c,) = {r["commit"] for r in _rows(folder) + _short(folder)}
    return c


def first_time(folder):
    return min(r["time"] for r in _rows(folder) + _short(folder))


def last_time(folder):
    return max(r["time"] for r in _rows(folder) + _short(folder))


def load_range(folder):
    loads = [r["load"] for r in _rows(folder) + _short(folder)]
    return f"{min(loads):.1f} to {max(loads):.1f}"


def spread_256_pct(folder):
    """The long runs at 256 chains: the range of the hand scan's warm repeats, in percent of their median."""
    seconds = [r["seconds"] for r in _rows(folder) if r["chains"] == 256 and r["contender"] == "hand"]
    return 100 * (max(seconds) - min(seconds)) / statistics.median(seconds)


def three_256_pct(folder):
    """The long runs at 256 chains: how far apart (percent) the hand scan, the hand-written forward AIS and the
    estimator's warm medians lie, the largest over the smallest."""
    meds = [warm(folder, 256, c) for c in ("hand", "hand-ais", "estimator")]
    return 100 * (max(meds) / min(meds) - 1)


def pool_calls(folder):
    """How many of an estimator's first calls with one count of prior draws take them from the shared pool of
    1,024 (``bdmc.core.prior``): the calls before the count's own program, as the rows' code had it."""
    return _rows(folder)[0]["prior_pool_calls"]


def long_calls(folder):
    """The estimator's calls in the long runs: the cold one and the warm repeats."""
    return repeats(folder) + 1


def _verdict(excess) -> str:
    """"met at 16 and 256 chains", "missed at 16 and 256 chains" or "met at 256 chains and missed at 16", from the
    estimator's excess in ms at each chain count (``excess(chains)``), against the 0.3 ms target."""
    met = [c for c in (16, 256) if excess(c) <= 0.3]
    missed = [c for c in (16, 256) if c not in met]
    if not missed:
        return "met at 16 and 256 chains"
    if not met:
        return "missed at 16 and 256 chains"
    return f"met at {met[0]} chains and missed at {missed[0]}"


def long_target(folder):
    """The long runs against the 0.3 ms target: the hand scan as a user compiles it."""
    return _verdict(lambda c: _excess_ms(folder, c, "estimator", "hand"))


def long_target_handais(folder):
    """The long runs against the 0.3 ms target: the hand-written forward AIS (like for like)."""
    return _verdict(lambda c: _excess_ms(folder, c, "estimator", "hand-ais"))


def long_target_handopt(folder):
    """The long runs against the 0.3 ms target: the hand scan compiled with the engine's options."""
    return _verdict(lambda c: _excess_ms(folder, c, "estimator", "hand-run-options"))


def _short_excess(folder, chains, contender, base):
    return 1e3 * (_short_warm(folder, chains, contender) - _short_warm(folder, chains, base))


# Excess milliseconds quoted by the page: name -> (short runs, chains, contender, base).
_EXCESS = {
    "est_over_hand_16": (False, 16, "estimator", "hand"), "est_over_hand_256": (False, 256, "estimator", "hand"),
    "est_over_handopt_16": (False, 16, "estimator", "hand-run-options"),
    "est_over_handopt_256": (False, 256, "estimator", "hand-run-options"),
    "est_over_handais_16": (False, 16, "estimator", "hand-ais"),
    "est_over_handais_256": (False, 256, "estimator", "hand-ais"),
    "short_est_over_hand_16": (True, 16, "estimator", "hand"),
    "short_est_over_hand_256": (True, 256, "estimator", "hand"),
    "short_anneal_over_hand_16": (True, 16, "anneal", "hand"),
    "short_est_over_handais_16": (True, 16, "estimator", "hand-ais"),
    "short_est_over_handais_256": (True, 256, "estimator", "hand-ais"),
    # what the prior draws and the log-mean-exp add to the hand scan at 16 chains
    "short_handais_over_hand_16": (True, 16, "hand-ais", "hand"),
}


def _make_excess(short, chains, contender, base):
    def excess(folder):
        """A contender's warm median over a base's, in milliseconds."""
        return (_short_excess if short else _excess_ms)(folder, chains, contender, base)
    return excess


globals().update({name: _make_excess(*spec) for name, spec in _EXCESS.items()})


def short_target(folder):
    """The short runs against the 0.3 ms target: the hand scan."""
    return _verdict(lambda c: _short_excess(folder, c, "estimator", "hand"))


def short_target_handais(folder):
    """The short runs against the 0.3 ms target: the hand-written forward AIS (like for like)."""
    return _verdict(lambda c: _short_excess(folder, c, "estimator", "hand-ais"))


QUOTES = tuple(_made) + ("spread_256_pct", "three_256_pct", "pool_calls", "long_calls",
                         "long_target", "long_target_handais", "long_target_handopt", "short_target",
                         "short_target_handais", "est_over_handais_16", "est_over_handais_256",
                         "short_est_over_handais_16", "short_est_over_handais_256", "short_handais_over_hand_16",
                         "repeats", "over_256", "over_16", "recording_points", "chunking_points",
                         "us_per_step_16", "short_table", "short_steps", "short_repeats", "est_over_hand_16",
                         "est_over_hand_256", "est_over_handopt_16", "est_over_handopt_256", "short_est_over_hand_16",
                         "short_est_over_hand_256", "short_anneal_over_hand_16", "commit", "first_time", "last_time",
                         "load_range")


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/engine_overhead`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
