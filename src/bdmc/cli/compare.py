"""``bdmc compare``: a certified interval on the log Bayes factor of two programs on one data file, behind gates
that refuse other observations, likelihood terms that are not one per observation, and unnormalized priors
(``bdmc.compare``)."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import typer
from rich.markup import escape

from ..checks.sandwich import simulated_data
from ..contracts.observed import real_data_like
from ..files import to_jsonable, write_atomic
from ..intervals.bayes_factor import compare
from ._common import CLIError, command, console, seed_option, wrote
from ._models import builtin_model, load_npz, load_ppl_model, ppl_label
from .evidence import read_draws

PROGRAM_HELP = ("LANG:PATH:FN, e.g. numpyro:model.py:fn or pymc:model.py:build (stan:model.stan, webppl:model.wppl), "
                "or model:NAME for a built-in model")


def load_program(spec: str, option: str, *, data: Path | None, observed: str | None):
    """``(model, label)`` for ``--a`` / ``--b``: a program in a PPL or a built-in model."""
    language, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise CLIError(f"{option}: expected {PROGRAM_HELP}; got {spec!r}")
    if language == "model":
        return builtin_model(rest, [])[0], rest
    model, _ = load_ppl_model(language, rest, data=data, observed=observed, simulator=None)
    path, sep, function = rest.rpartition(":")
    return model, function if sep and function else ppl_label(language, rest)


@command
def compare_command(
    a: str = typer.Option(..., "--a", metavar="PROGRAM", help="The first program: " + PROGRAM_HELP + "."),
    b: str = typer.Option(..., "--b", metavar="PROGRAM", help="The second program, as --a."),
    observed: str | None = typer.Option(None, "--observed", metavar="NAMES",
                                           help="The programs' observed variable(s), comma-separated."),
    data: Path = typer.Option(..., "--data", metavar="FILE.npz",
                              help="The observed arrays and the programs' arguments."),
    data_b: Path | None = typer.Option(None, "--data-b", metavar="FILE.npz",
                                          help="B's data file, when it has one of its own (the gate checks it holds "
                                               "the same observations)."),
    draws_a: Path | None = typer.Option(None, "--draws-a", metavar="FILE", help="A's posterior draws (None: NUTS)."),
    draws_b: Path | None = typer.Option(None, "--draws-b", metavar="FILE", help="B's posterior draws (None: NUTS)."),
    level: float = typer.Option(0.01, "--level", help="Largest probability that the interval misses log BF."),
    tolerance: float = typer.Option(0.5, "--tolerance", help="Each evidence's target width (nats)."),
    max_seconds: float | None = typer.Option(None, "--max-seconds", help="Each evidence's time budget."),
    check_prior: bool = typer.Option(True, "--check-prior/--no-check-prior",
                                     help="Refuse a prior that does not integrate to one (the default)."),
    seed: int = seed_option("Drives every run."),
    json_out: Path | None = typer.Option(None, "--json", metavar="FILE.json", help="Also write the result here."),
) -> None:
    """An interval on log BF(A : B) of two programs on one data file; refuses to compare unlike things (exit 1)."""
    if not 0 < level < 1:
        raise CLIError(f"--level must lie in (0, 1), got {level}")
    model_a, name_a = load_program(a, "--a", data=data, observed=observed)
    model_b, name_b = load_program(b, "--b", data=data_b or data, observed=observed)
    if name_a == name_b:
        name_a, name_b = f"A ({name_a})", f"B ({name_b})"
    key = jax.random.key(seed)
    observed_a = real_data_like(simulated_data(key, model_a).data, load_npz(data), source=f"--data {data}")
    observed_b = real_data_like(simulated_data(key, model_b).data, load_npz(data_b or data),
                                source=f"--data-b {data_b}" if data_b else f"--data {data}")
    out = console()
    out.print(f"[bold]bdmc compare[/]  {escape(name_a)} against {escape(name_b)} on {escape(str(data))}",
              soft_wrap=True)
    result = compare(jax.random.fold_in(key, 1), model_a, model_b, observed_a, data_b=observed_b, level=level,
                     draws_a=read_draws(draws_a), draws_b=read_draws(draws_b), check_prior=check_prior,
                     tolerance=tolerance, max_seconds=max_seconds, names=(name_a, name_b),
                     progress=out.is_terminal)
    out.print(f"[green]{escape(result.summary())}[/]", soft_wrap=True)
    if json_out is not None:
        write_atomic(json_out, json.dumps(to_jsonable(result.to_dict(), nonfinite="string"), indent=2) + "\n")
        wrote(out, json_out)
