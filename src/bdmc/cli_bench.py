"""``bdmc bench``: benchmark log-ML estimators against BDMC ground truth (accuracy against time)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ._errors import BDMCError

CSV_SUMMARY, PNG_NAME = "summary.csv", "bench.png"
# (header, minimum width): one table per row, so rows printed as they finish line up under the header.
ROW_COLUMNS = (("estimator", 9), ("knob", 6), ("mean ± 95% CI", 18), ("combined", 10), ("RMSE", 8),
               ("comb. err", 9), ("s/trial", 8), ("compile s", 9), ("evals/trial", 11))


def bench_command(
    model: str = typer.Option(..., "--model", "-m", help="Built-in model (see `bdmc models`)."),
    estimators: Optional[str] = typer.Option(
        None, "--estimators", "-e", show_default="every one the model supports",
        help="Comma-separated estimators: lw, hme, bic, ais, rev-ais, smc, shme, ns, vb, vb+sym, cms."),
    trials: int = typer.Option(25, "--trials", "-t", help="Independent trials per estimator and knob value."),
    knobs: Optional[list[str]] = typer.Option(
        None, "--knobs", "-k", metavar="NAME=V1,V2",
        help="Knob values of one estimator (repeatable), e.g. --knobs ais=10,100,1000. Defaults per estimator."),
    truth_steps: Optional[int] = typer.Option(
        None, "--truth-steps", help="T of the ground-truth AIS runs.", show_default="largest AIS knob, else 1000"),
    truth_chains: int = typer.Option(25, "--truth-chains", help="Chains per direction of the ground truth."),
    truth_tol: float = typer.Option(1.0, "--truth-tol", help="Nats within which forward and reverse must agree."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                            help="Run on Dask: 'local' or a scheduler ADDRESS."),
    seed: int = typer.Option(0, "--seed", help="Seed of jax.random.key: simulates the data and drives every run."),
    option: Optional[list[str]] = typer.Option(None, "--option", help="Model option KEY=VALUE (repeatable).",
                                               metavar="KEY=VALUE"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory.",
                                       show_default="out/bench-MODEL"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard results in --out made with other settings."),
    zoom: float = typer.Option(10.0, "--zoom", help="Half-height in nats of the zoomed panel around the truth."),
) -> None:
    """Benchmark log-ML estimators against the BDMC ground truth on simulated data (paper Sec. 6).

    Prints one row per estimator and knob as it finishes, appends it to OUT/bench.csv (rerunning resumes),
    then writes the time-to-RMSE summary (OUT/summary.csv) and the figure (OUT/bench.png).
    """
    from .cli import _builtin_model, _console

    console, errors = _console(), Console(stderr=True, highlight=False)
    knob_lists = _parse_knobs(knobs or [])
    model_obj, _ = _builtin_model(model, option or [])
    if estimators is None:
        from .experiments.bench import available

        names = available(model_obj)
    else:
        names = [n.strip() for n in estimators.split(",") if n.strip()]
    if truth_steps is None:
        truth_steps = max([k for n in ("ais", "rev-ais") for k in _knobs_of(n, names, knob_lists)], default=1000)
    out = Path(out) if out is not None else Path("out") / f"bench-{model}"
    try:
        _run(console, model, model_obj, names=names, knobs=knob_lists, trials=trials, truth_steps=truth_steps,
             truth_chains=truth_chains, truth_tol=truth_tol, scheduler=scheduler, seed=seed, out=out,
             overwrite=overwrite, zoom=zoom)
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted; finished rows are saved in {escape(str(out))}, rerun the same command "
                      "to resume[/]", soft_wrap=True)
        raise typer.Exit(130) from None
    except BDMCError as err:  # library errors name the culprit: one line, no traceback
        errors.print(f"[bold red]error:[/] {type(err).__name__}: {escape(str(err))}", soft_wrap=True)
        raise typer.Exit(1) from None


def _run(console, name, model, *, names, knobs, trials, truth_steps, truth_chains, truth_tol, scheduler, seed,
         out, overwrite, zoom) -> None:
    import jax

    from .experiments.bench import CSV_NAME, run_bench, time_to_rmse
    from .plotting.bench import plot_bench

    console.print(f"[bold]bdmc bench[/]  model [cyan]{escape(name)}[/] · estimators {', '.join(names)} · "
                  f"{trials} trials · seed {seed} · ground truth: AIS T={truth_steps}, {truth_chains} chains, "
                  f"tol {truth_tol:g} nats", highlight=False, soft_wrap=True)
    _print_row(console, None)
    printed: set[tuple[str, int]] = set()

    def on_row(row: dict) -> None:
        printed.add((row["estimator"], row["knob"]))
        _print_row(console, row)

    client = None
    if scheduler is not None:
        from .experiments.bench import connect

        client = connect(scheduler)
    try:
        table = run_bench(jax.random.key(seed), model, estimators=names, knobs=knobs, trials=trials, out=out,
                          client=client, truth_steps=truth_steps, truth_chains=truth_chains, truth_tol=truth_tol,
                          overwrite=overwrite, on_row=on_row)
    finally:
        if client is not None:
            client.close()
    resumed = [r for r in table.to_dict("records") if (r["estimator"], r["knob"]) not in printed]
    if resumed:
        console.print(f"[dim]{len(resumed)} row(s) resumed from {escape(str(out / CSV_NAME))}:[/]", soft_wrap=True)
        for row in resumed:
            _print_row(console, row, style="dim")
    console.print(f"ground truth log p(y) = [bold]{table['truth'].iloc[0]:.4f}[/] (from {out / 'bench.json'})",
                  highlight=False, soft_wrap=True)
    summary = time_to_rmse(table)
    summary.to_csv(out / CSV_SUMMARY, index=False)
    console.print(_summary_table(summary))
    plot_bench(table, zoom=zoom, title=f"{name}: {trials} trials per point").savefig(out / PNG_NAME, dpi=150)
    console.print(f"[dim]wrote {escape(str(out / CSV_NAME))} ({len(table)} rows), "
                  f"{escape(str(out / CSV_SUMMARY))}, {escape(str(out / PNG_NAME))}[/]", soft_wrap=True)


def _print_row(console, row: dict | None, *, style: str | None = None) -> None:
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
    console.print(table)


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


def _parse_knobs(items: list[str]) -> dict[str, list[int]]:
    """``["ais=10,100", "smc=1,5"]`` -> ``{"ais": [10, 100], "smc": [1, 5]}``."""
    knobs: dict[str, list[int]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        try:
            parsed = [int(v.replace("_", "")) for v in values.split(",") if v.strip()]
        except ValueError:
            parsed = []
        if not sep or not name.strip() or not parsed:
            raise typer.BadParameter(f"{item!r} is not NAME=V1,V2,... with integer values", param_hint="'--knobs'")
        knobs[name.strip()] = parsed
    return knobs


def _knobs_of(name: str, names: list[str], knobs: dict[str, list[int]]) -> list[int]:
    from .experiments.bench import ESTIMATORS

    if name not in names:
        return []
    return list(knobs.get(name, ESTIMATORS[name].knobs))
