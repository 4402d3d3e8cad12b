"""Numbers quoted by README.md, recomputed from the stored rows (tests/test_results_pages.py checks them).

Warm rows: ``peers.jsonl``; cold rows: ``cold.jsonl`` and its twin. The reductions are those of
``benchmarks/peers.py``: per (problem, tool, budget) the RMSE of the errors and the median warm seconds (compiling
calls left out); a tool *reaches* a threshold at its smallest budget whose RMSE is below it; the cold time to a
threshold is the fresh process's first call plus the warm time of the budget that reaches it less the smallest
budget's. The earlier runs' numbers the page quotes are text: their rows are in git history
(``benchmarks/results/peers/superseded/`` at commit 37cc42f).
"""

import json
import math
import statistics
from pathlib import Path

from bdmc.caching import cached

BDMC = ("bdmc-ais", "bdmc-smc", "bdmc-tsmc")
PROBLEMS = ("regression", "schools", "correlated", "pima", "narrow")
PROBLEM_NAMES = {"regression": "regression", "schools": "eight schools", "correlated": "correlated", "pima": "Pima",
                 "narrow": "narrow"}


@cached(maxsize=16)
def _jsonl(path: Path):
    return tuple(json.loads(line) for line in path.read_text().splitlines() if line.strip())


def _label(budget):
    return "x".join(map(str, budget)) if isinstance(budget, (list, tuple)) else str(budget)


@cached(maxsize=16)
def _summary(path: Path):
    """{(problem, tool, budget): {rmse, warm, pilot}} of a warm-rows file."""
    cells = {}
    for r in _jsonl(path):
        cells.setdefault((r["problem"], r["tool"], r["budget"]), []).append(r)
    out = {}
    for key, rs in cells.items():
        warm = [r for r in rs if r["kind"] == "warm" and not r.get("compiled")]
        pilots = [r["settings"].get("pilot_seconds", r["settings"].get("data_pilot_seconds")) for r in warm
                  if isinstance(r.get("settings"), dict)]
        pilots = [p for p in pilots if p is not None]
        out[key] = {"tool": key[1], "budget": key[2],
                    "rmse": math.sqrt(sum(r["error"] ** 2 for r in rs) / len(rs)),
                    "warm": statistics.median(r["seconds"] for r in warm) if warm else math.nan,
                    "pilot": statistics.median(pilots) if pilots else math.nan}
    return out


def _resolved(folder, problem, threshold) -> bool:
    """``benchmarks/peers.py``'s rule: an RMSE under the threshold shows a tool within it of log Z against an exact
    value, and against a reference (``references.json``) only when its two long runs agree to within half the
    threshold."""
    reference = _references(folder).get(problem)  # only the problems without an exact value have one
    return reference is None or reference["agree_nats"] <= threshold / 2


@cached(maxsize=16)
def _references(folder: Path) -> dict:
    path = folder / "references.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _reach(path, problem, tool, threshold):
    """The tool's smallest budget (in budget order) whose RMSE is below the threshold, or None (also where the
    threshold is not resolved against the problem's reference: :func:`_resolved`)."""
    if not _resolved(path.parent, problem, threshold):
        return None
    cells = sorted((s for (p, t, _), s in _summary(path).items() if p == problem and t == tool),
                   key=lambda s: tuple(int(x) for x in s["budget"].split("x")))
    return next((s for s in cells if s["rmse"] < threshold), None)


def _tools(path, problem, bdmc):
    return sorted({t for (p, t, _) in _summary(path) if p == problem and (t in BDMC) == bdmc})


def _best(path, problem, threshold, bdmc):
    """The fastest (warm) cell of bdmc's tools, or of the peers, that reaches the threshold."""
    hits = [h for h in (_reach(path, problem, t, threshold) for t in _tools(path, problem, bdmc)) if h]
    return min(hits, key=lambda h: h["warm"], default=None)


def _pilot_run(path, problem, tool, budget):
    """The pilot's run seconds in the cell's first call: what a warm call that pilots anew would add (warm calls
    reuse that pilot). Compilation excluded, except data-path SMC's, whose settings record its pilot's seconds with
    its compilation: an upper bound."""
    first = [r for r in _jsonl(path) if (r["problem"], r["tool"], r["budget"]) == (problem, tool, budget)
             and r["kind"] == "cold" and isinstance(r.get("settings"), dict)]
    settings = first[0]["settings"] if first else {}
    if tool == "bdmc-smc":
        return float(settings.get("data_pilot_seconds") or 0.0)
    if settings.get("pilot_seconds") is None:
        return 0.0
    return max(settings["pilot_seconds"] - (settings.get("pilot_compile_seconds") or 0.0), 0.0)


def _pilot_inside_ratio(path, problem, threshold):
    """bdmc's best warm time with a new pilot every call over the best peer's warm time (None if either
    reached nothing)."""
    peer = _best(path, problem, threshold, False)
    mine = [h["warm"] + _pilot_run(path, problem, h["tool"], h["budget"])
            for h in (_reach(path, problem, t, threshold) for t in _tools(path, problem, True)) if h]
    return min(mine) / peer["warm"] if mine and peer else None


def _pilot_inside_row(folder):
    """The targets table's row of warm ratios with a new pilot in every call."""
    path, cells, met, counted = folder / "peers.jsonl", [], 0, 0
    for problem in PROBLEMS:
        parts = []
        for threshold in (1.0, 0.1):
            r = _pilot_inside_ratio(path, problem, threshold)
            parts.append("-" if r is None else f"{r:.2f}x")
            counted += r is not None
            met += r is not None and r <= 1.0
        cells.append("; ".join(parts))
    return ("| warm with a new pilot in every call (< 1 nat; < 0.1 nat), <= 1.0 | " + " | ".join(cells)
            + f" | on {met} of {counted} |")


def cc1_lo(folder):
    """The least cold (caches warm) ratio to 1 nat over the problems."""
    return min(v for v in (_ratio(folder, "cc1", p) for p in PROBLEMS) if v is not None)


def cr1_lo(folder):
    """The least cold (the same call again) ratio to 1 nat over the problems."""
    return min(v for v in (_ratio(folder, "cr1", p) for p in PROBLEMS) if v is not None)


def cr1_hi(folder):
    """... and the most."""
    return max(v for v in (_ratio(folder, "cr1", p) for p in PROBLEMS) if v is not None)


def cc1_hi(folder):
    """... and the most."""
    return max(v for v in (_ratio(folder, "cc1", p) for p in PROBLEMS) if v is not None)


def _warm_ratio(path, problem, threshold):
    mine, peer = _best(path, problem, threshold, True), _best(path, problem, threshold, False)
    return mine["warm"] / peer["warm"] if mine and peer else None


def _cold_to(folder, problem, kind, threshold, bdmc):
    """{tool: cold seconds to the threshold} of bdmc's tools or the peers, for one kind of cold call."""
    warm_path = folder / "peers.jsonl"
    cells = {}
    for r in _jsonl(folder / "cold.jsonl"):
        if r["problem"] == problem and r["kind"] == kind and (r["tool"] in BDMC) == bdmc:
            cells.setdefault(r["tool"], []).append(r)
    out = {}
    for tool, rs in cells.items():
        hit = _reach(warm_path, problem, tool, threshold)
        if hit:
            smallest = _summary(warm_path)[(problem, tool, _label(rs[0]["budget"]))]["warm"]
            out[tool] = statistics.median(r["seconds"] for r in rs) + hit["warm"] - smallest
    return out


def _cold_ratio(folder, problem, kind, threshold):
    mine, peers = (_cold_to(folder, problem, kind, threshold, b) for b in (True, False))
    return min(mine.values()) / min(peers.values()) if mine and peers else None


def _cold_first(folder, kind, tools):
    return [r["seconds"] for r in _jsonl(folder / "cold.jsonl") if r["kind"] == kind and r["tool"] in tools]


# --------------------------------------------------------------------------------------- the targets table
TARGETS = {"w1": (1.0, None), "w01": (0.1, None), "nc1": (1.0, "cold-nocache"), "nc01": (0.1, "cold-nocache"),
           "cc1": (1.0, "cold-cache"), "cc01": (0.1, "cold-cache"), "cr1": (1.0, "cold-rerun"),
           "cr01": (0.1, "cold-rerun")}


def _ratio(folder, target, problem):
    threshold, kind = TARGETS[target]
    if kind is None:
        return _warm_ratio(folder / "peers.jsonl", problem, threshold)
    return _cold_ratio(folder, problem, kind, threshold)


def _make_met(target, limit, count_cells):
    def quote(folder):
        """Of the problems where a peer reached the threshold: how many (or, for *_cells, all of them) where
        bdmc's best is within the limit (a bdmc that did not reach it misses)."""
        threshold, kind = TARGETS[target]
        n = met = 0
        for problem in PROBLEMS:
            if kind is None:
                peer = _best(folder / "peers.jsonl", problem, threshold, False)
            else:
                peer = _cold_to(folder, problem, kind, threshold, False)
            if peer:
                n += 1
                r = _ratio(folder, target, problem)
                met += r is not None and r <= limit
        return n if count_cells else met
    return quote


TABLE_ROWS = (
    ("warm, RMSE < 1 nat, best bdmc / best peer <= 1.0", ("w1",), 1.0),
    ("warm, RMSE < 0.1 nat, <= 1.0 where a peer reaches it", ("w01",), 1.0),
    (None, (), None),  # the row with a new pilot in every call (pilot_inside_row)
    ("cold, no disk caches, <= 1.5x (< 1 nat; < 0.1 nat)", ("nc1", "nc01"), 1.5),
    ("cold, caches warm, <= 1.0x (< 1 nat; < 0.1 nat)", ("cc1", "cc01"), 1.0),
    ("cold, the same call again (bdmc's pilot loaded from disk), <= 1.0x (< 1 nat; < 0.1 nat)", ("cr1", "cr01"),
     1.0),
)


def _reached(folder, target, problem, bdmc):
    """Whether bdmc's tools (or the peers) reached the target's threshold on the problem."""
    threshold, kind = TARGETS[target]
    if kind is None:
        return _best(folder / "peers.jsonl", problem, threshold, bdmc) is not None
    return bool(_cold_to(folder, problem, kind, threshold, bdmc))


def _target_cell(folder, target, problem):
    """One cell of the targets table: the ratio, or who reached the threshold when not both did."""
    mine, peer = _reached(folder, target, problem, True), _reached(folder, target, problem, False)
    if not _resolved(folder, problem, TARGETS[target][0]):
        return "not resolved (the reference's own error)"
    if mine and peer:
        ratio = f"{_ratio(folder, target, problem):.2f}x"
        return f"**{ratio}**" if TARGETS[target][1] is None else ratio
    if peer:
        return "bdmc did not reach it"
    if mine and TARGETS[target][1] is None:
        best = _best(folder / "peers.jsonl", problem, TARGETS[target][0], True)
        return f"no peer reached it; bdmc did ({best['tool']} {best['budget']}, {best['warm']:.2f} s)"
    return "no peer reached it" if mine else "no tool reached it"


def targets_table(folder):
    """The targets table: per target and problem, bdmc's best time to the threshold over the best peer's, and
    on how many problems (where a peer reached the threshold) the target is met."""
    lines = ["| target | " + " | ".join(PROBLEM_NAMES[p] for p in PROBLEMS) + " | met? |",
             "|---" * (len(PROBLEMS) + 2) + "|"]
    for label, targets, limit in TABLE_ROWS:
        if label is None:
            lines.append(_pilot_inside_row(folder))
            continue
        cells = ["; ".join(_target_cell(folder, t, p) for t in targets) for p in PROBLEMS]
        met = sum(_make_met(t, limit, False)(folder) for t in targets)
        counted = sum(_make_met(t, limit, True)(folder) for t in targets)
        lines.append(f"| {label} | " + " | ".join(cells) + f" | on {met} of {counted} |")
    return "\n".join(lines)


def narrow_01_sentence(folder):
    """What the narrow regression's 0.1 nat cell rests on: the fastest peer and bdmc budget that reached it."""
    path = folder / "peers.jsonl"
    peer, mine = _best(path, "narrow", 0.1, False), _best(path, "narrow", 0.1, True)
    said = (f"BlackJAX reached it with {float(peer['budget']):,.0f} particles ({peer['warm']:.1f} s a run)"
            if peer and peer["tool"] == "blackjax" else
            f"{peer['tool']} reached it at {peer['budget']} ({peer['warm']:.1f} s a run)" if peer else
            "no peer reached it")
    big = _summary(path).get(("narrow", "bdmc-tsmc", "1024x300"))
    if mine:
        said += (f"; bdmc's tempered SMC first did at {mine['budget']} (RMSE {mine['rmse']:.3f}, {mine['warm']:.2f} s "
                 "a run)")
    if big:
        said += f"; bdmc's tempered SMC at 1,024 x 300 had RMSE {big['rmse']:.3f} ({big['warm']:.2f} s a run)"
    return said


# ------------------------------------------------------------------------------------------ cells named
def eo_commit(folder):
    """The commit of ../engine_overhead's rows (its own run, not this page's)."""
    return ", ".join(sorted({r["commit"] for r in _jsonl(folder.parent / "engine_overhead" / "rows.jsonl")}))


def bdmc_cells(folder):
    """bdmc's cells (problem, tool, budget) in the warm rows."""
    return len({(r["problem"], r["tool"], r["budget"]) for r in _jsonl(folder / "peers.jsonl") if r["tool"] in BDMC})


def bdmc_second_compiled(folder):
    """Of them, the cells whose second call compiled (left out of the warm median)."""
    return len({(r["problem"], r["tool"], r["budget"]) for r in _jsonl(folder / "peers.jsonl")
                if r["tool"] in BDMC and r["kind"] == "warm" and r.get("compiled") and r["seed"] == 1})


def _cell(folder, problem, tool, budget):
    return _summary(folder / "peers.jsonl")[(problem, tool, budget)]


def _narrow_best(folder):
    return _best(folder / "peers.jsonl", "narrow", 1.0, True)


def narrow_best_label(folder):
    """bdmc's best method and budget to 1 nat on the narrow problem."""
    best = _narrow_best(folder)
    return f"{best['tool']} {best['budget']}"


def narrow_best_ms(folder):
    """Its warm ms a run."""
    return 1000 * _narrow_best(folder)["warm"]


def best_methods(folder):
    """bdmc's fastest method warm to each threshold on each problem, as a sentence."""
    parts = []
    for threshold in (1.0, 0.1):
        for problem in PROBLEMS:
            best = _best(folder / "peers.jsonl", problem, threshold, True)
            if best is not None:
                parts.append(f"{problem} < {threshold:g} nat: {best['tool']} {best['budget']}")
    return "; ".join(parts)


def schools_peer_ms(folder):
    """Eight schools: the best peer's warm ms to 1 nat."""
    return 1000 * _best(folder / "peers.jsonl", "schools", 1.0, False)["warm"]


def schools_bdmc_ms(folder):
    """Eight schools: bdmc's best warm ms to 1 nat."""
    return 1000 * _best(folder / "peers.jsonl", "schools", 1.0, True)["warm"]


def correlated_bdmc_ms(folder):
    """Correlated Gaussian: bdmc's best warm ms to 1 nat."""
    return 1000 * _best(folder / "peers.jsonl", "correlated", 1.0, True)["warm"]


def pima_smc_s(folder):
    """Data-path SMC on Pima, 64 particles: warm seconds a run."""
    return _cell(folder, "pima", "bdmc-smc", "64x1")["warm"]


def pima_smc_pilot_s(folder):
    """The data pilot's seconds in the cell's first call (compilation included; warm calls reuse it)."""
    return _pilot_run(folder / "peers.jsonl", "pima", "bdmc-smc", "64x1")


def _smc_errors(folder, problem, budget):
    return [r["error"] for r in _jsonl(folder / "peers.jsonl")
            if r["problem"] == problem and r["tool"] == "bdmc-smc" and r["budget"] == budget]


def narrow_smc64_hi(folder):
    """Data-path SMC on the narrow problem at 64 particles: its highest error."""
    return max(_smc_errors(folder, "narrow", "64x1"))


def narrow_smc64_lo(folder):
    """... and its lowest."""
    return min(_smc_errors(folder, "narrow", "64x1"))


def narrow_smc256_worst_abs(folder):
    """At 256 particles: its largest absolute error."""
    return max(abs(e) for e in _smc_errors(folder, "narrow", "256x1"))


def warm_commits(folder):
    """The commits of the warm rows."""
    return ", ".join(sorted({r["commit"] for r in _jsonl(folder / "peers.jsonl")}))


def cold_commits(folder):
    """The commits of the cold rows."""
    return ", ".join(sorted({r["commit"] for r in _jsonl(folder / "cold.jsonl")}))


def _cr_best_first(folder):
    """The same call again: per problem, the first-call seconds of the bdmc method fastest to 1 nat."""
    return _best_first(folder, "cold-rerun", (1.0,))


def cr_best_lo(folder):
    """Least of those first calls."""
    return min(_cr_best_first(folder))


def cr_best_hi(folder):
    """Most of those first calls."""
    return max(_cr_best_first(folder))


def cr_blackjax_lo(folder):
    """BlackJAX's least first-call seconds, the same call again."""
    return min(_cold_first(folder, "cold-rerun", ("blackjax",)))


def cr_blackjax_hi(folder):
    """... most."""
    return max(_cold_first(folder, "cold-rerun", ("blackjax",)))


def all_clean(folder):
    """Whether every row says its tree was clean."""
    rows = _jsonl(folder / "peers.jsonl") + _jsonl(folder / "cold.jsonl")
    return "yes" if all(r["clean_tree"] for r in rows) else "no (some rows)"


def _times(path):
    from datetime import UTC, datetime

    ts = []
    for r in _jsonl(path):
        t = r["time"]
        ts.append(datetime.fromtimestamp(t, UTC) if isinstance(t, (int, float)) else datetime.fromisoformat(t))
    return min(ts).strftime("%Y-%m-%d %H:%M"), max(ts).strftime("%H:%M")


def warm_from(folder):
    return _times(folder / "peers.jsonl")[0]


def warm_to(folder):
    return _times(folder / "peers.jsonl")[1]


def cold_from(folder):
    return _times(folder / "cold.jsonl")[0]


def cold_to(folder):
    return _times(folder / "cold.jsonl")[1]


def _pymc_01(problem):
    def quote(folder):
        """PyMC's warm seconds a run at its first budget under 0.1 nat."""
        return _reach(folder / "peers.jsonl", problem, "pymc", 0.1)["warm"]
    return quote


pymc01_regression, pymc01_schools, pymc01_correlated = (_pymc_01(p) for p in ("regression", "schools", "correlated"))


# ---------------------------------------------------------------------------------------------- cold calls
def nc_bdmc_lo(folder):
    """Fresh process, no disk caches: the least first-call seconds of bdmc's methods (import excluded)."""
    return min(_cold_first(folder, "cold-nocache", BDMC))


def nc_bdmc_hi(folder):
    """... and the most."""
    return max(_cold_first(folder, "cold-nocache", BDMC))


def nc_tsmc_lo(folder):
    """The same for tempered SMC alone: least."""
    return min(_cold_first(folder, "cold-nocache", ("bdmc-tsmc",)))


def nc_tsmc_hi(folder):
    """... most."""
    return max(_cold_first(folder, "cold-nocache", ("bdmc-tsmc",)))


def nc_blackjax_lo(folder):
    """BlackJAX's least first-call seconds, no disk caches."""
    return min(_cold_first(folder, "cold-nocache", ("blackjax",)))


def nc_blackjax_hi(folder):
    """... most."""
    return max(_cold_first(folder, "cold-nocache", ("blackjax",)))


def nc_pymc_lo(folder):
    """PyMC's least first-call seconds, no disk caches."""
    return min(_cold_first(folder, "cold-nocache", ("pymc",)))


def nc_pymc_hi(folder):
    """... most."""
    return max(_cold_first(folder, "cold-nocache", ("pymc",)))


def import_s(folder):
    """Median seconds of the fresh processes' imports."""
    return statistics.median(r["import_seconds"] for r in _jsonl(folder / "cold.jsonl"))


def cc_blackjax_lo(folder):
    """BlackJAX's least first-call seconds, caches warm."""
    return min(_cold_first(folder, "cold-cache", ("blackjax",)))


def cc_blackjax_hi(folder):
    """... most."""
    return max(_cold_first(folder, "cold-cache", ("blackjax",)))


def _cc_best_first(folder):
    """Caches warm: per problem and threshold, the first-call seconds of the bdmc method fastest to it."""
    return _best_first(folder, "cold-cache", (1.0, 0.1))


def _best_first(folder, kind, thresholds):
    """Per problem and threshold, the first-call seconds (``kind``) of the bdmc method fastest to it."""
    out = []
    for problem in PROBLEMS:
        for threshold in thresholds:
            mine = _cold_to(folder, problem, kind, threshold, True)
            if mine:
                tool = min(mine, key=mine.get)
                out.append(statistics.median(r["seconds"] for r in _jsonl(folder / "cold.jsonl")
                                             if r["kind"] == kind and r["problem"] == problem
                                             and r["tool"] == tool))
    return out


def cc_best_lo(folder):
    """Least of those first calls."""
    return min(_cc_best_first(folder))


def cc_best_hi(folder):
    """Most of those first calls."""
    return max(_cc_best_first(folder))


def load_cold_lo(folder):
    """Least 1-minute load before a cold call."""
    return min(r["load_before"] for r in _jsonl(folder / "cold.jsonl"))


def load_cold_hi(folder):
    """Most 1-minute load before or after a cold call."""
    return max(max(r["load_before"], r["load_after"]) for r in _jsonl(folder / "cold.jsonl"))


def load_warm_lo(folder):
    """Least 1-minute load before a warm-run call."""
    return min(r["load_before"] for r in _jsonl(folder / "peers.jsonl"))


def load_warm_hi(folder):
    """Most 1-minute load before or after a warm-run call."""
    return max(max(r["load_before"], r["load_after"]) for r in _jsonl(folder / "peers.jsonl"))


# ------------------------------------------------------------------------------------------ other folders
def fixed_hmc_miss_lo(folder):
    """BlackJAX with a fixed identity-mass HMC on the narrow problem (../check_estimate): least |error|, nats."""
    rows = _jsonl(folder.parent / "check_estimate" / "rows.jsonl")
    return min(abs(r["error"]) for r in rows if r["problem"] == "narrow" and r["config"] == "blackjax-fixed-256")


def fixed_hmc_miss_hi(folder):
    """... most |error|, nats."""
    rows = _jsonl(folder.parent / "check_estimate" / "rows.jsonl")
    return max(abs(r["error"]) for r in rows if r["problem"] == "narrow" and r["config"] == "blackjax-fixed-256")


def pima_reference_gap(folder):
    """references.json: how far apart the long bdmc run and the long peer run behind Pima's reference are."""
    ref = json.loads((folder / "references.json").read_text())["pima"]
    return abs(ref["bdmc"] - ref["peer"])


def _eo_ratio(folder, chains, contender):
    """../engine_overhead: a contender's median warm seconds over the hand scan's."""
    rows = _jsonl(folder.parent / "engine_overhead" / "rows.jsonl")

    def med(c):
        return statistics.median(r["seconds"] for r in rows if r["chains"] == chains and r["contender"] == c)
    return med(contender) / med("hand")


def eo_256_pct(folder):
    """Engine overhead: percent `anneal` is over the hand scan at 256 chains."""
    return 100 * (_eo_ratio(folder, 256, "anneal") - 1)


def eo_256_estimator_pct(folder):
    """The same for `forward_ais` (prior draws and checks included), 256 chains."""
    return 100 * (_eo_ratio(folder, 256, "estimator") - 1)


def eo_16_pct(folder):
    """Percent `anneal` is over the hand scan at 16 chains."""
    return 100 * (_eo_ratio(folder, 16, "anneal") - 1)


def eo_256_x(folder):
    """`anneal` over the hand scan, 256 chains."""
    return _eo_ratio(folder, 256, "anneal")


def eo_256_unrecorded_x(folder):
    """`anneal` without failure recording over the hand scan, 256 chains."""
    return _eo_ratio(folder, 256, "anneal-unrecorded")


def eo_recording_pct(folder):
    """Points of the 256-chain ratio that failure recording costs."""
    return 100 * (eo_256_x(folder) - eo_256_unrecorded_x(folder))


def eo_chunking_pct(folder):
    """Points of the 256-chain ratio that chunking costs."""
    return 100 * (eo_256_x(folder) - _eo_ratio(folder, 256, "anneal-1chunk"))


def eo_16_chunk_x(folder):
    """`anneal` in one chunk over the hand scan, 16 chains."""
    return _eo_ratio(folder, 16, "anneal-1chunk")


def eo_16_unrecorded_x(folder):
    """`anneal` without failure recording over the hand scan, 16 chains."""
    return _eo_ratio(folder, 16, "anneal-unrecorded")


def eo_16_us_per_step(folder):
    """16 chains: microseconds a step `anneal` spends over the hand scan (T - 1 transitions)."""
    rows = _jsonl(folder.parent / "engine_overhead" / "rows.jsonl")
    (steps,) = {r["num_steps"] for r in rows}

    def med(c):
        return statistics.median(r["seconds"] for r in rows if r["chains"] == 16 and r["contender"] == c)
    return 1e6 * (med("anneal") - med("hand")) / (steps - 1)


# Every public function of this file is a quote.
def warm_misses(folder):
    """A bullet for each warm target missed (problem and threshold where bdmc's fastest cell to reach it is slower
    than the fastest peer's): both cells, and bdmc's cells that were faster than the peer's but just missed the
    threshold, with their RMSE; empty when none is missed."""
    path = folder / "peers.jsonl"
    bullets = []
    for problem in PROBLEMS:
        for threshold in (1.0, 0.1):
            mine, peer = _best(path, problem, threshold, True), _best(path, problem, threshold, False)
            if not (mine and peer) or mine["warm"] <= peer["warm"]:
                continue
            near = sorted((s for (p, t, _), s in _summary(path).items() if p == problem and t in BDMC
                           and s["warm"] < peer["warm"] and threshold <= s["rmse"] < 2 * threshold),
                          key=lambda s: s["warm"])
            missed = "; ".join(f"{s['tool']} {s['budget']} ({1000 * s['warm']:.0f} ms a run) had RMSE {s['rmse']:.2f}"
                               for s in near)
            bullets.append(
                f"- **Warm, {PROBLEM_NAMES[problem]}, < {threshold:g} nat ({mine['warm'] / peer['warm']:.2f}x).** "
                f"bdmc's fastest cell to reach it was {mine['tool']} {mine['budget']} (RMSE {mine['rmse']:.2f}, "
                f"{1000 * mine['warm']:.0f} ms a run), the best peer's {peer['tool']} {peer['budget']} (RMSE "
                f"{peer['rmse']:.2f}, {1000 * peer['warm']:.0f} ms a run). bdmc's cells faster than that peer's "
                f"with an RMSE under twice the threshold: {missed or 'none'}.")
    return "\n".join(bullets)


QUOTES = tuple(k for k, v in list(globals().items()) if callable(v) and not k.startswith("_")
               and getattr(v, "__module__", None) == __name__)


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/peers`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
