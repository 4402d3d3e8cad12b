"""``bdmc bench``: benchmark log-ML estimators against ground truth (accuracy against time)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..experiments import bench as harness
from ._common import (
    CLIError,
    at_least,
    command,
    console,
    model_option_option,
    out_option,
    output_dir,
    overwrite_option,
    positive_number,
    print_verdict,
    seed_option,
    write_table,
    wrote,
)
from ._limits import Count, check_memory, runs_count, size_option
from ._models import builtin_model

CSV_SUMMARY, PNG_NAME = "summary.csv", "bench.png"
# (header, minimum width): one table per row, so rows printed as they finish line up under the header.
ROW_COLUMNS = (("estimator", 9), ("knob", 6), ("mean ± 95% CI", 18), ("combined", 10), ("RMSE", 8),
               ("comb. err", 9), ("s/trial", 8), ("compile s", 9), ("evals/trial", 11))


@command
def bench_command(
    model: str = typer.Option(..., "--model", "-m", help="Built-in model (see `bdmc models`)."),
    estimators: str | None = typer.Option(
        None, "--estimators", "-e", show_default="every one the model supports",
        help="Comma-separated estimators: lw, hme, bic, ais, rev-ais, smc, shme, ns, vb, vb+sym, cms."),
    trials: int = typer.Option(25, "--trials", "-t", help="Independent trials per estimator and knob value."),
    knobs: list[str] | None = typer.Option(
        None, "--knobs", "-k", metavar="NAME=V1,V2",
        help="Knob values of one estimator (repeatable), e.g. --knobs ais=10,100,1000. Defaults per estimator."),
    truth_steps: int = typer.Option(
        harness.TRUTH_STEPS, "--truth-steps",
        help="T of the ground-truth forward and reverse AIS runs (the truth's own budget, whatever the knobs)."),
    truth_runs: int = typer.Option(harness.TRUTH_RUNS, "--truth-runs",
                                     help="Chains per direction of the ground truth."),
    truth_tol: float = typer.Option(harness.TRUTH_TOL, "--truth-tol",
                                    help="Nats within which forward and reverse must agree (without a closed form)."),
    scheduler: str | None = typer.Option(None, "--scheduler",
                                            help="Run on Dask: 'local' or a scheduler ADDRESS."),
    seed: int = seed_option("Seed of jax.random.key: simulates the data and drives every run."),
    option: list[str] | None = model_option_option(),
    out: Path | None = out_option("out/bench-MODEL"),
    overwrite: bool = overwrite_option(),
    zoom: float = typer.Option(10.0, "--zoom", help="Half-height in nats of the zoomed panel around the truth."),
) -> None:
    """Benchmark log-ML estimators against ground truth on simulated data (BDMC paper Sec. 6).

    The truth is the model's closed form where it has one (the AIS sandwich is reported beside it), else
    forward and reverse AIS at --truth-steps, refused when they disagree by more than --truth-tol. Prints one
    row per estimator and knob as it finishes, appends it to OUT/bench.csv (rerunning resumes), then writes the
    time-to-RMSE summary (OUT/summary.csv) and the figure (OUT/bench.png), both over every row in OUT.
    """
    knob_lists = _parse_knobs(knobs or [])
    at_least(trials, "--trials", 2, "25")
    at_least(truth_steps, "--truth-steps", 2, str(harness.TRUTH_STEPS))
    at_least(truth_runs, "--truth-runs", 1, str(harness.TRUTH_RUNS))
    positive_number(truth_tol, "--truth-tol", "nats", "1.0")
    positive_number(zoom, "--zoom", "nats", "10")
    at_least(seed, "--seed", 0, "0")
    model_obj, _ = builtin_model(model, option or [])
    check_memory(model_obj, size=size_option(options=option, model=model),
                 counts=[Count(f"--trials {trials}", trials, "use fewer trials"),
                         runs_count(truth_runs, option="--truth-runs")])
    names = harness.available(model_obj) if estimators is None else [
        n.strip() for n in estimators.split(",") if n.strip()]
    unknown = [n for n in names if n not in harness.ESTIMATORS]
    if unknown or not names:
        raise CLIError(f"--estimators: unknown estimator(s) {unknown}; choose from {', '.join(harness.ESTIMATORS)}")
    extra = sorted(set(knob_lists) - set(names))
    if extra:
        raise CLIError(f"--knobs given for estimator(s) not benchmarked: {', '.join(extra)}; add them to "
                       "--estimators")
    out = output_dir(out, f"bench-{model}")
    _run(console(), model, model_obj, names=names, knobs=knob_lists, trials=trials, truth_steps=truth_steps,
         truth_runs=truth_runs, truth_tol=truth_tol, scheduler=scheduler, seed=seed, out=out,
         overwrite=overwrite, zoom=zoom)


def _run(out_console: Console, name, model, *, names, knobs, trials, truth_steps, truth_runs, truth_tol, scheduler,
         seed, out, overwrite, zoom) -> None:
    import jax

    from ..plotting.bench import plot_bench

    out_console.print(f"[bold]bdmc bench[/]  model [cyan]{escape(name)}[/] · estimators {', '.join(names)} · "
                      f"{trials} trials · seed {seed} · ground truth: closed form where the model has one, "
                      f"else AIS T={truth_steps}, {truth_runs} chains, tol {truth_tol:g} nats", soft_wrap=True)
    largest = max((k for n in ("ais", "rev-ais") for k in _knobs_of(n, names, knobs)), default=0)
    if largest > truth_steps:
        out_console.print(f"[yellow]note: an AIS knob ({largest}) exceeds --truth-steps ({truth_steps}); the AIS "
                          "truth is then no more accurate than the estimator it scores[/]", soft_wrap=True)
    _print_row(out_console, None)
    printed: set[tuple[str, int]] = set()

    def on_row(row: dict) -> None:
        printed.add((row["estimator"], row["knob"]))
        _print_row(out_console, row)

    client = None
    if scheduler is not None:
        client = harness.connect(scheduler)
    try:
        harness.run_bench(jax.random.key(seed), model, estimators=names, knobs=knobs, trials=trials, out=out,
                          client=client, truth_steps=truth_steps, truth_runs=truth_runs, truth_tol=truth_tol,
                          overwrite=overwrite, on_row=on_row)
    finally:
        if client is not None:
            client.close()
    # The summary and the figure cover every row in the store: a rerun with fewer estimators keeps the others.
    table, truth = harness.load(out)
    resumed = [r for r in table.to_dict("records") if (r["estimator"], r["knob"]) not in printed]
    if resumed:
        out_console.print(f"[dim]{len(resumed)} row(s) resumed from {escape(str(out / harness.CSV_NAME))}:[/]",
                          soft_wrap=True)
        for row in resumed:
            _print_row(out_console, row, style="dim")
    _print_truth(out_console, truth, out / harness.JSON_NAME)
    summary = harness.time_to_rmse(table)
    write_table(summary, out / CSV_SUMMARY)
    out_console.print(_summary_table(summary))
    title = f"{name}: {trials} trials per point, truth from the {truth.source}"
    plot_bench(table, zoom=zoom, title=title).savefig(out / PNG_NAME, dpi=150)
    wrote(out_console, out / harness.CSV_NAME, out / harness.JSON_NAME, out / CSV_SUMMARY, out / PNG_NAME,
          note=f" ({len(table)} rows)")


def _print_truth(out_console: Console, truth, path: Path) -> None:
    """The truth, where it came from, the AIS sandwich beside it and the bug alarm on that sandwich."""
    say = lambda text: out_console.print(text, soft_wrap=True)  # noqa: E731
    say(f"ground truth log p(y) = [bold]{truth.value:.4f}[/] ({truth.source}; saved in {escape(str(path))})")
    sandwich = (f"AIS at T={truth.num_steps}, {truth.num_runs} runs: forward {truth.forward:.4f}, reverse "
                f"{truth.reverse:.4f}, gap {truth.gap:.4f} nats")
    if truth.exact is not None:
        note = "" if truth.ais_agrees else (f"; [yellow]wider than --truth-tol {truth.tol:g}: the closed form is "
                                            "used, raise --truth-steps for a tighter check[/]")
        say(f"  {sandwich}; their midpoint {truth.ais:.4f} is {truth.ais - truth.exact:+.4f} from the closed "
            f"form{note}")
    else:
        say(f"  {sandwich} (within --truth-tol {truth.tol:g}; no closed form for this model)")
    if truth.alarm is not None:
        print_verdict(out_console, truth.alarm, prefix="  bug alarm on the ground-truth runs")




def _print_row(out_console: Console, row: dict | None, *, style: str | None = None) -> None:
    """The header (``row`` None) or one finished row, as a borderless fixed-width table."""
    table = Table(box=None, show_header=row is None, pad_edge=False, header_style="bold")
    for header, width in ROW_COLUMNS:
        table.add_column(header, min_width=width, justify="left" if header == "estimator" else "right",
                         no_wrap=True)
    if row is not None:
        half = row["ci_high"] - row["mean"]
        table.add_row(row["estimator"], str(row["knob"]), f"{row['mean']:.3f} ± {half:.3f}",
                      f"{row['combined']:.3f}", f"{row['rmse']:.3f}", f"{row['combined_error']:+.3f}",
                      f"{row['seconds']:.2g}", f"{row['compile_seconds']:.2f}", f"{row['evals']:,.0f}",
                      style=style)
    out_console.print(table)


def _summary_table(summary) -> Table:
    table = Table(title="time to reach RMSE below the threshold (first knob value that does)", title_justify="left")
    for header in ("estimator", "RMSE <", "knob", "s/trial", "evals/trial", "RMSE"):
        table.add_column(header, justify="left" if header == "estimator" else "right")
    for r in summary.itertuples():
        if r.reached:
            table.add_row(r.estimator, f"{r.threshold:g}", str(r.knob), f"{r.seconds:.2g}", f"{r.evals:,.0f}",
                          f"{r.rmse:.3f}")
        else:
            table.add_row(r.estimator, f"{r.threshold:g}", "[yellow]not reached[/]", "-", "-", "-")
    return table


# The smallest value of each knob; 1 for the others (a count of proposals, samples, moves or restarts).
KNOB_MINIMUM = {"num_steps": 2}  # T counts distributions: the prior and the posterior at least


def _parse_knobs(items: list[str]) -> dict[str, list[int]]:
    """``["ais=10,100", "smc=1,5"]`` -> ``{"ais": [10, 100], "smc": [1, 5]}``, every value checked against its
    estimator's knob (an unknown estimator, an empty item or a value below the knob's minimum is refused)."""
    knobs: dict[str, list[int]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name, parts = name.strip(), [v.strip() for v in values.split(",")]
        if not sep or not name or not any(parts):
            raise CLIError(f"--knobs {item!r} is not NAME=V1,V2,...; e.g. --knobs ais=10,100")
        if not all(parts):
            raise CLIError(f"--knobs {item!r}: an empty item between commas; e.g. --knobs ais=10,100")
        try:
            parsed = [int(v.replace("_", "")) for v in parts]
        except ValueError:
            raise CLIError(f"--knobs {item!r}: the values must be integers; e.g. --knobs ais=10,100") from None
        if name not in harness.ESTIMATORS:
            raise CLIError(f"--knobs {item!r}: unknown estimator {name!r}; choose from {', '.join(harness.ESTIMATORS)}")
        knob = harness.ESTIMATORS[name].knob
        smallest = KNOB_MINIMUM.get(knob, 1)
        if min(parsed) < smallest:
            raise CLIError(f"--knobs {item!r}: {name}'s knob {knob} must be >= {smallest}, got {min(parsed)}; e.g. "
                           f"--knobs {name}={','.join(map(str, harness.ESTIMATORS[name].knobs))}")
        knobs[name] = parsed
    return knobs


def _knobs_of(name: str, names: list[str], knobs: dict[str, list[int]]) -> list[int]:
    if name not in names:
        return []
    return list(knobs.get(name, harness.ESTIMATORS[name].knobs))
