"""``bdmc check-estimate``: is another tool's log p(y) consistent with bdmc's certified bounds?

Two steps on simulated data: ``--write-data FILE.npz`` writes the data set that ``--seed`` simulates (run the
other tool on it); ``--value X`` then checks X against bdmc's interval on that same data set (the seed simulates it
again, with the latent that generated it): a certified tier and a calibrated one. With ``--real-data`` the value is
the evidence of the observed arrays in ``--data``, checked against ``bdmc evidence``'s interval (its upper side from
posterior draws: ``--draws``, else NUTS). bdmc's own interval and estimate are printed beside the verdict; the exit
status is 1 when the value is called wrong, so scripts can use it.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import typer
from rich.markup import escape

from ..checks.sandwich import simulated_data
from ..contracts.observed import data_array_names, real_data_like
from ..contracts.pairs import PAIRS
from ..files import to_jsonable
from ..intervals.estimate_check import CONSISTENT, check_estimate
from ._common import (
    PPL_OPTIONS,
    CLIError,
    at_least,
    command,
    console,
    model_option_option,
    positive_number,
    seed_option,
    wrote,
)
from ._limits import check_memory, runs_count, size_option
from ._models import builtin_model, load_npz, load_ppl_model, ppl_given, ppl_label
from .evidence import read_draws

VERDICT_STYLE = {CONSISTENT: "green"}


@command
def check_estimate_command(
    value: float | None = typer.Option(None, "--value", metavar="LOGZ",
                                          help="The other tool's estimate of log p(y), in nats."),
    stderr: float | None = typer.Option(None, "--stderr", metavar="S",
                                           help="Its standard error, if the tool gives one."),
    model: str | None = typer.Option(None, "--model", "-m", help="Built-in model name (see `bdmc models`)."),
    numpyro: str | None = PPL_OPTIONS["numpyro"],
    pymc: str | None = PPL_OPTIONS["pymc"],
    stan: str | None = PPL_OPTIONS["stan"],
    webppl: str | None = PPL_OPTIONS["webppl"],
    observed: str | None = typer.Option(None, "--observed", metavar="NAMES",
                                           help="The program's observed variable(s), comma-separated."),
    simulator: str | None = PPL_OPTIONS["simulator"],
    data: Path | None = typer.Option(None, "--data", metavar="FILE.npz",
                                        help="Arguments of the PPL program; with --real-data also the observed "
                                             "arrays."),
    real_data: bool = typer.Option(False, "--real-data",
                                   help="The value is the evidence of the observed arrays in --data, checked against "
                                        "bdmc evidence's interval (upper side from posterior draws)."),
    draws: Path | None = typer.Option(
        None, "--draws", metavar="FILE",
        help="With --real-data: posterior draws for the upper side (.npz, .nc or posteriordb .json, as for "
             "bdmc evidence). None: NUTS draws."),
    max_seconds: float | None = typer.Option(None, "--max-seconds",
                                                help="With --real-data: the time budget of bdmc's interval."),
    write_data: Path | None = typer.Option(None, "--write-data", metavar="FILE.npz",
                                              help="Write the data set --seed simulates, then stop."),
    seed: int = seed_option("Simulates the data (with its exact latent) and drives bdmc's runs."),
    level: float = typer.Option(0.01, "--level", help="Largest probability of calling a correct value wrong."),
    method: str = typer.Option("auto", "--method", help="bdmc's estimators: auto, " + ", ".join(PAIRS) + "."),
    steps: int | None = typer.Option(
        None, "--steps", "-s", show_default=", ".join(f"{p.default_knob} ({p.name})" for p in PAIRS.values()),
        help="Their knob: " + ", ".join(f"{p.symbol} ({p.name})" for p in PAIRS.values()) + "."),
    runs: int = typer.Option(32, "--runs", "-r", help="Independent runs per direction."),
    option: list[str] | None = model_option_option(),
    json_out: Path | None = typer.Option(None, "--json", metavar="FILE.json", help="Also write the result here."),
) -> None:
    """Check another tool's log p(y) against bdmc's interval: consistent, too high or too low (exit status 1)."""
    ppl = ppl_given(numpyro=numpyro, pymc=pymc, stan=stan, webppl=webppl)
    if (ppl is None) == (model is None):
        raise CLIError("give either --model NAME or one of --numpyro, --pymc, --stan, --webppl")
    if (value is None) == (write_data is None):
        raise CLIError("give --value LOGZ (check it) or --write-data FILE.npz (write the simulated data for the other "
                       "tool first)")
    if real_data and (data is None or write_data is not None):
        raise CLIError("--real-data checks the evidence of the observed arrays in --data FILE.npz: give the file, "
                       "and no --write-data")
    if draws is not None and not real_data:
        raise CLIError("--draws are posterior draws of real data: give them with --real-data (on simulated data the "
                       "upper side starts from the exact latent)")
    if method != "auto" and method not in PAIRS:
        raise CLIError(f"--method: unknown method {method!r}; choose one of: auto, {', '.join(PAIRS)}")
    at_least(runs, "--runs", 2, "32")
    at_least(seed, "--seed", 0, "0")
    at_least(steps, "--steps", 1, "1000")
    positive_number(max_seconds, "--max-seconds", "seconds", "300")
    if not 0 < level < 1:
        raise CLIError(f"--level must lie in (0, 1), got {level}")

    arrays = load_npz(data)  # read and checked (numbers, finite) before any work
    user_draws = read_draws(draws)
    if ppl is not None:
        model_obj, _ = load_ppl_model(*ppl, data=data, observed=observed, simulator=simulator)
    else:
        model_obj, _ = builtin_model(model, option or [])
    check_memory(model_obj, counts=[runs_count(runs)],
                 size=size_option(options=option, data=data if ppl is not None else None, model=model))
    name = ppl_label(*ppl) if ppl is not None else model
    key = jax.random.key(seed)
    sim_data, exact_latent = simulated_data(key, model_obj)
    out = console()
    if write_data is not None:
        names = data_array_names(sim_data) or ["data"]
        arrays = dict(zip(names, (np.asarray(a) for a in jax.tree.leaves(sim_data)), strict=False))
        write_data.parent.mkdir(parents=True, exist_ok=True)
        np.savez(write_data, **arrays)
        wrote(out, write_data, note=f" (the data set --seed {seed} simulates for {name}: run the other tool on it, "
                                    f"then check its value with --value and the same --seed)")
        return
    if real_data:
        sim_data = real_data_like(sim_data, arrays, source=f"--data {data}")
        exact_latent = None
    result = check_estimate(jax.random.fold_in(key, 1), model_obj, sim_data, value, stderr=stderr,
                            exact_latent=exact_latent, level=level, method=method, num_steps=steps, num_runs=runs,
                            draws=user_draws, max_seconds=max_seconds, progress=out.is_terminal)
    style = VERDICT_STYLE.get(result.verdict, "bold red")
    out.print(f"[bold]bdmc check-estimate[/]  {escape(name)}  "
              f"({'the observed data in ' + escape(str(data)) if real_data else f'data simulated by --seed {seed}'})",
              soft_wrap=True)
    out.print(f"[{style}]{escape(result.summary())}[/]", soft_wrap=True)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        record = to_jsonable({**result.to_dict(), "model": name, "seed": seed}, nonfinite="string")
        json_out.write_text(json.dumps(record, indent=2) + "\n")
        wrote(out, json_out)
    if result.verdict != CONSISTENT:  # scripts see a value called wrong (or not judged) in the exit status
        raise typer.Exit(code=1)
