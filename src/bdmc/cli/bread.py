"""``bdmc bread``: the Jeffreys-divergence bound of AIS, exactly on the grid toys or by simulation on a model."""

from __future__ import annotations

from pathlib import Path

import jax
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import bdmc

from ..checks.bread import bread_table
from ..checks.sandwich import plan_sandwich
from ..experiments import sandwich_runs
from ..experiments.store import RunStore
from ._common import (
    CLIError,
    at_least,
    command,
    console,
    model_option_option,
    out_option,
    output_dir,
    overwrite_option,
    parse_steps,
    print_verdict,
    refuse_together,
    seed_option,
    write_table,
    wrote,
)
from ._limits import check_memory, runs_count, size_option
from ._models import builtin_model, model_settings

TOYS = ("barrier", "easy", "hard")
CSV_NAME, PNG_NAME = "bread.csv", "bread.png"
TOY_DTYPES = {"toy": str, "num_distributions": int, "J": float, "B": float, "log_w_forward": float,
              "log_z": float, "log_w_reverse": float}
DEFAULT_RUNS = 32


@command
def bread_command(
    model: str | None = typer.Option(None, "--model", "-m", help="Built-in model (see `bdmc models`)."),
    toy: str | None = typer.Option(None, "--toy", help="Grid toy of the BREAD paper: barrier, easy or hard."),
    steps: str = typer.Option("10,100,1000", "--steps", "-s", "--T",
                              help="Comma-separated numbers of intermediate distributions T."),
    runs: int | None = typer.Option(None, "--runs", "-r", show_default=str(DEFAULT_RUNS),
                                       help="Forward and reverse runs per T (--model only)."),
    seed: int = seed_option("Simulates the data (--model) or draws the random toy."),
    option: list[str] | None = model_option_option(),
    out: Path | None = out_option("out/bread-NAME"),
    overwrite: bool = overwrite_option(),
) -> None:
    """Bound the Jeffreys divergence between AIS samples and the posterior (BREAD).

    With --toy, J and its bound B are computed exactly on the paper's 7x7 grid toys. With --model, paired
    forward and reverse AIS on simulated data estimate B-hat (E[B-hat] >= J) and the run-level bug alarm
    compares every forward bound with every reverse bound. Rows are saved as they finish; rerunning resumes.
    """
    if (model is None) == (toy is None):
        raise CLIError("give exactly one of --model NAME or --toy barrier|easy|hard")
    if toy is not None:
        for flag, given in (("--runs", runs is not None), ("--option", bool(option))):
            refuse_together({"--toy": True, flag: given}, "the grid toys are exact; runs and model options "
                            "apply to --model")
        if toy not in TOYS:
            raise CLIError(f"--toy: unknown toy {toy!r}; choose one of: {', '.join(TOYS)}")
    runs = DEFAULT_RUNS if runs is None else runs
    at_least(runs, "--runs", 1, str(DEFAULT_RUNS))
    at_least(seed, "--seed", 0, "0")
    step_list = parse_steps(steps, option="--steps/--T")  # one option, two names: the user typed either
    out = output_dir(out, f"bread-{model or toy}")
    if toy is not None:
        _toy(console(), toy, step_list, seed, out, overwrite)
    else:
        _model(console(), model, step_list, runs, seed, option or [], out, overwrite)


def _toy(out_console: Console, toy: str, steps: list[int], seed: int, out: Path, overwrite: bool) -> None:
    import numpy as np

    from ..exact import grid_toys
    from ..plotting.bread_toys import plot_bread_divergences

    store = RunStore(out, csv_name=CSV_NAME, dtypes=TOY_DTYPES, key=("num_distributions",),
                     settings={"command": "bread", "toy": toy, "seed": seed, "bdmc_version": bdmc.__version__},
                     compare=("command", "toy", "seed"), overwrite=overwrite, discard=(PNG_NAME,))
    rng = np.random.default_rng(seed)
    log_target = {"barrier": lambda: grid_toys.barrier(), "easy": lambda: grid_toys.easy_random(rng),
                  "hard": lambda: grid_toys.hard_random(rng)}[toy]()
    for T in steps:
        if not store.has((T,)):
            r = grid_toys.toy_jeffreys(log_target, T)
            store.append({"toy": toy, "num_distributions": T, "J": r.J, "B": r.B, "log_w_forward": r.log_w_forward,
                          "log_z": r.log_z, "log_w_reverse": r.log_w_reverse})
    frame = store.table().sort_values("num_distributions", ignore_index=True)
    table = Table(title=f"BREAD on the {toy} grid toy (exact)", title_justify="left")
    for col in ("T", "J", "B", "E_fwd[log w]", "log Z", "E_rev[log w]"):
        table.add_column(col, justify="right")
    for r in frame.itertuples():
        table.add_row(str(r.num_distributions), f"{r.J:.4g}", f"{r.B:.4g}", f"{r.log_w_forward:.4f}",
                      f"{r.log_z:.4f}", f"{r.log_w_reverse:.4f}")
    out_console.print(table)
    plot_bread_divergences(frame, title=f"{toy}: J (solid) and B (dashed)").savefig(out / PNG_NAME, dpi=150)
    wrote(out_console, store.csv, out / PNG_NAME)


def _model(out_console: Console, model: str, steps: list[int], runs: int, seed: int, options: list[str],
           out: Path, overwrite: bool) -> None:
    from ..plotting.bread import plot_bread

    model_obj, model_options = builtin_model(model, options)
    check_memory(model_obj, counts=[runs_count(runs)], size=size_option(options=options, model=model))
    settings = {"command": "bread", "model": model, "options": model_settings(model_obj, model_options),
                "seed": seed, "runs": runs, "schedule": "sigmoidal", "method": "ais", "particles": 1,
                "x64": bool(jax.config.jax_enable_x64), "bdmc_version": bdmc.__version__}
    store = sandwich_runs.open_sandwich_store(out, settings, overwrite=overwrite, discard=(CSV_NAME, PNG_NAME))
    if store.resumed:
        out_console.print(f"[dim]resuming from {escape(str(store.csv))}: {store.resumed} row(s) already done[/]",
                          soft_wrap=True)
    key = jax.random.key(seed)
    plan = plan_sandwich(key, model_obj, method="ais")  # the data bdmc.bread(key, ...) simulates

    def finished(row: dict) -> None:
        out_console.print(f"[dim]- T={int(row['num_steps'])} {row['direction']}: {row['value']:.4f} "
                          f"({row['seconds']:.2f} s)[/]", soft_wrap=True)

    run = sandwich_runs.run_sandwich(key, model_obj, plan, store=store, steps=steps, num_runs=runs,
                                     schedule="sigmoidal", on_row=finished, progress=out_console.is_terminal)
    # The table covers every chain length in the store, resumed ones included.
    result = bread_table(run.table)
    table = Table(title=f"BREAD on {model} (simulated data, {runs} runs per direction)", title_justify="left")
    for col in ("T", "B-hat ± stderr", "pair crosses", "seconds", "lik. evals"):
        table.add_column(col, justify="right")
    for _, r in result.iterrows():
        marked = f"[bold red]yes[/] (p <= {r['alarm_p']:.2g})" if r["alarm"] else "[green]no[/]"
        table.add_row(str(int(r["num_steps"])), f"{r['b_hat']:.4f} ± {r['b_hat_stderr']:.4f}", marked,
                      f"{r['seconds']:.2f}", f"{int(r['n_evals']):,}")
    out_console.print(table)
    out_console.print("E[B-hat] upper-bounds the Jeffreys divergence between the distribution of AIS samples and "
                      "the posterior at each T.", soft_wrap=True)
    if run.verdict is not None:
        print_verdict(out_console, run.verdict)
    write_table(result, out / CSV_NAME)
    plot_bread(result, title=f"{model}: BREAD bound against chain length").savefig(out / PNG_NAME, dpi=150)
    wrote(out_console, store.csv, store.json, out / CSV_NAME, out / PNG_NAME)


