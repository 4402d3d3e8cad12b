"""Exchangeable components of a model's latent state: found by permuting them, and put in a canonical order.

A mixture whose components are exchangeable (i.i.d. priors on their parameters, a symmetric Dirichlet on the
weights) has a posterior invariant under the ``K!`` relabellings of its components. A correct sampler that stays in
one labelling (what NUTS does when the modes are apart) then draws each component's parameters from one of the
``K!`` mirror images, chosen by where it started and not by the data: ranks of ``mu[0]`` are not uniform although
nothing is wrong. Quantities that do not depend on the labels are calibrated all the same, and SBC is valid for
any function of the latent: ordering the components by one of their parameters (the means, say) gives such
functions, and the log-likelihood is one already.

Components are given as **sites**: latent sites, on the model's natural (constrained) space, whose leading axis
indexes the same ``K`` components (``mu`` of shape ``(K,)``, ``w`` on the ``K``-simplex). A relabelling permutes
that axis of every one of them at once. :func:`find_exchangeable` checks a named group, or finds one, by
permuting it:

- the log-likelihood of simulated data must not change under a relabelling (to rounding), at several prior
  draws;
- the prior must be exchangeable: each component's prior draws must match the first component's (a two-sample
  Kolmogorov-Smirnov test per site and component, at ``1e-4`` each), which a prior that sets the components
  apart (``mu[0] ~ N(-2, 1)``, ``mu[1] ~ N(2, 1)``) fails.

Both together make the posterior invariant. Models whose latent is a dict of sites with ``constrain`` and
``unconstrain`` (the NumPyro, PyMC and Stan adapters) are supported; for others :func:`find_exchangeable` finds
nothing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from scipy import stats

from ..contracts.capabilities import NamedValues, supports
from ..contracts.model import simulate
from ..errors import BDMCError

PRIOR_DRAWS = 400  # prior draws behind the exchangeability test of the prior
PRIOR_LEVEL = 1e-4  # each Kolmogorov-Smirnov test's level: a prior that sets components apart fails it by far
LIKELIHOOD_CHECKS = 4  # prior draws (each with its own simulated data) at which a relabelling is evaluated
MAX_COMPONENTS = 6  # 720 relabellings: the bracketing's symmetry correction enumerates them


@dataclass(frozen=True)
class Exchangeable:
    """Latent sites whose leading axis indexes ``num_components`` exchangeable components.

    Attributes
    ----------
    sites : tuple of str
        The sites permuted together by a relabelling.
    by : str
        The site whose first scalar per component orders the components (:meth:`canonical`).
    num_components : int
    """

    sites: tuple[str, ...]
    by: str
    num_components: int

    @property
    def log_labellings(self) -> float:
        """``log K!``: the log number of relabellings."""
        return math.lgamma(self.num_components + 1)

    def describe(self) -> str:
        return (f"{', '.join(self.sites)} ({self.num_components} exchangeable components, ordered by "
                f"{self.by})")

    def order(self, values: Mapping):
        """The permutation that sorts the components by the first scalar of ``by`` (ascending)."""
        key = jnp.reshape(jnp.asarray(values[self.by]), (self.num_components, -1))[:, 0]
        return jnp.argsort(key)

    def relabel(self, values: Mapping, permutation) -> dict:
        """``values`` with component ``permutation[k]`` moved to position ``k`` in every exchangeable site."""
        return {n: jnp.asarray(v)[permutation] if n in self.sites else v for n, v in values.items()}

    def canonical(self, values: Mapping) -> dict:
        """``values`` with the components in their canonical order: a label-invariant function of the latent."""
        return self.relabel(values, self.order(values))


def as_exchangeable(model, sites: Sequence[str], *, by: str | None = None) -> Exchangeable:
    """The named sites as an :class:`Exchangeable` group (shapes checked, not the symmetry: see
    :func:`find_exchangeable`)."""
    values = _values(model, model.sample_prior(jax.random.key(0)))
    sites = tuple(sites)
    unknown = [s for s in sites if s not in values]
    if not sites or unknown:
        raise BDMCError(f"exchangeable components: {unknown or 'no sites'} named, but the model's latent sites are "
                        f"{sorted(values)}")
    sizes = {s: (np.shape(values[s]) or (0,))[0] for s in sites}
    if len(set(sizes.values())) != 1 or min(sizes.values()) < 2:
        raise BDMCError(f"exchangeable sites must share a leading axis of at least 2 components, got leading sizes "
                        f"{sizes}")
    by = by or _default_key(values, sites)
    if by not in sites:
        raise BDMCError(f"the components are ordered by one of their own sites {list(sites)}, got {by!r}")
    k = next(iter(sizes.values()))
    if k > MAX_COMPONENTS:
        raise BDMCError(f"{k} exchangeable components: at most {MAX_COMPONENTS} are supported ({k}! relabellings)")
    return Exchangeable(sites=sites, by=by, num_components=int(k))


def find_exchangeable(key, model, sites: Sequence[str] | None = None, *, by: str | None = None) -> Exchangeable | None:
    """The model's exchangeable components, checked by permuting them (module docstring).

    Parameters
    ----------
    key : PRNG key
    model : Model
        A model whose latent is a dict of sites with ``constrain`` and ``unconstrain``.
    sites : sequence of str, optional
        The sites to check. None: every group of sites sharing a leading axis of 2 to ``MAX_COMPONENTS`` is
        tried, largest group first, and the first that passes is returned.
    by : str, optional
        The site that orders the components (default: the first named that is not a simplex).

    Returns
    -------
    Exchangeable or None
        None when ``sites`` is None and no group passes (or the model's latent is not a dict of sites).

    Raises
    ------
    BDMCError
        Named ``sites`` that are not exchangeable, saying which test they fail.
    """
    if not _has_sites(model):
        if sites is not None:
            raise BDMCError(f"exchangeable components need a model whose latent is a dict of named sites with "
                            f"constrain/unconstrain (a NumPyro, PyMC or Stan program); {type(model).__name__} is not")
        return None
    if sites is not None:
        group = as_exchangeable(model, sites, by=by)
        why = _asymmetry(key, model, group)
        if why is not None:
            raise BDMCError(f"{', '.join(group.sites)} are not exchangeable components: {why}")
        return group
    for group in _candidate_groups(model):
        if _asymmetry(key, model, group) is None:
            return group
    return None


def relabel_latent(model, spec: Exchangeable, latent, permutation):
    """The latent (unconstrained) of ``latent`` relabelled by ``permutation``."""
    return model.unconstrain(spec.relabel(_values(model, latent), permutation))


def permutations(num_components: int) -> np.ndarray:
    """Every relabelling of ``num_components`` components, the identity first: ``(K!, K)``."""
    return np.asarray(list(itertools.permutations(range(num_components))))


def canonical_quantities(model, spec: Exchangeable, flat_latents, unravel) -> tuple[np.ndarray, tuple[str, ...]]:
    """Label-invariant quantities of many latents: every site on its natural space, components in canonical
    order, flattened; ``(values (N, Q), names)``.

    ``flat_latents`` are ``(N, d)`` raveled latents and ``unravel`` undoes the ravel of one. JAX-traceable
    adapters are mapped in one compiled program; a host-side one (Stan) is called per latent.
    """
    flat_latents = np.asarray(flat_latents)

    def one(x):
        return ravel_pytree(spec.canonical(_values(model, unravel(x))))[0]

    values = np.asarray(_mapped(one, flat_latents))
    example = spec.canonical(_values(model, unravel(flat_latents[0])))
    names = []
    for site in sorted(example):  # ravel_pytree's (sorted dict) order
        shape = np.shape(example[site])
        ordered = " (ordered by " + spec.by + ")" if site in spec.sites else ""
        names += ([f"{site}{ordered}"] if shape == () else
                  [f"{site}[{', '.join(map(str, i))}]{ordered}" for i in np.ndindex(*shape)])
    return values, tuple(names)


def labellings(spec: Exchangeable, model, flat_latents, unravel) -> np.ndarray:
    """The ordering permutation of each latent, as one integer per latent (its index among the ``K!``)."""
    index = {tuple(p): i for i, p in enumerate(permutations(spec.num_components))}

    def one(x):
        return spec.order(_values(model, unravel(x)))

    orders = np.asarray(_mapped(one, np.asarray(flat_latents)))
    return np.asarray([index[tuple(int(v) for v in o)] for o in orders])


# ----------------------------------------------------------------------------------------------- internals


def _has_sites(model) -> bool:
    if not supports(model, NamedValues):
        return False
    return isinstance(_values(model, model.sample_prior(jax.random.key(0))), Mapping)


def _values(model, latent) -> dict:
    return dict(model.constrain(latent))


def _eps() -> float:
    return float(np.finfo(jnp.result_type(float)).eps)


def _prior_values(model, keys) -> dict:
    """Prior draws of every site on its natural space, stacked: one compiled program where the adapter is
    JAX-traceable, else one draw at a time."""

    stacked = _mapped(lambda k: _values(model, model.sample_prior(k)), keys)
    return {n: np.asarray(v, np.float64) for n, v in stacked.items()}


def _mapped(fn, xs):
    """``fn`` over the leading axis of ``xs``, stacked: one compiled program where the adapter is JAX-traceable,
    else one item at a time (a program whose values or prior draws are made on the host, as Stan's)."""
    try:
        return jax.jit(jax.vmap(fn))(xs)
    except TypeError:
        return jax.tree.map(lambda *leaves: np.stack([np.asarray(x) for x in leaves]), *[fn(x) for x in xs])


def _default_key(values: Mapping, sites: Sequence[str]) -> str:
    """The first site whose components are not a simplex (weights order the components poorly: they tie)."""
    for site in sites:
        v = np.asarray(values[site], np.float64)
        if not (v.ndim == 1 and np.all(v >= 0) and abs(v.sum() - 1.0) < 1e-6):
            return site
    return sites[0]


def _candidate_groups(model) -> list[Exchangeable]:
    values = _values(model, model.sample_prior(jax.random.key(0)))
    by_size: dict[int, list[str]] = {}
    for site, v in values.items():
        shape = np.shape(v)
        if shape and 2 <= shape[0] <= MAX_COMPONENTS:
            by_size.setdefault(int(shape[0]), []).append(site)
    groups = sorted(by_size.items(), key=lambda kv: -len(kv[1]))
    return [Exchangeable(sites=tuple(s), by=_default_key(values, s), num_components=k) for k, s in groups]


def _asymmetry(key, model, spec: Exchangeable) -> str | None:
    """Why ``spec`` is not a symmetry of the posterior, or None when both tests pass."""
    k_prior, k_lik = jax.random.split(key)
    shift = np.roll(np.arange(spec.num_components), 1)  # a cyclic relabelling moves every component
    for i in range(LIKELIHOOD_CHECKS):
        sim = simulate(jax.random.fold_in(k_lik, i), model)
        moved = relabel_latent(model, spec, sim.exact_latent, shift)
        before = float(jnp.sum(model.log_likelihood(sim.exact_latent, sim.data)))
        after = float(jnp.sum(model.log_likelihood(moved, sim.data)))
        # To rounding in the active dtype (summing the components in another order changes the last bits).
        if not math.isfinite(before) or abs(after - before) > 1e3 * _eps() * max(1.0, abs(before)):
            return (f"relabelling the components changes the log-likelihood of simulated data ({before:.6g} to "
                    f"{after:.6g}): the data are not modelled symmetrically in them")
    draws = _prior_values(model, jax.random.split(k_prior, PRIOR_DRAWS))
    for site in spec.sites:
        first = draws[site][:, 0].reshape(PRIOR_DRAWS, -1)
        for c in range(1, spec.num_components):
            other = draws[site][:, c].reshape(PRIOR_DRAWS, -1)
            for j in range(first.shape[1]):
                p = stats.ks_2samp(first[:, j], other[:, j]).pvalue
                if p < PRIOR_LEVEL:
                    return (f"their priors differ: {PRIOR_DRAWS} prior draws of {site}[{c}] and {site}[0] differ "
                            f"(Kolmogorov-Smirnov p = {p:.2g}; medians {np.median(other[:, j]):.3g} and "
                            f"{np.median(first[:, j]):.3g}), so the posterior is not symmetric in their labels")
    return None
