"""AIS/SMC estimates and sandwich tables as ArviZ ``InferenceData`` (what ArviZ and PyMC users expect).

An annealing run's final states become draws: one chain per run and one draw per particle (a single draw
for AIS). Forward runs end at the posterior, so their states go in ``posterior``; reverse runs end at the
prior, so theirs go in ``prior``. The log-weights, each run's log p(y) estimate and the combined estimate go
in ``sample_stats`` (``sample_stats_prior`` for reverse runs), the estimator's settings in attributes.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import xarray as xr

from ..checks.sandwich import SandwichResult
from ..contracts.estimate import Estimate
from ..core.records import AnnealResult
from ..errors import BDMCError, require


def to_inference_data(estimate_or_results, *, transform: Callable | None = None, model: Any = None):
    """An ``arviz.InferenceData`` of an AIS/SMC :class:`~bdmc.Estimate` or a :class:`~bdmc.checks.SandwichResult`.

    Parameters
    ----------
    estimate_or_results : Estimate or SandwichResult
        An estimate from ``forward_ais``, ``reverse_ais``, ``smc`` or ``shme`` (its ``details`` holds the
        run's :class:`~bdmc.AnnealResult` with its final states), or a sandwich result, whose table becomes
        the group ``sandwich`` (one entry per row) and whose run-level alarm goes in its attributes.
    transform : callable, optional
        ``transform(latent) -> {name: array}`` applied to each final state before export, e.g. a NumPyro
        program's ``model.constrain`` to report sites on their natural scale (latents are exported as they
        are otherwise, e.g. unconstrained).
    model : optional
        Recorded (its ``repr``) in the attributes.

    Returns
    -------
    arviz.InferenceData
        For an estimate: ``posterior`` (forward runs) or ``prior`` (reverse runs) with dims ``(chain, draw,
        ...)``; ``sample_stats`` / ``sample_stats_prior`` with ``log_weight`` (chain, draw) and
        ``log_marginal_likelihood`` (chain: each run's estimate), attributes ``log_marginal_likelihood``
        (the combined value), ``stderr``, ``bound``, ``combine``, ``certified_b3`` and the settings.

    Raises
    ------
    bdmc.BDMCError
        For an estimate without final states (not an annealing run) or an object of another type.
    """
    az = require("arviz", extra="arviz")
    if isinstance(estimate_or_results, SandwichResult):
        return _sandwich(az, estimate_or_results, model)
    if not isinstance(estimate_or_results, Estimate):
        raise BDMCError(f"to_inference_data takes an Estimate or a SandwichResult, got "
                        f"{type(estimate_or_results).__name__}")
    est = estimate_or_results
    run = est.details
    if not isinstance(run, AnnealResult):
        raise BDMCError(f"this estimate ({est.settings.get('direction', 'unknown direction')}, details "
                        f"{type(run).__name__}) has no annealing run with final states; to_inference_data exports "
                        "forward_ais, reverse_ais, smc and shme estimates")
    chains = len(est.runs)
    latents = jax.vmap(transform)(run.latents) if transform is not None else run.latents
    draws = {name: _chain_draw(np.asarray(leaf), chains, name) for name, leaf in _named_leaves(latents)}
    stats = {"log_weight": _chain_draw(np.asarray(run.log_weights, np.float64), chains, "log_weight")}
    attrs = {"log_marginal_likelihood": float(est.value), "stderr": float(est.stderr),
             "bound": str(est.bound), "combine": est.combine, "certified_b3": float(est.certified(3.0)),
             "seconds": float(est.seconds), "compile_seconds": float(est.compile_seconds),
             "n_evals": int(est.n_evals), "settings": json.dumps(dict(est.settings), default=str),
             "seed": json.dumps([int(s) for s in est.seed]), "inference_library": "bdmc"}
    if model is not None:
        attrs["model"] = repr(model)
    reverse = est.settings.get("direction") == "reverse" or est.bound == "upper"
    draws_group, stats_group = ("prior", "sample_stats_prior") if reverse else ("posterior", "sample_stats")
    with warnings.catch_warnings():  # AIS has one draw per chain, which ArviZ warns about
        warnings.filterwarnings("ignore", message="More chains")
        idata = az.from_dict(**{draws_group: draws, stats_group: stats}, attrs=attrs)
    # Each run's own estimate is per chain, not per draw: added with its own dims.
    idata[stats_group]["log_marginal_likelihood"] = xr.DataArray(
        np.asarray(est.runs, np.float64), dims=["chain"], coords={"chain": idata[stats_group].chain})
    for group in idata.groups():
        idata[group].attrs.update(attrs)
    return idata


def _sandwich(az, result: SandwichResult, model):
    table = result.table.reset_index(drop=True)
    ds = xr.Dataset.from_dataframe(table.rename_axis("row"))
    verdict = result.verdict.to_dict() if result.verdict is not None else None
    ds.attrs.update({"exact": float("nan") if result.exact is None else float(result.exact),
                     "verdict": json.dumps(verdict, default=str), "inference_library": "bdmc"})
    if model is not None:
        ds.attrs["model"] = repr(model)
    idata = az.InferenceData()
    idata.add_groups({"sandwich": ds}, warn_on_custom_groups=False)
    return idata


def _named_leaves(tree):
    out = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        parts = [str(getattr(p, "key", getattr(p, "name", getattr(p, "idx", p)))) for p in path]
        out.append((".".join(parts) or "x", leaf))
    return out


def _chain_draw(arr: np.ndarray, chains: int, name: str) -> np.ndarray:
    """(chains * particles, ...) -> (chain, draw, ...)."""
    if arr.shape[0] % chains:
        raise BDMCError(f"{name}: {arr.shape[0]} final states do not split into {chains} runs")
    return arr.reshape((chains, arr.shape[0] // chains) + arr.shape[1:])
