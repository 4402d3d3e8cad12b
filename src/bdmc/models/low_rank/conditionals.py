"""Gaussian algebra of the low-rank model: the conditionals of U and V (its Gibbs blocks) and U integrated out.

Given V (and the variances) the rows of U are independent Gaussians; given U the columns of V are independent
Gaussians sharing one precision. Each block is drawn exactly through the Cholesky factor of its precision.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

LOG_2PI = math.log(2 * math.pi)  # a Python float: it takes the dtype of the arrays it meets


def row_weights(lam, n):
    """Per-row likelihood weights as an (n,) float array."""
    return jnp.broadcast_to(jnp.asarray(lam, jnp.result_type(float)), (n,))


def gaussian_rows_loglik(mean, data, sn2):
    """(N,) array of sum_j log N(y_ij; mean_ij, sn2)."""
    r = data - mean
    return jnp.sum(-0.5 * r**2 / sn2 - 0.5 * jnp.log(sn2) - 0.5 * LOG_2PI, axis=-1)


def gaussian_log_prior(x, var):
    """sum of log N(x; 0, var) over the entries of x."""
    return jnp.sum(-0.5 * x**2 / var - 0.5 * jnp.log(var) - 0.5 * LOG_2PI)


def log_normal_precision(x, mean, chol):
    """log N(x; mean, P^-1) with P = chol chol^T; batched over leading axes of x, mean, chol."""
    w = jnp.einsum("...ji,...j->...i", chol, x - mean)  # chol^T (x - mean)
    half_logdet = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return half_logdet - 0.5 * jnp.sum(w**2, axis=-1) - 0.5 * x.shape[-1] * LOG_2PI


def draw_precision(key, mean, chol):
    """mean + chol^-T eps: a draw from N(mean, (chol chol^T)^-1), batched over leading axes."""
    eps = jax.random.normal(key, mean.shape, mean.dtype)
    upper = jnp.swapaxes(chol, -1, -2)
    noise = jax.scipy.linalg.solve_triangular(upper, eps[..., None], lower=False)[..., 0]
    return mean + noise


def u_conditional(V, data, lam, su2, sn2):
    """Means (N, K) and precision Cholesky factors (N, K, K) of the rows of U given V under f(.; lam).

    Row i has precision ``I / su2 + lam_i V V^T / sn2`` and mean ``P_i^-1 lam_i V y_i / sn2``.
    """
    K = V.shape[0]
    lam = row_weights(lam, data.shape[0])
    gram = V @ V.T / sn2
    prec = jnp.eye(K) / su2 + lam[:, None, None] * gram[None]
    chol = jnp.linalg.cholesky(prec)
    rhs = lam[:, None] * (data @ V.T) / sn2
    mean = jax.scipy.linalg.cho_solve((chol, True), rhs[..., None])[..., 0]
    return mean, chol


def v_conditional(U, data, lam, sv2, sn2):
    """Means (D, K) and the shared precision Cholesky factor (K, K) of the columns of V given U.

    Every column has precision ``I / sv2 + sum_i lam_i u_i u_i^T / sn2``; column j has mean
    ``P^-1 sum_i lam_i u_i y_ij / sn2``.
    """
    K = U.shape[1]
    lam = row_weights(lam, data.shape[0])
    weighted = U * lam[:, None]
    prec = jnp.eye(K) / sv2 + weighted.T @ U / sn2
    chol = jnp.linalg.cholesky(prec)
    mean = jax.scipy.linalg.cho_solve((chol, True), weighted.T @ data / sn2)  # (K, D)
    return mean.T, chol


def marginal_row_loglik(V, data, su2, sn2):
    """log N(y_i; 0, su2 V^T V + sn2 I_D) for every row i: the rows' likelihood with U integrated out.

    Uses the Woodbury identity so the cost is O(K^3 + N K D) rather than O(D^3).

    Parameters
    ----------
    V : array (K, D)
    data : array (N, D)
    su2, sn2 : float
        Prior variance of the entries of U and noise variance.

    Returns
    -------
    array (N,)
    """
    K, D = V.shape
    inner = jnp.eye(K) + (su2 / sn2) * V @ V.T
    chol = jnp.linalg.cholesky(inner)
    logdet = D * jnp.log(sn2) + 2.0 * jnp.sum(jnp.log(jnp.diag(chol)))
    proj = jax.scipy.linalg.solve_triangular(chol, V @ data.T, lower=True)  # (K, N)
    quad = jnp.sum(data**2, axis=-1) / sn2 - (su2 / sn2**2) * jnp.sum(proj**2, axis=0)
    return -0.5 * (quad + logdet + D * LOG_2PI)


def sample_tempered_rows(key, mean, lam, sn2):
    """Rows from N(mean_i, sn2 / lam_i); rows with lam_i == 0 are set to 0 (they carry no information)."""
    lam = row_weights(lam, mean.shape[0])
    sd = jnp.sqrt(sn2 / jnp.where(lam > 0, lam, 1.0))
    y = mean + sd[:, None] * jax.random.normal(key, mean.shape, mean.dtype)
    return jnp.where(lam[:, None] > 0, y, 0.0)

