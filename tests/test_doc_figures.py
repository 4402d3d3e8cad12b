"""Every measured figure that README.md and docs/ quote is read from the stored file it comes from.

A figure is a number a run measured (seconds, a ratio, nats off, a count of fails or of tests) or a number a
test asserts. ``FIGURES`` declares each sentence that quotes one: a pattern over the doc (whitespace collapsed,
code blocks left out) whose named groups are the figures, the stored file they come from (a results page, which
``tests/test_results_pages.py`` re-renders from its rows; a JSON file; a test's source) and how to read them
there, written as the doc writes them. ``COPIES`` declares stored tables a doc quotes whole. The test fails when a
declared sentence is gone or quotes another figure than its file holds, and, in the docs listed in ``AUDITED``,
when a number with a unit of measurement (``12 s``, ``1.3x``, ``0.5 nat``, ``40%``, ``3 times``) or a count
(``5 of 6``) lies in no declared sentence and in no ``SETTINGS`` phrase (a setting, a default, a level: chosen,
not measured). Reading files and matching text only: nothing is run.

To update a figure, update its stored file first (rerun its benchmark, or for the test suite's timing
``benchmarks/results/suite_timing/``), then the doc's sentence; this test says which sentence disagrees.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^ *(`{3,}|~{3,}).*?^ *\1 *$", re.MULTILINE | re.DOTALL)
# A number with a unit of measurement, a range of them, or a count "k of n".
MEASURE = re.compile(
    r"(?<![\w.\-])[-+]?\d[\d,]*(?:\.\d+)?(?:(?:-| to | and )[-+]?\d[\d,]*(?:\.\d+)?)?"
    r"(?:x\b| ?(?:s|ms|us|min|seconds|minutes|nats?|%|GB|MB|GiB|MiB|times)\b)"
    r"|(?<![\w.\-])\d[\d,]* of \d[\d,]*\b")


def collapse(text: str) -> str:
    """The prose of a Markdown file on one line: code blocks blanked, every run of whitespace one space."""
    return re.sub(r"\s+", " ", FENCE.sub(" ", text)).strip()


def read(path: str) -> str:
    return (ROOT / path).read_text()


def one(pattern: str, text: str, where: str) -> re.Match:
    found = list(re.finditer(pattern, text))
    if len(found) != 1:
        raise LookupError(f"{where}: {len(found)} matches of {pattern!r}, not one")
    return found[0]


def stored(pattern: str, **formats: Callable[[str], str]) -> Callable[[str], dict[str, str]]:
    """A reader: ``pattern``'s named groups in the stored file (whitespace collapsed), each optionally reformatted."""
    def reader(path: str) -> dict[str, str]:
        match = one(pattern, collapse(read(path)), path)
        return {k: formats.get(k, str)(v) for k, v in match.groupdict().items()}
    return reader


def from_json(fn: Callable[[object], Mapping[str, str]]) -> Callable[[str], dict[str, str]]:
    return lambda path: dict(fn(json.loads(read(path))))


def ceil2(x: float) -> str:
    """A bound at two decimals that ``x`` does not exceed (0.019 -> 0.02)."""
    return f"{math.ceil(round(x * 100, 9)) / 100:.2f}"


@dataclass(frozen=True)
class Figure:
    doc: str
    sentence: str  # a regex over collapse(doc); its named groups are the figures
    source: str  # the stored file, relative to the repository root
    reader: Callable[[str], dict[str, str]]  # the figures there, as the doc writes them, by group name


@dataclass(frozen=True)
class Copy:
    doc: str
    source: str  # a stored page the doc quotes whole


# ------------------------------------------------------------------------------------------------ docs/ppl.md

PPL = "benchmarks/results/ppl_adapters"
NHEFS, SMALL, FORMS = f"{PPL}/nhefs_cost.md", f"{PPL}/table.md", f"{PPL}/stan_program_forms.md"


def nhefs_ratio(row: str) -> str:
    return rf"\| {re.escape(row)} \| \d+ \| [\d.]+ \| (?P<{{}}>[\d.]+)x \|"


def _nhefs(**rows: str) -> Callable[[str], dict[str, str]]:
    def reader(path: str) -> dict[str, str]:
        text = collapse(read(path))
        return {name: one(nhefs_ratio(row).format(name), text, path)[name] for name, row in rows.items()}
    return reader


def _small_table(path: str) -> dict[str, dict[str, str]]:
    """The rows of ppl_adapters/table.md by implementation: its cells by column."""
    lines = [line for line in read(path).splitlines() if line.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return {cells[0]: dict(zip(head, cells, strict=True))
            for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines[1:])}


def _small(fn: Callable[[dict[str, dict[str, str]]], Mapping[str, str]]) -> Callable[[str], dict[str, str]]:
    return lambda path: dict(fn(_small_table(path)))


def _agreement(rows):
    four = [rows[k] for k in ("built-in", "NumPyro", "PyMC", "Stan")]
    truths = [float(r["ground truth (mean)"]) for r in four]
    return {"closed": ceil2(max(abs(float(r["truth - closed form"])) for r in four)),
            "each": ceil2(max(truths) - min(truths))}


def _webppl_bounds(rows):
    lower, lower_se = rows["WebPPL"]["forward (lower)"].split(" ± ")
    upper, upper_se = rows["WebPPL"]["reverse (upper)"].split(" ± ")
    return {"apart": f"{abs(float(upper) - float(lower)):.3f}", "se_f": lower_se, "se_r": upper_se}


def _test_source(pattern: str) -> Callable[[str], dict[str, str]]:
    """A reader of a test's source: what it runs and asserts."""
    return lambda path: one(pattern, read(path), path).groupdict()


FIGURES: list[Figure] = [
    Figure("docs/ppl.md", r"`benchmarks/results/posteriordb/` runs (?P<n>\d+) posteriordb posteriors",
           "benchmarks/results/posteriordb/README.md", stored(r"^# posteriordb: \d+ of (?P<n>\d+) posteriors")),
    Figure("docs/ppl.md", r"the NHEFS run below timed it \([^)]*\) at (?P<build>[\d.]+) s\.", NHEFS,
           stored(r"then loaded\): (?P<build>[\d.]+) s\.")),
    Figure("docs/ppl.md", r"Stan in-process costs (?P<stan>[\d.]+) times NumPyro per chain-step, against "
                          r"(?P<http>[\d.]+) times through httpstan", NHEFS,
           _nhefs(stan="Stan in-process", http="Stan via httpstan")),
    Figure("docs/ppl.md", r"gradient: (?P<us>[\d.]+) us per chain, `benchmarks/results/ppl_adapters/stan_program",
           FORMS, stored(r"\| linear regression \(NHEFS\) \| (?P<us>[\d.]+) \|")),
    Figure("docs/ppl.md", r"on the autodiff tape and costs (?P<appendix>[\d.]+) times NumPyro\.", NHEFS,
           _nhefs(appendix="Stan in-process, the appendix's likelihood")),
    Figure("docs/ppl.md", r"tape once\): (?P<threads>[\d.]+) times NumPyro here", NHEFS,
           _nhefs(threads="Stan in-process, 2 threads")),
    Figure("docs/ppl.md", r"cost (?P<s>[\d.]+) s per 1,000 chain-steps, (?P<ratio>[\d.]+) times the built-in model "
                          r"\(`benchmarks/results/ppl_adapters/table\.md`", SMALL,
           _small(lambda rows: {"s": rows["WebPPL"]["s per 1,000 chain-steps"],
                                "ratio": rows["WebPPL"]["ratio to built-in"].rstrip("x")})),
    Figure("docs/ppl.md", r"on NHEFS, (?P<webppl>[\d.]+) times NumPyro \(`nhefs_cost\.md`, above\)", NHEFS,
           _nhefs(webppl="WebPPL")),
    Figure("docs/ppl.md", r"agree with the closed form within (?P<closed>[\d.]+) nat and with each other within "
                          r"(?P<each>[\d.]+)\.", SMALL, _small(_agreement)),
    Figure("docs/ppl.md", r"WebPPL's ground truth is (?P<closed>[\d.]+) nat above the closed form and (?P<builtin>"
                          r"[\d.]+) above the built-in model's", SMALL,
           _small(lambda rows: {"closed": rows["WebPPL"]["truth - closed form"].lstrip("+"),
                                "builtin": rows["WebPPL"]["truth - built-in"].lstrip("+")})),
    Figure("docs/ppl.md", r"its two bounds lie (?P<apart>[\d.]+) nat apart, with standard errors of (?P<se_f>[\d.]+) "
                          r"and (?P<se_r>[\d.]+),", SMALL, _small(_webppl_bounds)),
    Figure("docs/ppl.md", r"NumPyro and PyMC cost (?P<numpyro>[\d.]+) and (?P<pymc>[\d.]+) times the built-in model; "
                          r"Stan in-process costs (?P<stan>[\d.]+) times on this 20-row model", SMALL,
           _small(lambda rows: {k: rows[name]["ratio to built-in"].rstrip("x")
                                for k, name in (("numpyro", "NumPyro"), ("pymc", "PyMC"), ("stan", "Stan"))})),
    Figure("docs/ppl.md", r"and (?P<stan>[\d.]+) times NumPyro on the 1,566-row NHEFS regression, where Stan's own "
                          r"gradient does \((?P<appendix>[\d.]+) times with the appendix's", NHEFS,
           _nhefs(stan="Stan in-process", appendix="Stan in-process, the appendix's likelihood")),
    Figure("docs/ppl.md", r"WebPPL costs (?P<webppl>[\d.]+) times NumPyro there\.", NHEFS, _nhefs(webppl="WebPPL")),
    # The bug alarm's sentences say what the tests run and assert.
    Figure("docs/ppl.md", r"at T = (?P<T>\d+) \((?P<runs>\d+) runs per direction\) on at least (?P<k>\d+) of "
                          r"(?P<n>\d+) simulated data sets, and on none of the correct simulator's (?P<n2>\d+)",
           "tests/ppl/test_ppl_numpyro.py",
           _test_source(r"for seed in range\((?P<n>\d+)\):(?s:.)*?steps=\[(?P<T>\d+)\], num_runs=(?P<runs>\d+)"
                        r"(?s:.)*?fired\[\"buggy\"\] >= (?P<k>\d+) and fired\[\"correct\"\] == 0")),
    Figure("docs/ppl.md", r"at least (?P<k>\d+) of (?P<n>\d+) at T = (?P<T>\d+) \((?P<runs>\d+) chains\), none of the "
                          r"correct simulator's (?P<n2>\d+) \(`tests/ppl/test_ppl_stan\.py",
           "tests/ppl/test_ppl_stan.py",
           _test_source(r"for seed in range\((?P<n>\d+)\):(?s:.)*?steps=\[(?P<T>\d+)\], num_runs=(?P<runs>\d+)"
                        r"(?s:.)*?fired\[\"noise x4\"\] >= (?P<k>\d+)")),
    Figure("docs/ppl.md", r"s2 is reported (?P<factor>\d+) times too small: the alarm fires at T = (?P<t1>\d+) and at "
                          r"T = (?P<t2>\d+) on one data set", "tests/ppl/test_ppl_pymc.py",
           _test_source(r"np\.log\((?P<factor>\d+)\.0\)\}(?s:.)*?steps=\[(?P<t1>\d+), (?P<t2>\d+)\]")),
]

# ------------------------------------------------------------------------------------- the other docs

WEIGHT_HEALTH = "benchmarks/results/weight_health/README.md"

FIGURES += [
    Figure("docs/architecture.md", r"scored on the other half, where it leaves (?P<miss>\d+)% of the estimates one nat "
                                   r"or more off silent and warns on (?P<fw>\d+)% of those within one stderr",
           WEIGHT_HEALTH, stored(r"On the odd seeds \(\d+\), which the choice did not read, the rule misses "
                                 r"(?P<miss>\d+)% of the estimates one nat or more off \(\d+ of \d+ stay silent\) "
                                 r"and warns on (?P<fw>\d+)% of those within one stderr")),
]

# ------------------------------------------------------------------------------------------------ README.md

R = "benchmarks/results"
WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}


def cells_of(line: str) -> list[str]:
    """A Markdown table row's cells (split on " | ", so a cell may hold ``|x|``)."""
    return [c.strip() for c in line.strip().removeprefix("|").removesuffix("|").split(" | ")]


def table_rows(path: str, first_cells: int = 1) -> dict[tuple[str, ...], dict[str, str]]:
    """A Markdown page's table rows (every table whose header matches the first one's), by their first cells."""
    lines = [line for line in read(path).splitlines() if line.startswith("| ")]
    head = cells_of(lines[0])
    out = {}
    for line in lines[1:]:
        cells = cells_of(line)
        if len(cells) == len(head) and cells != head:
            out[tuple(cells[:first_cells])] = dict(zip(head, cells, strict=True))
    return out


def _alarm(path):
    row = table_rows(path, 2)[("all", "all")]
    return {"n": f"{int(row['sandwiches']):,}",
            "fired": "never fired" if row["alarm"] == "0" else f"fired {row['alarm']} times"}


def _check_estimate(path):
    rows = [r for key, r in table_rows(path).items() if key[0].endswith("T = 1000")]
    caught = [int(r[col].split()[0]) for r in rows for col in ("-1 nats", "+1 nats")]
    seeds = {int(r["seeds"]) for r in rows}
    return {"lo": f"{min(caught):,}", "hi": f"{max(caught):,}", "n": f"{seeds.pop():,}", "models": WORDS[len(rows)]}


def _fixed_cost(data):
    rows = {r["case"]: r["fixed_ms"] for r in data["rows"]}
    anew = [v for case, v in rows.items() if "a new pilot every call" in case]
    rest = [v for case, v in rows.items() if "a new pilot every call" not in case]
    return {"lo": f"{min(rest):.2f}", "hi": f"{max(rest):.2f}", "new": f"{anew[0]:.2f}"}


def _throughput(data):
    got = {(r["implementation"], r["schedule"].split()[0]): r for r in data["results"]}
    bdmc, bdmc_s = got["bdmc", "linear"], got["bdmc", "sigmoidal"]
    tfp, refreshed, numpy = got["TFP", "linear"], got["TFP (refreshed)", "linear"], got["NumPy", "sigmoidal"]
    rate = "chain_steps_per_sec"
    return {"tfp": f"{bdmc[rate] / tfp[rate]:.2f}", "refreshed": f"{bdmc[rate] / refreshed[rate]:.2f}",
            "numpy": f"{bdmc_s[rate] / numpy[rate]:.2f}", "cold": f"{bdmc[rate + '_cold'] / tfp[rate + '_cold']:.2f}",
            "first": f"{bdmc['cold_seconds']:.1f}", "first_tfp": f"{tfp['cold_seconds']:.1f}",
            "compile": f"{bdmc['cold_seconds'] - bdmc['run_seconds']:.1f}",
            "compile_tfp": f"{tfp['compile_seconds']:.1f}"}


def _ratios(cell: str) -> list[float]:
    """The ratios a peers target cell quotes before its bracketed earlier run: ``1.49x; 0.73x (2.09x; 0.93x)``."""
    return [float(x) for x in re.findall(r"([\d.]+)x", cell.split("(")[0])]


def _peers(path):
    rows = {key[0]: r for key, r in table_rows(path).items()}
    problems = ["regression", "eight schools", "correlated", "Pima", "narrow"]

    def span(target, which=0, only=None):
        found = [(_ratios(rows[target][p]) + [None, None])[which] for p in (only or problems)]
        found = [x for x in found if x is not None]
        return f"{min(found):.2f}", f"{max(found):.2f}"

    warm1 = "warm, RMSE < 1 nat, best bdmc / best peer <= 1.0"
    warm01 = "warm, RMSE < 0.1 nat, <= 1.0 where a peer reaches it"
    pilot = "warm with a new pilot in every call (< 1 nat; < 0.1 nat), <= 1.0"
    cold = "cold, no disk caches, <= 1.5x (< 1 nat; < 0.1 nat)"
    cached = "cold, caches warm, <= 1.0x (< 1 nat; < 0.1 nat)"
    rerun = "cold, the same call again (bdmc's pilot loaded from disk), <= 1.0x (< 1 nat; < 0.1 nat)"
    both = [p for p in problems if len(_ratios(rows[cold][p])) > 1]
    worst = max(problems, key=lambda p: _ratios(rows[pilot][p])[0])
    out = {}
    for name, (lo, hi) in {"w1": span(warm1), "w01": span(warm01), "pilot": span(pilot), "cold": span(cold),
                           "cached": span(cached), "cold01": span(cold, 1, both),
                           "cached01": span(cached, 1, both), "rerun": span(rerun)}.items():
        out[f"{name}_lo"], out[f"{name}_hi"] = lo, hi
    return {**out, "both": WORDS[len(both)], "worst": worst}


def _ttr_row(path, model, estimator, target):
    return table_rows(path, 3)[(model, estimator, target)]


def _paper_ais(path):
    out = {}
    for short, model, target in (("c", "clustering", "7"), ("l", "low-rank", "8.6"), ("b", "binary", "7.5")):
        row = _ttr_row(path, model, "AIS", target)
        paper_rmse, paper_s = re.fullmatch(r"([\d.]+) in ([\d.]+) s", row["paper: RMSE in one run's time"]).groups()
        out.update({f"{short}_excl": row["one run s, excl. compile"].split()[0],
                    f"{short}_incl": row["one run s, incl. compile"].split()[0], f"{short}_paper_s": paper_s,
                    f"{short}_paper": paper_rmse, f"{short}_ours": row["our knob (RMSE [90%], runs)"].split()[1][1:]})
    return out


def _ns_spread(path):
    rows = [json.loads(line) for line in read(path).splitlines() if line.strip()]
    run = [r for r in rows if r.get("estimator") == "ns" and len(r.get("runs", [])) == 25][-1]
    mean = sum(run["runs"]) / len(run["runs"])
    return {"sd": f"{math.sqrt(sum((x - mean) ** 2 for x in run['runs']) / (len(run['runs']) - 1)):.1f}"}


def _binary_smc(path):
    text = read(path)
    section = text[text.index("## SMC"):text.index("## NS")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if re.match(r"\| \d", line)]
    rmse = [float(r[1].split()[0]) for r in rows]
    errors = [float(r[2]) for r in rows]
    return {"lo": f"{min(rmse):.1f}", "hi": f"{max(rmse):.1f}", "k0": f"{int(rows[0][0]):,}",
            "k1": f"{int(rows[-1][0]):,}", "k1b": f"{int(rows[-1][0]):,}", "s": rows[-1][4].split()[0],
            "e_hi": f"{max(errors):.2f}", "e_lo": f"{min(errors):.2f}"}


def _loads(path):
    lo, hi, warm_lo, warm_hi = (float(x) for x in one(
        r"at a 1-minute load average of ([\d.]+) to ([\d.]+) \(cold: ([\d.]+) to ([\d.]+)\)", collapse(read(path)),
        path).groups())
    return {"lo": f"{min(lo, warm_lo):.1f}", "hi": f"{max(hi, warm_hi):.1f}"}


TTR = f"{R}/time_to_rmse/time_to_rmse.md"
FIGURES += [
    Figure("README.md", r"narrower than 0\.5 nat on (?P<k>\d+) of (?P<n>\d+) posteriors",
           f"{R}/posteriordb/evidence.md",
           stored(r"\((?P<k>\d+) of (?P<n>\d+) from reference draws")),
    Figure("README.md", r"the table over all (?P<n>\d+) of posteriordb's posteriors", f"{R}/posteriordb/evidence.md",
           stored(r"Every one of posteriordb's (?P<n>\d+) posteriors has a row")),
    Figure("README.md", r"Over (?P<n>[\d,]+) seeded sandwiches of correct models \(AIS, SMC and tempered SMC\) it "
                        r"(?P<fired>never fired|fired \d+ times)", f"{R}/alarm_calibration/table.md", _alarm),
    Figure("README.md", r"called a value 1 nat too low or too high wrong on (?P<lo>[\d,]+) to (?P<hi>[\d,]+) of "
                        r"(?P<n>[\d,]+) simulated data sets of each of (?P<models>\w+) models",
           f"{R}/check_estimate_level/table.md", _check_estimate),
    Figure("README.md", r"a median (?P<lo>[\d.]+) to (?P<hi>[\d.]+) ms outside the engine's run \(host work, prior "
                        r"draws\) per warm call whose pilot is "
                        r"reused or absent, (?P<new>[\d.]+) ms with a new pilot in every call",
           f"{R}/fixed_cost/fixed_cost.json", from_json(_fixed_cost)),
    Figure("README.md", r"bdmc runs at (?P<tfp>[\d.]+)x the chain-steps per second of TensorFlow Probability's "
                        r"`sample_annealed_importance_chain` \((?P<refreshed>[\d.]+)x its refreshed-kernel variant\) "
                        r"and at (?P<numpy>[\d.]+)x a vectorized NumPy loop; counting compilation, a single cold run "
                        r"is (?P<cold>[\d.]+)x TFP \(linear schedule: first call (?P<first>[\d.]+) s against "
                        r"(?P<first_tfp>[\d.]+) s; first call less warm run, how the page times TFP's compilation, "
                        r"(?P<compile>[\d.]+) s against (?P<compile_tfp>[\d.]+) s;",
           f"{R}/ais_throughput/ais_throughput.json", from_json(_throughput)),
    Figure("README.md", r"reached RMSE < 1 nat warm at (?P<w1_lo>[\d.]+)x to (?P<w1_hi>[\d.]+)x the best peer's time, "
                        r"and < 0\.1 nat at (?P<w01_lo>[\d.]+)x to (?P<w01_hi>[\d.]+)x where a peer and bdmc both "
                        r"reached it; .*? it is (?P<pilot_lo>[\d.]+)x to (?P<pilot_hi>[\d.]+)x at < 1 nat "
                        r"\((?P<worst>[\w ]+) the worst\)\. .*? reached RMSE < 1 nat in (?P<cold_lo>[\d.]+)x to "
                        r"(?P<cold_hi>[\d.]+)x the best peer's time without disk caches and (?P<cached_lo>[\d.]+)x to "
                        r"(?P<cached_hi>[\d.]+)x with them; to < 0\.1 nat, on the (?P<both>\w+) problems where both "
                        r"reached it, (?P<cold01_lo>[\d.]+)x to (?P<cold01_hi>[\d.]+)x and (?P<cached01_lo>[\d.]+)x to "
                        r"(?P<cached01_hi>[\d.]+)x; and when a new process makes the very same call again \(its "
                        r"pilot loaded from disk\), (?P<rerun_lo>[\d.]+)x to (?P<rerun_hi>[\d.]+)x at < 1 nat",
           f"{R}/peers/README.md", _peers),
    Figure("README.md", r"forward AIS in (?P<c_excl>[\d.]+) s \(clustering\), (?P<l_excl>[\d.]+) s \(low rank\) and "
                        r"(?P<b_excl>[\d.]+) s \(binary\) with compilation excluded, and in (?P<c_incl>[\d.]+) s, "
                        r"(?P<l_incl>[\d.]+) s and (?P<b_incl>[\d.]+) s counting compilation, against the paper's "
                        r"(?P<c_paper_s>[\d.]+) s, (?P<l_paper_s>[\d.]+) s and (?P<b_paper_s>[\d.]+) s \(its RMSEs "
                        r"(?P<c_paper>[\d.]+), (?P<l_paper>[\d.]+) and (?P<b_paper>[\d.]+) nats; ours "
                        r"(?P<c_ours>[\d.]+), (?P<l_ours>[\d.]+) and (?P<b_ours>[\d.]+)\)", TTR, _paper_ais),
    Figure("README.md", r"on clustering SMC has (?P<smc>[\d.]+) over (?P<smc_runs>\d+) runs at (?P<smc_knob>\d+) moves "
                        r"per case but (?P<smc_bench>[\d.]+) in the bench \(paper (?P<smc_paper>[\d.]+)\), nested "
                        r"sampling (?P<ns>[\d.]+) over (?P<ns_runs>\d+) runs but (?P<ns_bench>[\d.]+) in the bench "
                        r"\(paper (?P<ns_paper>[\d.]+)\)", TTR,
           stored(r"\| clustering \| SMC \| [\d.]+ \| (?P<smc_paper>[\d.]+) in [\d.]+ s \| not counted: "
                  r"(?P<smc>[\d.]+) \[[^]]*\] at (?P<smc_knob>\d+) \((?P<smc_runs>\d+) runs, commit \w+\), but the "
                  r"bench's 25 trials at \d+ give (?P<smc_bench>[\d.]+) \|.*\| clustering \| NS \| [\d.]+ \| "
                  r"(?P<ns_paper>[\d.]+) in [\d.]+ s \| not counted: (?P<ns>[\d.]+) \[[^]]*\] at \d+ "
                  r"\((?P<ns_runs>\d+) runs, commit \w+\), but the bench's 25 trials at \d+ give "
                  r"(?P<ns_bench>[\d.]+) \|")),
    Figure("README.md", r"nested sampling \(two live particles\) has (?P<rmse>[\d.]+) over (?P<runs>\d+) runs at "
                        r"(?P<knob>\d+) moves per step \(paper (?P<paper>[\d.]+)\)", TTR,
           stored(r"\| binary \| NS \| 10 \| first below 10: (?P<paper>[\d.]+) in \d+ s \| not reached: best "
                  r"(?P<rmse>[\d.]+) \[[^]]*\] at (?P<knob>\d+) \((?P<runs>\d+) runs")),
    Figure("README.md", r"its runs' standard deviation (?P<sd>[\d.]+) nats",
           f"{R}/time_to_rmse/time_to_rmse_binary.jsonl", _ns_spread),
    Figure("README.md", r"four live particles bring to an RMSE of (?P<rmse>[\d.]+) over (?P<runs>\d+) runs "
                        r"\((?P<s>[\d.]+) s a run", f"{R}/time_to_rmse_ns_particles/time_to_rmse.md",
           stored(r"\| binary \| NS \| 10 \| [^|]* \| \d+ \((?P<rmse>[\d.]+) \[[^]]*\], (?P<runs>\d+) runs\) \| "
                  r"(?P<s>[\d.]+) ")),
    Figure("README.md", r"SMC \(one particle\) stays at (?P<lo>[\d.]+) to (?P<hi>[\d.]+) nats from (?P<k0>[\d,]+) to "
                        r"(?P<k1>[\d,]+) moves per case \(paper 11\.9 in 1230 s; ours (?P<s>[\d.]+) s a run at "
                        r"(?P<k1b>[\d,]+) moves\), its mean error (?P<e_hi>-[\d.]+) to (?P<e_lo>-[\d.]+) nats",
           f"{R}/time_to_rmse/time_to_rmse_binary.md", _binary_smc),
    Figure("README.md", r"SMC \(one particle\) stays at [^(]*\(paper (?P<paper>[\d.]+) in (?P<paper_s>\d+) s;", TTR,
           # the paper's own SMC row (its RMSE as the target), the one before the 10-nat row
           stored(r"\| binary \| SMC \| (?P<paper>[\d.]+) \| (?P=paper) in (?P<paper_s>\d+) s \| not reached[^|]*"
                  r"(?:\| )+binary \| SMC \| 10 \|")),
    Figure("README.md", r"a 1-minute load average of (?P<ttr>[\d.]+-[\d.]+) during the time_to_rmse rows", TTR,
           stored(r"the 1-minute load average was (?P<ttr>[\d.]+-[\d.]+) during these rows")),
    Figure("README.md", r"and (?P<lo>[\d.]+) to (?P<hi>[\d.]+) during the peers' rows", f"{R}/peers/README.md", _loads),
]

# ----------------------------------------------------------------------------------------- docs/architecture.md


def _cold_fell(path):
    row = next(r for key, r in table_rows(path).items() if key[0].startswith("cold, no disk caches"))
    problems = ["regression", "eight schools", "correlated", "Pima", "narrow"]
    now = [_ratios(row[p])[0] for p in problems]
    return {"lo": f"{min(now):.2f}", "hi": f"{max(now):.2f}"}


def _preconditioning(path):
    rows = {key[0]: r for key, r in table_rows(path).items()}
    return {"identity": f"{float(rows['hmc-identity']['median_gap']):.1f}",
            "fitted": f"{max(float(rows[k]['max_gap']) for k in ('hmc-diagonal', 'hmc-dense')):.2f}",
            "imh": f"{float(rows['imh']['acceptance']):.2f}"}


def _shme(path):
    rows = {key[0]: r for key, r in table_rows(path).items()}
    without, with_ = rows["pilot path, no dispersal"], rows["pilot path, dispersal (default)"]
    return {"sd": f"{float(without['sd of d across data sets']):.2f}", "low": without["d < -3 stderr"].split("/")[0],
            "n": without["d < -3 stderr"].split("/")[1], "sd_with": f"{float(with_['sd of d across data sets']):.2f}",
            "low_with": with_["d < -3 stderr"].split("/")[0]}


def _ais_first_calls(path):
    rows = [json.loads(line) for line in read(path).splitlines() if line.strip()]
    out = {}
    for kind, name in (("cold-rerun", "rerun"), ("cold-cache", "cache")):
        seconds = [r["seconds"] for r in rows if r["tool"] == "bdmc-ais" and r["kind"] == kind]
        out[f"{name}_lo"], out[f"{name}_hi"] = f"{min(seconds):.2f}", f"{max(seconds):.2f}"
    return out


FIXED_COST = f"{R}/fixed_cost/fixed_cost.json"
FIGURES += [
    Figure("docs/architecture.md", r"A warm call's time outside the engine's run and its pilot \(host work and the "
                                   r"prior draws' program\) is a median (?P<lo>[\d.]+) to (?P<hi>[\d.]+) "
                                   r"ms where the pilot is reused or absent", FIXED_COST, from_json(_fixed_cost)),
    Figure("docs/architecture.md", r"its host fixed cost \(a median (?P<lo>[\d.]+) to (?P<hi>[\d.]+) ms, above\)",
           FIXED_COST, from_json(_fixed_cost)),
    Figure("docs/architecture.md", r"first forward AIS call on the peers' problems took (?P<cache_lo>[\d.]+) to "
                                   r"(?P<cache_hi>[\d.]+) s with\s+another seed's call behind the caches .*? and "
                                   r"(?P<rerun_lo>[\d.]+) to\s+(?P<rerun_hi>[\d.]+) s making the very same call again",
           f"{R}/peers/cold.jsonl", _ais_first_calls),
    Figure("docs/architecture.md", r"cold first calls without disk caches take (?P<lo>[\d.]+)x-(?P<hi>[\d.]+)x "
                                   r"the best peer's time to < 1 nat",
           f"{R}/peers/README.md", _cold_fell),
    Figure("docs/architecture.md", r"a first tempered SMC call on eight schools took (?P<call>[\d.]+) s, "
                                   r"(?P<stages>[\d.]+) s of it tracing, lowering and loading its (?P<n>\d+)\s+"
                                   r"programs \(the run's (?P<run>[\d.]+) s; the pilot's choice loaded from the pilot "
                                   r"store\); BlackJAX's took (?P<peer>[\d.]+) s, (?P<peer_stages>[\d.]+) s of it\s+"
                                   r"in its (?P<peer_n>\d+)\.",
           f"{R}/cold_programs/README.md",
           stored(r"\*\*schools, caches warm\.\*\* bdmc's tempered SMC's first call took (?P<call>[\d.]+) s, "
                  r"(?P<stages>[\d.]+) s of it in the stages of its (?P<n>\d+) programs: no pilot's \(its choice "
                  r"loaded from the pilot store\), the run's (?P<run>[\d.]+) s .*? BlackJAX's took "
                  r"(?P<peer>[\d.]+) s, (?P<peer_stages>[\d.]+) s of it in its (?P<peer_n>\d+) programs")),
    Figure("docs/architecture.md", r"falls from a median of (?P<identity>[\d.]+) nats \(identity\) to at most "
                                   r"(?P<fitted>[\d.]+) \(diagonal and dense\)\. .*?acceptance (?P<imh>[\d.]+)\)",
           f"{R}/preconditioning/README.md", _preconditioning),
    Figure("docs/architecture.md", r"\((?P<cases>[\d,]+) cases of a Gaussian mean: under (?P<steps>\d+) steps, "
                                   r"`tests/core/test_smc_pilot\.py`\)", "tests/core/test_smc_pilot.py",
           lambda path: {k: f"{int(v):,}" for k, v in one(
               r"\((?P<cases>\d+),\)\)\n.*num_cases=(?P=cases)\)\n.*shape\[0\] - 1 < (?P<steps>\d+)", read(path),
               path).groupdict().items()}),
    Figure("docs/architecture.md", r"a Gamma-Poisson's SHME spread by (?P<sd>[\d.]+) nats from data set to data set "
                                   r"and fell three standard errors below `log p\(y\)` on (?P<low>\d+) of (?P<n>\d+) "
                                   r"\((?P<sd_with>[\d.]+) and (?P<low_with>\d+) with them",
           f"{R}/shme_one_latent/table.md", _shme),
]

# ---------------------------------------------------------------------------------------------- docs/audit.md

CALIBRATION, QUICK = f"{R}/audit_calibration/README.md", f"{R}/audit_quick_timing/README.md"


def _quick(path):
    rows = {key[0]: r for key, r in table_rows(path).items()}
    out = {}
    for short, name in (("numpyro", "NumPyro"), ("pymc", "PyMC"), ("stan", "Stan (pystan)")):
        out[short] = rows[name]["compile: median (min to max) s"].split()[0]
        out[f"{short}_cached"] = rows[name]["cached: median (min to max) s"].split()[0]
    out["webppl"] = one(r"\*\*WebPPL, now: (\d+) s compiled", read(path), path).group(1)
    out["webppl_cached"] = one(r"(\d+) s cached under `--sampler auto`", read(path), path).group(1)
    out["webppl_before"] = one(r"\*\*WebPPL, before: (\d+) s", read(path), path).group(1)
    return out


FIGURES += [
    Figure("docs/audit.md", r"`benchmarks/results/audit_calibration/`\): (?P<total>[\d,]+) audits, (?P<per>\d+) per "
                            r"sampler, on three model classes \((?P<classes>[^)]*)\)\. The four classes added since "
                            r"\((?P<added_classes>.*?)\) have (?P<added>\d+) audits so far, (?P<per_cell>[\d to]+) "
                            r"per sampler and class, with (?P<fails>\d+) fails?\b", CALIBRATION,
           stored(r"\*\*(?P<total>[\d,]+) audits, `Budget\.quick\(\)`.*?: (?P<per>\d+) under NumPyro's NUTS.*?These "
                  r"[\d,]+ audits are of the first three programs \((?P<classes>[^)]*)\)\. \*\*The classes added "
                  r"since\*\* \((?P<added_classes>.*?); the programs in \"What is audited\", below\) have "
                  r"(?P<added>\d+) audits so far, (?P<per_cell>[\d to]+) per sampler and class .*?Of the \d+, "
                  r"(?P<fails>\d+) failed")),
    Figure("docs/audit.md", r"Fails: (?P<np>\d+) under NumPyro's NUTS, all (?P<np_again>\d+) among the (?P<lent>\d+) "
                            r"NumPyro audits run on a lent machine with other package versions "
                            r"\((?P<versions>[^)]*)\) and (?P<rest_fails>\d+) of the (?P<rest>\d+) run elsewhere, "
                            r"(?P<hmc>\d+) under bdmc's HMC, (?P<pymc>\d+) under PyMC's NUTS and (?P<stan>\d+) under "
                            r"Stan's", CALIBRATION,
           stored(r"Fails: (?P<np>\d+), (?P<hmc>\d+), (?P<pymc>\d+) and (?P<stan>\d+)\..*?By machine, as the rows "
                  r"record it: (?P<np_again>\d+) of the (?P<lent>\d+) NumPyro audits run on the lent machine "
                  r"\((?P<versions>[^)]*)\) failed, and (?P<rest_fails>\d+) of the (?P<rest>\d+) run elsewhere")),
    Figure("docs/audit.md", r"Every 95% interval reaches down to 0\.01 \(the upper ends are (?P<lo>[\d.]+) to "
                            r"(?P<hi>[\d.]+)\)", CALIBRATION,
           stored(r"Every sampler's 95% interval reaches down to 0\.01, .*?the upper ends, in the table below, are "
                  r"(?P<lo>[\d.]+) to (?P<hi>[\d.]+)\)")),
    Figure("docs/audit.md", r"at commit (?P<commit>\w+), a quick audit of eight schools took a median of "
                            r"(?P<pymc>[\d.]+) s under PyMC's NUTS and (?P<stan>[\d.]+) s under Stan's", CALIBRATION,
           stored(r"at commit (?P<commit>\w+) \(before a program's later audits stopped compiling\), a quick "
                  r"audit of eight schools took a median (?P<pymc>[\d.]+) s under PyMC's NUTS and "
                  r"(?P<stan>[\d.]+) s under")),
    Figure("docs/audit.md", r"NumPyro's NUTS took a median of (?P<median>[\d.]+) s at commit (?P<commit>\w+) on a "
                            r"busier",
           CALIBRATION, stored(r"NumPyro's NUTS: a median of (?P<median>[\d.]+) s at (?P<commit>\w+) under load")),
    Figure("docs/audit.md", r"a median of (?P<numpyro>\d+) s under NumPyro's NUTS with every JAX program compiled in "
                            r"the run \((?P<numpyro_cached>\d+) s with the compilation cache of an earlier run\), "
                            r"(?P<pymc>\d+) s under PyMC's \((?P<pymc_cached>\d+) s\), (?P<stan>\d+) s under Stan's "
                            r"\((?P<stan_cached>\d+) s\), and (?P<webppl>\d+) s under WebPPL \((?P<webppl_cached>\d+) "
                            r"s\) with bdmc's HMC, .*?\((?P<webppl_before>\d+) s at df4deb6", QUICK, _quick),
    Figure("docs/audit.md", r"took (?P<ratio>[\d.]+) times as long under `--sampler nuts`", QUICK,
           stored(r"\((?P<ratio>[\d.]+) times as long\)\.\*\*")),
    Figure("docs/audit.md", r"the shipped report's run took (?P<s>\d+) s, `examples/audit_pima/results\.json`",
           "examples/audit_pima/results.json", from_json(lambda d: {"s": f"{d['seconds']:.0f}"})),
]

# ------------------------------------------------------------------------------------- the other docs' figures

POWER = f"{R}/check_power/table.md"


def _power(*cells: tuple[str, str, str, str]) -> Callable[[str], dict[str, str]]:
    """check_power's rows (bug, model, check) -> a column, by group name."""
    def reader(path: str) -> dict[str, str]:
        rows = table_rows(path, 3)
        return {name: rows[(bug, model, check)][column] for name, (bug, model, check, column) in zip(
            ("a", "b", "c", "d"), cells, strict=False)}
    return reader


def _level_title(path):
    found = one(r"(?P<fv>\d+) false verdicts in (?P<n>\d+) checks of exact values \(level 0\.01\); a value 1 nat too "
                r"low is caught by the certified tier in (?P<lo1>\d+) and (?P<lo2>\d+) of (?P<m>[\d,]+) data sets, 1 "
                r"nat too high by the calibrated tier in (?P<hi1>\d+) and (?P<hi2>\d+)", collapse(read(path)), path)
    return {k: f"{int(v.replace(',', '')):,}" for k, v in found.groupdict().items()}


def _posteriordb_evidence_seconds(path):
    import csv
    rows = [r for r in csv.DictReader(read(path).splitlines()) if r["draws_source"].startswith("ArviZ")]
    seconds = [float(r["seconds"]) for r in rows]
    return {"lo": f"{min(seconds):.0f}", "hi": f"{max(seconds):.0f}"}


DASK, SCALE = f"{R}/scale/dask.md", f"{R}/scale/scale.md"


def _dask(path):
    rows = {key[0]: r for key, r in table_rows(path).items()}
    here, threads, procs = rows["in-process"], rows["threads"], rows["processes"]
    return {"compile": here["compile s (sum)"],
            "run": f"{float(here['compile + run s (sum)']) - float(here['compile s (sum)']):.1f}",
            "first": here["first row s"], "procs_compile": procs["compile s (sum)"], "sweep": here["sweep s"],
            "threads": threads["sweep s"], "procs": procs["sweep s"], "start": procs["start s"],
            "load_lo": f"{min(float(r['load (1 min) before']) for r in rows.values()):.1f}",
            "load_hi": f"{max(float(r['load (1 min) before']) for r in rows.values()):.1f}"}


def _scale(path):
    rows = list(table_rows(path, 5).values())
    text = collapse(read(path))
    memory = [float(r["memory MiB"]) for r in rows]

    def at(model, n):
        return float(next(r["memory MiB"] for r in rows if r["sweep"] == "N" and r["model"] == model
                          and r["N"] == n))
    slope = {m: one(rf"\*\*{m}\*\* \([^)]*\):.*?Slope of log seconds on log N: [\d.]+ over all N, (?P<three>[\d.]+) "
                    rf"over the largest three, (?P<two>[\d.]+) over the largest two", text, path)
             for m in ("linear-regression", "logistic")}
    base = float(one(r"a baseline process \(([\d.]+) MiB", text, path).group(1))
    return {"base": f"{base:.0f}",
            "lo": f"{min(memory):.0f}", "hi": f"{max(memory):.0f}",
            "linear": f"{at('linear-regression', '100,000') - at('linear-regression', '10,000'):.0f}",
            "logistic": f"{at('logistic', '100,000') - at('logistic', '10,000'):.0f}",
            "data": re.search(r"the data themselves: ([\d.]+) MiB", text).group(1),
            "slope_linear": slope["linear-regression"]["three"], "slope_logistic": slope["logistic"]["three"],
            "slope_logistic_two": slope["logistic"]["two"]}


FIGURES += [
    Figure("docs/checks.md", r"Measured at the default settings: (?P<fv>\d+) false verdicts in (?P<n>[\d,]+) checks of "
                             r"exact values; a value 1 nat low caught by the certified tier in (?P<lo1>[\d,]+) and "
                             r"(?P<lo2>[\d,]+) of (?P<m>[\d,]+) data sets, 1 nat high by the calibrated tier in "
                             r"(?P<hi1>[\d,]+) and (?P<hi2>[\d,]+)", f"{R}/check_estimate_level/README.md",
           _level_title),
    Figure("docs/checks.md", r"it finds the prior's log integral at \+(?P<v>[\d.]+) nats",
           f"{R}/posteriordb_checks/README.md", stored(r"its prior integrates to e\^(?P<v>[\d.]+)")),
    Figure("docs/checks.md", r"cannot \(median statistic (?P<a>-?[\d.]+) and (?P<b>-?[\d.]+) nats\): 0/20, 0/20 \| "
                             r"cannot: 0/20, 0/20 \| \| density: log-likelihood constant", POWER,
           _power(("kernel conditional variance +10%", "linear-regression", "exact value", "median statistic"),
                  ("kernel conditional variance +10%", "correlated-gaussian", "exact value", "median statistic"))),
    Figure("docs/checks.md", r"cannot \(median statistic (?P<a>-?[\d.]+) and (?P<b>-?[\d.]+) nats\): 0/20, 0/20 \| "
                             r"\*\*sees it\*\* \(densities\)", POWER,
           _power(("log-likelihood noise variance x1.1 (density only)", "linear-regression", "exact value",
                   "median statistic"),
                  ("log-likelihood noise variance x1.1 (density only)", "correlated-gaussian", "exact value",
                   "median statistic"))),
    Figure("docs/checks.md", r"eigenbasis moments caught on (?P<a>\d+) of (?P<b>\d+) seeds", POWER,
           _power(("simulator variance x1.1", "correlated-gaussian", "Geweke (eigenbasis moments)", "fired"),
                  ("simulator variance x1.1", "correlated-gaussian", "Geweke (eigenbasis moments)", "seeds"))),
    Figure("docs/checks.md", r"calls at least (?P<old>\d+) of (?P<n>\d+) simulated correct sandwiches \"unlikely by "
                             r"chance\", this rule at most (?P<new>\d+)", "tests/cli/test_cli_sandwich_summary.py",
           _test_source(r"rng\.normal\(size=\((?P<n>\d+), (?s:.)*?assert old >= (?P<old>\d+) and new <= "
                        r"(?P<new>\d+)")),
    Figure("docs/evidence.md", r"this stage alone brackets (?P<k>\d+) within 0\.5 nat", f"{R}/posteriordb/evidence.md",
           stored(r"\((?P<k>\d+) of \d+ from reference draws")),
    Figure("docs/evidence.md", r"On posteriordb's (?P<n>\d+) computable posteriors with reference draws",
           f"{R}/posteriordb/evidence.md", stored(r"\(\d+ of (?P<n>\d+) from reference draws")),
    Figure("docs/evidence.md", r"a whole call took (?P<lo>\d+) to (?P<hi>\d+) s a posterior",
           f"{R}/posteriordb/evidence.csv", _posteriordb_evidence_seconds),
    Figure("docs/evidence.md", r"the table over all (?P<n>\d+) of posteriordb's posteriors",
           f"{R}/posteriordb/evidence.md",
           stored(r"Every one of posteriordb's (?P<n>\d+) posteriors has a row")),
    Figure("docs/cluster.md", r"the 16 cells spent (?P<compile>[\d.]+) s compiling and (?P<run>[\d.]+) s running their "
                              r"25 trials; .*? the first row arrived after (?P<first>[\d.]+) s\. .*? reported "
                              r"(?P<procs_compile>[\d.]+) s of compilation between them\. - \*\*Two cores already busy "
                              r"gain nothing\.\*\* With the machine's 1-minute load average at (?P<load_lo>[\d.]+) to "
                              r"(?P<load_hi>[\d.]+) \(other jobs\), the sweep took (?P<sweep>[\d.]+) s in-process, "
                              r"(?P<threads>[\d.]+) s on the thread cluster and (?P<procs>[\d.]+) s on two worker "
                              r"processes \(plus (?P<start>[\d.]+) s to start them\)", DASK, _dask),
    Figure("docs/cluster.md", r"peaks at (?P<base>\d+) MiB; one forward-AIS configuration \(16 chains, compilation "
                              r"included\) adds (?P<lo>\d+) to (?P<hi>\d+) MiB, and going from 10\^4 to 10\^5 data "
                              r"cases added (?P<linear>\d+) MiB \(linear regression\) and (?P<logistic>\d+) MiB "
                              r"\(logistic regression\) while the data themselves are (?P<data>[\d.]+) MiB .*? was "
                              r"(?P<slope_linear>[\d.]+) for the Gibbs sweep of linear regression and "
                              r"(?P<slope_logistic>[\d.]+) for HMC on logistic regression \((?P<slope_logistic_two>"
                              r"[\d.]+) between 10\^4 and 10\^5\)", SCALE, _scale),
    Figure("docs/bread_toys.md", r"a kernel that accepts every move puts the reverse \"upper bound\" more than "
                                 r"(?P<nats>\d+) nat below `log Z`", "tests/exact/test_exact_jeffreys.py",
           _test_source(r"broken\.log_w_reverse < broken\.log_z - (?P<nats>\d+)\.0")),
]

# Numbers the docs derive by arithmetic (a log of a level, a sum of constants): recomputed, the doc as "source".


def arithmetic(**values: str) -> Callable[[str], dict[str, str]]:
    return lambda path: dict(values)


FIGURES += [
    Figure("docs/checks.md", r"a lost `log 2` \((?P<v>[\d.]+) nat\)", "docs/checks.md",
           arithmetic(v=f"{math.log(2):.2f}")),
    Figure("docs/checks.md", r"Markov's interval \((?P<v>[\d.]+) nats wide on each side\)", "docs/checks.md",
           arithmetic(v=f"{math.log(2 / 0.01):.1f}")),  # each side at level / 2
    Figure("docs/checks.md", r"\(log (?P<k>\d+) = (?P<v>[\d.]+) nats at level 0\.01\)", "docs/checks.md",
           arithmetic(k="200", v=f"{math.log(200):.1f}")),
    Figure("docs/cli.md", r"`log\(1/a\)` \((?P<v>\d+) nats at level 0\.01\)\. .*? Each side of each tier takes "
                          r"`level / (?P<share>\d+)`", "docs/cli.md",
           arithmetic(v=f"{math.log(4 / 0.01):.0f}", share="4")),
    Figure("docs/evidence.md", r"(?P<slack>[\d.]+) nat of slack for n = (?P<n>\d+) at a = 0\.01 instead of Markov's "
                               r"(?P<markov>[\d.]+) nats", "docs/evidence.md",
           arithmetic(slack=f"{math.log(100) / 16:.2f}", n="16", markov=f"{math.log(100):.1f}")),
    Figure("docs/evidence.md", r"the upper side pays `log\(1/a\)` \(about (?P<v>\d+) nats at the first round's level\)",
           "docs/evidence.md", arithmetic(v=f"{math.log(4 / 0.01):.0f}")),  # the proposal stage: level / 2, per side
    Figure("docs/compare.md", r"\((?P<k>\d+) x (?P<each>[\d.]+) = (?P<all>[\d.]+) nats in all\)", "docs/compare.md",
           arithmetic(k="5", each=f"{math.log(10 * math.sqrt(2 * math.pi)):.2f}",
                      all=f"{5 * math.log(10 * math.sqrt(2 * math.pi)):.2f}")),
]

# ------------------------------------------------------------------- the test suites' timing (contributing, CI)

SUITES = f"{R}/suite_timing/rows.jsonl"


def _suite(name: str) -> Callable[[str], dict[str, str]]:
    """The last stored green run of a suite (no test failed), as docs/contributing.md and .ci/run write it; the
    suite-timing page lists every run, a red one too."""
    def reader(path: str) -> dict[str, str]:
        runs = [r for r in map(json.loads, filter(str.strip, read(path).splitlines()))
                if r["suite"] == name and not r.get("failed") and not r.get("errors")]
        last, whole = runs[-1], round(runs[-1]["seconds"])
        return {"tests": f"{last['tests']:,}", "passed": f"{last['passed']:,}", "skipped": f"{last['skipped']:,}",
                "time": f"{whole // 60} min {whole % 60} s", "commit": last["commit"]}
    return reader


FIGURES += [
    Figure("docs/contributing.md", r"(?P<tests>[\d,]+) tests \((?P<passed>[\d,]+) passed and (?P<skipped>[\d,]+) "
                                   r"skipped\) in (?P<time>\d+ min \d+ s) on two cores from a fresh clone with empty "
                                   r"caches at commit (?P<commit>\w+)", SUITES, _suite("default")),
    Figure("docs/contributing.md", r"tests/checks`: (?P<tests>[\d,]+) tests \((?P<passed>[\d,]+) passed, "
                                   r"(?P<skipped>[\d,]+) skipped\), (?P<time>\d+ min \d+ s) from a fresh clone at "
                                   r"commit (?P<commit>\w+)\)", SUITES, _suite("float32-core")),
    Figure("docs/contributing.md", r"The slow suite: (?P<tests>[\d,]+) tests \((?P<passed>[\d,]+) passed, "
                                   r"(?P<skipped>[\d,]+) skipped\) in (?P<time>\d+ min \d+ s) on two workers at commit "
                                   r"(?P<commit>\w+)\.", SUITES, _suite("slow")),
    Figure(".ci/run", r"\(the default suite: (?P<time>\d+ min \d+ s) from a fresh clone # with empty caches at the "
                      r"last measurement, docs/contributing\.md\)", SUITES, _suite("default")),
]

COPIES: list[Copy] = [Copy("docs/ppl.md", NHEFS), Copy("docs/ppl.md", SMALL)]

# Docs whose every measurement-like number must lie in a declared sentence, a copied table or a setting.
AUDITED = ("README.md", "docs/architecture.md", "docs/audit.md", "docs/bread_toys.md", "docs/calibrate.md",
           "docs/checks.md", "docs/cli.md", "docs/cluster.md", "docs/compare.md", "docs/contributing.md",
           "docs/evidence.md", "docs/ppl.md", "docs/real_data.md", "docs/tempered_smc.md")

# Numbers with units that are settings, defaults or tolerances (chosen, not measured), with the phrase that shows it.
SETTINGS: dict[str, list[str]] = {
    "README.md": [
        r"narrower than `--tolerance` \(0\.5 nat\)",  # bdmc evidence's default tolerance
        r"the single-run gap is below 0\.1 nat",  # the until_gap example's argument
        r"a warning above 10%",  # the divergence warning's threshold
        r"`--truth-tol` \(1 nat\)",  # bench's default
        r"25 batched trials, mean with a 95% interval",  # bench's settings
        r"a \"time to RMSE < 10 and < 1 nat\" summary",  # bench's thresholds
        r"reached RMSE < 1 nat warm|and < 0\.1 nat at|at < 1 nat|reached RMSE < 1 nat in|to < 0\.1 nat, on",
        r"under 10 nats|reaches 10 nats",  # the paper's 10-nat criterion
    ],
    "docs/audit.md": [
        r"`\"12 of 50 simulated data sets\"`",  # a progress message, as printed
        r"B-hat at the longest chain exceeds 10 nats",  # the BDMC check's threshold
    ],
    "docs/architecture.md": [
        r"widened 1\.5x",  # the reference's widening, a setting
    ],
    "docs/checks.md": [
        r"a wrong constant of 10 nats",  # an example size of bug
        r"runs 50 nats and 10 robust",  # the straggler rule's thresholds
        r"A - B = -10 nats",  # the example's constant: -0.5 per case over 20 cases
    ],
    "docs/compare.md": [
        r"about 16 nats too high",  # the dropped constants above, rounded
    ],
    "docs/evidence.md": [
        r"it sits about 1 nat below the truth",  # a worked example of the quantile rule
        r"a round shorter than 5 s does both",  # the escalation's rule
    ],
    "docs/real_data.md": [
        r"\(268 of 768\)",  # a count in the shipped data set
        r"\(at least 1 nat\)",  # the protocol's thresholds
    ],
}


# -------------------------------------------------------------------------------------------------- the check


def _n2(figure: Figure, found: dict[str, str]) -> dict[str, str]:
    """``n2`` repeats ``n`` (the same count, said twice)."""
    return {**found, "n2": found["n"]} if "n" in found else found


def figure_problems(texts: Mapping[str, str], figures=FIGURES) -> list[str]:
    """What disagrees: a declared sentence gone or repeated, a stored file unreadable, a quoted figure that differs."""
    problems = []
    for f in figures:
        try:
            quoted = one(f.sentence, collapse(texts[f.doc]), f.doc).groupdict()
            want = _n2(f, f.reader(f.source))
        except (LookupError, OSError) as error:
            problems.append(str(error))
            continue
        for name, value in quoted.items():
            if value != want.get(name):
                problems.append(f"{f.doc}: {name} = {value!r} where {f.source} has {want.get(name)!r} "
                                f"(sentence {f.sentence[:60]!r}...)")
    return problems


def copy_problems(texts: Mapping[str, str], copies=COPIES) -> list[str]:
    return [f"{c.doc} does not quote {c.source} as stored" for c in copies
            if read(c.source).strip() not in texts[c.doc]]


def uncovered(doc: str, text: str, figures=FIGURES, copies=COPIES, settings=SETTINGS) -> list[str]:
    """Measurement-like numbers of ``doc`` outside every declared sentence, copied table and setting."""
    prose = collapse(text)
    spans = [m.span() for f in figures if f.doc == doc for m in re.finditer(f.sentence, prose)]
    spans += [m.span() for phrase in settings.get(doc, []) for m in re.finditer(phrase, prose)]
    for c in copies:
        if c.doc == doc:
            quoted = collapse(read(c.source))
            spans += [(m.start(), m.end()) for m in re.finditer(re.escape(quoted), prose)]
    return [f"{doc}: {m.group()!r} in ...{prose[max(0, m.start() - 60):m.end() + 20]}..."
            for m in MEASURE.finditer(prose) if not any(a <= m.start() and m.end() <= b for a, b in spans)]


def docs_text() -> dict[str, str]:
    return {doc: read(doc) for doc in {f.doc for f in FIGURES} | {c.doc for c in COPIES} | set(AUDITED)}


def test_every_quoted_figure_is_the_stored_one():
    problems = figure_problems(docs_text())
    assert not problems, "figures that differ from their stored files:\n" + "\n".join(problems)


def test_quoted_tables_are_the_stored_ones():
    problems = copy_problems(docs_text())
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("doc", AUDITED)
def test_every_measurement_is_declared(doc):
    loose = uncovered(doc, read(doc))
    assert not loose, ("measured numbers with no stored source declared in tests/test_doc_figures.py (declare the "
                       "sentence in FIGURES, or the phrase in SETTINGS if it is a setting, or remove it):\n"
                       + "\n".join(loose))


def test_a_changed_figure_or_an_undeclared_one_fails():
    """Negative controls: one quoted figure changed, one stored table edited, one new unsourced timing."""
    texts = docs_text()
    assert figure_problems(texts) == [] and copy_problems(texts) == []
    changed = dict(texts, **{"docs/ppl.md": texts["docs/ppl.md"].replace("202.0 times through", "200 times through")})
    assert any("http = '200'" in p for p in figure_problems(changed))
    w1 = re.search(r"warm at (\d\.\d\d)x to", texts["README.md"]).group(1)
    moved = f"{float(w1) + 0.01:.2f}"
    readme = dict(texts, **{"README.md": texts["README.md"].replace(f"warm at {w1}x to", f"warm at {moved}x to")})
    assert [p.split(" where ")[0] for p in figure_problems(readme)] == [f"README.md: w1_lo = '{moved}'"]
    suite = re.search(r"the default suite: (\d+ min \d+ s)", texts[".ci/run"]).group(1)
    ci = dict(texts, **{".ci/run": texts[".ci/run"].replace(suite, "9 min 59 s")})
    assert [p.split(" where ")[0] for p in figure_problems(ci)] == [".ci/run: time = '9 min 59 s'"]
    gone = dict(texts, **{"README.md": texts["README.md"].replace("never fired", "did not fire")})
    assert len(figure_problems(gone)) == 1 and "0 matches" in figure_problems(gone)[0]
    table = dict(texts, **{"docs/ppl.md": texts["docs/ppl.md"].replace("| 0.061 |", "| 0.060 |")})
    assert copy_problems(table) == [f"docs/ppl.md does not quote {NHEFS} as stored"]
    added = texts["README.md"] + "\nThe first audit took 12 s on this machine, and failed 2 of 9 times.\n"
    assert uncovered("README.md", texts["README.md"]) == []
    assert [p.split(" in ")[0] for p in uncovered("README.md", added)] == ["README.md: '12 s'", "README.md: '2 of 9'"]
