"""Tempered cluster statistics and the collapsed likelihood of one cluster, centres integrated out.

Every clustering computation works with per-cluster sums under per-row likelihood weights ``lam``:
``W_k = sum_{i in k} lam_i``, ``S_k = sum_{i in k} lam_i y_i`` and ``Q_k = sum_{i in k} lam_i |y_i|^2``
(see the package docstring for the closed form of :func:`collapsed_cluster_term`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

LOG_2PI = math.log(2 * math.pi)  # a Python float: it takes the dtype of the arrays it meets


def collapsed_cluster_term(W, S, Q, *, sigma_theta, sigma_noise):
    """Log of the tempered likelihood of each cluster with its centre integrated out.

    Parameters
    ----------
    W : array (..., )
        Total likelihood weight of the cluster's rows.
    S : array (..., D)
        Weighted sum of the rows.
    Q : array (..., )
        Weighted sum of the rows' squared norms.
    sigma_theta, sigma_noise : float or array
        Prior standard deviation of the centre coordinates and the noise standard deviation.

    Returns
    -------
    array (...,)
        ``log INT N(theta; 0, sigma_theta^2 I) prod_i N(y_i; theta, sigma_noise^2 I)^{lam_i} dtheta``.
    """
    dim = S.shape[-1]
    v = sigma_noise**2
    P = 1.0 / sigma_theta**2 + W / v
    return (
        -0.5 * W * dim * (LOG_2PI + jnp.log(v))
        - 0.5 * Q / v
        - dim * jnp.log(sigma_theta)
        - 0.5 * dim * jnp.log(P)
        + 0.5 * jnp.sum(S**2, axis=-1) / v**2 / P
    )


def cluster_stats(z, data, lam, num_clusters):
    """Per-cluster statistics ``(C, W, S, Q)``: counts (unweighted, for the prior of z) and tempered sums.

    ``C (K,)`` counts the rows of each cluster; ``W (K,)``, ``S (K, D)`` and ``Q (K,)`` are the lam-weighted
    number of rows, sum of rows and sum of squared row norms.
    """
    onehot = jax.nn.one_hot(z, num_clusters, dtype=data.dtype)
    members = onehot * lam[:, None]  # (N, K) weighted membership
    return onehot.sum(0), members.sum(0), members.T @ data, members.T @ jnp.sum(data**2, axis=1)


def sample_tempered_data(key, z, lam, *, num_clusters, dim, sigma_theta, sigma_noise):
    """Centres from their prior, then row i from ``N(theta_{z_i}, sigma_noise^2 / lam_i)``; 0 where lam_i = 0."""
    k_theta, k_noise = jax.random.split(key)
    theta = sigma_theta * jax.random.normal(k_theta, (num_clusters, dim))
    sd = sigma_noise / jnp.sqrt(jnp.where(lam > 0, lam, 1.0))
    y = theta[z] + sd[:, None] * jax.random.normal(k_noise, (z.shape[0], dim))
    return jnp.where(lam[:, None] > 0, y, 0.0)  # switched-off rows carry no information


def chain_rule_terms(z, data, term):
    """``log p(y_i | y_<i, z)`` for every row, from a collapsed cluster term ``term(W, S, Q)``."""
    n = z.shape[0]
    q = jnp.sum(data**2, axis=1)
    same = (z[:, None] == z[None, :]) & jnp.tril(jnp.ones((n, n), bool))  # j <= i, same cluster
    m = same.astype(data.dtype)
    W, S, Q = m.sum(1), m @ data, m @ q
    return term(W, S, Q) - term(W - 1.0, S - data, Q - q)


def predictive_gain(stats, y, l, term):
    """Change of each cluster's collapsed term when a row of weight ``l`` joins it (exactly 0 when l == 0)."""
    _, W, S, Q = stats
    gain = term(W + l, S + l * y, Q + l * jnp.sum(y**2)) - term(W, S, Q)
    return jnp.where(l == 0, 0.0, gain)

