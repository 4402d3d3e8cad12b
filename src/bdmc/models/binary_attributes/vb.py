"""Mean-field variational Bayes for :class:`~bdmc.models.BinaryAttributes` (BDMC paper, Sec. 5.1).

The model collapses the feature matrix A; the variational family keeps it explicit, as in the finite
variational IBP of Doshi-Velez, Miller, Van Gael and Teh (2009):

    q(Z, A) = prod_ik Bernoulli(z_ik; nu_ik) prod_j N(a_j; m_j, Sigma),

with a_j the columns of A (k, D). The likelihood is isotropic across the D columns, so the optimal q(A)
given q(Z) has one k x k covariance shared by every column, ``Sigma = (I / sa2 + G / sn2)^-1`` with
``G = E[Z^T Z] = nu^T nu + diag(sum_i nu_ik (1 - nu_ik))``, and means ``M = Sigma nu^T Y / sn2``. With
``C = E[A A^T] = M M^T + D Sigma`` the bound is closed form:

    sum_ij E[(y_ij - z_i . a_j)^2] = |Y|^2 - 2 <Y, nu M> + tr(G C).

The expected log likelihood is linear in each nu_ik, so the optimal q(z_ik) given everything else is a
logistic function of
``logit pi_k + (y_i . m_k - sum_{l != k} nu_il C_lk - C_kk / 2) / sn2`` (m_k the k-th row of M). The bits of
one column are independent given q(A) and the other columns, so a sweep updates the columns of q(Z) in
turn (each column for all rows at once), then q(A); every step is an exact coordinate maximization.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import entr

from ...errors import BDMCError

LOG_2PI = math.log(2 * math.pi)


class BinaryVBParams(NamedTuple):
    """The variational parameters: q(z_ik = 1) = nu[i, k]; q(a_j) = N(a_mean[:, j], a_cov) for every column."""

    nu: jax.Array  # (n, k)
    a_mean: jax.Array  # (k, D), laid out like A
    a_cov: jax.Array  # (k, k), shared by the D columns


def _gram(nu):
    """``E[Z^T Z]`` under independent Bernoulli(nu) entries: the off-diagonal products plus the variances."""
    return nu.T @ nu + jnp.diag(jnp.sum(nu * (1.0 - nu), axis=0))


def _feature_second_moment(params, dim):
    """``C = E[A A^T] = M M^T + D Sigma`` (k, k)."""
    return params.a_mean @ params.a_mean.T + dim * params.a_cov


def update_a(model, params: BinaryVBParams, data) -> BinaryVBParams:
    """Optimal q(A) given q(Z) (Eq. 40): the exact maximizer of the bound over the A block.

    Parameters
    ----------
    model : BinaryAttributes
    params : BinaryVBParams
    data : array (n, D)

    Returns
    -------
    BinaryVBParams
        With ``a_mean`` and ``a_cov`` replaced.
    """
    sa2, sn2 = model.sigma_a**2, model.sigma_n**2
    eye = jnp.eye(params.nu.shape[1], dtype=params.nu.dtype)
    chol = jnp.linalg.cholesky(eye / sa2 + _gram(params.nu) / sn2)
    cov = jax.scipy.linalg.cho_solve((chol, True), eye)
    cov = 0.5 * (cov + cov.T)
    mean = cov @ (params.nu.T @ data) / sn2
    return params._replace(a_mean=mean, a_cov=cov)


def update_z_column(model, params: BinaryVBParams, data, column) -> BinaryVBParams:
    """Optimal q(z_{., column}) given q(A) and the other columns of q(Z) (Eq. 39), for every row at once.

    ``column`` may be a traced integer.
    """
    sn2 = model.sigma_n**2
    nu = params.nu
    C = _feature_second_moment(params, data.shape[1])
    c_col = C[:, column]
    c_kk = C[column, column]
    # sum_{l != k} nu_il C_lk: the full product minus the diagonal term.
    cross = nu @ c_col - nu[:, column] * c_kk
    signal = data @ params.a_mean[column]
    prior_logit = model.log_pi[column] - model.log_1m_pi[column]
    logit = prior_logit + (signal - cross - 0.5 * c_kk) / sn2
    return params._replace(nu=nu.at[:, column].set(jax.nn.sigmoid(logit)))


def update_z(model, params: BinaryVBParams, data) -> BinaryVBParams:
    """q(Z) given q(A): the columns in turn, each an exact coordinate maximization (one compiled loop)."""
    k = params.nu.shape[1]
    return jax.lax.fori_loop(0, k, lambda col, p: update_z_column(model, p, data, col), params)


def update(model, params: BinaryVBParams, data) -> BinaryVBParams:
    """One coordinate-ascent sweep: every column of q(Z), then q(A)."""
    return update_a(model, update_z(model, params, data), data)


def bound(model, params: BinaryVBParams, data) -> jax.Array:
    """The variational lower bound ``E_q[log p(Y | Z, A) + log p(A) + log p(Z)] + H[q]``, exactly.

    Parameters
    ----------
    model : BinaryAttributes
    params : BinaryVBParams
        Any nu in [0, 1] and positive-definite ``a_cov``.
    data : array (n, D)

    Returns
    -------
    scalar
        A lower bound on ``log p(Y)`` (A integrated, as in the collapsed model).
    """
    sa2, sn2 = model.sigma_a**2, model.sigma_n**2
    nu = params.nu
    n, k = nu.shape
    dim = data.shape[1]
    G = _gram(nu)
    C = _feature_second_moment(params, dim)
    sq = jnp.sum(data**2) - 2.0 * jnp.sum(data * (nu @ params.a_mean)) + jnp.sum(G * C)
    log_lik = -0.5 * n * dim * (LOG_2PI + jnp.log(sn2)) - 0.5 * sq / sn2
    log_pa = -0.5 * k * dim * (LOG_2PI + jnp.log(sa2)) - 0.5 * jnp.trace(C) / sa2
    log_pz = jnp.sum(nu * model.log_pi[None, :] + (1.0 - nu) * model.log_1m_pi[None, :])
    entropy_z = jnp.sum(entr(nu) + entr(1.0 - nu))
    chol = jnp.linalg.cholesky(params.a_cov)
    entropy_a = 0.5 * dim * (k * (LOG_2PI + 1.0) + 2.0 * jnp.sum(jnp.log(jnp.diag(chol))))
    return log_lik + log_pa + log_pz + entropy_z + entropy_a


def init(model, key, data) -> BinaryVBParams:
    """Random q(Z) (every nu_ik uniform on (0, 1)), then the matching q(A)."""
    dtype = jnp.result_type(data)
    nu = jax.random.uniform(key, (model.n, model.k), dtype)
    return _from_nu(model, nu, data)


def _from_nu(model, nu, data):
    dtype = nu.dtype
    empty = BinaryVBParams(nu, jnp.zeros((model.k, model.dim), dtype), jnp.eye(model.k, dtype=dtype))
    return update_a(model, empty, data)


def init_from_latent(model, latent, data) -> BinaryVBParams:
    """The "hint" start (BDMC paper, Sec. 6.4): q(Z) a point mass at ``latent["Z"]``, then the matching q(A).

    At this q the bound equals ``log p(Z, Y)`` with A integrated (q(A) is then the exact posterior of A
    given Z), which a test uses as an independent check.

    Raises
    ------
    BDMCError
        If ``latent["Z"]`` has the wrong shape.
    """
    z = jnp.asarray(latent["Z"])
    if z.shape != (model.n, model.k):
        raise BDMCError(f"init_from_latent: latent['Z'] has shape {z.shape}, expected {(model.n, model.k)}")
    return _from_nu(model, z.astype(jnp.result_type(data)), data)


def log_symmetries(model) -> float:
    """log of the number of column permutations that leave the model unchanged.

    ``log k!`` when pi is one value; with per-attribute pi only attributes sharing a prior probability can
    be exchanged, giving ``sum over distinct values of log(count!)``.
    """
    pi = np.broadcast_to(np.asarray(model.pi, dtype=float), (model.k,))
    _, counts = np.unique(pi, return_counts=True)
    return float(sum(math.lgamma(c + 1) for c in counts))
