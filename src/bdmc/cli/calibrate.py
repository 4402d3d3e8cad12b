"""``bdmc calibrate``: is another tool's evidence, and its stated ±, honest? K simulated data sets, the tool and
bdmc's ground truth on each, the tool's bias, RMSE and coverage (``bdmc.calibrate_estimator``)."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import typer
from rich.markup import escape

from ..files import to_jsonable
from ._common import PPL_OPTIONS, CLIError, at_least, command, console, model_option_option, seed_option, wrote
from ._models import builtin_model, load_object, load_ppl_model, ppl_given, ppl_label

TOOLS = {
    "bdmc-ais": "bdmc's forward AIS (budget: T, default 1,000; 16 runs)",
    "bdmc-tsmc": "bdmc's tempered SMC (budget: temperatures, default 100; 16 runs)",
    "blackjax": "BlackJAX adaptive tempered SMC (budget: particles, default 1,000)",
    "dynesty": "dynesty NestedSampler (budget: live points; prior transform below)",
    "nautilus": "nautilus Sampler (budget: live points; prior transform below)",
    "ultranest": "UltraNest ReactiveNestedSampler (budget: live points; prior transform below)",
}


def make_tool(tool: str, model, budget: int | None, prior_transform):
    """The adapter ``(data, *, seed) -> (log_z, stderr)`` for one ``--tool``."""
    from ..calibration import adapters

    if tool == "bdmc-ais":
        return adapters.bdmc_adapter(model, "ais", num_steps=budget or 1000, num_runs=16)
    if tool == "bdmc-tsmc":
        return adapters.bdmc_adapter(model, "tempered-smc", num_steps=budget or 100, num_runs=16)
    if tool == "blackjax":
        return adapters.blackjax_adapter(model, num_particles=budget or 1000)
    if prior_transform is None:
        from ..contracts.capabilities import GaussianPriorBlocks, supports

        if not supports(model, GaussianPriorBlocks):
            raise CLIError(f"--tool {tool} is a nested sampler and needs the prior as a map from the unit cube: "
                           f"{type(model).__name__} declares no Gaussian prior blocks (GaussianPriorBlocks: "
                           "gaussian_prior_blocks()) to build it from, so give --prior-transform FILE.py:FN, a "
                           "function mapping unit-cube rows (n, d) to the model's flat latent")
        prior_transform = adapters.blocks_prior_transform(model)
    return adapters.nested_adapter(tool, model, prior_transform=prior_transform, live=budget)


@command
def calibrate_command(
    tool: str = typer.Option(..., "--tool", "-t", help="The tool: " + "; ".join(f"{k}: {v}" for k, v in TOOLS.items())),
    model: str | None = typer.Option(None, "--model", "-m", help="Built-in model name (see `bdmc models`)."),
    numpyro: str | None = PPL_OPTIONS["numpyro"],
    pymc: str | None = PPL_OPTIONS["pymc"],
    stan: str | None = PPL_OPTIONS["stan"],
    webppl: str | None = PPL_OPTIONS["webppl"],
    observed: str | None = typer.Option(None, "--observed", metavar="NAMES",
                                           help="The program's observed variable(s), comma-separated."),
    simulator: str | None = PPL_OPTIONS["simulator"],
    data: Path | None = typer.Option(None, "--data", metavar="FILE.npz", help="Arguments of the PPL program."),
    budget: int | None = typer.Option(None, "--budget", "-b", help="The tool's knob (see --tool)."),
    prior_transform: str | None = typer.Option(None, "--prior-transform", metavar="FILE.py:FN",
                                                  help="The nested samplers' prior: unit cube to the flat latent "
                                                       "(default: built from the model's Gaussian prior blocks, "
                                                       "where it declares them)."),
    num_datasets: int = typer.Option(50, "--num-datasets", "-k", help="K, the simulated data sets."),
    seed: int = seed_option("Simulates the data sets (data set i from fold_in(key(seed), i))."),
    level: float = typer.Option(0.01, "--level", help="The verdict's false-alarm level."),
    truth_steps: int | None = typer.Option(None, "--truth-steps", help="The truth's knob (default the pair's)."),
    truth_runs: int = typer.Option(16, "--truth-runs", help="The truth's runs per direction."),
    workers: int = typer.Option(0, "--workers", help="Run data sets on a local Dask cluster of this many threads."),
    out: Path | None = typer.Option(None, "--out", "-o", metavar="DIR",
                                       help="Write rows.jsonl (resumed on rerun), calibration.json, calibration.png."),
    option: list[str] | None = model_option_option(),
) -> None:
    """Calibrate another tool's log p(y) and stated ± on simulated data sets against bdmc's truth (exit 1 when
    miscalibrated)."""
    from ..calibration import calibrate_estimator

    if tool not in TOOLS:
        raise CLIError(f"--tool: unknown tool {tool!r}; choose one of: {', '.join(TOOLS)}")
    ppl = ppl_given(numpyro=numpyro, pymc=pymc, stan=stan, webppl=webppl)
    if (ppl is None) == (model is None):
        raise CLIError("give either --model NAME or one of --numpyro, --pymc, --stan, --webppl")
    at_least(num_datasets, "--num-datasets", 1, "50")
    at_least(budget, "--budget", 1, "1000")
    at_least(truth_runs, "--truth-runs", 2, "16")
    at_least(seed, "--seed", 0, "0")
    if not 0 < level < 1:
        raise CLIError(f"--level must lie in (0, 1), got {level}")
    if ppl is not None:
        model_obj, _ = load_ppl_model(*ppl, data=data, observed=observed, simulator=simulator)
        name = ppl_label(*ppl)
    else:
        model_obj, _ = builtin_model(model, option or [])
        name = model
    transform = load_object(prior_transform, "--prior-transform") if prior_transform else None
    estimator = make_tool(tool, model_obj, budget, transform)
    label = f"{tool}" + (f" ({budget})" if budget else "")
    path = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "rows.jsonl"
    terminal = console()
    client = None
    if workers > 0:
        from ..experiments.bench import connect

        client = connect()
        client.cluster.scale(workers)
    try:
        result = calibrate_estimator(jax.random.key(seed), model_obj, estimator, num_datasets=num_datasets,
                                     label=label, level=level, truth_steps=truth_steps, truth_runs=truth_runs,
                                     path=path, client=client, progress=terminal.is_terminal)
    finally:
        if client is not None:
            client.close()
    style = "green" if result.verdict != "miscalibrated" else "bold red"
    terminal.print(f"[bold]bdmc calibrate[/]  {escape(label)} on {escape(name)}", soft_wrap=True)
    terminal.print(f"[{style}]{escape(result.summary())}[/]", soft_wrap=True)
    if out is not None:
        (out / "calibration.json").write_text(json.dumps(to_jsonable(result.to_dict(), nonfinite="string"),
                                                         indent=2) + "\n")
        wrote(terminal, out / "calibration.json")
        import matplotlib

        matplotlib.use("Agg")
        figure = result.plot().figure
        figure.tight_layout()
        figure.savefig(out / "calibration.png", dpi=120)
        wrote(terminal, out / "calibration.png")
    if result.verdict == "miscalibrated":
        raise typer.Exit(code=1)
