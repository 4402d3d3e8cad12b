"""Mean-field variational Bayes for :class:`~bdmc.models.Clustering` (BDMC paper, Sec. 5.1, Eqs. 38-40).

The model collapses the centres; the variational family keeps them explicit:
``q(z, theta) = prod_i Categorical(z_i; r_i) prod_k N(theta_k; m_k, v_k I)``. Params are the tuple
``(r, m, v)`` with responsibilities ``r`` (n, k), means ``m`` (k, dim) and variances ``v`` (k,).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ...errors import BDMCError


def log_symmetries(model) -> float:
    """``log k!``: the k components' relabelings leave the model unchanged (the VB+sym correction)."""
    return math.lgamma(model.k + 1)


def init(model, key, data):
    """Random responsibilities (a Dirichlet(1) draw per row), then the matching q(theta)."""
    r = jax.random.dirichlet(key, jnp.ones(model.k), (model.n,)).astype(data.dtype)
    return theta_given_responsibilities(model, r, data)


def init_from_latent(model, latent, data):
    """The "hint" start (BDMC paper, Sec. 6.4): q(z) a point mass at ``latent["z"]``, then the matching q(theta).

    q(theta) is then the exact posterior of the centres given the assignments, so the bound at this q equals
    ``log p(z, y)`` with the centres integrated out (``model.log_density(latent, data, 1.0)``), which a test
    uses as an independent check.

    Parameters
    ----------
    model : Clustering
    latent : dict
        ``{"z": int (n,)}``, labels in ``0 .. k-1`` (e.g. the latent that generated the data).
    data : array (n, dim)

    Returns
    -------
    tuple
        The params ``(r, m, v)``: one-hot responsibilities at ``latent["z"]``, then Eq. 40.

    Raises
    ------
    BDMCError
        If ``latent["z"]`` has the wrong shape.
    """
    z = jnp.asarray(latent["z"])
    if z.shape != (model.n,):
        raise BDMCError(f"init_from_latent: latent['z'] has shape {z.shape}, expected {(model.n,)}")
    r = jax.nn.one_hot(z, model.k, dtype=jnp.result_type(data))
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
