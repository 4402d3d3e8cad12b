"""Bracketing a model's ``log p(y)`` from posterior draws of its latent (any pytree), on its unconstrained space."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ..contracts.model import log_density
from .bounds import BracketResult, bracket
from .families import MultivariateNormal


def posterior_draws_flat(draws):
    """``(flat, unravel)``: stacked latents (a pytree with a leading draw axis) as a matrix, and its unravel."""
    flat = jax.vmap(lambda x: ravel_pytree(x)[0])(draws)
    first = jax.tree.map(lambda a: a[0], draws)
    return np.asarray(flat), ravel_pytree(first)[1]


def bracket_model(key, model, data, draws, *, num_draws: int = 2000) -> BracketResult:
    """Ji, Shen and West's bounds on ``log p(y)`` of ``model`` from ``draws`` of its latent given ``data``.

    A Gaussian fitted to the flattened draws gives the upper bound (valid in expectation when the draws are exact
    posterior samples) and, with ``num_draws`` of its own draws, the lower bound.
    """
    flat, unravel = posterior_draws_flat(draws)
    log_joint = lambda th: log_density(model, unravel(th["theta"]), data, 1.0)  # noqa: E731
    return bracket({"theta": flat}, log_joint, family={"theta": MultivariateNormal}, key=key,
                   num_draws=int(num_draws))


def label_symmetric_bounds(key, model, data, draws, q, *, relabel, permutations, num_draws: int = 2000) -> dict:
    """The bracketing bounds with ``q`` symmetrized over the relabellings of exchangeable components.

    Draws that stay in one of the ``K!`` labellings of a symmetric posterior make the plain bounds sit about
    ``log K!`` low (:mod:`bdmc.bracketing.symmetry`). With ``q_sym(u) = (1/K!) sum_s q(s u) |det ds/du|`` on the
    unconstrained space, and the posterior's invariance giving ``|det ds/du| = p(u, y) / p(s u, y)``,

    ``f(u) = log p(u, y) - log q_sym(u) = log K! - logsumexp_s [log q(s u) - log p(s u, y)]``,

    which is the same at every relabelling of ``u``. So ``U = E_p[f] >= log p(y)`` from draws in any labellings,
    and ``L = E_q[f] <= log p(y)`` (a draw of ``q_sym`` is a draw of ``q`` relabelled, which leaves ``f``
    unchanged). ``q`` is the Gaussian already fitted to all the draws (the plain bounds' ``q_upper``); the upper
    bound is evaluated in sample here, not cross-fitted.

    Parameters
    ----------
    key : PRNG key
        Draws of ``q`` for the lower bound.
    model, data, draws
        As for :func:`bracket_model`; the model's ``constrain`` / ``unconstrain`` must be JAX-traceable (NumPyro,
        PyMC).
    q : MeanField
        ``{"theta": MultivariateNormal}`` on the flattened draws.
    relabel : callable
        ``relabel(latent, permutation) -> latent``: the latent with its components permuted
        (:func:`bdmc.checks.labels.relabel_latent`).
    permutations : array (K!, K)
        Every relabelling (:func:`bdmc.checks.labels.permutations`).
    num_draws : int

    Returns
    -------
    dict
        ``upper``, ``lower`` and their standard errors, and ``log_labellings``.
    """
    flat, unravel = posterior_draws_flat(draws)
    perms = np.asarray(permutations)
    log_labellings = float(np.log(perms.shape[0]))

    def symmetric(x):
        def term(perm):
            moved = ravel_pytree(relabel(unravel(x), perm))[0]
            return q.log_prob({"theta": moved}) - log_density(model, unravel(moved), data, 1.0)

        return log_labellings - jax.scipy.special.logsumexp(jnp.stack([term(p) for p in perms]))

    values = jax.jit(jax.vmap(symmetric))
    upper = np.asarray(values(jnp.asarray(flat)))
    own = jax.vmap(lambda k: q.sample(k)["theta"])(jax.random.split(key, int(num_draws)))
    lower = np.asarray(values(own))
    return {"upper": float(np.mean(upper)), "upper_stderr": float(np.std(upper) / np.sqrt(upper.size)),
            "lower": float(np.mean(lower)), "lower_stderr": float(np.std(lower) / np.sqrt(lower.size)),
            "log_labellings": log_labellings}
