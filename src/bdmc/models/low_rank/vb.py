"""Mean-field variational Bayes for :class:`~bdmc.models.LowRank` (BDMC paper, Sec. 5.1, Eqs. 38-40).

The family is ``q(U, V) = prod_i N(u_i; m_i, S_i) prod_j N(v_j; w_j, T_j)`` with u_i the rows of U (n, k),
v_j the columns of V (k, d), and full k x k covariances. With ``A = sum_i E[u_i u_i^T] = M^T M + sum_i S_i``
and ``B = sum_j E[v_j v_j^T] = W W^T + sum_j T_j`` every expectation the bound needs is closed form:

    sum_ij E[(y_ij - u_i . v_j)^2] = |Y|^2 - 2 <Y, M W> + tr(A B)

because ``E[(u_i . v_j)^2] = tr(E[u_i u_i^T] E[v_j v_j^T])`` under independence. Each coordinate update
(Eqs. 39-40) is then Gaussian: given q(V), every row of U has precision ``I / su2 + B / sn2`` and mean
``S W y_i / sn2``; given q(U), every column of V has precision ``I / sv2 + A / sn2`` and mean
``T M^T y_j / sn2``. The optimal covariances are shared across rows (columns), but the bound is written
for any per-row covariances so it can be checked at arbitrary q.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ...errors import BDMCError

LOG_2PI = math.log(2 * math.pi)


class LowRankVBParams(NamedTuple):
    """The variational parameters: q(u_i) = N(u_mean[i], u_cov[i]), q(v_j) = N(v_mean[:, j], v_cov[j])."""

    u_mean: jax.Array  # (n, k)
    u_cov: jax.Array  # (n, k, k)
    v_mean: jax.Array  # (k, d), laid out like the latent V
    v_cov: jax.Array  # (d, k, k)


def _second_moments(params):
    """``A = sum_i E[u_i u_i^T]`` and ``B = sum_j E[v_j v_j^T]``, each (k, k)."""
    A = params.u_mean.T @ params.u_mean + jnp.sum(params.u_cov, axis=0)
    B = params.v_mean @ params.v_mean.T + jnp.sum(params.v_cov, axis=0)
    return A, B


def _gaussian_block(second_moment, prior_var, sn2):
    """Covariance ``(I / prior_var + second_moment / sn2)^-1`` of the optimal Gaussian factor, via Cholesky."""
    k = second_moment.shape[0]
    eye = jnp.eye(k, dtype=second_moment.dtype)
    chol = jnp.linalg.cholesky(eye / prior_var + second_moment / sn2)
    cov = jax.scipy.linalg.cho_solve((chol, True), eye)
    return 0.5 * (cov + cov.T)  # exact symmetry keeps later Cholesky factorizations clean


def update_u(model, params: LowRankVBParams, data) -> LowRankVBParams:
    """Optimal q(U) given q(V) (Eq. 39): the exact maximizer of the bound over the U block.

    Parameters
    ----------
    model : LowRank
    params : LowRankVBParams
    data : array (n, d)

    Returns
    -------
    LowRankVBParams
        With ``u_mean`` and ``u_cov`` replaced; the covariance is the same for every row.
    """
    su2, _, sn2 = model.variances
    _, B = _second_moments(params)
    cov = _gaussian_block(B, su2, sn2)
    mean = (data @ params.v_mean.T) @ cov / sn2  # row i: S W y_i / sn2 (S symmetric)
    u_cov = jnp.broadcast_to(cov, params.u_cov.shape)
    return params._replace(u_mean=mean, u_cov=u_cov)


def update_v(model, params: LowRankVBParams, data) -> LowRankVBParams:
    """Optimal q(V) given q(U) (Eq. 40): the exact maximizer of the bound over the V block.

    Parameters
    ----------
    model : LowRank
    params : LowRankVBParams
    data : array (n, d)

    Returns
    -------
    LowRankVBParams
        With ``v_mean`` and ``v_cov`` replaced; the covariance is the same for every column.
    """
    _, sv2, sn2 = model.variances
    A, _ = _second_moments(params)
    cov = _gaussian_block(A, sv2, sn2)
    mean = cov @ (params.u_mean.T @ data) / sn2  # column j: T M^T y_j / sn2
    v_cov = jnp.broadcast_to(cov, params.v_cov.shape)
    return params._replace(v_mean=mean, v_cov=v_cov)


def update(model, params: LowRankVBParams, data) -> LowRankVBParams:
    """One coordinate-ascent sweep: q(U) given q(V), then q(V) given q(U)."""
    return update_v(model, update_u(model, params, data), data)


def _sum_logdet(covs):
    """sum over the leading axis of log det of (..., k, k) positive-definite matrices."""
    chol = jnp.linalg.cholesky(covs)
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)))


def bound(model, params: LowRankVBParams, data) -> jax.Array:
    """The variational lower bound ``F(q) = E_q[log p(U, V, Y)] + H[q]`` (Eq. 38), exactly.

    Parameters
    ----------
    model : LowRank
    params : LowRankVBParams
        Any means and positive-definite covariances (not only coordinate-ascent fixed points).
    data : array (n, d)

    Returns
    -------
    scalar
        ``F(q) <= log p(Y)``, with equality only if q is the posterior (Eq. 41).
    """
    su2, sv2, sn2 = model.variances
    n, k = params.u_mean.shape
    d = params.v_mean.shape[1]
    A, B = _second_moments(params)
    sq = jnp.sum(data**2) - 2.0 * jnp.sum(data * (params.u_mean @ params.v_mean)) + jnp.sum(A * B)
    log_lik = -0.5 * n * d * (LOG_2PI + jnp.log(sn2)) - 0.5 * sq / sn2
    log_pu = -0.5 * n * k * (LOG_2PI + jnp.log(su2)) - 0.5 * jnp.trace(A) / su2
    log_pv = -0.5 * k * d * (LOG_2PI + jnp.log(sv2)) - 0.5 * jnp.trace(B) / sv2
    entropy = 0.5 * (n + d) * k * (LOG_2PI + 1.0) + 0.5 * (_sum_logdet(params.u_cov) + _sum_logdet(params.v_cov))
    return log_lik + log_pu + log_pv + entropy


def init(model, key, data) -> LowRankVBParams:
    """A random starting q: means drawn from the prior, covariances the prior's shrunk by the data's weight.

    The means are on the prior's scale so that different keys start in different basins (different signs,
    orders and rotations of the latent dimensions). The covariances are the prior variance divided by
    ``1 + (number of cases a factor touches) * prior variance of the other factor / sn2``, roughly the
    scale of the posterior's; the first sweep replaces them anyway.
    """
    su2, sv2, _ = model.variances
    ku, kv = jax.random.split(key)
    dtype = jnp.result_type(data)
    u_mean = math.sqrt(su2) * jax.random.normal(ku, (model.n, model.k), dtype)
    v_mean = math.sqrt(sv2) * jax.random.normal(kv, (model.k, model.d), dtype)
    return _with_scaled_covariances(model, u_mean, v_mean)


def _with_scaled_covariances(model, u_mean, v_mean):
    su2, sv2, sn2 = model.variances
    eye = jnp.eye(model.k, dtype=u_mean.dtype)
    u_var = su2 / (1.0 + model.d * sv2 / sn2)
    v_var = sv2 / (1.0 + model.n * su2 / sn2)
    return LowRankVBParams(u_mean, jnp.broadcast_to(u_var * eye, (model.n, model.k, model.k)),
                           v_mean, jnp.broadcast_to(v_var * eye, (model.d, model.k, model.k)))


def init_from_latent(model, latent, data) -> LowRankVBParams:
    """The "hint" start (BDMC paper, Sec. 6.4): means at a given latent (e.g. the one that generated the data).

    Parameters
    ----------
    model : LowRank
    latent : dict
        ``{"U": (n, k), "V": (k, d)}``.
    data : array (n, d)

    Returns
    -------
    LowRankVBParams
        Means at ``latent``, covariances as in :func:`init`.

    Raises
    ------
    BDMCError
        If ``latent["U"]`` or ``latent["V"]`` has the wrong shape.
    """
    dtype = jnp.result_type(data)
    u_mean, v_mean = jnp.asarray(latent["U"], dtype), jnp.asarray(latent["V"], dtype)
    for name, value, shape in (("U", u_mean, (model.n, model.k)), ("V", v_mean, (model.k, model.d))):
        if value.shape != shape:
            raise BDMCError(f"init_from_latent: latent[{name!r}] has shape {value.shape}, expected {shape}")
    return _with_scaled_covariances(model, u_mean, v_mean)


def log_symmetries(model) -> float:
    """``log(2^k k!)``: the signed permutations of the k latent dimensions leave the posterior unchanged.

    A unimodal q sits in one of these equivalent modes; the symmetry correction adds this constant.
    (The isotropic priors make the posterior invariant under every rotation of the latent space too, a
    continuous symmetry the correction does not count, so the corrected value is a heuristic, as in the
    paper, and not a guaranteed bound.)
    """
    return model.k * math.log(2.0) + math.lgamma(model.k + 1)
