"""``bdmc bread-real``: the BREAD paper's real-data protocol on one of its five models."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from ..experiments.store import write_json_atomic
from ..ppl.registry import PPLS
from ._common import (
    CLIError,
    at_least,
    command,
    console,
    out_option,
    output_dir,
    overwrite_option,
    parse_steps,
    write_table,
    wrote,
)

KERNELS = ("nuts", "hmc")


@command
def bread_real_command(
    model: str = typer.Option(..., "--model", "-m",
                              help="linear-regression, logistic-regression, matrix-factorization, ar1 or mixture."),
    ppl: str = typer.Option("numpyro", "--ppl", help="Language the model is written in: numpyro, pymc or stan."),
    steps: str = typer.Option("10,100,1000", "--steps", "-s", "--T", help="Comma-separated AIS chain lengths T."),
    runs: int = typer.Option(100, "--runs", "-r", help="Independent runs per condition and chain length."),
    mcmc_steps: str = typer.Option("10,100,1000,10000", "--mcmc-steps", "-S",
                                   help="Comma-separated numbers S of NUTS steps behind the reverse chains' start."),
    kernel: str = typer.Option("nuts", "--kernel", help="AIS transition: nuts or hmc (fit's step size and mass)."),
    uncentred: bool = typer.Option(False, "--uncentred",
                                   help="matrix-factorization only: keep the raw ratings (Appendix D's misspecified "
                                        "case)."),
    seed: int = typer.Option(0, "--seed"),
    out: Path | None = out_option("out/bread-real-MODEL-PPL",
                                  help="Output directory; an existing one is resumed."),
    overwrite: bool = overwrite_option(),
) -> None:
    """Check that BREAD's verdict on simulated data carries over to real data (BREAD paper, Secs. 3.2, 5.1).

    Fits the hyperparameters on the real data (NUTS), simulates data from the fit, runs forward AIS on both
    and reverse AIS on the simulated data from approximate posterior samples after S MCMC steps, then states
    whether the real and simulated forward curves climb alike and whether the reverse curves depend on S.
    """
    import jax

    from ..realdata import CASES
    from ..realdata.protocol import open_run_store, run_config

    if model not in CASES:
        raise CLIError(f"--model: unknown model {model!r}; choose one of: {', '.join(CASES)}")
    case = CASES[model]
    if ppl not in PPLS:
        written = [p for p in PPLS if any(p in c.ppls for c in CASES.values())]
        raise CLIError(f"--ppl: unknown language {ppl!r}; choose one of: {', '.join(written)}")
    if ppl not in case.ppls:
        raise CLIError(f"--ppl: {model} is written in {', '.join(case.ppls)}, not in {ppl}; choose one of those")
    if uncentred and model != "matrix-factorization":
        raise CLIError("--uncentred applies to --model matrix-factorization only")
    if kernel not in KERNELS:
        raise CLIError(f"--kernel: unknown kernel {kernel!r}; choose nuts or hmc")
    step_list = parse_steps(steps)
    s_list = parse_steps(mcmc_steps, option="--mcmc-steps", smallest=0)
    at_least(runs, "--runs", 2, "100")  # quartiles and standard errors need two runs
    at_least(seed, "--seed", 0, "0")
    suffix = "-uncentred" if uncentred else ""
    out = output_dir(out, f"bread-real-{model}{suffix}-{ppl}")
    key = jax.random.key(seed)
    context = {"command": "bread-real", "model": model, "ppl": ppl, "uncentred": uncentred}
    # Settings are compared before the model is built (a Stan program compiles for minutes).
    open_run_store(out, run_config(key, hyperparameters=case.hyperparameters, num_runs=runs, kernel=kernel),
                   context=context, overwrite=overwrite)
    _run(case, model=model, ppl=ppl, key=key, steps=step_list, runs=runs, mcmc_steps=s_list, kernel=kernel,
         uncentred=uncentred, out=out, context=context)


def _run(case, *, model, ppl, key, steps, runs, mcmc_steps, kernel, uncentred, out: Path, context) -> None:
    from ..realdata import bread_real

    stdout = console()
    built, real = case.build(ppl=ppl, **({"centre": False} if uncentred else {}))
    stdout.print(f"[bold]{model}[/] ({ppl}) on {case.dataset.removeprefix('load_')}: hyperparameters "
                 f"{', '.join(case.hyperparameters)}; {runs} runs per condition and T; output in {escape(str(out))}",
                 soft_wrap=True)
    res = bread_real(key, built, real, hyperparameters=case.hyperparameters, steps=steps, num_runs=runs,
                     mcmc_steps=mcmc_steps, kernel=kernel, out=out, context=context,
                     on_stage=lambda s: stdout.print(f"[dim]- {escape(s)}[/]", soft_wrap=True),
                     progress=stdout.is_terminal)

    fitted = ", ".join(f"{k} = {float(v):.4g}" for k, v in res.fit.hyperparameters.items())
    stdout.print(f"fitted (posterior medians on the real data): {fitted}", soft_wrap=True)
    table = Table(title="quartiles of the single-run log-ML estimates (nats)", title_justify="left")
    for col in ("condition", "T", "25%", "median", "75%"):
        table.add_column(col, justify="right")
    quartiles = res.quartiles()
    for _, r in quartiles.iterrows():
        table.add_row(r["condition"], str(int(r["num_steps"])), f"{r['q25']:.2f}", f"{r['median']:.2f}",
                      f"{r['q75']:.2f}")
    stdout.print(table)
    bounds = res.bread_bounds()
    if len(bounds):
        largest = bounds[bounds["S"] == bounds["S"].max()]
        stdout.print("BREAD bound B-hat on the simulated data (largest S): " + ", ".join(
            f"T={int(r['num_steps'])}: {r['b_hat']:.2f} ± {r['b_hat_stderr']:.2f}" for _, r in largest.iterrows()),
            soft_wrap=True)
    colour = "green" if res.forward.consistent else "bold red"
    stdout.print(f"[{colour}]{escape(res.forward.summary())}[/]", soft_wrap=True)
    if not res.forward.consistent:
        stdout.print("The simulated data do not behave like the real data: BREAD's bounds on them say little about "
                     "inference on the real data. Suspect model misspecification (Appendix D).", soft_wrap=True)
    colour = "green" if res.reverse.agree else "yellow"
    stdout.print(f"[{colour}]{escape(res.reverse.summary())}[/]", soft_wrap=True)

    for frame, name in ((quartiles, "quartiles.csv"), (bounds, "bread.csv"),
                        (res.forward.table, "forward_consistency.csv"), (res.reverse.table, "reverse_agreement.csv")):
        write_table(frame, out / name)
    write_json_atomic(out / "verdict.json", {
        "model": model, "ppl": ppl, "uncentred": uncentred,
        "hyperparameters": {k: float(v) for k, v in res.fit.hyperparameters.items()},
        "forward_consistent": res.forward.consistent, "forward_relative": res.forward.relative,
        "forward_discrepancy_nats": res.forward.discrepancy, "forward_summary": res.forward.summary(),
        "reverse_agree": res.reverse.agree, "reverse_relative": res.reverse.relative,
        "reverse_summary": res.reverse.summary()})
    title = f"{model}{' (uncentred ratings)' if uncentred else ''}, {ppl}"
    res.plot(title=title).savefig(out / "bread_real.png", dpi=120)
    wrote(stdout, out / "runs.csv", out / "settings.json", out / "bread_real.png",
          note=", quartiles.csv, bread.csv, verdict.json")


