"""The Model contract, the intermediate densities f(x; lambda) and simulation of data.

A model is a hashable (frozen dataclass) object with pure functions

- ``sample_prior(key) -> latent``: an exact draw of all latent variables from the prior;
- ``sample_data(key, latent) -> data``: y ~ p(y | latent);
- ``log_prior(latent) -> scalar``: normalized log prior density;
- ``log_likelihood(latent, data) -> array[N]``: one term per data case.

A model whose latent state is collapsed may define ``log_density(latent, data, lam)`` itself (normalized at
lam = 0). What a model can do beyond these (Gibbs conditionals, an exact evidence, ...) is a capability
protocol of :mod:`bdmc.contracts.capabilities`. Models are static arguments of compiled functions, so
they must be hashable and compare by value.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import array_memo, cached
from ..errors import DataError
from .capabilities import ChecksData, CollapsedDensity, JointTerms, supports
from .nonfinite import nonfinite_check

PyTree = Any


@runtime_checkable
class Model(Protocol):
    """The contract every model obeys (see module docstring)."""

    def sample_prior(self, key) -> PyTree: ...

    def sample_data(self, key, latent: PyTree) -> PyTree: ...

    def log_prior(self, latent: PyTree) -> jax.Array: ...

    def log_likelihood(self, latent: PyTree, data: PyTree) -> jax.Array: ...


def log_density(model: Model, latent: PyTree, data: PyTree, lam) -> jax.Array:
    """Unnormalized log density of the intermediate distribution ``f(latent; lam)``.

    ``log f(x; lam) = log_prior(x) + sum_i lam_i log p(y_i | x)``, where ``lam`` is a scalar (geometric
    annealing) or one weight per data case (the data path). Terms with zero weight contribute exactly zero,
    even when their log-likelihood is -inf. The value is checked by :func:`nonfinite_check`.
    """
    if supports(model, CollapsedDensity):
        value = model.log_density(latent, data, lam)
    else:
        log_prior, terms = prior_and_terms(model, latent, data)
        value = log_prior + weighted_sum(lam, terms)
    nonfinite_check(value < jnp.inf, latent)
    return value


def prior_and_terms(model: Model, latent: PyTree, data: PyTree) -> tuple[jax.Array, jax.Array]:
    """``(log_prior(latent), log_likelihood(latent, data))``, from one evaluation where the model offers it
    (:class:`~bdmc.contracts.capabilities.JointTerms`: a WebPPL program runs once, not twice)."""
    if supports(model, JointTerms):
        return model.prior_and_terms(latent, data)
    return model.log_prior(latent), model.log_likelihood(latent, data)


def proposal_log_density(model: Model, latent: PyTree, data: PyTree, lam) -> jax.Array:
    """:func:`log_density` as a kernel's acceptance rule reads it at a *proposal*: NaN or +inf become -inf.

    A trajectory that diverges (an HMC step that overflowed) reaches densities no state may have; the
    proposal is rejected, as NumPyro, Stan and BlackJAX reject it, and the run counts a divergence (the
    check inside :func:`log_density` still records it). Never use it for a weight.
    """
    return legal_for_acceptance(log_density(model, latent, data, lam))


def legal_for_acceptance(value) -> jax.Array:
    """``value`` with NaN and +inf replaced by -inf: what an acceptance rule may compare."""
    return jnp.where(value < jnp.inf, value, -jnp.inf)


def weighted_sum(lam, terms) -> jax.Array:
    """``sum_i lam_i * terms_i`` with ``0 * (-inf) = 0`` (a switched-off data case adds nothing)."""
    lam = jnp.asarray(lam, terms.dtype)
    if lam.ndim == 0:  # one pass over the terms (the annealing path's case, evaluated at every leapfrog step)
        return jnp.where(lam == 0, 0.0, lam * jnp.sum(terms))
    lam = jnp.broadcast_to(lam, terms.shape)
    return jnp.sum(jnp.where(lam == 0, 0.0, lam * terms))


def log_density_increment(model: Model, latent: PyTree, data: PyTree, lam_from, lam_to) -> jax.Array:
    """``log f(x; lam_to) - log f(x; lam_from)``: the AIS log-weight increment at state ``x``.

    It is -inf wherever ``f(x; lam_to)`` is zero, whatever ``f(x; lam_from)`` is. Checked like
    :func:`log_density`: a NaN or +inf term whose weight changes fails the check.
    """
    if supports(model, CollapsedDensity):
        to, frm = model.log_density(latent, data, lam_to), model.log_density(latent, data, lam_from)
        nonfinite_check((to < jnp.inf) & (frm < jnp.inf), latent)
        return jnp.where(to == -jnp.inf, -jnp.inf, to - frm)
    return increment_from_terms(model.log_likelihood(latent, data), latent, lam_from, lam_to)


def increment_from_terms(terms, latent: PyTree, lam_from, lam_to) -> jax.Array:
    """``sum_i (lam_to_i - lam_from_i) * terms_i`` given the likelihood terms at ``latent``, checked like
    :func:`log_density_increment` (a NaN or +inf term whose weight changes fails the check)."""
    delta = jnp.asarray(lam_to, terms.dtype) - jnp.asarray(lam_from, terms.dtype)
    if delta.ndim == 0:
        # One pass: the sum is below +inf exactly when every term is (a NaN or +inf term makes it NaN or +inf).
        total = jnp.sum(terms)
        nonfinite_check((total < jnp.inf) | (delta == 0), latent)
        return jnp.where(delta == 0, 0.0, delta * total)
    delta = jnp.broadcast_to(delta, terms.shape)
    nonfinite_check(jnp.all((terms < jnp.inf) | (delta == 0)), latent)
    return jnp.sum(jnp.where(delta == 0, 0.0, delta * terms))


def log_predictive(model: Model, latent: PyTree, data: PyTree, lam, i) -> jax.Array:
    """``model.log_predictive(latent, data, lam, i)`` (SMC's posterior proposal), checked like a log density."""
    value = model.log_predictive(latent, data, lam, i)
    nonfinite_check(value < jnp.inf, latent)
    return value


def n_cases(model: Model, data: PyTree) -> int:
    """Number of data cases N (the length of ``log_likelihood``)."""
    leaves, treedef = jax.tree.flatten(data)
    return _n_cases(model, treedef, tuple(jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x)) for x in leaves))


@cached(maxsize=256)
def _n_cases(model, treedef, shapes) -> int:
    # Tracing log_likelihood costs milliseconds; the answer depends only on the model and the data's shapes.
    latent = jax.eval_shape(model.sample_prior, jax.random.key(0))
    out = jax.eval_shape(model.log_likelihood, latent, jax.tree.unflatten(treedef, shapes))
    return int(out.shape[0])


def validate_data(model: Model, data: PyTree) -> PyTree:
    """Return ``data`` as JAX arrays after checking it is finite and shaped as the model expects."""
    leaves, treedef = jax.tree.flatten(data)
    if not leaves:
        raise DataError("data is empty")
    # A JAX array is checked once while it lives (bdmc.caching.array_memo) and passed on as it is: a warm call on
    # large data copies nothing to the host.
    for i, leaf in enumerate(leaves):
        array_memo(leaf, "valid data", lambda a, i=i: _check_leaf(a, i))
    data = jax.tree.unflatten(treedef, [leaf if isinstance(leaf, jax.Array) else jnp.asarray(np.asarray(leaf))
                                        for leaf in leaves])
    if supports(model, ChecksData):
        model.check_data(data)
    return data


def _check_leaf(leaf, i: int) -> bool:
    """True, or a DataError naming leaf ``i`` when it is not numeric or holds NaN or inf."""
    arr = np.asarray(leaf)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise DataError(f"data leaf {i} has non-numeric dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise DataError(
            f"data leaf {i} contains {int((~np.isfinite(arr)).sum())} non-finite value(s) "
            f"(NaN or inf), the first at index {tuple(int(b) for b in bad)}"
        )
    return True


def check_array_shape(name: str, array, shape: tuple) -> None:
    """Raise a DataError unless ``array.shape`` matches ``shape`` (None matches any size)."""
    got = tuple(np.shape(array))
    if len(got) != len(shape) or any(s is not None and s != g for s, g in zip(shape, got, strict=False)):
        want = tuple("any" if s is None else s for s in shape)
        raise DataError(f"{name} must have shape {want}, got {got}")


class Simulated(NamedTuple):
    """A simulated data set and the latent variables that generated it (an exact posterior sample)."""

    data: PyTree
    exact_latent: PyTree


def simulate(key, model: Model) -> Simulated:
    """Simulate a data set: ``Simulated(data, exact_latent)``, which unpacks as a pair.

    The latent variables drawn to generate the data are an exact sample from the posterior given that data
    (BDMC paper, Sec. 4.2): they are what reverse AIS starts from.
    """
    key_latent, key_data = jax.random.split(key)
    latent = model.sample_prior(key_latent)
    data = model.sample_data(key_data, latent)
    return Simulated(data, latent)
