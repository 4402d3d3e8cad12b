"""Compiled moment-matching fits of the inverse-gamma, inverse-Wishart and Dirichlet families.

Module-level compiled functions: compiled once per input shape, not once per call. Each returns the fitted
parameters (see the ``fit`` classmethods in :mod:`bdmc.bracketing.families`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.scipy.special import digamma

from .numerics import bisect_decreasing, inv_digamma, pd_inverse, pd_logdet, symmetrize, vmap_n


@jax.jit
def fit_inverse_gamma(x):
    """``(shape, scale)`` matching ``E[1/x]`` and ``E[log x]`` over axis 0 (see :meth:`InverseGamma.fit`)."""
    m_inv, m_log = jnp.mean(1.0 / x, axis=0), jnp.mean(jnp.log(x), axis=0)
    c = m_log + jnp.log(m_inv)
    solve = lambda cc: jnp.exp(bisect_decreasing(lambda u: u - digamma(jnp.exp(u)), cc, -30.0, 40.0))  # noqa: E731
    shape = vmap_n(solve, c.ndim)(c)
    return shape, shape / m_inv


@jax.jit
def fit_inverse_wishart(x):
    """``(df, scale)`` matching ``E[S^-1]`` and ``E[log|S|]`` over axis 0 (see :meth:`InverseWishart.fit`)."""
    p = x.shape[-1]
    M = symmetrize(jnp.mean(pd_inverse(x), axis=0))
    target = jnp.mean(pd_logdet(x), axis=0) + pd_logdet(M)

    def lhs(u):
        df = p - 1 + jnp.exp(u)
        return p * jnp.log(df / 2.0) - jnp.sum(digamma((df - jnp.arange(1, p + 1) + 1) / 2.0))

    solve = lambda t: p - 1 + jnp.exp(bisect_decreasing(lhs, t, -30.0, 40.0))  # noqa: E731
    df = vmap_n(solve, target.ndim)(target)
    return df, symmetrize(df[..., None, None] * pd_inverse(M))


@functools.partial(jax.jit, static_argnums=1)
def fit_dirichlet(x, iterations):
    """``alpha`` matching ``E[log x]`` over axis 0 by ``iterations`` of Minka's fixed point.

    See :meth:`Dirichlet.fit`.
    """
    s = jnp.mean(jnp.log(x), axis=0)
    m, m2 = jnp.mean(x, axis=0), jnp.mean(x**2, axis=0)
    # Method-of-moments start: alpha_0 = (m - m2) / (m2 - m^2), averaged over coordinates.
    a0 = jnp.mean((m - m2) / jnp.maximum(m2 - m**2, 1e-300), axis=-1, keepdims=True)
    alpha = jnp.maximum(m * a0, 1e-3)

    def step(_, a):
        return inv_digamma(digamma(jnp.sum(a, axis=-1, keepdims=True)) + s)

    return jax.lax.fori_loop(0, iterations, step, alpha)
