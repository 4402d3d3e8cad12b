"""``bdmc bread``: the Jeffreys-divergence bound of AIS, exactly on the grid toys or by simulation on a model."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

TOYS = ("barrier", "easy", "hard")


def bread_command(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Built-in model (see `bdmc models`)."),
    toy: Optional[str] = typer.Option(None, "--toy", help="Grid toy of the BREAD paper: barrier, easy or hard."),
    steps: str = typer.Option("10,100,1000", "--steps", "-s", "--T",
                              help="Comma-separated numbers of intermediate distributions T."),
    chains: int = typer.Option(32, "--chains", "-c", help="Chain pairs per T (--model)."),
    seed: int = typer.Option(0, "--seed", help="Simulates the data (--model) or draws the random toy."),
    option: Optional[list[str]] = typer.Option(None, "--option", help="Model option KEY=VALUE (repeatable).",
                                               metavar="KEY=VALUE"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory.",
                                       show_default="out/bread-NAME"),
) -> None:
    """Bound the Jeffreys divergence between AIS samples and the posterior (BREAD).

    With --toy, J and its bound B are computed exactly on the paper's 7x7 grid toys. With --model, paired
    forward and reverse AIS on simulated data estimate B-hat (E[B-hat] >= J) and raise the bug alarm when
    the reverse bound falls below the forward one by more than chance allows.
    """
    from .cli import _console, _parse_options, _parse_steps

    console = _console()
    if (model is None) == (toy is None):
        raise typer.BadParameter("give exactly one of --model NAME or --toy barrier|easy|hard")
    step_list = _parse_steps(steps)
    name = model or toy
    out = Path(out) if out is not None else Path("out") / f"bread-{name}"
    out.mkdir(parents=True, exist_ok=True)
    if toy is not None:
        _toy(console, toy, step_list, seed, out)
    else:
        _model(console, model, step_list, chains, seed, option or [], out, _parse_options)


def _toy(console: Console, toy: str, steps: list[int], seed: int, out: Path) -> None:
    import numpy as np

    from .exact import grid_toys
    from .plotting.bread_toys import plot_bread_divergences

    if toy not in TOYS:
        raise typer.BadParameter(f"unknown toy {toy!r}; choose one of: {', '.join(TOYS)}", param_hint="'--toy'")
    rng = np.random.default_rng(seed)
    log_target = {"barrier": lambda: grid_toys.barrier(), "easy": lambda: grid_toys.easy_random(rng),
                  "hard": lambda: grid_toys.hard_random(rng)}[toy]()
    table = Table(title=f"BREAD on the {toy} grid toy (exact)", title_justify="left")
    for col in ("T", "J", "B", "E_fwd[log w]", "log Z", "E_rev[log w]"):
        table.add_column(col, justify="right")
    rows = []
    for T in steps:
        r = grid_toys.toy_jeffreys(log_target, T)
        rows.append({"toy": toy, "num_distributions": T, "J": r.J, "B": r.B, "log_w_forward": r.log_w_forward,
                     "log_z": r.log_z, "log_w_reverse": r.log_w_reverse})
        table.add_row(str(T), f"{r.J:.4g}", f"{r.B:.4g}", f"{r.log_w_forward:.4f}", f"{r.log_z:.4f}",
                      f"{r.log_w_reverse:.4f}")
    console.print(table)
    frame = pd.DataFrame(rows)
    frame.to_csv(out / "bread.csv", index=False)
    plot_bread_divergences(frame, title=f"{toy}: J (solid) and B (dashed)").savefig(out / "bread.png", dpi=150)
    console.print(f"[dim]wrote {out / 'bread.csv'} and {out / 'bread.png'}[/]", highlight=False)


def _model(console: Console, model: str, steps: list[int], chains: int, seed: int, options, out: Path,
           parse_options) -> None:
    import jax

    import bdmc

    if model not in bdmc.models.REGISTRY:
        choices = ", ".join(sorted(bdmc.models.REGISTRY))
        raise typer.BadParameter(f"unknown model {model!r}; choose one of: {choices}", param_hint="'--model'")
    cls = bdmc.models.REGISTRY[model]
    model_obj = cls(**parse_options(cls, options))
    res = bdmc.bread(jax.random.key(seed), model_obj, steps=steps, num_chains=chains,
                     progress=console.is_terminal)
    table = Table(title=f"BREAD on {model} (simulated data, {chains} chain pairs)", title_justify="left")
    for col in ("T", "B-hat ± stderr", "bug alarm", "seconds", "lik. evals"):
        table.add_column(col, justify="right")
    for _, r in res.table.iterrows():
        alarm = f"[bold red]FIRED[/] (p <= {r['alarm_p']:.2g})" if r["alarm"] else "[green]silent[/]"
        table.add_row(str(int(r["num_steps"])), f"{r['b_hat']:.4f} ± {r['b_hat_stderr']:.4f}", alarm,
                      f"{r['seconds']:.2f}", f"{int(r['n_evals']):,}")
    console.print(table)
    console.print("E[B-hat] upper-bounds the Jeffreys divergence between the distribution of AIS samples and the "
                  "posterior at each T.", highlight=False, soft_wrap=True)
    res.table.to_csv(out / "bread.csv", index=False)
    res.plot(title=f"{model}: BREAD bound against chain length").savefig(out / "bread.png", dpi=150)
    console.print(f"[dim]wrote {out / 'bread.csv'} and {out / 'bread.png'}[/]", highlight=False)
