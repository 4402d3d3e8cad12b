"""Mean-field variational Bayes for :class:`~bdmc.models.Clustering` (BDMC paper, Sec. 5.1, Eqs. 38-40).

The model collapses the centres; the variational family keeps them explicit:
``q(z, theta) = prod_i Categorical(z_i; r_i) prod_k N(theta_k; m_k, v_k I)``. Params are the tuple
``(r, m, v)`` with responsibilities ``r`` (n, k), means ``m`` (k, dim) and variances ``v`` (k,).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def log_symmetries(model) -> float:
    """``log k!``: the k components' relabelings leave the model unchanged (the VB+sym correction)."""
    return math.lgamma(model.k + 1)


def init(model, key, data):
    """Random responsibilities (a Dirichlet(1) draw per row), then the matching q(theta)."""
    r = jax.random.dirichlet(key, jnp.ones(model.k), (model.n,)).astype(data.dtype)
    return theta_given_responsibilities(model, r, data)


def update(model, params, data):
    """One coordinate-ascent sweep: q(z) given q(theta) (Eq. 39), then q(theta) given q(z) (Eq. 40)."""
    r, m, v = params
    expected = -(jnp.sum((data[:, None, :] - m[None]) ** 2, axis=-1) + model.dim * v[None]) / (2 * model.sigma_noise**2)
    r = jax.nn.softmax(model.log_weights[None, :] + expected, axis=1)
    return theta_given_responsibilities(model, r, data)


def bound(model, params, data):
    """The variational lower bound F(q) = E_q[log p(theta, z, y)] + H[q] (Eq. 38)."""
    r, m, v = params
    sn2, st2, d = model.sigma_noise**2, model.sigma_theta**2, model.dim
    sq = jnp.sum((data[:, None, :] - m[None]) ** 2, axis=-1) + d * v[None]
    log_lik = jnp.sum(r * (-0.5 * d * jnp.log(2 * jnp.pi * sn2) - 0.5 * sq / sn2))
    log_pz = jnp.sum(r * model.log_weights[None, :])
    log_ptheta = jnp.sum(-0.5 * d * jnp.log(2 * jnp.pi * st2) - 0.5 * (jnp.sum(m**2, axis=1) + d * v) / st2)
    entropy_z = -jnp.sum(jnp.where(r > 0, r * jnp.log(jnp.where(r > 0, r, 1.0)), 0.0))
    entropy_theta = jnp.sum(0.5 * d * jnp.log(2 * jnp.pi * jnp.e * v))
    return log_lik + log_pz + log_ptheta + entropy_z + entropy_theta


def theta_given_responsibilities(model, r, data):
    """Optimal q(theta) given q(z) (Eq. 40): returns the params ``(r, m, v)``."""
    precision = 1.0 / model.sigma_theta**2 + jnp.sum(r, axis=0) / model.sigma_noise**2
    m = (r.T @ data) / model.sigma_noise**2 / precision[:, None]
    return r, m, 1.0 / precision
