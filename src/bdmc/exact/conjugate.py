"""Closed-form log marginal likelihoods of conjugate Gaussian models."""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax.scipy.special import gammaln

LOG_2PI = math.log(2 * math.pi)  # a Python float: it takes the dtype of the arrays it meets


def gaussian_mean_log_marginal(y, *, prior_mean, prior_std, noise_std, mask=None):
    """log p(y) for ``mu ~ N(prior_mean, prior_std^2)``, ``y_i ~ N(mu, noise_std^2)`` per dimension.

    Parameters
    ----------
    y : array, shape (n, dim)
        Observations; each column is an independent problem with its own mean.
    prior_mean, prior_std, noise_std : float
        Hyperparameters.
    mask : array of shape (n,), optional
        0/1 membership weights; rows with mask 0 are left out (used to score one cluster of a mixture).

    Returns
    -------
    Scalar log marginal likelihood summed over dimensions.
    """
    y = jnp.asarray(y)
    mask = jnp.ones(y.shape[0], y.dtype) if mask is None else jnp.asarray(mask, y.dtype)
    s2, v = prior_std**2, noise_std**2
    n = jnp.sum(mask)
    r = (y - prior_mean) * mask[:, None]
    # Sherman-Morrison on v I + s2 11^T restricted to the members.
    logdet = (n - 1) * jnp.log(v) + jnp.log(v + n * s2)
    quad = (jnp.sum(r**2, axis=0) - s2 * jnp.sum(r, axis=0) ** 2 / (v + n * s2)) / v
    return jnp.sum(-0.5 * n * LOG_2PI - 0.5 * logdet - 0.5 * quad)


def linear_regression_log_marginal(y, X, *, tau, h0, k0):
    """log p(y) for ``y ~ N(X beta, s2 I)``, ``beta ~ N(0, tau s2 I)``, ``s2 ~ IG(h0, k0)``.

    The closed form of Ji, Shen and West, Sec. 4.1, with ``C = I + tau X X^T``.
    """
    y, X = jnp.asarray(y), jnp.asarray(X)
    n = y.shape[0]
    C = jnp.eye(n) + tau * X @ X.T
    chol = jnp.linalg.cholesky(C)
    logdet = 2 * jnp.sum(jnp.log(jnp.diag(chol)))
    alpha = jnp.linalg.solve(chol, y)
    quad = alpha @ alpha
    return (
        -0.5 * n * LOG_2PI
        - 0.5 * logdet
        + h0 * jnp.log(k0)
        + gammaln(h0 + n / 2)
        - gammaln(h0)
        - (h0 + n / 2) * jnp.log(k0 + quad / 2)
    )
