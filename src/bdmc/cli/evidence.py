"""``bdmc evidence``: a two-sided interval on log p(y) of a data set, escalated until it is narrow.

Real data by default: the observed arrays in ``--data`` (with a program's arguments), the upper side from
posterior draws (``--draws``: an ``.npz`` of the program's constrained values by name, an ArviZ ``.nc`` file or a
posteriordb reference-posterior ``.json``; none: NUTS draws, said so). ``--simulated`` bounds a data set that
``--seed`` simulates instead, its upper side from the exact latent that generated it.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import jax
import typer
from rich.markup import escape

from ..checks.sandwich import simulated_data
from ..contracts.observed import real_data_like
from ..files import to_jsonable, write_atomic
from ..intervals.run import METHODS, BoundsCrossedWarning, evidence
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


@command
def evidence_command(
    model: str | None = typer.Option(None, "--model", "-m", help="Built-in model name (see `bdmc models`)."),
    numpyro: str | None = PPL_OPTIONS["numpyro"],
    pymc: str | None = PPL_OPTIONS["pymc"],
    stan: str | None = PPL_OPTIONS["stan"],
    webppl: str | None = PPL_OPTIONS["webppl"],
    observed: str | None = typer.Option(None, "--observed", metavar="NAMES",
                                           help="The program's observed variable(s), comma-separated."),
    simulator: str | None = PPL_OPTIONS["simulator"],
    data: Path | None = typer.Option(None, "--data", metavar="FILE.npz",
                                        help="The observed arrays (and a program's arguments)."),
    draws: Path | None = typer.Option(
        None, "--draws", metavar="FILE",
        help="Posterior draws for the upper side: .npz (the program's values by name, leading axis = draws), "
             ".nc (ArviZ InferenceData) or .json (a posteriordb reference posterior). None: NUTS draws."),
    simulated: bool = typer.Option(False, "--simulated",
                                   help="Bound log p(y) of a data set --seed simulates (upper side from the exact "
                                        "latent) instead of the observed arrays in --data."),
    tolerance: float = typer.Option(0.5, "--tolerance", help="Stop when the interval is this narrow (nats)."),
    level: float = typer.Option(0.01, "--level", help="Largest probability that the interval misses log p(y)."),
    max_seconds: float | None = typer.Option(None, "--max-seconds", help="Time budget of the escalation."),
    max_rounds: int = typer.Option(10, "--max-rounds", help="At most this many rounds."),
    method: str = typer.Option("auto", "--method", help="auto, tempered-smc or ais."),
    steps: int = typer.Option(32, "--steps", "-s", help="First round's temperatures (AIS distributions)."),
    runs: int = typer.Option(32, "--runs", "-r", help="First round's independent runs per direction."),
    particles: int = typer.Option(16, "--particles", help="First round's particles per tempered-SMC run."),
    seed: int = seed_option("Drives every run (and simulates the data with --simulated)."),
    option: list[str] | None = model_option_option(),
    json_out: Path | None = typer.Option(None, "--json", metavar="FILE.json", help="Also write the result here."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show progress bars."),
) -> None:
    """A two-sided interval on log p(y) that holds with probability >= 1 - level, escalated to --tolerance."""
    ppl = ppl_given(numpyro=numpyro, pymc=pymc, stan=stan, webppl=webppl)
    if (ppl is None) == (model is None):
        raise CLIError("give either --model NAME or one of --numpyro, --pymc, --stan, --webppl")
    if ppl is not None and option:
        raise CLIError("--option applies to built-in models; a PPL program takes its arguments from --data")
    if simulated and draws is not None:
        raise CLIError("--draws are posterior draws of real data; with --simulated the upper side starts from the "
                       "exact latent")
    if not simulated and data is None:
        raise CLIError("give --data FILE.npz with the observed arrays (or --simulated to bound simulated data)")
    if method not in METHODS:
        raise CLIError(f"--method: unknown method {method!r}; choose one of: {', '.join(METHODS)}")
    positive_number(tolerance, "--tolerance", "nats", "0.5")
    positive_number(max_seconds, "--max-seconds", "seconds", "600")
    if not 0 < level < 1:
        raise CLIError(f"--level must lie in (0, 1), got {level}")
    at_least(max_rounds, "--max-rounds", 1, "10")
    at_least(steps, "--steps", 2, "32")
    at_least(runs, "--runs", 1, "32")
    at_least(particles, "--particles", 1, "16")
    at_least(seed, "--seed", 0, "0")
    user_draws = read_draws(draws)

    arrays = load_npz(data)
    if ppl is not None:
        model_obj, _ = load_ppl_model(*ppl, data=data, observed=observed, simulator=simulator)
    else:
        model_obj, _ = builtin_model(model, option or [])
    check_memory(model_obj, counts=[runs_count(runs, particles=particles)],
                 size=size_option(options=option, data=data if ppl is not None else None, model=model))
    name = ppl_label(*ppl) if ppl is not None else model
    key = jax.random.key(seed)
    observed_data = None
    if not simulated:
        template = simulated_data(key, model_obj).data
        observed_data = real_data_like(template, arrays, source=f"--data {data}")

    out = console()
    out.print(f"[bold]bdmc evidence[/]  {escape(name)}  ("
              + (f"data simulated by --seed {seed}" if simulated else f"the observed data in {escape(str(data))}")
              + f"; tolerance {tolerance:g} nats, level {level:g})", soft_wrap=True)

    def said(r) -> None:
        out.print(f"  round {r.round}: {r.describe()}  [{r.lower:.3f}, {r.upper:.3f}]  width {r.width:.3f}  "
                  f"({r.seconds:.1f} s)", soft_wrap=True)

    with warnings.catch_warnings():  # the summary below says it, once
        warnings.simplefilter("ignore", BoundsCrossedWarning)
        result = evidence(jax.random.fold_in(key, 1), model_obj, observed_data, draws=user_draws,
                          tolerance=tolerance, level=level, max_seconds=max_seconds, max_rounds=max_rounds,
                          method=method, num_steps=steps, num_runs=runs, num_particles=particles, on_round=said,
                          progress=not no_progress and out.is_terminal)
    style = "green" if result.converged else "red" if result.crossed else "yellow"
    out.print(f"[{style}]{escape(result.summary())}[/]", soft_wrap=True)
    if json_out is not None:
        record = to_jsonable({**result.to_dict(), "model": name, "seed": seed}, nonfinite="string")
        write_atomic(json_out, json.dumps(record, indent=2) + "\n")
        wrote(out, json_out)
    if result.crossed:  # no interval: the draws (or the model) failed; scripts see it in the exit status
        raise typer.Exit(code=1)


def read_draws(path: Path | None):
    """The ``--draws`` file as :func:`bdmc.evidence` takes it: a dict of arrays (.npz), ArviZ InferenceData (.nc)
    or a posteriordb reference posterior (.json)."""
    if path is None:
        return None
    if not path.exists():
        raise CLIError(f"--draws {path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return load_npz(path, option="--draws")
    if suffix == ".json":
        try:
            return json.loads(path.read_text())
        except ValueError as err:
            raise CLIError(f"--draws {path} is not JSON: {err}") from None
    if suffix in (".nc", ".netcdf"):
        import arviz  # a dependency of bdmc

        return arviz.from_netcdf(path)
    raise CLIError(f"--draws {path}: give an .npz, .nc (ArviZ) or .json (posteriordb reference posterior) file")
