"""Non-finite log densities: where they are checked, recorded and explained.

A NaN or +inf log density is a bug, and an MCMC kernel would hide it (a NaN proposal is just rejected).
Every density evaluated through this module calls ``nonfinite_check``. Outside a recording block it does
nothing (no operation is traced). The annealing engine opens one per chain and step (``recording``) with a
sink that writes, through mutable JAX references, whether a check failed and the state it failed at:
that works inside gradients, scans and the while loops of NUTS, under ``vmap``, with no host round trip.
Only when a run fails does the host re-evaluate the terms at that state (``describe_nonfinite``) to name
the culprit, so the hot path pays for one comparison and a few selects per density.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .capabilities import CollapsedDensity, NamesTerms, supports

PyTree = Any

_SINK: contextvars.ContextVar = contextvars.ContextVar("bdmc_nonfinite_sink", default=None)


@contextlib.contextmanager
def recording(sink: Callable[[Any, PyTree], None]):
    """Route the non-finite checks traced inside this block to ``sink(ok, latent)``."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def nonfinite_check(ok, latent: PyTree) -> None:
    """Report to the active recording whether a log density evaluated at ``latent`` is legal.

    ``ok`` is ``value < inf``: False for NaN and +inf, True for -inf (zero density). A state with a NaN or
    infinite coordinate is outside the space: a diverging integrator (an HMC trajectory that overflowed)
    reaches it, any density there is NaN, and the kernel rejects it, so it is not the model's failure. A
    no-op outside :func:`recording`, so code that evaluates densities elsewhere (estimators) is unchanged.
    """
    sink = _SINK.get()
    if sink is not None:
        floats = [x for x in jax.tree.leaves(latent) if jnp.issubdtype(jnp.result_type(x), jnp.inexact)]
        outside = jnp.any(jnp.stack([~jnp.all(jnp.isfinite(x)) for x in floats])) if floats else False
        sink(ok | outside, latent)


def describe_nonfinite(model, latent: PyTree, data: PyTree, lam, *,
                       zero: bool = False) -> tuple[str, int | None, float] | None:
    """Name the first NaN or +inf term of ``log f(latent; lam)``: ``(term, case, value)``, or None if all are fine.

    Runs on the host after a failed check. ``term`` is ``"log_density"`` for a model that defines its own,
    else ``"log_prior"`` or ``"log_likelihood"`` (with ``case`` the data case: NaN anywhere, +inf where its
    weight is nonzero). With ``zero=True`` a -inf term (zero density) counts too. A model may refine the
    name with ``describe_nonfinite_term(latent, data, term, case) -> str`` (the NumPyro adapter names the site).
    """
    def illegal(v):
        return np.isnan(v) | (v == np.inf) | (zero & (v == -np.inf))

    # Compiled, like the run that failed (eager evaluation can differ: e.g. NumPyro validates arguments).
    found = None
    if supports(model, CollapsedDensity):
        value = float(jax.jit(model.log_density)(latent, data, lam))
        if illegal(value):
            found = ("log_density", None, value)
    else:
        prior, terms = jax.jit(lambda x, d: (model.log_prior(x), model.log_likelihood(x, d)))(latent, data)
        prior = float(prior)
        terms = np.atleast_1d(np.asarray(terms, dtype=np.float64))
        weights = np.broadcast_to(np.asarray(lam, dtype=np.float64), terms.shape)
        bad = np.isnan(terms) | (illegal(terms) & (weights != 0))
        if illegal(prior):
            found = ("log_prior", None, prior)
        elif np.any(bad):
            case = int(np.argmax(bad))
            found = ("log_likelihood", case, float(terms[case]))
    if found is not None and supports(model, NamesTerms):
        found = (model.describe_nonfinite_term(latent, data, found[0], found[1]),) + found[1:]
    return found
