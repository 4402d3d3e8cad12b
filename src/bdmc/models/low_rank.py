"""Low-rank factorization Y = U V + noise (GG+G, BDMC paper Sec. 6), with fixed or integrated variances."""

from __future__ import annotations

import math

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, logsumexp

from ..kernels import Conditional, GibbsSweep
from ..kernels.conditional import CopyBlock
from ..contracts.model import check_array_shape
from .low_rank_nested import ConstrainedCoordinateGibbs

LOG_2PI = math.log(2 * math.pi)  # a Python float: it takes the dtype of the arrays it meets

# Largest number of entries of V that exact_log_marginal integrates by a tensor-product grid.
MAX_QUADRATURE_DIM = 2


def _weights(lam, n):
    """Per-row likelihood weights as an (n,) float array."""
    return jnp.broadcast_to(jnp.asarray(lam, jnp.result_type(float)), (n,))


def _gaussian_rows_loglik(mean, data, sn2):
    """(N,) array of sum_j log N(y_ij; mean_ij, sn2)."""
    r = data - mean
    return jnp.sum(-0.5 * r**2 / sn2 - 0.5 * jnp.log(sn2) - 0.5 * LOG_2PI, axis=-1)


def _gaussian_log_prior(x, var):
    """sum of log N(x; 0, var) over the entries of x."""
    return jnp.sum(-0.5 * x**2 / var - 0.5 * jnp.log(var) - 0.5 * LOG_2PI)


def _log_normal_precision(x, mean, chol):
    """log N(x; mean, P^-1) with P = chol chol^T; batched over leading axes of x, mean, chol."""
    w = jnp.einsum("...ji,...j->...i", chol, x - mean)  # chol^T (x - mean)
    half_logdet = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return half_logdet - 0.5 * jnp.sum(w**2, axis=-1) - 0.5 * x.shape[-1] * LOG_2PI


def _draw_precision(key, mean, chol):
    """mean + chol^-T eps: a draw from N(mean, (chol chol^T)^-1), batched over leading axes."""
    eps = jax.random.normal(key, mean.shape, mean.dtype)
    upper = jnp.swapaxes(chol, -1, -2)
    noise = jax.scipy.linalg.solve_triangular(upper, eps[..., None], lower=False)[..., 0]
    return mean + noise


def _u_conditional(V, data, lam, su2, sn2):
    """Means (N, K) and precision Cholesky factors (N, K, K) of the rows of U given V under f(.; lam).

    Row i has precision ``I / su2 + lam_i V V^T / sn2`` and mean ``P_i^-1 lam_i V y_i / sn2``.
    """
    K = V.shape[0]
    lam = _weights(lam, data.shape[0])
    gram = V @ V.T / sn2
    prec = jnp.eye(K) / su2 + lam[:, None, None] * gram[None]
    chol = jnp.linalg.cholesky(prec)
    rhs = lam[:, None] * (data @ V.T) / sn2
    mean = jax.scipy.linalg.cho_solve((chol, True), rhs[..., None])[..., 0]
    return mean, chol


def _v_conditional(U, data, lam, sv2, sn2):
    """Means (D, K) and the shared precision Cholesky factor (K, K) of the columns of V given U.

    Every column has precision ``I / sv2 + sum_i lam_i u_i u_i^T / sn2``; column j has mean
    ``P^-1 sum_i lam_i u_i y_ij / sn2``.
    """
    K = U.shape[1]
    lam = _weights(lam, data.shape[0])
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


def _sample_tempered_rows(key, mean, lam, sn2):
    """Rows from N(mean_i, sn2 / lam_i); rows with lam_i == 0 are set to 0 (they carry no information)."""
    lam = _weights(lam, mean.shape[0])
    sd = jnp.sqrt(sn2 / jnp.where(lam > 0, lam, 1.0))
    y = mean + sd[:, None] * jax.random.normal(key, mean.shape, mean.dtype)
    return jnp.where(lam[:, None] > 0, y, 0.0)


def _grid_log_marginal(log_integrand, axes, chunk=1 << 16):
    """log of the trapezoid-rule integral of exp(log_integrand) over the tensor grid of uniform ``axes``.

    ``log_integrand`` maps one point (dim,) to a log value. The integrand must be smooth and negligible at
    the boundary, where the trapezoid rule is spectrally accurate (its end weights do not matter).
    """
    dim = len(axes)
    log_cell = sum(np.log(a[1] - a[0]) for a in axes)
    points = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, dim)
    pad = (-points.shape[0]) % chunk
    points = np.concatenate([points, np.zeros((pad, dim))])
    mask = np.arange(points.shape[0]) < points.shape[0] - pad
    f = jax.jit(jax.vmap(log_integrand))
    vals = jnp.concatenate([f(jnp.asarray(p)) for p in points.reshape(-1, chunk, dim)])
    vals = jnp.where(jnp.asarray(mask), vals, -jnp.inf)
    return logsumexp(vals) + log_cell


def _check_quadrature_dim(model, limit):
    dim = model.k * model.d
    if dim > limit:
        raise ValueError(
            f"{type(model).__name__}.exact_log_marginal integrates V on a grid and needs k * d <= {limit}; "
            f"got k * d = {model.k} * {model.d} = {dim}"
        )


class _FactorModel:
    """What the fixed- and integrated-variance models share: likelihood, data, predictive, U and V blocks.

    Subclasses define ``n, d, k`` and ``_vars(latent) -> (sigma_u^2, sigma_v^2, sigma_n^2)``.
    """

    def sample_data(self, key, latent):
        """Y = U V + N(0, sigma_n^2) noise."""
        return self.sample_data_tempered(key, latent, 1.0)

    def sample_data_tempered(self, key, latent, lam):
        """Data from the tempered likelihood normalized in y: row i has noise variance sigma_n^2 / lam_i."""
        sn2 = self._vars(latent)[2]
        return _sample_tempered_rows(key, latent["U"] @ latent["V"], lam, sn2)

    def log_likelihood(self, latent, data):
        """(n,) array of log p(y_i | u_i, V)."""
        return _gaussian_rows_loglik(latent["U"] @ latent["V"], data, self._vars(latent)[2])

    def check_data(self, data):
        """Raise a DataError unless data has shape (n, d)."""
        check_array_shape(f"{type(self).__name__} data", data, (self.n, self.d))

    def log_predictive(self, latent, data, lam, i):
        """log p(y_i | V) with u_i integrated out: ``y_i ~ N(0, sigma_u^2 V^T V + sigma_n^2 I)`` (Sec. 6.1).

        Given V (and the variances), u_i is independent of the other rows, so ``lam`` and the other rows do
        not enter.
        """
        del lam
        su2, _, sn2 = self._vars(latent)
        row = jax.lax.dynamic_slice_in_dim(data, i, 1, axis=0)
        return marginal_row_loglik(latent["V"], row, su2, sn2)[0]

    def sample_case(self, key, latent, data, lam, i):
        """Redraw u_i from its conditional given V under ``f(.; lam)`` (its prior when lam_i = 0).

        With :meth:`log_predictive` this is the posterior-particle-filter proposal of SMC (Eqs. 18-20).
        """
        drawn = self._update_u(key, latent, data, lam)["U"]
        return {**latent, "U": latent["U"].at[i].set(drawn[i])}

    def _update_u(self, key, latent, data, lam):
        su2, _, sn2 = self._vars(latent)
        mean, chol = _u_conditional(latent["V"], data, lam, su2, sn2)
        return {**latent, "U": _draw_precision(key, mean, chol)}

    def _log_prob_u(self, latent, data, lam):
        su2, _, sn2 = self._vars(latent)
        mean, chol = _u_conditional(latent["V"], data, lam, su2, sn2)
        return jnp.sum(_log_normal_precision(latent["U"], mean, chol))

    def _update_v(self, key, latent, data, lam):
        _, sv2, sn2 = self._vars(latent)
        mean, chol = _v_conditional(latent["U"], data, lam, sv2, sn2)
        chols = jnp.broadcast_to(chol, (self.d, self.k, self.k))
        return {**latent, "V": _draw_precision(key, mean, chols).T}

    def _log_prob_v(self, latent, data, lam):
        _, sv2, sn2 = self._vars(latent)
        mean, chol = _v_conditional(latent["U"], data, lam, sv2, sn2)
        return jnp.sum(_log_normal_precision(latent["V"].T, mean, chol[None]))

    def _factor_conditionals(self):
        return (
            Conditional("U | V", self._update_u, self._log_prob_u, CopyBlock(("U",))),
            Conditional("V | U", self._update_v, self._log_prob_v, CopyBlock(("V",))),
        )

    # Passes over the data per Gibbs sweep (U | V, V | U, and sigma_n^2 when it is a latent).
    _data_passes = 2

    def default_kernel(self):
        """The block Gibbs sampler over ``conditionals()``."""
        return GibbsSweep(self.conditionals(), evals_per_step=self._data_passes)


@dataclass(frozen=True)
class LowRank(_FactorModel):
    """``u_ik ~ N(0, sigma_u^2)``, ``v_kj ~ N(0, sigma_v^2)``, ``y_ij ~ N(u_i . v_j, sigma_n^2)``.

    Latent ``{"U": (n, k), "V": (k, d)}``; data ``(n, d)`` whose rows are the data cases. Defaults are the
    paper's sizes (n = 50, d = 25, k = 5) and the variances chosen in ``docs/models/low_rank.md``. The Gibbs
    kernel resamples U given V (rows independent) and V given U (columns independent), each as one block.
    """

    n: int = 50
    d: int = 25
    k: int = 5
    sigma_u: float = 1.0
    sigma_v: float = 1.0
    sigma_n: float = 1.0

    @property
    def variances(self):
        """(sigma_u^2, sigma_v^2, sigma_n^2)."""
        return self.sigma_u**2, self.sigma_v**2, self.sigma_n**2

    def _vars(self, latent):
        del latent  # fixed hyperparameters
        return self.variances

    def sample_prior(self, key):
        """Draw U and V from their Gaussian priors."""
        ku, kv = jax.random.split(key)
        U = self.sigma_u * jax.random.normal(ku, (self.n, self.k))
        V = self.sigma_v * jax.random.normal(kv, (self.k, self.d))
        return {"U": U, "V": V}

    def log_prior(self, latent):
        """Normalized Gaussian log prior of U and V."""
        su2, sv2, _ = self.variances
        return _gaussian_log_prior(latent["U"], su2) + _gaussian_log_prior(latent["V"], sv2)

    def conditionals(self):
        """Gibbs blocks of f(U, V; lam): U given V (rows independent), then V given U (columns independent)."""
        return self._factor_conditionals()

    def constrained_kernel(self):
        """Nested sampling's move here: single-variable Gibbs within the constraint (Sec. 6.4).

        Redrawing whole Gibbs blocks from the prior almost never satisfies the constraint on this model;
        single-variable moves cost about as much per sweep as three likelihood evaluations, where the
        elliptical slice kernel needs several per block.
        """
        return ConstrainedCoordinateGibbs(self)

    def gaussian_prior_blocks(self):
        """Zero-mean Gaussian latents as ``(name, block axis, prior std)``: the rows of U, the columns of V.

        Nested sampling moves them one block at a time by elliptical slice sampling under its likelihood
        constraint (``bdmc.estimators.nested.ConstrainedEllipticalSlice``).
        """
        return (("U", 0, self.sigma_u), ("V", 1, self.sigma_v))

    # --- exact answer on tiny instances ------------------------------------------------------------------

    def bic_sample_params(self, key):
        """V drawn from its prior: a starting point for maximizing :meth:`bic_log_likelihood`."""
        return self.sigma_v * jax.random.normal(key, (self.k, self.d))

    def bic_log_likelihood(self, V, data):
        """log p(Y | V) with U integrated out (the parameters are V; the rows' u_i are latent)."""
        return self.log_marginal_given_v(V, data)

    def log_marginal_given_v(self, V, data):
        """log p(Y | V) = sum_i log N(y_i; 0, sigma_u^2 V^T V + sigma_n^2 I): U integrated analytically."""
        su2, _, sn2 = self.variances
        return jnp.sum(marginal_row_loglik(V, data, su2, sn2))

    def exact_log_marginal(self, data, *, num_points: int = 801, half_width: float = 10.0):
        """log p(Y): U integrated analytically, V by the trapezoid rule on a tensor grid.

        The grid spans ``[-half_width, half_width] * sigma_v`` in each of the k * d entries of V with
        ``num_points`` points per entry. The integrand is smooth and Gaussian-tailed, so the trapezoid rule
        converges geometrically; see ``docs/models/low_rank.md`` for the measured accuracy.

        Raises
        ------
        ValueError
            If k * d exceeds ``MAX_QUADRATURE_DIM`` (the grid would need num_points**(k*d) points).
        """
        _check_quadrature_dim(self, MAX_QUADRATURE_DIM)
        data = jnp.asarray(data)
        sv2 = self.sigma_v**2
        axis = np.linspace(-half_width * self.sigma_v, half_width * self.sigma_v, num_points)

        def log_integrand(v):
            V = v.reshape(self.k, self.d)
            return _gaussian_log_prior(V, sv2) + self.log_marginal_given_v(V, data)

        return _grid_log_marginal(log_integrand, [axis] * (self.k * self.d))

    # --- variational Bayes (algebra in low_rank_vb) -------------------------------------------------------

    @property
    def vb_num_labels(self) -> int:
        """Latent dimensions whose relabelings leave the model unchanged."""
        return self.k

    @property
    def vb_log_symmetries(self) -> float:
        """``log(2^k k!)``: signed permutations of the latent dimensions (the VB symmetry correction)."""
        from .low_rank_vb import log_symmetries  # deferred: the VB module is only needed by VB

        return log_symmetries(self.k)

    def vb_init(self, key, data):
        """Random mean-field q(U) q(V) with means on the prior's scale (see ``low_rank_vb.init``)."""
        from .low_rank_vb import init

        return init(self, key, data)

    def vb_update(self, params, data):
        """One coordinate-ascent sweep: q(U) given q(V), then q(V) given q(U) (Eqs. 39-40)."""
        from .low_rank_vb import update

        return update(self, params, data)

    def vb_bound(self, params, data):
        """The exact variational lower bound F(q) = E_q[log p(U, V, Y)] + H[q] (Eq. 38)."""
        from .low_rank_vb import bound

        return bound(self, params, data)


def _log_inv_gamma_of_log(log_s, shape, scale):
    """log density of s = exp(log_s) under InvGamma(shape, scale), per unit of log_s (Jacobian included)."""
    return shape * jnp.log(scale) - gammaln(shape) - shape * log_s - scale * jnp.exp(-log_s)


def _draw_log_inv_gamma(key, shape, scale):
    """log of a draw from InvGamma(shape, scale), drawn in log space (no underflow at small shapes)."""
    return jnp.log(scale) - jax.random.loggamma(key, shape)


def _log_student_prior(V, shape, scale):
    """log of int N(V; 0, s I) InvGamma(s; shape, scale) ds: a multivariate t over the m entries of V."""
    m = V.size
    post_shape = shape + 0.5 * m
    return (gammaln(post_shape) - gammaln(shape) + shape * jnp.log(scale) - 0.5 * m * LOG_2PI
            - post_shape * jnp.log(scale + 0.5 * jnp.sum(V**2)))


VARIANCE_NAMES = ("log_sigma_u2", "log_sigma_v2", "log_sigma_n2")


@dataclass(frozen=True)
class LowRankHyper(_FactorModel):
    """LowRank with its three variances integrated out: ``sigma_*^2 ~ InvGamma(shape_*, scale_*)``.

    The hyperparameter-integrated variant for the cross-model comparison of the BDMC paper (Table 1,
    footnote 6). Latent ``{"U", "V", "log_sigma_u2", "log_sigma_v2", "log_sigma_n2"}``: the variances are
    kept on the log scale (unconstrained) and ``log_prior`` includes the log-transform Jacobian. The
    defaults InvGamma(1, 1) are weak but proper (about two pseudo-observations of variance one); see
    ``docs/models/low_rank.md``. Every variance has an exact conjugate conditional.
    """

    n: int = 50
    d: int = 25
    k: int = 5
    shape_u: float = 1.0
    scale_u: float = 1.0
    shape_v: float = 1.0
    scale_v: float = 1.0
    shape_n: float = 1.0
    scale_n: float = 1.0

    _data_passes = 3

    @property
    def _priors(self):
        return ((self.shape_u, self.scale_u), (self.shape_v, self.scale_v), (self.shape_n, self.scale_n))

    def _vars(self, latent):
        return tuple(jnp.exp(latent[name]) for name in VARIANCE_NAMES)

    def sample_prior(self, key):
        """Draw the variances from their inverse-gamma priors, then U and V given them."""
        kvar, ku, kv = jax.random.split(key, 3)
        shapes, scales = (jnp.asarray(x, jnp.result_type(float)) for x in zip(*self._priors))
        latent = dict(zip(VARIANCE_NAMES, _draw_log_inv_gamma(kvar, shapes, scales)))
        su, sv = jnp.exp(0.5 * latent["log_sigma_u2"]), jnp.exp(0.5 * latent["log_sigma_v2"])
        latent["U"] = su * jax.random.normal(ku, (self.n, self.k))
        latent["V"] = sv * jax.random.normal(kv, (self.k, self.d))
        return latent

    def log_prior(self, latent):
        """Normalized log prior of (U, V, log variances), including the Jacobians of the log transforms."""
        su2, sv2, _ = self._vars(latent)
        log_var = sum(_log_inv_gamma_of_log(latent[name], a, b) for name, (a, b) in zip(VARIANCE_NAMES, self._priors))
        return log_var + _gaussian_log_prior(latent["U"], su2) + _gaussian_log_prior(latent["V"], sv2)

    def sample_data_tempered(self, key, latent, lam):
        """Rows from N(u_i V, sigma_n^2 / lam_i); rows with lam_i == 0 are set to 0.

        The normalizer of the tempered likelihood, ``int p(y | x)^lam dy``, is proportional to
        ``(sigma_n^2)^c`` with ``c = (d / 2) sum_{lam_i > 0} (1 - lam_i)``, so at lam != 1 the Geweke joint
        ``p(x) p_lam(y | x)`` matches ``f(x; lam)`` only if the forward prior of sigma_n^2 is tilted by
        ``(sigma_n^2)^-c``, i.e. ``shape_n - c`` in place of ``shape_n`` (see the model's tests).
        """
        return super().sample_data_tempered(key, latent, lam)

    def _variance_posteriors(self, latent, data, lam):
        """Shapes and scales (each (3,)) of the inverse-gamma conditionals of (sigma_u^2, sigma_v^2, sigma_n^2).

        Given U and V the three variances are conditionally independent, so together they form one exact
        Gibbs block (one vectorized gamma draw, which also keeps compile time down).
        """
        (au, bu), (av, bv), (an, bn) = self._priors
        U, V = latent["U"], latent["V"]
        # The tempered likelihood counts row i lam_i times: lam_i * d observations and lam_i * ||r_i||^2.
        lam = _weights(lam, self.n)
        sq = jnp.sum((data - U @ V) ** 2, axis=-1)
        shapes = jnp.stack([au + 0.5 * U.size, av + 0.5 * V.size, an + 0.5 * self.d * jnp.sum(lam)])
        scales = jnp.stack([bu + 0.5 * jnp.sum(U**2), bv + 0.5 * jnp.sum(V**2),
                            bn + 0.5 * jnp.sum(jnp.where(lam == 0, 0.0, lam * sq))])
        return shapes, scales

    def _update_variances(self, key, latent, data, lam):
        shapes, scales = self._variance_posteriors(latent, data, lam)
        draws = _draw_log_inv_gamma(key, shapes, scales)
        return {**latent, **dict(zip(VARIANCE_NAMES, draws))}

    def _log_prob_variances(self, latent, data, lam):
        shapes, scales = self._variance_posteriors(latent, data, lam)
        log_s = jnp.stack([latent[name] for name in VARIANCE_NAMES])
        return jnp.sum(_log_inv_gamma_of_log(log_s, shapes, scales))

    def conditionals(self):
        """Gibbs blocks: U | V and V | U given the variances, then the three variances from their conjugate
        (conditionally independent) inverse-gamma conditionals given U and V."""
        return self._factor_conditionals() + (
            Conditional("variances | U, V", self._update_variances, self._log_prob_variances,
                        CopyBlock(VARIANCE_NAMES)),
        )

    def exact_log_marginal(self, data, *, num_points: int = 161, v_half_width: float = 20.0,
                           log_var_range: tuple = (-8.0, 30.0)):
        """log p(Y) on tiny instances (k * d == 1) by quadrature.

        U is integrated analytically given V and the variances (Gaussian rows), sigma_v^2 analytically
        given V (a Student-t prior on V); the remaining three dimensions -- V on the scale
        ``v = sinh(t)`` (the t prior has power-law tails, exponential in t) with t in
        ``[-v_half_width, v_half_width]``, and log sigma_u^2 and log sigma_n^2 in ``log_var_range`` -- use the
        trapezoid rule with ``num_points`` points per dimension (see ``docs/models/low_rank.md``).
        """
        _check_quadrature_dim(self, 1)
        data = jnp.asarray(data)
        t_axis = np.linspace(-v_half_width, v_half_width, num_points)
        s_axis = np.linspace(*log_var_range, num_points)
        (au, bu), (av, bv), (an, bn) = self._priors

        def log_integrand(p):
            t, lsu, lsn = p[0], p[1], p[2]
            V = jnp.sinh(t).reshape(1, 1)
            log_jac = jnp.log(jnp.cosh(t))
            lik = jnp.sum(marginal_row_loglik(V, data, jnp.exp(lsu), jnp.exp(lsn)))
            return (lik + _log_student_prior(V, av, bv) + log_jac
                    + _log_inv_gamma_of_log(lsu, au, bu) + _log_inv_gamma_of_log(lsn, an, bn))

        return _grid_log_marginal(log_integrand, [t_axis, s_axis, s_axis])
