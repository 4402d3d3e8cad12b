"""Bracketing a model's ``log p(y)`` from posterior draws of its latent (any pytree), on its unconstrained space."""

from __future__ import annotations

import jax
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
