"""Posterior samples from any MCMC as a dict of ``(num_samples, ...)`` arrays.

Accepted: a mapping of arrays (NumPyro's ``mcmc.get_samples()``, or anything already flat), a NumPyro
``MCMC`` object, an ArviZ ``InferenceData`` (PyMC's ``pm.sample`` result) or its ``posterior`` xarray
``Dataset`` (chains and draws are stacked), and a plain array (named ``"theta"``). ArviZ and xarray are
never imported here: they are recognised by their attributes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import BDMCError


def as_sample_dict(samples, *, var_names: Sequence[str] | None = None, chain_axis: bool = False) -> dict:
    """Flatten posterior samples from any source into ``{name: array of shape (num_samples, ...)}``.

    Parameters
    ----------
    samples : mapping, NumPyro MCMC, ArviZ InferenceData, xarray Dataset or array
        The posterior draws.
    var_names : sequence of str, optional
        Keep only these parameters.
    chain_axis : bool
        For a mapping or array: the leading two axes are ``(chain, draw)`` and are stacked (as NumPyro's
        ``get_samples(group_by_chain=True)`` returns). InferenceData and Datasets always carry named
        ``chain``/``draw`` dimensions and are stacked regardless.

    Returns
    -------
    dict of str to ndarray
        All entries share the leading ``num_samples`` axis.
    """
    if hasattr(samples, "posterior") and hasattr(samples, "groups"):  # ArviZ InferenceData (a Mapping too)
        samples = samples.posterior
    if hasattr(samples, "data_vars"):  # xarray Dataset with (chain, draw, ...) variables
        out = {}
        for name in samples.data_vars:
            da = samples[name]
            dims = tuple(da.dims)
            if dims[:2] != ("chain", "draw"):
                raise BDMCError(f"posterior variable {name!r} has dims {dims}; expected ('chain', 'draw', ...)")
            v = np.asarray(da.values)
            out[str(name)] = v.reshape((v.shape[0] * v.shape[1],) + v.shape[2:])
        chain_axis = False
        samples = out
    elif hasattr(samples, "get_samples") and callable(samples.get_samples):  # NumPyro MCMC
        samples = samples.get_samples(group_by_chain=chain_axis)
    elif not isinstance(samples, Mapping):
        arr = np.asarray(samples)
        if arr.dtype == object:
            raise BDMCError(f"cannot read posterior samples from {type(samples).__name__}")
        samples = {"theta": arr}

    out = {}
    for name, value in samples.items():
        if var_names is not None and name not in var_names:
            continue
        v = np.asarray(value)
        if chain_axis:
            if v.ndim < 2:
                raise BDMCError(f"samples[{name!r}] has shape {v.shape}; chain_axis=True needs (chain, draw, ...)")
            v = v.reshape((v.shape[0] * v.shape[1],) + v.shape[2:])
        if v.ndim < 1:
            raise BDMCError(f"samples[{name!r}] is a scalar; expected a leading num_samples axis")
        if np.issubdtype(v.dtype, np.floating) and not np.all(np.isfinite(v)):
            raise BDMCError(f"samples[{name!r}] contains non-finite values")
        out[str(name)] = v
    if var_names is not None:
        missing = sorted(set(var_names) - set(out))
        if missing:
            raise BDMCError(f"var_names {missing} are not in the samples (have {sorted(samples)})")
    if not out:
        raise BDMCError("no posterior samples to bracket with")
    sizes = {n: v.shape[0] for n, v in out.items()}
    if len(set(sizes.values())) != 1:
        raise BDMCError(f"parameters have different numbers of samples: {sizes}")
    return out
