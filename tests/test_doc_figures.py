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
    r"(?:x\b| ?(?:s|ms|us|min|seconds|minutes|nats?|%|GB|MB|times)\b)"
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

COPIES: list[Copy] = [Copy("docs/ppl.md", NHEFS), Copy("docs/ppl.md", SMALL)]

# Docs whose every measurement-like number must lie in a declared sentence, a copied table or a setting.
AUDITED = ("docs/ppl.md",)

# Numbers with units that are settings, defaults or tolerances (chosen, not measured), with the phrase that shows it.
SETTINGS: dict[str, list[str]] = {
    "docs/ppl.md": [],
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
    table = dict(texts, **{"docs/ppl.md": texts["docs/ppl.md"].replace("| 0.061 |", "| 0.060 |")})
    assert copy_problems(table) == [f"docs/ppl.md does not quote {NHEFS} as stored"]
    added = texts["docs/ppl.md"] + "\nThe first audit took 12 s on this machine, and failed 2 of 9 times.\n"
    assert [p.split(" in ")[0] for p in uncovered("docs/ppl.md", added)] == ["docs/ppl.md: '12 s'",
                                                                             "docs/ppl.md: '2 of 9'"]
