"""The ``bdmc`` command line: ``bdmc sandwich`` (resumable, row-by-row CSV and a plot) and ``bdmc models``."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import typing
from pathlib import Path
from typing import Any, Optional

import jax
import pandas as pd
import typer
from rich.console import Console
from rich.markup import escape as _escape
from rich.table import Table

import bdmc
import bdmc.models

from ._errors import BDMCError
from .cli_bench import bench_command
from .cli_bread import bread_command
from .cli_bread_real import bread_real_command
from .checks.alarm import alarm_from_table, crossing_p_bound
from .core.ais import SCHEDULES
from .checks.sandwich import COLUMNS, exact_log_marginal_or_none, mark_alarms
from .plotting import plot_sandwich

app = typer.Typer(
    name="bdmc",
    help="Bidirectional Monte Carlo: sandwich log marginal likelihoods between forward and reverse AIS.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

CSV_NAME, SETTINGS_NAME, PNG_NAME = "sandwich.csv", "settings.json", "sandwich.png"
# Settings that determine the values in a row; a resumed run must agree on all of them.
ROW_DETERMINING = ("model", "options", "seed", "chains", "schedule", "method", "particles", "x64")
DIRECTIONS = ("forward", "reverse")
NOISE_STDERRS = 2.0  # a bound beyond the exact value by at most this many stderr is reported as noise


class _Refusal(Exception):
    """A condition that ends the command with one red line and exit code 1."""


# --------------------------------------------------------------------------------------------- commands


@app.command()
def sandwich(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Built-in model name (see `bdmc models`)."),
    numpyro: Optional[str] = typer.Option(None, "--numpyro", metavar="PATH.py:FN",
                                          help="A NumPyro model function instead of a built-in model."),
    pymc: Optional[str] = typer.Option(None, "--pymc", metavar="PATH.py:NAME",
                                       help="A PyMC model, or a function of the --data arrays returning one."),
    stan: Optional[str] = typer.Option(None, "--stan", metavar="PATH.stan",
                                       help="A Stan program whose likelihood is multiplied by data bdmc_lambda."),
    data: Optional[Path] = typer.Option(None, "--data", metavar="FILE.npz",
                                        help="Arguments of the PPL program (covariates, sizes, Stan data)."),
    observed: Optional[str] = typer.Option(None, "--observed", metavar="NAMES",
                                           help="The program's observed variable(s), comma-separated."),
    simulator: Optional[str] = typer.Option(None, "--simulator", metavar="PATH.py:FN",
                                            help="Python simulator of a Stan program: fn(rng) -> (params, data)."),
    chains: int = typer.Option(16, "--chains", "-c", help="Chains per direction and chain length."),
    steps: str = typer.Option("10,100,1000", "--steps", "-s",
                              help="Comma-separated numbers of intermediate distributions T (each >= 2)."),
    seed: int = typer.Option(0, "--seed", help="Seed of jax.random.key; simulates the data and drives every run."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory.",
                                       show_default="out/sandwich-MODEL"),
    schedule: str = typer.Option("sigmoidal", "--schedule", help="Annealing schedule name."),
    method: str = typer.Option("ais", "--method",
                               help="ais: forward/reverse AIS, --steps = T. smc: SMC/SHME, --steps = moves per case."),
    particles: int = typer.Option(1, "--particles", help="Particles per SMC/SHME run (--method smc)."),
    until_gap: Optional[float] = typer.Option(
        None, "--until-gap", help="Double T from the first --steps value until the single-run gap is below TOL nats.",
        metavar="TOL"),
    max_steps: int = typer.Option(100_000, "--max-steps", help="Largest T tried with --until-gap.", metavar="N"),
    option: Optional[list[str]] = typer.Option(
        None, "--option", help="Model constructor option KEY=VALUE (repeatable), e.g. --option n=50.",
        metavar="KEY=VALUE"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard results in --out made with other settings."),
    no_progress: bool = typer.Option(False, "--no-progress",
                                     help="Do not show progress bars (never shown when output is not a terminal)."),
) -> None:
    """Sandwich log p(y) of a simulated data set between stochastic lower and upper bounds.

    The model is a built-in one (--model) or a program in a PPL (--numpyro, --pymc, --stan). Rows are appended
    to OUT/sandwich.csv as they finish; rerunning the same command resumes.
    """
    console, errors = _console(), Console(stderr=True, highlight=False)
    try:
        from .cli_ppl import load_ppl_model

        ppl_model = load_ppl_model(numpyro=numpyro, pymc=pymc, stan=stan, data=data, observed=observed,
                                   simulator=simulator)
        if (ppl_model is None) == (model is None):
            raise typer.BadParameter("give either --model NAME or one of --numpyro, --pymc, --stan")
        _run_sandwich(console, model=model, ppl_model=ppl_model, chains=chains, steps=steps, seed=seed, out=out, schedule=schedule,
                      method=method, particles=particles,
                      until_gap=until_gap, max_steps=max_steps, options=option or [], overwrite=overwrite,
                      progress=not no_progress and console.is_terminal)
    except _Refusal as err:
        errors.print(f"[bold red]error:[/] {_escape(str(err))}", soft_wrap=True)
        raise typer.Exit(1) from None
    except BDMCError as err:  # library errors name the culprit: one line, no traceback
        errors.print(f"[bold red]error:[/] {type(err).__name__}: {_escape(str(err))}", soft_wrap=True)
        raise typer.Exit(1) from None


@app.command()
def models() -> None:
    """List the built-in models with their default options."""
    table = Table(title="bdmc built-in models", title_justify="left", show_lines=True)
    table.add_column("name", style="bold cyan", no_wrap=True)
    table.add_column("description")
    table.add_column("default options (--option KEY=VALUE)", style="green")
    for name, cls in bdmc.models.REGISTRY.items():
        doc = (cls.__doc__ or "").replace("``", "").strip().splitlines()
        fields = ", ".join(f"{f.name}={_default(f)!r}" for f in _init_fields(cls))
        table.add_row(name, _escape(doc[0] if doc else ""), fields or "-")
    _console().print(table)


app.command(name="bread")(bread_command)
app.command(name="bread-real")(bread_real_command)
app.command(name="bench")(bench_command)


def main() -> None:
    """Console entry point of ``bdmc``."""
    app()


# --------------------------------------------------------------------------------------------- sandwich


def _run_sandwich(console, *, model, ppl_model, chains, steps, seed, out, schedule, method, particles, until_gap,
                  max_steps, options, overwrite, progress) -> None:
    # Validate everything before any work.
    if ppl_model is not None:
        if options:
            raise typer.BadParameter("--option applies to built-in models; a PPL program takes --data",
                                     param_hint="'--option'")
        model, model_obj, model_options = ppl_model
    else:
        model_obj, model_options = _builtin_model(model, options)
    step_list = _parse_steps(steps, smallest=1 if method == "smc" else 2)
    if chains < 1:
        raise typer.BadParameter(f"must be >= 1, got {chains}", param_hint="'--chains'")
    if seed < 0:
        raise typer.BadParameter(f"must be >= 0, got {seed}", param_hint="'--seed'")
    if schedule not in SCHEDULES:
        raise typer.BadParameter(f"unknown schedule {schedule!r}; choose one of: {', '.join(sorted(SCHEDULES))}",
                                 param_hint="'--schedule'")
    if method not in ("ais", "smc"):
        raise typer.BadParameter(f"unknown method {method!r}; choose ais or smc", param_hint="'--method'")
    if particles < 1:
        raise typer.BadParameter(f"must be >= 1, got {particles}", param_hint="'--particles'")
    if until_gap is not None and not (until_gap > 0 and math.isfinite(until_gap)):
        raise typer.BadParameter(f"must be a positive number of nats, got {until_gap}", param_hint="'--until-gap'")
    if max_steps < step_list[0]:
        raise typer.BadParameter(f"must be >= the first --steps value {step_list[0]}, got {max_steps}",
                                 param_hint="'--max-steps'")

    out = Path(out) if out is not None else Path("out") / f"sandwich-{model.replace(':', '-')}"
    settings = {
        "model": model, "options": _jsonable(dataclasses.asdict(model_obj)) if dataclasses.is_dataclass(model_obj)
        else _jsonable(model_options),
        "seed": seed, "chains": chains, "schedule": schedule, "method": method, "particles": particles,
        "x64": bool(jax.config.jax_enable_x64),
        "steps": step_list, "until_gap": until_gap, "max_steps": max_steps if until_gap is not None else None,
        "bdmc_version": bdmc.__version__,
    }
    existing = _prepare_out_dir(out, settings, overwrite, COLUMNS)
    if until_gap is not None:
        if len(step_list) > 1:
            console.print(f"[dim]note: --until-gap doubles T from the first --steps value ({step_list[0]}); "
                          f"the others are ignored[/]")
        # sandwich() cannot see skipped rows' gaps: drop half-finished pairs (rerun, identical) and stop at
        # a length the file already shows converged.
        complete = _complete_pairs(existing)
        existing = existing[existing["num_steps"].isin(complete)].reset_index(drop=True)
        _rewrite_csv(out / CSV_NAME, existing, COLUMNS)
        converged = _first_converged(existing, step_list[0], max_steps, until_gap)
        if converged is not None:
            max_steps = converged
    skip = {(int(t), str(d)) for t, d in zip(existing["num_steps"], existing["direction"])}

    key = jax.random.key(seed)
    # The data sandwich() would simulate from this key, simulated here so the table knows whether an exact
    # value is affordable (enumeration and quadrature only work on small instances).
    data, exact_latent = bdmc.simulate(jax.random.split(key)[0], model_obj)
    exact_known = exact_log_marginal_or_none(model_obj, data) is not None
    printer = _RowPrinter(console, exact_known=exact_known, knob="moves" if method == "smc" else "T")
    old_rows = existing.to_dict("records")
    new_rows: list[dict] = []
    csv_path = out / CSV_NAME
    console.print(f"[bold]bdmc sandwich[/]  model [cyan]{model}[/] {_escape(_fmt_options(settings['options']))}",
                  highlight=False, soft_wrap=True)
    lengths = (f"until single-run gap < {until_gap:g} nats (T = {step_list[0]}, doubling, <= "
               f"{settings['max_steps']})" if until_gap is not None else f"T = {', '.join(map(str, step_list))}")
    console.print(f"chains {chains} · seed {seed} · schedule {schedule} · {lengths}", highlight=False,
                  soft_wrap=True)
    if skip:
        console.print(f"[dim]resuming from {_escape(str(csv_path))}: {len(skip)} row(s) already done[/]")
    printer.header()
    for row in sorted(old_rows, key=_row_order):
        printer.row(row, resumed=True)

    def on_row(row: dict) -> None:
        row = _fill_partner_gap(row, old_rows + new_rows)
        new_rows.append(row)
        _append_csv(csv_path, row, COLUMNS)
        printer.row(row)

    try:
        bdmc.sandwich(key, model_obj, data, exact_latent, steps=step_list, num_chains=chains, schedule=schedule,
                      method=method, num_particles=particles, until_gap=until_gap, max_steps=max_steps,
                      on_row=on_row, skip=skip, progress=progress)
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted; {len(old_rows) + len(new_rows)} row(s) are saved in "
                      f"{_escape(str(csv_path))}, rerun the same command to resume[/]", soft_wrap=True)
        raise typer.Exit(130) from None

    table = pd.DataFrame(old_rows + new_rows, columns=COLUMNS)
    table = table.sort_values(["num_steps", "direction"], key=_sort_key).reset_index(drop=True)
    if set(table["direction"]) == set(DIRECTIONS):
        table["alarm"] = mark_alarms(table, alarm_from_table(table))
    _rewrite_csv(csv_path, table, COLUMNS)
    title = f"{model}: BDMC sandwich, {chains} chains per direction, seed {seed}"
    plot_sandwich(table, title=title).savefig(out / PNG_NAME, dpi=150)
    printer.summary(table, until_gap=until_gap)
    console.print(f"[dim]wrote {_escape(str(csv_path))} ({len(table)} rows, {len(new_rows)} new), "
                  f"{_escape(str(out / SETTINGS_NAME))}, {_escape(str(out / PNG_NAME))}[/]", soft_wrap=True)


def _prepare_out_dir(out: Path, settings: dict, overwrite: bool, columns):
    """Create ``out``, check a previous run there is compatible, write settings; return its rows."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path, settings_path = out / CSV_NAME, out / SETTINGS_NAME
    existing = pd.DataFrame(columns=columns)
    if csv_path.exists() and csv_path.stat().st_size > 0 and not overwrite:
        try:
            previous = json.loads(settings_path.read_text())
        except (OSError, ValueError):
            raise _Refusal(f"{csv_path} exists but {settings_path} is missing or unreadable, so it cannot be "
                           "resumed; pass --overwrite to discard it or choose another --out") from None
        diffs = [f"{k}: {previous.get(k)!r} -> {settings[k]!r}" for k in ROW_DETERMINING
                 if previous.get(k) != settings[k]]
        if diffs:
            raise _Refusal(f"{out} holds a run with different settings ({'; '.join(diffs)}); pass --overwrite "
                           "to discard it or choose another --out")
        try:
            existing = pd.read_csv(csv_path)
        except (OSError, ValueError) as err:
            raise _Refusal(f"cannot read {csv_path} ({err}); pass --overwrite to discard it") from None
        if list(existing.columns) != list(columns):
            raise _Refusal(f"{csv_path} has columns {list(existing.columns)}, expected {list(columns)}; "
                           "pass --overwrite to discard it")
        # A row may appear twice if a run was killed after appending but before the final rewrite.
        existing = existing.drop_duplicates(["num_steps", "direction"], keep="last").reset_index(drop=True)
    else:
        for name in (CSV_NAME, PNG_NAME):
            (out / name).unlink(missing_ok=True)
    settings_path.write_text(json.dumps(settings, indent=2) + "\n")
    return existing


def _append_csv(path: Path, row: dict, columns) -> None:
    """Append one row (header first if the file is new), flushed to disk so a killed run loses nothing."""
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="") as f:
        pd.DataFrame([row], columns=columns).to_csv(f, header=new, index=False)
        f.flush()
        os.fsync(f.fileno())


def _rewrite_csv(path: Path, table, columns) -> None:
    """Atomically replace ``path`` by ``table``."""
    tmp = path.with_suffix(".csv.tmp")
    table.to_csv(tmp, columns=list(columns), index=False)
    os.replace(tmp, path)


def _complete_pairs(table) -> set[int]:
    counts = table.groupby("num_steps")["direction"].nunique()
    return {int(t) for t, n in counts.items() if n == 2}


def _first_converged(table, start: int, stop: int, tol: float) -> int | None:
    """First T of the doubling sequence from ``start`` whose recorded single-run gap is below ``tol``."""
    gaps = table.groupby("num_steps")["gap_single"].first()
    T = start
    while T <= stop:
        if T in gaps.index and math.isfinite(gaps[T]) and gaps[T] < tol:
            return T
        T *= 2
    return None


def _fill_partner_gap(row: dict, rows: list[dict]) -> dict:
    """Give a row whose partner direction was resumed from disk the gaps sandwich() could not compute."""
    if math.isfinite(row["gap"]):
        return row
    other = next((r for r in rows if r["num_steps"] == row["num_steps"] and r["direction"] != row["direction"]),
                 None)
    if other is None:
        return row
    lower, upper = (row, other) if row["direction"] == "forward" else (other, row)
    crossing = lower["value"] - upper["value"]
    mean = upper["mean_single"] - lower["mean_single"]
    se = math.hypot(upper["stderr_single"], lower["stderr_single"])  # the two directions are independent
    return {**row, "gap": -crossing, "gap_single": mean, "gap_single_stderr": se, "alarm": False,
            "alarm_p": crossing_p_bound(crossing)}


def _row_order(row: dict):
    return (int(row["num_steps"]), DIRECTIONS.index(row["direction"]) if row["direction"] in DIRECTIONS else 2)


def _sort_key(col):
    # Forward before reverse within a chain length.
    return col.map({d: i for i, d in enumerate(DIRECTIONS)}) if col.name == "direction" else col


# --------------------------------------------------------------------------------------------- console


class _RowPrinter:
    """Prints rows of the sandwich table one at a time, as one continuous rich table (fits 80 columns)."""

    def __init__(self, console, *, exact_known: bool, knob: str = "T"):
        self.console, self.exact_known = console, exact_known
        self.columns = [(knob, 5, "right"), ("direction", 9, "left"), ("value ± stderr", 16, "right")]
        if exact_known:
            self.columns.append(("− exact", 7, "right"))
        self.columns += [("mean\nsingle", 8, "right"), ("gap\nsingle", 7, "right"), ("seconds", 7, "right"),
                         ("compile\ns", 7, "right"), ("lik.\nevals", 6, "right")]
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
        self._print(show_header=True)
        self.console.print("─" * self.width, style="dim", width=max(self.console.width, self.width))

    def row(self, row: dict, *, resumed: bool = False) -> None:
        color = "blue" if row["direction"] == "forward" else "red"
        value, stderr = float(row["value"]), float(row["stderr"])
        cells = [str(int(row["num_steps"])), f"[{color}]{row['direction']}[/]",
                 f"{_num(value, '.3f' if abs(value) < 1000 else '.2f')} ± "
                 f"{_num(stderr, '.3f' if not stderr >= 10 else '.2f')}"]
        if self.exact_known:
            cells.append(_num(value - float(row["exact"]), "+.3f"))
        cells += [_num(row["mean_single"], ".3f"), _num(row["gap_single"], ".3f"), _seconds(row["seconds"]),
                  _seconds(row["compile_seconds"]), _count(row["n_evals"])]
        self._print(show_header=False, cells=cells, style="dim" if resumed else None)

    def summary(self, table, *, until_gap) -> None:
        """Final gap, whether ``--until-gap`` was reached and whether the bounds sandwich the exact value."""

        def say(text):
            self.console.print(text, highlight=False, soft_wrap=True)

        say("")
        exact = table["exact"].dropna()
        exact = float(exact.iloc[0]) if len(exact) else None
        if exact is not None:
            say(f"exact log p(y) = [bold]{exact:.4f}[/]")
        pairs = table.pivot_table(index="num_steps", columns="direction", values=["value", "stderr"])
        if not set(DIRECTIONS) <= set(pairs["value"].columns):
            say("[yellow]no chain length has both bounds yet; no gap to report[/]")
            return
        pairs = pairs[pairs["value"][list(DIRECTIONS)].notna().all(axis=1)]
        value, se = pairs["value"], pairs["stderr"]
        T = int(value.index.max())
        lower, upper = value.loc[T, "forward"], value.loc[T, "reverse"]
        single = table.loc[table["num_steps"] == T, "gap_single"].dropna()
        line = (f"final gap at {self.columns[0][0]}={T}: [bold]{upper - lower:.4f}[/] nats (combined bounds {lower:.4f} .. "
                f"{upper:.4f}{'; crossed' if upper < lower else ''})")
        say(line + (f", single-run gap {float(single.iloc[0]):.4f}" if len(single) else ""))
        if until_gap is not None:
            reached = len(single) and float(single.iloc[0]) < until_gap
            say(f"until-gap {until_gap:g}: "
                + ("[green]reached[/]" if reached else "[yellow]not reached by --max-steps[/]"))
        self.alarm(table)
        if exact is None:
            say("[dim]no exact value for this model; the gap bounds the error of either estimate[/]")
            return
        # How far each bound lies on the wrong side of the exact value, in nats and in its own stderr.
        excess = pd.DataFrame({"forward": value["forward"] - exact, "reverse": exact - value["reverse"]})
        slack = 1e-9 * max(1.0, abs(exact))  # rounding, e.g. when both bounds are exact
        holds = (excess <= slack).all(axis=1)
        within = (excess <= NOISE_STDERRS * se[list(DIRECTIONS)].fillna(0.0) + slack).all(axis=1)
        if holds.loc[T]:
            verdict = "[green]holds[/]"
        elif within.loc[T]:
            verdict = f"[yellow]holds within noise[/] (crossed by <= {NOISE_STDERRS:g} stderr)"
        else:
            verdict = f"[bold red]VIOLATED[/] (by more than {NOISE_STDERRS:g} stderr)"
        say(f"sandwich around the exact value at {self.columns[0][0]}={T}: {verdict}; lower {lower - exact:+.4f}, upper "
            f"{upper - exact:+.4f} nats from exact")
        say(f"holds at {int(holds.sum())}/{len(holds)} chain lengths, within {NOISE_STDERRS:g} stderr at "
            f"{int(within.sum())}/{len(within)}")
        if not within.all():
            bad = ", ".join(str(int(t)) for t in within.index[~within.to_numpy(dtype=bool)])
            say(f"[bold red]a bound is off by more than {NOISE_STDERRS:g} stderr at T = {bad}: unlikely by chance, "
                "though with few chains the stderr itself is unreliable[/]")


    def alarm(self, table) -> None:
        """The run-level bug alarm over every lower and upper bound, prominently when it fires."""
        verdict = alarm_from_table(table)
        text = _escape(verdict.message())
        if verdict.fired:
            text = "[bold white on red] BUG ALARM [/]" + text[len("BUG ALARM"):]
        else:
            text = "bug alarm: [green]silent[/]; " + text
        self.console.print(text, highlight=False, soft_wrap=True)


def _console():
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(highlight=False, width=120)  # files and pipes: wide enough for `bdmc models`
    return console


def _num(x, fmt: str) -> str:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "-"
    return format(x, fmt) if math.isfinite(x) else "-"


def _count(n) -> str:
    n = int(n)
    if n < 10_000:
        return f"{n:,}"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.3g}{suffix}"
    return str(n)  # pragma: no cover


def _seconds(x) -> str:
    return _num(x, ".3f" if float(x) < 10 else ".1f")


def _fmt_options(options: dict) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in options.items()) + ")"


# --------------------------------------------------------------------------------------------- parsing


def _parse_steps(text: str, *, smallest: int = 2) -> list[int]:
    """``"10,100,1000"`` -> ``[10, 100, 1000]`` (duplicates dropped, order kept)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise typer.BadParameter("give at least one number of intermediate distributions", param_hint="'--steps'")
    values = []
    for p in parts:
        try:
            value = int(p.replace("_", ""))
        except ValueError:
            raise typer.BadParameter(f"{p!r} is not an integer; use e.g. --steps 10,100,1000",
                                     param_hint="'--steps'") from None
        if value < smallest:
            what = "T must be >= 2 (prior and posterior)" if smallest == 2 else "number of moves must be >= 1"
            raise typer.BadParameter(f"every {what}, got {value}", param_hint="'--steps'")
        if value not in values:
            values.append(value)
    return values


def _init_fields(cls) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(cls) if f.init] if dataclasses.is_dataclass(cls) else []


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def _builtin_model(model: str, options: list[str]):
    if model not in bdmc.models.REGISTRY:
        choices = ", ".join(sorted(bdmc.models.REGISTRY))
        raise typer.BadParameter(f"unknown model {model!r}; choose one of: {choices}", param_hint="'--model'")
    cls = bdmc.models.REGISTRY[model]
    model_options = _parse_options(cls, options)
    try:
        return cls(**model_options), model_options
    except (TypeError, ValueError) as err:
        raise typer.BadParameter(f"{model} rejected the options {model_options}: {err}",
                                 param_hint="'--option'") from None


def _parse_options(cls, items: list[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings into constructor options typed by the model dataclass's fields."""
    fields = {f.name: f for f in _init_fields(cls)}
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # unresolvable annotations: fall back to the defaults' types
        hints = {}
    options: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise typer.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="'--option'")
        if key not in fields:
            valid = ", ".join(fields) or "(none)"
            raise typer.BadParameter(f"{cls.__name__} has no option {key!r}; valid options: {valid}",
                                     param_hint="'--option'")
        try:
            options[key] = _convert(raw.strip(), hints.get(key, fields[key].type), _default(fields[key]))
        except ValueError as err:
            raise typer.BadParameter(f"{key}={raw!r}: {err}", param_hint="'--option'") from None
    return options


def _convert(raw: str, annotation, default) -> Any:
    """Convert ``raw`` to the field's annotated type (or its default's type when not resolvable)."""
    target = annotation if isinstance(annotation, type) else _origin_type(annotation, default)
    if target is bool:
        low = raw.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError("expected true or false")
    if target is int:
        try:
            return int(raw.replace("_", ""))
        except ValueError:
            raise ValueError("expected an integer") from None
    if target is float:
        try:
            return float(raw)
        except ValueError:
            raise ValueError("expected a number") from None
    if target in (tuple, list):
        parts = [p.strip() for p in raw.strip("()[]").split(",") if p.strip()]
        ref = list(default) if isinstance(default, (tuple, list)) else []
        values = [_convert(p, None, ref[i] if i < len(ref) else (ref[-1] if ref else 0.0)) for i, p in
                  enumerate(parts)]
        if ref and len(values) != len(ref):
            raise ValueError(f"expected {len(ref)} comma-separated values like {','.join(map(str, ref))}")
        return target(values)
    if target is str:
        return raw
    return _literal(raw)


def _origin_type(annotation, default):
    origin = typing.get_origin(annotation)
    if origin in (tuple, list):
        return origin
    if origin is typing.Union or type(annotation).__name__ == "UnionType":  # Optional[X] / X | None
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and isinstance(args[0], type):
            return args[0]
    if isinstance(annotation, str):
        return {"int": int, "float": float, "bool": bool, "str": str, "tuple": tuple, "list": list}.get(
            annotation, type(default) if default is not None else None)
    return type(default) if default is not None else None


def _literal(raw: str) -> Any:
    """Best-effort value of an untyped option: int, then float, then the string itself."""
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


def _jsonable(value: Any) -> Any:
    """Options as JSON values (tuples become lists), so saved and current settings compare equal."""
    return json.loads(json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))


if __name__ == "__main__":  # pragma: no cover
    main()
