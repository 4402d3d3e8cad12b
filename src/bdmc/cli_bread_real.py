"""``bdmc bread-real``: the BREAD paper's real-data protocol on one of its five models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table


def bread_real_command(
    model: str = typer.Option(..., "--model", "-m",
                              help="linear-regression, logistic-regression, matrix-factorization, ar1 or mixture."),
    ppl: str = typer.Option("numpyro", "--ppl", help="Language the model is written in: numpyro, pymc or stan."),
    steps: str = typer.Option("10,100,1000", "--steps", "-s", "--T", help="Comma-separated AIS chain lengths T."),
    chains: int = typer.Option(100, "--chains", "-c", help="Chains per condition and chain length."),
    mcmc_steps: str = typer.Option("10,100,1000,10000", "--mcmc-steps", "-S",
                                   help="Comma-separated numbers S of NUTS steps behind the reverse chains' start."),
    kernel: str = typer.Option("nuts", "--kernel", help="AIS transition: nuts or hmc (fit's step size and mass)."),
    uncentred: bool = typer.Option(False, "--uncentred",
                                   help="matrix-factorization only: keep the raw ratings (Appendix D's misspecified case)."),
    seed: int = typer.Option(0, "--seed"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory; an existing one is resumed.",
                                       show_default="out/bread-real-MODEL-PPL"),
) -> None:
    """Check that BREAD's verdict on simulated data carries over to real data (BREAD paper, Secs. 3.2, 5.1).

    Fits the hyperparameters on the real data (NUTS), simulates data from the fit, runs forward AIS on both
    and reverse AIS on the simulated data from approximate posterior samples after S MCMC steps, then states
    whether the real and simulated forward curves climb alike and whether the reverse curves depend on S.
    """
    import jax

    from .cli import _console, _parse_steps
    from .realdata import CASES, bread_real

    console = _console()
    if model not in CASES:
        raise typer.BadParameter(f"unknown model {model!r}; choose one of: {', '.join(CASES)}", param_hint="'--model'")
    case = CASES[model]
    if ppl not in case.ppls:
        raise typer.BadParameter(f"{model} is written in {', '.join(case.ppls)}; not in {ppl!r}", param_hint="'--ppl'")
    if uncentred and model != "matrix-factorization":
        raise typer.BadParameter("--uncentred applies to matrix-factorization only", param_hint="'--uncentred'")
    step_list = _parse_steps(steps)
    s_list = [int(s) for s in mcmc_steps.split(",") if s.strip()]
    if not s_list or min(s_list) < 0:
        raise typer.BadParameter(f"give non-negative integers, got {mcmc_steps!r}", param_hint="'--mcmc-steps'")
    suffix = "-uncentred" if uncentred else ""
    out = Path(out) if out is not None else Path("out") / f"bread-real-{model}{suffix}-{ppl}"
    built, real = case.build(ppl=ppl, **({"centre": False} if uncentred else {}))
    console.print(f"[bold]{model}[/] ({ppl}) on {case.dataset.removeprefix('load_')}: hyperparameters "
                  f"{', '.join(case.hyperparameters)}; {chains} chains per run; output in {out}")
    res = bread_real(jax.random.key(seed), built, real, hyperparameters=case.hyperparameters, steps=step_list,
                     num_chains=chains, mcmc_steps=s_list, kernel=kernel, out=out,
                     on_stage=lambda s: console.print(f"[dim]- {s}[/]"), progress=console.is_terminal)

    fitted = ", ".join(f"{k} = {float(v):.4g}" for k, v in res.fit.hyperparameters.items())
    console.print(f"fitted (posterior medians on the real data): {fitted}")
    table = Table(title="quartiles of the single-chain log-ML estimates (nats)", title_justify="left")
    for col in ("condition", "T", "25%", "median", "75%"):
        table.add_column(col, justify="right")
    quartiles = res.quartiles()
    for _, r in quartiles.iterrows():
        table.add_row(r["condition"], str(int(r["num_steps"])), f"{r['q25']:.2f}", f"{r['median']:.2f}",
                      f"{r['q75']:.2f}")
    console.print(table)
    bounds = res.bread_bounds()
    if len(bounds):
        largest = bounds[bounds["S"] == bounds["S"].max()]
        console.print("BREAD bound B-hat on the simulated data (largest S): " + ", ".join(
            f"T={int(r['num_steps'])}: {r['b_hat']:.2f} ± {r['b_hat_stderr']:.2f}" for _, r in largest.iterrows()))
    colour = "green" if res.forward.consistent else "bold red"
    console.print(f"[{colour}]{res.forward.summary()}[/]", soft_wrap=True)
    if not res.forward.consistent:
        console.print("The simulated data do not behave like the real data: BREAD's bounds on them say little about "
                      "inference on the real data. Suspect model misspecification (Appendix D).", soft_wrap=True)
    colour = "green" if res.reverse.agree else "yellow"
    console.print(f"[{colour}]{res.reverse.summary()}[/]", soft_wrap=True)

    quartiles.to_csv(out / "quartiles.csv", index=False)
    bounds.to_csv(out / "bread.csv", index=False)
    res.forward.table.to_csv(out / "forward_consistency.csv", index=False)
    res.reverse.table.to_csv(out / "reverse_agreement.csv", index=False)
    (out / "verdict.json").write_text(json.dumps({
        "model": model, "ppl": ppl, "uncentred": uncentred,
        "hyperparameters": {k: float(v) for k, v in res.fit.hyperparameters.items()},
        "forward_consistent": res.forward.consistent, "forward_relative": res.forward.relative,
        "forward_discrepancy_nats": res.forward.discrepancy, "forward_summary": res.forward.summary(),
        "reverse_agree": res.reverse.agree, "reverse_relative": res.reverse.relative,
        "reverse_summary": res.reverse.summary()}, indent=1))
    title = f"{model}{' (uncentred ratings)' if uncentred else ''}, {ppl}"
    res.plot(title=title).savefig(out / "bread_real.png", dpi=120)
    console.print(f"[dim]wrote {out / 'bread_real.png'}, quartiles.csv, bread.csv, verdict.json[/]")
