"""BREAD on real data: the fitted-hyperparameter protocol of Grosse, Ancha and Roy (2016), Secs. 3.2 and 5.1.

1. Fit the hyperparameters eta on the real data by NUTS (posterior medians).
2. Simulate parameters and data from the model with eta held at the fit.
3. Forward AIS on the real and on the simulated data, ``num_runs`` independent runs (chains) per chain length.
4. Reverse AIS on the simulated data from approximate posterior samples: the simulated (eta-hat, theta) moved
   by S NUTS steps on the simulated posterior, for each S; the reverse chains of one S share that start.
5. Compare: the forward curves of real and simulated data must climb alike (up to a vertical shift) for
   the simulated data to stand in for the real data, and the reverse curves should not depend on S.

Every finished estimate (all runs of one condition and chain length) is appended to ``runs.csv`` in the output
directory as it ends, and the fit and simulated data are saved, so an interrupted protocol resumes where it
stopped; the directory is an output store (:mod:`bdmc.experiments.store`): ``settings.json`` records the
settings, a directory with other settings is refused, a damaged last row is dropped and its estimate
recomputed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd
from jax.flatten_util import ravel_pytree

from ..contracts.capabilities import ConditionalPrior, require
from ..contracts.estimate import seed_of
from ..core.ais import forward_ais, reverse_ais
from ..errors import BDMCError
from ..experiments.store import RunStore
from ..files import write_atomic, write_json_atomic
from ..kernels import HMC, NUTS
from .consistency import ForwardConsistency, ReverseAgreement, forward_consistency, reverse_agreement
from .mcmc import PosteriorFit, fit_hyperparameters, posterior_checkpoints

RUN_COLUMNS = ["condition", "num_steps", "chain", "log_ml", "seconds"]
RUN_DTYPES = {"condition": str, "num_steps": int, "chain": int, "log_ml": float, "seconds": float}
RUNS_NAME, FIT_NAME, SIMULATED_NAME = "runs.csv", "fit.json", "simulated.npz"
# Files derived from the runs (written by ``bdmc bread-real``), discarded with them.
DERIVED = ("quartiles.csv", "bread.csv", "forward_consistency.csv", "reverse_agreement.csv", "verdict.json",
           "bread_real.png")


@dataclass(frozen=True)
class RealDataResult:
    """Every AIS run of the protocol and the two verdicts.

    Attributes
    ----------
    runs : pandas.DataFrame
        One row per chain: ``condition`` ("forward-real", "forward-simulated", "reverse-S{S}"),
        ``num_steps`` T, ``chain``, ``log_ml`` (the chain's single-run bound on log p(y): lower for forward,
        upper for reverse) and the run's ``seconds``.
    fit : PosteriorFit
    forward : ForwardConsistency
        Do real and simulated forward curves climb alike?
    reverse : ReverseAgreement
        Do the reverse curves depend on the number S of MCMC steps behind their start?
    """

    runs: pd.DataFrame
    fit: PosteriorFit
    forward: ForwardConsistency
    reverse: ReverseAgreement

    def quartiles(self) -> pd.DataFrame:
        """Quartiles of ``log_ml`` per condition and chain length."""
        return quartile_table(self.runs)

    def bread_bounds(self) -> pd.DataFrame:
        """B-hat (mean reverse minus mean forward on the simulated data) per S and T, with standard errors."""
        return bread_table(self.runs)

    def plot(self, *, title: str | None = None):
        """The quartile plots of the paper's Figs. 1, 5 and 6 (see :func:`bdmc.plotting.plot_real_data`)."""
        from ..plotting.real_data import plot_real_data

        return plot_real_data(self.runs, bounds=self.bread_bounds(), title=title, verdict=self.forward)


def bread_real(
    key,
    model,
    real_data,
    *,
    hyperparameters: Sequence[str],
    steps: Sequence[int] = (10, 100, 1000),
    num_runs: int = 100,
    mcmc_steps: Sequence[int] = (10, 100, 1000, 10000),
    num_warmup: int = 500,
    num_samples: int = 500,
    kernel: str = "nuts",
    max_tree_depth: int = 10,
    num_integration_steps: int = 10,
    out: str | Path | None = None,
    overwrite: bool = False,
    context: Mapping[str, Any] | None = None,
    on_stage: Callable[[str], None] | None = None,
    progress="auto",
) -> RealDataResult:
    """Run the real-data BREAD protocol on one model.

    Parameters
    ----------
    key : PRNG key
    model : bdmc model
        Must provide ``sample_prior_given(key, fixed)`` (every PPL adapter does) and ``constrain``.
    real_data : dict
        The real observations, in the model's data format.
    hyperparameters : sequence of str
        Sites fitted on the real data and held fixed for the simulation.
    steps : sequence of int
        AIS chain lengths T.
    num_runs : int
        Independent runs (AIS chains) per condition and chain length (100 in the paper).
    mcmc_steps : sequence of int
        Numbers S of NUTS steps behind the reverse chains' approximate posterior sample; empty to run the
        forward comparison only.
    num_warmup, num_samples : int
        NUTS adaptation and sampling steps of the fit.
    kernel : {"nuts", "hmc"}
        The AIS transition, with the fit's step size and diagonal mass matrix: NUTS (trajectories adapt as the
        target widens from posterior to prior; much better per second than HMC on the paper's models) or HMC
        with a fixed trajectory.
    max_tree_depth : int
        NUTS's largest tree is ``2 ** max_tree_depth`` leapfrog steps.
    num_integration_steps : int
        HMC's leapfrog steps.
    out : path, optional
        Directory for ``settings.json``, ``fit.json``, ``simulated.npz`` and ``runs.csv``; an existing one with
        the same settings is resumed, one with other settings refused.
    overwrite : bool
        Discard what ``out`` holds instead of resuming.
    context : mapping, optional
        Further settings recorded and compared on resume (e.g. the model's name and language).
    on_stage : callable, optional
        Called with a short description as each stage starts.

    Returns
    -------
    RealDataResult
    """
    steps = _counts(steps, "steps", minimum=1)
    mcmc_steps = _counts(mcmc_steps, "mcmc_steps", minimum=0, allow_empty=True)
    require(model, ConditionalPrior, purpose="BREAD's real-data protocol (drawing parameters given fitted "
            "hyperparameters; the adapters bdmc.ppl.from_numpyro, from_pymc and from_stan provide it)")
    if kernel not in ("nuts", "hmc"):
        raise BDMCError(f"kernel must be 'nuts' or 'hmc', got {kernel!r}")
    if int(num_runs) != num_runs or num_runs < 1:
        raise BDMCError(f"num_runs must be an integer >= 1, got {num_runs}")
    say = on_stage or (lambda _: None)
    config = run_config(key, hyperparameters=hyperparameters, num_runs=num_runs, num_warmup=num_warmup,
                        num_samples=num_samples, kernel=kernel, max_tree_depth=max_tree_depth,
                        num_integration_steps=num_integration_steps)
    store = open_run_store(out, config, context=context, overwrite=overwrite) if out is not None else None
    out = store.dir if store is not None else None

    fit = _load_fit(out)
    if fit is None:
        say("fitting hyperparameters on the real data (NUTS)")
        fit = fit_hyperparameters(jax.random.fold_in(key, 0), model, real_data, hyperparameters=hyperparameters,
                                  num_warmup=num_warmup, num_samples=num_samples)
        _save_fit(out, config, fit)
    simulated, theta = _load_simulated(out, model)
    if simulated is None:
        say("simulating data from the fitted hyperparameters")
        theta = model.sample_prior_given(jax.random.fold_in(key, 1), fit.hyperparameters)
        simulated = model.sample_data(jax.random.fold_in(key, 2), theta)
        _save_simulated(out, simulated, theta)

    inverse_mass = tuple(float(v) for v in fit.inverse_mass)
    transition = (NUTS(model, step_size=fit.step_size, inverse_mass=inverse_mass, max_tree_depth=int(max_tree_depth))
                  if kernel == "nuts" else
                  HMC(model, step_size=fit.step_size, num_integration_steps=int(num_integration_steps),
                      inverse_mass=inverse_mass))
    runs = _complete_runs(store, num_runs)
    done = set(zip(runs["condition"], runs["num_steps"], strict=False)) if len(runs) else set()
    starts = None

    def record(condition, T, estimate):
        nonlocal runs
        row = pd.DataFrame({"condition": condition, "num_steps": T, "chain": np.arange(num_runs),
                            "log_ml": np.asarray(estimate.runs, dtype=np.float64), "seconds": estimate.seconds},
                           columns=RUN_COLUMNS)
        runs = pd.concat([runs, row], ignore_index=True) if len(runs) else row
        if store is not None:
            store.append(*row.to_dict("records"))  # the run's chains in one write

    conditions = [("forward-real", real_data), ("forward-simulated", simulated)]
    conditions += [(f"reverse-S{s}", simulated) for s in mcmc_steps]
    for c, (condition, data) in enumerate(conditions):
        for T in steps:
            if (condition, T) in done:
                continue
            run_key = jax.random.fold_in(jax.random.fold_in(key, 10 + c), T)
            if condition.startswith("forward"):
                say(f"{condition}: forward AIS, T = {T}, {num_runs} runs")
                est = forward_ais(run_key, model, data, num_steps=T, num_runs=num_runs, kernel=transition,
                                  progress=progress)
            else:
                if starts is None:
                    say(f"approximate posterior samples: {max(mcmc_steps)} NUTS steps from the simulated parameters")
                    starts = posterior_checkpoints(jax.random.fold_in(key, 3), model, simulated, theta,
                                                   checkpoints=mcmc_steps, step_size=fit.step_size,
                                                   inverse_mass=fit.inverse_mass)
                S = int(condition.removeprefix("reverse-S"))
                say(f"{condition}: reverse AIS, T = {T}, {num_runs} runs from the sample after {S} NUTS steps")
                est = reverse_ais(run_key, model, data, exact_latent=starts[S], num_steps=T, num_runs=num_runs,
                                  kernel=transition, progress=progress)
            record(condition, T, est)

    keep = runs["condition"].isin([c for c, _ in conditions]) & runs["num_steps"].isin(steps)
    runs = runs[keep].sort_values(["condition", "num_steps", "chain"], kind="stable").reset_index(drop=True)
    return RealDataResult(runs=runs, fit=fit, forward=forward_consistency(runs), reverse=reverse_agreement(runs))


def quartile_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Quartiles and count of ``log_ml`` per condition and chain length."""
    g = runs.groupby(["condition", "num_steps"])["log_ml"]
    return pd.DataFrame({"q25": g.quantile(0.25), "median": g.median(), "q75": g.quantile(0.75),
                         "n": g.size()}).reset_index()


def bread_table(runs: pd.DataFrame) -> pd.DataFrame:
    """B-hat = mean reverse bound - mean forward bound on the simulated data, per S and T."""
    fwd = runs[runs["condition"] == "forward-simulated"].groupby("num_steps")["log_ml"]
    rows = []
    for condition, rev in runs[runs["condition"].str.startswith("reverse-S")].groupby("condition"):
        for T, r in rev.groupby("num_steps")["log_ml"]:
            if T not in fwd.groups:
                continue
            f = fwd.get_group(T)
            rows.append({"S": int(condition.removeprefix("reverse-S")), "num_steps": int(T),
                         "b_hat": r.mean() - f.mean(),
                         "b_hat_stderr": float(np.sqrt(r.var(ddof=1) / r.size + f.var(ddof=1) / f.size))})
    return pd.DataFrame(rows, columns=["S", "num_steps", "b_hat", "b_hat_stderr"]).sort_values(
        ["S", "num_steps"], ignore_index=True)


# ---------------------------------------------------------------------------------------------- persistence

def _counts(values, name, *, minimum, allow_empty=False):
    try:
        values = sorted({int(v) for v in values})
    except (TypeError, ValueError):
        raise BDMCError(f"{name} must be integers, got {values!r}") from None
    if not values and allow_empty:
        return values
    if not values or values[0] < minimum:
        raise BDMCError(f"{name} must be non-empty integers >= {minimum}, got {values}")
    return values


def run_config(key, *, hyperparameters, num_runs, num_warmup=500, num_samples=500, kernel="nuts",
               max_tree_depth=10, num_integration_steps=10) -> dict:
    """The settings on which every run of the protocol depends (what :func:`bread_real` records and compares)."""
    return {"hyperparameters": list(hyperparameters), "num_runs": int(num_runs), "seed": list(seed_of(key)),
            "num_warmup": int(num_warmup), "num_samples": int(num_samples), "kernel": kernel,
            "max_tree_depth": int(max_tree_depth), "num_integration_steps": int(num_integration_steps)}


def open_run_store(out, config: Mapping[str, Any], *, context: Mapping[str, Any] | None = None,
                   overwrite: bool = False) -> RunStore:
    """The protocol's output store in ``out``: checked writable, settings compared, before any work.

    Parameters
    ----------
    out : path
    config : mapping
        From :func:`run_config`.
    context : mapping, optional
        Further settings to record and compare (the command line adds the model's name and language).
    overwrite : bool
        Discard what ``out`` holds (runs, fit, simulated data and derived tables) instead of resuming.

    Returns
    -------
    bdmc.experiments.store.RunStore

    Raises
    ------
    bdmc.experiments.store.StoreError
        When ``out`` is not a writable directory or holds a run with other settings.
    """
    from ..version import __version__

    settings = {**dict(context or {}), **config}
    out = Path(out)

    def renamed(saved):
        # Saved before "num_chains" was renamed "num_runs": the same setting, compared under its new name.
        if "num_chains" not in saved:
            return saved
        kept = {k: v for k, v in saved.items() if k not in ("num_chains", "num_runs")}
        return {**kept, "num_runs": saved["num_chains"]}

    def legacy(previous):
        if previous is not None:
            return renamed(previous)
        # Directories written before settings.json existed: the fit's config holds the row settings.
        if not (out / FIT_NAME).exists():
            return previous
        try:
            return renamed({**settings, **json.loads((out / FIT_NAME).read_text())["config"]})
        except (OSError, ValueError, KeyError):
            return None

    store = RunStore(out, csv_name=RUNS_NAME, dtypes=RUN_DTYPES, key=("condition", "num_steps", "chain"),
                     settings={**settings, "bdmc_version": __version__}, compare=tuple(settings),
                     overwrite=overwrite, discard=(FIT_NAME, SIMULATED_NAME, *DERIVED), legacy=legacy,
                     contents_key=("condition", "num_steps"))
    return store


def _complete_runs(store: RunStore | None, num_runs: int) -> pd.DataFrame:
    """Stored estimates with all their runs; one cut short (killed mid-write) is dropped to be recomputed."""
    if store is None or not store.rows:
        return pd.DataFrame(columns=RUN_COLUMNS)
    runs = store.table()
    sizes = runs.groupby(["condition", "num_steps"])["chain"].transform("size")
    if (sizes != num_runs).any():
        runs = runs[sizes == num_runs].reset_index(drop=True)
        store.rewrite(runs.to_dict("records"))
    return runs


def _load_fit(out) -> PosteriorFit | None:
    """The saved fit (its settings already compared by the store)."""
    if out is None or not (out / FIT_NAME).exists():
        return None
    f = json.loads((out / FIT_NAME).read_text())["fit"]
    return PosteriorFit(hyperparameters={k: np.asarray(v) for k, v in f["hyperparameters"].items()},
                        step_size=f["step_size"], inverse_mass=np.asarray(f["inverse_mass"]),
                        acceptance=f["acceptance"], seconds=f["seconds"])


def _save_fit(out, config, fit: PosteriorFit) -> None:
    if out is None:
        return
    f = {"hyperparameters": {k: np.asarray(v).tolist() for k, v in fit.hyperparameters.items()},
         "step_size": fit.step_size, "inverse_mass": fit.inverse_mass.tolist(), "acceptance": fit.acceptance,
         "seconds": fit.seconds}
    write_json_atomic(out / FIT_NAME, {"config": config, "fit": f})


def _load_simulated(out, model):
    if out is None or not (out / SIMULATED_NAME).exists():
        return None, None
    with np.load(out / SIMULATED_NAME) as z:
        data = {k.removeprefix("data/"): z[k] for k in z.files if k.startswith("data/")}
        flat = z["theta"]
    _, unravel = ravel_pytree(model.sample_prior(jax.random.key(0)))
    return data, unravel(flat)


def _save_simulated(out, data, theta) -> None:
    if out is None:
        return
    flat, _ = ravel_pytree(theta)
    write_atomic(out / SIMULATED_NAME,  # a file object: np.savez would append .npz to a path
                 lambda f: np.savez(f, theta=np.asarray(flat), **{f"data/{k}": np.asarray(v) for k, v in data.items()}))
