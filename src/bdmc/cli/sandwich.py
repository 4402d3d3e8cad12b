"""``bdmc sandwich``: bounds on log p(y) of simulated data at several chain lengths, resumable, with a verdict.

With ``--real-data`` the data are the user's observed arrays from ``--data``: only the forward (lower) bounds
run, since real data have no exact posterior sample for a reverse chain, and every output says so.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import jax
import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

import bdmc

from ..checks.sandwich import CERTIFY_B
from ..checks.sandwich_verdict import HOLDS, NOT_HELD, VIOLATED, WITHIN_NOISE
from ..contracts.pairs import DIRECTIONS, PAIRS, estimator_pair
from ..contracts.weight_health import STRAGGLER_NATS, STRAGGLER_SDS
from ..core.ais import SCHEDULES
from ..core.named_kernels import KERNELS
from ..errors import ParticlesError, UntrustedStderrWarning
from ..experiments import sandwich_runs
from ..experiments.sandwich_runs import FORWARD_ONLY
from ..plotting import plot_sandwich
from ._common import (
    PPL_OPTIONS,
    CLIError,
    at_least,
    command,
    console,
    count,
    fmt_options,
    model_option_option,
    num,
    out_option,
    output_dir,
    overwrite_option,
    parse_steps,
    positive_number,
    print_verdict,
    seconds,
    wrote,
)
from ._limits import check_memory, runs_count, size_option
from ._models import builtin_model, load_npz, load_ppl_model, model_settings, ppl_given, ppl_label

PNG_NAME = "sandwich.png"
MOST_STEPS = 10**8  # the longest --steps value: the engine counts steps in int32, and 10^8 already takes hours
STATE_STYLE = {HOLDS: "green", WITHIN_NOISE: "yellow", NOT_HELD: "yellow", VIOLATED: "bold red"}  # against the exact


@command
def sandwich_command(
    model: str | None = typer.Option(None, "--model", "-m", help="Built-in model name (see `bdmc models`)."),
    numpyro: str | None = PPL_OPTIONS["numpyro"],
    pymc: str | None = PPL_OPTIONS["pymc"],
    stan: str | None = PPL_OPTIONS["stan"],
    webppl: str | None = PPL_OPTIONS["webppl"],
    data: Path | None = typer.Option(None, "--data", metavar="FILE.npz",
                                        help="Arguments of the PPL program (covariates, sizes, Stan data); with "
                                             "--real-data also the observed arrays."),
    real_data: bool = typer.Option(
        False, "--real-data",
        help="Bound log p(y) of the observed arrays in --data (the --observed sites; a built-in model's one data "
             "array) instead of simulated data: forward (lower) bounds only, no upper bound and no bug alarm."),
    observed: str | None = typer.Option(None, "--observed", metavar="NAMES",
                                           help="The program's observed variable(s), comma-separated."),
    simulator: str | None = PPL_OPTIONS["simulator"],
    runs: int = typer.Option(16, "--runs", "-r", help="Independent runs per direction and chain length."),
    steps: str = typer.Option("10,100,1000", "--steps", "-s",
                              help="Comma-separated numbers of intermediate distributions T (each >= 2)."),
    seed: int = typer.Option(0, "--seed", help="Seed of jax.random.key; simulates the data and drives every run."),
    out: Path | None = out_option("out/sandwich-MODEL"),
    schedule: str = typer.Option("auto", "--schedule",
                                 help="Annealing schedule: auto (the pilot's where one runs, else sigmoidal), "
                                      "sigmoidal, linear or geometric."),
    kernel: str = typer.Option("auto", "--kernel",
                               help="Transition kernel of the runs: auto (the model's own Gibbs kernel, else HMC "
                                    "with a pilot's step sizes), gibbs, hmc, nuts, mala or rwm (bdmc's kernels, "
                                    "step sizes from a pilot on a simulated data set)."),
    method: str = typer.Option("ais", "--method",
                               help=" ".join(f"{p.name}: {p.summary}." for p in PAIRS.values())
                                    + " auto: ais for a model with its own kernel, else tempered-smc."),
    particles: int | None = typer.Option(
        None, "--particles", help="Particles per run (--method " + " or ".join(
            p.name for p in PAIRS.values() if p.particles is not None) + ").",
        show_default=", ".join(f"{p.particles} ({p.name})" for p in PAIRS.values() if p.particles is not None)),
    until_gap: float | None = typer.Option(
        None, "--until-gap", help="Double T from the one --steps value until the single-run gap is below TOL nats.",
        metavar="TOL"),
    max_steps: int | None = typer.Option(None, "--max-steps", show_default="100000",
                                            help="Largest T tried with --until-gap.", metavar="N"),
    option: list[str] | None = model_option_option(
        "Model constructor option KEY=VALUE (repeatable), e.g. --option n=50."),
    overwrite: bool = overwrite_option(),
    no_progress: bool = typer.Option(False, "--no-progress",
                                     help="Do not show progress bars (never shown when output is not a terminal)."),
) -> None:
    """Sandwich log p(y) of a simulated data set between stochastic lower and upper bounds.

    The model is a built-in one (--model) or a program in a PPL (--numpyro, --pymc, --stan, --webppl). Rows are appended
    to OUT/sandwich.csv as they finish; rerunning the same command resumes. With --real-data the user's observed
    data from --data are bounded from below only, with the Markov-certified lower bound.
    """
    # Every option is checked before any work.
    ppl = ppl_given(numpyro=numpyro, pymc=pymc, stan=stan, webppl=webppl)
    if (ppl is None) == (model is None):
        raise CLIError("give either --model NAME or one of --numpyro, --pymc, --stan, --webppl")
    if ppl is not None and option:
        raise CLIError("--option applies to built-in models; a PPL program takes its arguments from --data")
    if ppl is None and (observed or simulator):
        raise CLIError("--observed and --simulator apply to PPL programs (--numpyro, --pymc, --stan, --webppl), not "
                       "to --model")
    if ppl is None and data and not real_data:
        raise CLIError("--data with --model holds the model's observed data, used only with --real-data; a "
                       "built-in model takes its options from --option")
    if real_data and data is None:
        raise CLIError("--real-data reads the observed data from --data FILE.npz; give the file")
    if real_data and until_gap is not None:
        raise CLIError("--until-gap stops when the gap between the lower and the upper bound is small, but real "
                       "data have no upper bound (no exact posterior sample to start reverse chains from); list "
                       "the chain lengths in --steps instead")
    if method not in PAIRS and method != "auto":
        raise CLIError(f"--method: unknown method {method!r}; choose one of: {', '.join(PAIRS)}, auto")
    pair = estimator_pair("ais" if method == "auto" else method)  # every pair "auto" picks counts T from 2
    if particles is not None and method != "auto" and pair.particles is None:
        raise CLIError(f"--particles: method {pair.name} runs single chains; particles need --method "
                       + " or ".join(p.name for p in PAIRS.values() if p.particles is not None))
    step_list = parse_steps(steps, smallest=pair.smallest)
    at_least(runs, "--runs", 1, "16")
    at_least(seed, "--seed", 0, "0")
    at_least(particles, "--particles", 1, "8")
    if kernel != "auto" and kernel not in KERNELS:
        raise CLIError(f"--kernel: unknown kernel {kernel!r}; choose one of: auto, {', '.join(KERNELS)}")
    if schedule != "auto" and schedule not in SCHEDULES:
        raise CLIError(f"--schedule: unknown schedule {schedule!r}; choose one of: auto, "
                       f"{', '.join(sorted(SCHEDULES))}")
    positive_number(until_gap, "--until-gap", "nats", "0.5")
    if until_gap is not None and len(step_list) > 1:
        raise CLIError(f"--until-gap doubles T from one starting value, but --steps gives {len(step_list)}; "
                       f"give one, e.g. --steps {step_list[0]}")
    if max_steps is not None and until_gap is None:
        raise CLIError("--max-steps bounds the doubling of --until-gap; without --until-gap list the lengths in "
                       "--steps")
    if until_gap is not None and max_steps is not None and max_steps < step_list[0]:
        raise CLIError(f"--max-steps must be >= the --steps value {step_list[0]}, got {max_steps}")
    if until_gap is not None and max_steps is None and step_list[0] > 100_000:
        raise CLIError(f"--until-gap doubles T up to --max-steps, 100,000 by default, below the --steps value "
                       f"{step_list[0]}: pass --max-steps")
    if max(step_list) > MOST_STEPS:
        raise CLIError(f"--steps {max(step_list)} is above the {MOST_STEPS:,} steps one command runs (a chain that "
                       "long would take days, and steps are counted in 32 bits); give smaller values")
    max_steps = 100_000 if max_steps is None else max_steps

    # The table marks an untrusted ± with "?" and its summary names each such row: said once, there.
    warnings.filterwarnings("ignore", category=UntrustedStderrWarning)
    arrays = load_npz(data)  # read and checked (numbers, finite) before any work
    name = ppl_label(*ppl) if ppl is not None else model
    out = output_dir(out, f"sandwich-{name.replace(':', '-')}")
    if ppl is not None:
        model_obj, model_options = load_ppl_model(*ppl, data=data, observed=observed, simulator=simulator)
    else:
        model_obj, model_options = builtin_model(model, option or [])
    size = size_option(options=option, data=data if ppl is not None else None, model=model)

    def preflight(pair, particles):  # "auto" is resolved once, by the library, before any data
        check_memory(model_obj, counts=[runs_count(runs, particles=particles)], size=size)

    key = jax.random.key(seed)
    settings = {
        "command": "sandwich", "model": name, "options": model_settings(model_obj, model_options), "seed": seed,
        "runs": runs, "schedule": schedule,
        **({"kernel": kernel} if kernel != "auto" else {}),  # absent when auto: earlier runs' folders resume
        "x64": bool(jax.config.jax_enable_x64), "until_gap": until_gap,
        "max_steps": max_steps if until_gap is not None else None, "bdmc_version": bdmc.__version__,
        "data_file": str(data) if real_data else None,
    }
    hint = (" (the program's arguments in the same file set its size)" if ppl is not None else
            " (set the model's size with --option, e.g. --option n=...)")
    stdout = console()
    if not real_data and ppl is not None and data is not None:
        ignored = sorted(set(arrays) & set(model_obj.observed))
        if ignored:
            stdout.print(f"[yellow]note:[/] --data holds the observed {', '.join(ignored)}, not used: the sandwich "
                         "runs on simulated data (add --real-data to bound log p(y) of the observed data)",
                         soft_wrap=True)
    try:
        prepared = sandwich_runs.prepare_sandwich(
            key, model_obj, out=out, settings=settings, method=method, num_particles=particles, kernel=kernel,
            observed=arrays if real_data else None, source=f"--data {data}", hint=hint, preflight=preflight,
            overwrite=overwrite, discard=(PNG_NAME,))
    except ParticlesError as err:  # --method auto picked a pair of single chains
        raise CLIError(f"--particles: {str(err).removeprefix('num_particles: ')}") from None
    store, pair = prepared.store, prepared.plan.pair
    printer = RowPrinter(stdout, exact_known=prepared.plan.exact is not None, method=pair.name, real_data=real_data)
    options = fmt_options(store.settings['options'])
    stdout.print(f"[bold]bdmc sandwich[/]  model [cyan]{escape(name)}[/] {escape(options)}",
                 soft_wrap=True)
    if real_data:
        stdout.print(f"data: [bold]real[/], {escape(', '.join(prepared.data_record['arrays']))} from "
                     f"{escape(str(data))}", soft_wrap=True)
    lengths = (f"until single-run gap < {until_gap:g} nats ({pair.symbol} = {step_list[0]}, doubling, <= {max_steps})"
               if until_gap is not None else f"{pair.symbol} = {', '.join(map(str, step_list))}")
    # "auto" says what it chose, here and in settings.json.
    chosen = pair.name if method != "auto" else (
        f"auto: {pair.name} ({'the model has a kernel of its own' if pair.name == 'ais' else 'no kernel of its own'})")
    stdout.print(f"method {chosen} · runs {runs} · seed {seed} · kernel {kernel} · schedule {schedule} · {lengths}",
                 soft_wrap=True)
    if store.resumed:
        stdout.print(f"[dim]resuming from {escape(str(store.csv))}: {store.resumed} row(s) already done[/]",
                     soft_wrap=True)
    printer.header()
    for row in sorted(store.rows, key=_row_order):
        printer.row(row, resumed=True)

    run = sandwich_runs.run_sandwich(
        key, model_obj, prepared.plan, store=store, steps=step_list, num_runs=runs, schedule=schedule,
        until_gap=until_gap, max_steps=max_steps, on_row=printer.row, progress=not no_progress and stdout.is_terminal,
        real_data=real_data)

    title = (f"{name}: {FORWARD_ONLY} (no upper bound), {runs} runs, seed {seed}" if real_data else
             f"{name}: BDMC sandwich, {runs} runs per direction, seed {seed}")
    plot_sandwich(run.table, title=title).savefig(out / PNG_NAME, dpi=150)
    printer.summary(run.result, until_gap=until_gap)
    wrote(stdout, store.csv, store.json, out / PNG_NAME, note=f" ({len(run.table)} rows, {run.new} new)")


def _row_order(row: dict):
    return (int(row["num_steps"]), DIRECTIONS.index(row["direction"]) if row["direction"] in DIRECTIONS else 2)


def _marked(state: str, text: str) -> str:
    """The verdict's words in the colour of its state."""
    style = STATE_STYLE[state]
    return f"[{style}]{text}[/]"


class RowPrinter:
    """Prints rows of the sandwich table one at a time, as one continuous rich table (fits 80 columns).

    Parameters
    ----------
    out : rich.console.Console
    exact_known : bool
        Whether the model has an exact log p(y) for the data (adds the ``− exact`` column).
    method : str
        The sandwich method (a pair of :data:`bdmc.contracts.pairs.PAIRS`): names the knob in the header and
        the messages (T, moves per data case, temperatures).
    knob : str, optional
        The knob's symbol in the header; the method's by default.
    real_data : bool
        Forward bounds only (no gap; the certified lower bound instead).
    """

    def __init__(self, out, *, exact_known: bool, method: str = "ais", knob: str | None = None,
                 real_data: bool = False):
        self.console, self.exact_known, self.real_data = out, exact_known, real_data
        self.pair = estimator_pair(method)
        self.knob = self.pair.symbol if knob is None else knob
        self.columns = [(self.knob, 5, "right"), ("direction", 9, "left"), ("value ± stderr", 16, "right")]
        if exact_known:
            self.columns.append(("− exact", 7, "right"))
        # Real data have no gap; their column is the Markov-certified lower bound instead.
        self.columns += [("mean\nsingle", 8, "right"),
                         (f"certified\nb={CERTIFY_B:g}", 9, "right") if real_data else ("gap\nsingle", 7, "right"),
                         ("diver-\nged", 6, "right"), ("seconds", 7, "right"), ("lik.\nevals", 6, "right")]
        self.untrusted = []  # rows whose ± the weights do not support, explained under the table
        self.stragglers = []  # rows with runs far below the others (stuck chains), named under the table
        self.width = sum(w for _, w, _ in self.columns) + len(self.columns) - 1

    def _print(self, show_header: bool, cells=None, style=None) -> None:
        # One table per row with fixed minimum widths, so rows line up with the header printed earlier.
        table = Table(box=None, show_header=show_header, pad_edge=False, padding=(0, 0, 0, 1),
                      header_style="bold", collapse_padding=False)
        for name, width, justify in self.columns:
            table.add_column(name, min_width=width, justify=justify, no_wrap=True, vertical="bottom")
        if cells is not None:
            table.add_row(*cells, style=style)
        self.console.print(table, width=max(self.console.width, self.width))

    def header(self) -> None:
        if self.real_data:
            self.console.print(f"[bold yellow]{FORWARD_ONLY}[/] (no exact posterior sample: no upper bound, no gap, "
                               "no bug alarm)", soft_wrap=True)
        self._print(show_header=True)
        self.console.print("─" * self.width, style="dim", width=max(self.console.width, self.width))

    def row(self, row: dict, *, resumed: bool = False) -> None:
        color = "blue" if row["direction"] == "forward" else "red"
        value, stderr = float(row["value"]), float(row["stderr"])
        trusted = row.get("stderr_trusted", True)
        trusted = True if trusted is None or (isinstance(trusted, float) and math.isnan(trusted)) else bool(trusted)
        mark = "" if trusted else "[bold yellow]?[/]"
        cells = [str(int(row["num_steps"])), f"[{color}]{row['direction']}[/]",
                 f"{num(value, '.3f' if abs(value) < 1000 else '.2f')} ± "
                 f"{num(stderr, '.3f' if not stderr >= 10 else '.2f')}{mark}"]
        if not trusted:
            self.untrusted.append((int(row["num_steps"]), row["direction"], row.get("weight_ess"), row.get("khat")))
        if row.get("stragglers", 0) and not resumed:
            self.stragglers.append((int(row["num_steps"]), row["direction"], int(row["stragglers"]),
                                    int(row["num_runs"])))
        if self.exact_known:
            cells.append(num(value - float(row["exact"]), "+.3f"))
        last = row["certified_b3"] if self.real_data else row["gap_single"]
        rate = row.get("divergence_rate", float("nan"))
        diverged = "-" if rate is None or not np.isfinite(rate) else f"{100 * rate:.1f}%"
        cells += [num(row["mean_single"], ".3f"), num(last, ".3f"), diverged, seconds(row["seconds"]),
                  count(row["n_evals"])]
        self._print(show_header=False, cells=cells, style="dim" if resumed else None)

    def summary(self, result, *, until_gap) -> None:
        """Final gap, whether ``--until-gap`` was reached, the bug alarm and the sandwich around an exact value."""

        def say(text):
            self.console.print(text, soft_wrap=True)

        say("")
        self.weight_health()
        self.straggling()
        if result.exact is not None:
            say(f"exact log p(y) = [bold]{result.exact:.4f}[/]")
        bounded = self.forward_only(result) if self.real_data else self.gap(result, until_gap=until_gap)
        check = result.against_exact
        if not bounded or (check is None and self.real_data):
            return
        if check is None:
            say("[dim]no exact value for this model; the gap bounds the error of either estimate[/]")
            return
        for text in check.lines(mark=_marked):
            say(text)

    def gap(self, result, *, until_gap) -> bool:
        """The final gap, whether ``--until-gap`` was reached and the bug alarm; False when no knob value has both
        bounds yet."""

        def say(text):
            self.console.print(text, soft_wrap=True)

        table = result.table
        pairs = table[table["direction"] == "forward"].dropna(subset=["gap"])
        if pairs.empty:
            say(f"[yellow]no {self.pair.nouns[0]} has both bounds yet; no gap to report[/]")
            return False
        last = pairs.iloc[-1]
        T, lower, gap = int(last["num_steps"]), float(last["value"]), float(last["gap"])
        line = (f"final gap at {self.knob}={T}: [bold]{gap:.4f}[/] nats (combined bounds {lower:.4f} .. "
                f"{lower + gap:.4f}{'; crossed' if gap < 0 else ''})")
        say(line + (f", single-run gap {float(last['gap_single']):.4f}" if np.isfinite(last["gap_single"]) else ""))
        if until_gap is not None:
            reached = float(last["gap_single"]) < until_gap
            say(f"until-gap {until_gap:g}: "
                + ("[green]reached[/]" if reached else "[yellow]not reached by --max-steps[/]"))
        if result.verdict is not None:
            self.alarm(result.verdict)
        return True

    def weight_health(self) -> None:
        """Explain the rows marked ``?``: a few runs carry their weight, so their ± is not an error bar."""
        if not self.untrusted:
            return
        shown = ", ".join(f"{self.knob}={T} {d} (ESS {num(ess, '.1f')}, k-hat {num(k, '.2f')})"
                          for T, d, ess, k in self.untrusted[:4])
        more = f" and {len(self.untrusted) - 4} more" if len(self.untrusted) > 4 else ""
        remedy = self.pair.remedy
        self.console.print(
            f"[bold yellow]?[/] the ± is not to be trusted where marked: a few runs carry the weight (effective "
            f"sample size below max(4, runs / 8), or Pareto k-hat above 0.7): {shown}{more}. {remedy} give "
            "weights that support it.", soft_wrap=True)

    def straggling(self) -> None:
        """Name the rows with runs far below the others: chains that never reached the posterior's mass."""
        if not self.stragglers:
            return
        shown = ", ".join(f"{self.knob}={T} {d} ({k} of {n} runs)" for T, d, k, n in self.stragglers[:4])
        more = f" and {len(self.stragglers) - 4} more" if len(self.stragglers) > 4 else ""
        self.console.print(
            f"[bold yellow]![/] runs far below the others ({STRAGGLER_NATS:g} nats and {STRAGGLER_SDS:g} robust "
            f"standard deviations below the median run): {shown}{more}. Their chains never reached the posterior's "
            "mass (stuck, or trapped in a minor mode); the combined bound hides them, so it may be optimistic "
            "about how well the sampler mixes.", soft_wrap=True)

    def forward_only(self, result) -> bool:
        """The lower bound on real data at the longest chain length and its certified form; False when there is no
        row."""

        def say(text):
            self.console.print(text, soft_wrap=True)

        say(f"[bold yellow]{FORWARD_ONLY}[/]: no exact posterior sample exists for observed data, so there is no "
            "upper bound, no gap and no bug alarm; check the sampler on simulated data (bdmc sandwich without "
            "--real-data, or bdmc audit)")
        table = result.table
        if table.empty:
            return False
        last = table.loc[table["num_steps"].idxmax()]
        T, value, stderr = int(last["num_steps"]), float(last["value"]), float(last["stderr"])
        certified = float(last["certified_b3"])
        say(f"lower bound at {self.knob}={T}: [bold]{value:.4f}[/] ± {num(stderr, '.4f')} nats")
        # Markov: P(value > log p(y) + b) <= e^-b for an unbiased estimate of p(y) (BDMC paper Eq. 25).
        say(f"certified: log p(y) >= [bold]{certified:.4f}[/] with probability >= {1 - math.exp(-CERTIFY_B):.3f} "
            f"(value - b, b = {CERTIFY_B:g} nats, Markov's inequality)")
        return True

    def alarm(self, verdict) -> None:
        """The run-level bug alarm over every lower and upper bound, prominently when it fires."""
        print_verdict(self.console, verdict)
