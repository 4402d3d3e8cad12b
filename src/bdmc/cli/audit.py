"""``bdmc audit``: every check of the project on one model and sampler, written as an HTML report."""

from __future__ import annotations

import dataclasses
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

from ..errors import UntrustedStderrWarning
from ..ppl.registry import PPLS
from ._common import (
    PPL_OPTIONS,
    CLIError,
    at_least,
    command,
    command_line,
    console,
    model_option_option,
    out_option,
    output_dir,
    parse_steps,
    wrote,
)
from ._limits import Count, check_memory, runs_count, size_option
from ._models import builtin_model, load_npz, load_ppl_model, ppl_given, ppl_label, program_flags

STYLE = {"pass": "green", "fail": "bold red", "error": "bold red", "incomplete": "yellow", "inconclusive": "yellow",
         "informative": "cyan", "not run": "dim"}


@command
def audit_command(
    ctx: typer.Context,
    model: str | None = typer.Option(None, "--model", "-m", help="Built-in model name (see `bdmc models`)."),
    numpyro: str | None = PPL_OPTIONS["numpyro"],
    pymc: str | None = PPL_OPTIONS["pymc"],
    stan: str | None = PPL_OPTIONS["stan"],
    webppl: str | None = PPL_OPTIONS["webppl"],
    simulator: str | None = PPL_OPTIONS["simulator"],
    data: Path | None = typer.Option(
        None, "--data", metavar="FILE.npz",
        help="The program's arguments (covariates, sizes); with --real-data also the observed arrays (the "
             "--observed names); for a built-in model with --real-data, one array: its observed data."),
    real_data: bool = typer.Option(
        False, "--real-data",
        help="Audit the observed arrays in --data as the user's real data (the evidence of these data, and "
             "BREAD's real-data protocol with --hyperparameters). Without it every check runs on simulated data "
             "and observed arrays in --data are not used."),
    observed: str | None = typer.Option(None, "--observed", metavar="NAMES",
                                           help="The program's observed variable(s), comma-separated."),
    sampler: str = typer.Option("auto", "--sampler",
                                help="auto (a program's own PPL's NUTS; else Gibbs, bdmc's HMC for WebPPL, or bdmc's "
                                     "NUTS), gibbs, nuts, "
                                     "hmc, mala, rwm (bdmc kernels on the model's density), numpyro-nuts, "
                                     "pymc-nuts (pymc.sample) or stan-nuts (Stan's NUTS through pystan)."),
    hyperparameters: str | None = typer.Option(
        None, "--hyperparameters", metavar="NAMES",
        help="Sites fitted on the real data for BREAD's real-data protocol, comma-separated (needs --data)."),
    quick: bool = typer.Option(False, "--quick",
                               help="Small budgets: a first look (eight schools on 2 cores, import and compilation "
                                    "included: about 1 minute under NumPyro, PyMC or Stan; about 2 minutes under "
                                    "WebPPL, whose every density runs the program in node)."),
    level: float = typer.Option(0.01, "--level", help="False-alarm level of the whole audit (Bonferroni over checks)."),
    exchangeable: str = typer.Option(
        "auto", "--exchangeable", metavar="SITES",
        help="A mixture's exchangeable components: the sites whose leading axis indexes them, comma-separated "
             "(mu,w), checked by permuting them; SBC then tests label-invariant quantities. auto: found by "
             "permuting groups of sites; none: no symmetry."),
    replications: int | None = typer.Option(None, "--sbc-replications", help="SBC: simulated data sets."),
    draws: int | None = typer.Option(None, "--sbc-draws", help="SBC: posterior draws per data set."),
    warmup: int | None = typer.Option(None, "--warmup", help="Sampler warm-up transitions per data set."),
    thin: int | None = typer.Option(None, "--thin", help="Sampler transitions between kept draws."),
    geweke_samples: int | None = typer.Option(None, "--geweke-samples", help="Geweke: chains per simulation."),
    steps: str | None = typer.Option(None, "--steps", "-s", help="BDMC: comma-separated chain lengths T."),
    runs: int | None = typer.Option(None, "--runs", "-r",
                                       help="BDMC and evidence: independent runs per direction and length."),
    evidence_steps: int | None = typer.Option(None, "--evidence-steps", help="Evidence: forward AIS length T."),
    seed: int = typer.Option(0, "--seed", help="Seed of jax.random.key; drives every check."),
    option: list[str] | None = model_option_option(),
    out: Path | None = out_option("out/audit-MODEL"),
) -> None:
    """Audit a model and its sampler: simulator vs density, SBC, Geweke, BDMC and the evidence, as a report.

    Writes OUT/report.html (self-contained), OUT/results.json and OUT/results.csv, and prints a verdict table.
    """
    import jax

    from ..auditing import Budget, audit
    from ..auditing.report import write_report

    program = ppl_given(numpyro=numpyro, pymc=pymc, stan=stan, webppl=webppl)
    language = PPLS[program[0]] if program is not None else None
    if (program is None) == (model is None):
        raise CLIError(f"give either --model NAME or one program: {program_flags()}")
    if program is None and observed:
        raise CLIError(f"--observed applies to a PPL program ({', '.join('--' + f for f in PPLS)}), not to --model")
    if program is not None and option:
        raise CLIError("--option applies to built-in models; a program takes its arguments from --data")
    if simulator and (language is None or language.simulator == "none"):
        takes = [p for p in PPLS.values() if p.simulator != "none"]
        raise CLIError(f"--simulator applies to a {' or '.join(p.name for p in takes)} program "
                       f"({', '.join('--' + p.flag for p in takes)}) only")
    if real_data and data is None:
        raise CLIError("--real-data reads the observed data from --data FILE.npz; give the file")
    if hyperparameters and not real_data:
        raise CLIError("--hyperparameters names sites to fit on real data: give the data with --data and "
                       "--real-data")
    if program is None and data is not None and not real_data:
        raise CLIError("--data with --model holds the model's observed data, used only with --real-data; a "
                       "built-in model takes its options from --option")
    if not 0 < level < 1:
        raise CLIError(f"--level must lie in (0, 1), got {level}; e.g. --level 0.01")
    for value, name in ((replications, "--sbc-replications"), (draws, "--sbc-draws"), (thin, "--thin"),
                        (geweke_samples, "--geweke-samples"), (runs, "--runs"),
                        (evidence_steps, "--evidence-steps")):
        at_least(value, name, 2 if name in ("--sbc-replications", "--evidence-steps", "--runs") else 1, "100")
    at_least(warmup, "--warmup", 0, "500")
    at_least(seed, "--seed", 0, "0")
    budget = Budget.quick() if quick else Budget.default()
    overrides = {"sbc_replications": replications, "sbc_draws": draws, "sbc_warmup": warmup, "sbc_thin": thin,
                 "geweke_samples": geweke_samples, "sandwich_runs": runs, "evidence_runs": runs,
                 "evidence_steps": evidence_steps,
                 "sandwich_steps": tuple(parse_steps(steps)) if steps else None}
    budget = dataclasses.replace(budget, **{k: v for k, v in overrides.items() if v is not None})

    # The checks judge their estimates by their own statistics (the BDMC check's p-bound is Markov's, needing no
    # stderr; the evidence check states its own interval): a run's untrusted ± is not the user's news here.
    warnings.filterwarnings("ignore", category=UntrustedStderrWarning)
    name = ppl_label(*program) if program is not None else model
    out = output_dir(out, f"audit-{name.replace(':', '-')}")
    stdout = console()
    if program is not None:
        model_obj, _ = load_ppl_model(*program, data=data, observed=observed, simulator=simulator)
        arrays = load_npz(data)
        names = list(model_obj.observed)
        given = [n for n in names if n in arrays]
        if real_data and len(given) != len(names):
            raise CLIError(f"--real-data: {data} lacks the observed array(s) "
                           f"{sorted(set(names) - set(given))}; give every --observed name")
        if given and not real_data:
            stdout.print(f"[yellow]note:[/] --data holds the observed {', '.join(given)}, used only for its shape: "
                         "the audit runs on simulated data (add --real-data to audit these data)", soft_wrap=True)
        real = {n: arrays[n] for n in names} if real_data else None
    else:
        model_obj, _ = builtin_model(model, option or [])
        real = _builtin_data(data) if real_data else None
    hyper = [h.strip() for h in hyperparameters.split(",") if h.strip()] if hyperparameters else None
    check_memory(model_obj, size=size_option(options=option, data=data if program else None, model=model), counts=[
        runs_count(max(budget.sandwich_runs, budget.evidence_runs)),
        Count(f"--sbc-replications {budget.sbc_replications}", budget.sbc_replications, "use fewer replications",
              data_sets=True),
        Count(f"--geweke-samples {budget.geweke_samples}", budget.geweke_samples, "use fewer samples",
              data_sets=True)])
    budget_name = ("quick" if quick else "default") + _changed(overrides)
    provenance = _provenance(ctx, program, simulator=simulator, observed=observed, data=data, real=real_data,
                             budget=budget_name, seed=seed)

    stdout.print(f"[bold]bdmc audit[/]  model [cyan]{escape(name)}[/] · sampler {escape(sampler)} · "
                 f"{'real data from ' + escape(str(data)) if real is not None else 'simulated data'} · "
                 f"{escape(budget_name)} budget · level {level:g} · seed {seed}", soft_wrap=True)
    if language is not None and language.audit_note:
        stdout.print(f"[dim]{escape(language.audit_note)}[/]", soft_wrap=True)
    live = LiveStatus(stdout)

    def finished(outcome) -> None:
        live.print(f"  [{STYLE[outcome.verdict]}]{outcome.verdict:>12}[/]  {escape(outcome.title)}")

    with live:
        result = audit(jax.random.key(seed), model_obj, sampler=sampler, data=real, budget=budget, level=level,
                       hyperparameters=hyper, name=name, on_stage=live.stage, on_progress=live.count,
                       on_outcome=finished, report_dir=out, provenance=provenance,
                       exchangeable=_exchangeable_option(exchangeable))
    paths = write_report(result, out)
    print_summary(stdout, result)
    wrote(stdout, *paths.values())


def _exchangeable_option(text: str):
    """``--exchangeable``: "auto", "none" or comma-separated site names."""
    word = text.strip().lower()
    if word in ("auto", "none"):
        return None if word == "none" else "auto"
    sites = [s.strip() for s in text.split(",") if s.strip()]
    if not sites:
        raise CLIError(f"--exchangeable takes auto, none or comma-separated site names (mu,w), got {text!r}")
    return sites


class LiveStatus:
    """The audit's progress: in a terminal a spinner line with the stage, its count and the elapsed seconds,
    redrawn every second; otherwise one line per stage."""

    def __init__(self, out):
        self.out, self.began, self.text, self.counted = out, time.perf_counter(), "starting", ""
        self.status = out.status("starting", spinner="dots") if out.is_terminal else None
        self.stop = threading.Event()
        self.ticker = threading.Thread(target=self._tick, daemon=True)

    def __enter__(self):
        if self.status is not None:
            self.status.start()
            self.ticker.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        if self.status is not None:
            self.status.stop()
        return False

    def stage(self, text: str) -> None:
        self.text, self.counted = text, ""
        if self.status is None:
            self.out.print(f"[dim]{time.perf_counter() - self.began:6.1f} s[/]  {escape(text)} ...", soft_wrap=True)
        self._draw()

    def count(self, text: str) -> None:
        self.counted = text
        self._draw()

    def print(self, text: str) -> None:
        self.out.print(text, soft_wrap=True)

    def _draw(self) -> None:
        if self.status is not None:
            counted = f": {escape(self.counted)}" if self.counted else ""
            self.status.update(f"{escape(self.text)}{counted} [dim]({time.perf_counter() - self.began:.0f} s)[/]")

    def _tick(self) -> None:
        while not self.stop.wait(1.0):
            self._draw()


def _changed(overrides: dict) -> str:
    """The budget options the user set, as a suffix of the budget's name (``" with --runs 4"``)."""
    flags = {"sbc_replications": "--sbc-replications", "sbc_draws": "--sbc-draws", "sbc_warmup": "--warmup",
             "sbc_thin": "--thin", "geweke_samples": "--geweke-samples", "sandwich_runs": "--runs",
             "evidence_steps": "--evidence-steps", "sandwich_steps": "--steps"}
    given = [f"{flags[k]} {','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in overrides.items()
             if v is not None and k in flags]
    return f" with {' '.join(given)}" if given else ""


def _provenance(ctx, program, *, simulator, observed, data, real: bool, budget: str, seed: int) -> dict:
    """What the report says was run: the command line, the files (absolute paths), function and data."""
    out = {"command": command_line(ctx), "budget": budget, "seed": seed,
           "data_file": (f"{Path(data).resolve()} ({'real data: the --observed arrays' if real else 'arguments'})"
                         if data is not None else None)}
    if program is not None:
        flag, spec = program
        path, _, function = spec.rpartition(":") if flag in ("numpyro", "pymc") else (spec, "", "")
        out.update(program=f"{Path(path).resolve()} (--{flag})", function=function or None,
                   observed=[n.strip() for n in (observed or "").split(",") if n.strip()],
                   simulator=str(Path(simulator.rpartition(":")[0]).resolve()) + ":" + simulator.rpartition(":")[2]
                   if simulator else None)
    return out


def print_summary(out, result) -> None:
    """The verdict table: one row per check, its verdict, level and statistic, then the audit's verdict."""
    table = Table(title=f"audit of {result.model} with {result.sampler}", show_lines=False, expand=False)
    table.add_column("check", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("level", justify="right", no_wrap=True)
    table.add_column("statistic / summary")
    for c in result.checks:
        level = "-" if c.level is None else f"{c.level:.2g}"
        text = c.summary if c.verdict in ("not run", "error") else c.statistic
        table.add_row(c.name, f"[{STYLE[c.verdict]}]{c.verdict}[/]", level, escape(text))
    out.print(table)
    out.print(f"audit verdict: [{STYLE[result.verdict]}]{result.verdict}[/] "
              f"({escape(str(result.settings.get('overall_level', '')))}; {result.seconds:.0f} s)", soft_wrap=True)
    if result.caveat:
        out.print(f"[yellow]{escape(result.caveat)}[/]", soft_wrap=True)


def _builtin_data(path: Path | None):
    if path is None:
        return None
    arrays = load_npz(path)
    if len(arrays) != 1:
        raise CLIError(f"--data: a built-in model's data file must hold one array, got {sorted(arrays)}")
    return np.asarray(next(iter(arrays.values())))
