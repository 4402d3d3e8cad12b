"""The low-rank model with its three variances integrated out (BDMC paper, Table 1 and footnote 6).

The variances are latent on the log scale; given U and V they are conditionally independent inverse gammas,
one exact Gibbs block after the U and V blocks of :class:`~bdmc.models.low_rank.model.FactorModel`.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from ...kernels import Conditional
from ...kernels.conditional import CopyBlock
from .conditionals import LOG_2PI, gaussian_log_prior, marginal_row_loglik, row_weights
from .model import FactorModel, check_quadrature_dim, grid_log_marginal


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
class LowRankHyper(FactorModel):
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
        shapes, scales = (jnp.asarray(x, jnp.result_type(float)) for x in zip(*self._priors, strict=False))
        latent = dict(zip(VARIANCE_NAMES, _draw_log_inv_gamma(kvar, shapes, scales), strict=False))
        su, sv = jnp.exp(0.5 * latent["log_sigma_u2"]), jnp.exp(0.5 * latent["log_sigma_v2"])
        latent["U"] = su * jax.random.normal(ku, (self.n, self.k))
        latent["V"] = sv * jax.random.normal(kv, (self.k, self.d))
        return latent

    def log_prior(self, latent):
        """Normalized log prior of (U, V, log variances), including the Jacobians of the log transforms."""
        su2, sv2, _ = self._vars(latent)
        log_var = sum(_log_inv_gamma_of_log(latent[name], a, b)
                      for name, (a, b) in zip(VARIANCE_NAMES, self._priors, strict=False))
        return log_var + gaussian_log_prior(latent["U"], su2) + gaussian_log_prior(latent["V"], sv2)

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
        lam = row_weights(lam, self.n)
        sq = jnp.sum((data - U @ V) ** 2, axis=-1)
        shapes = jnp.stack([au + 0.5 * U.size, av + 0.5 * V.size, an + 0.5 * self.d * jnp.sum(lam)])
        scales = jnp.stack([bu + 0.5 * jnp.sum(U**2), bv + 0.5 * jnp.sum(V**2),
                            bn + 0.5 * jnp.sum(jnp.where(lam == 0, 0.0, lam * sq))])
        return shapes, scales

    def _update_variances(self, key, latent, data, lam):
        shapes, scales = self._variance_posteriors(latent, data, lam)
        draws = _draw_log_inv_gamma(key, shapes, scales)
        return {**latent, **dict(zip(VARIANCE_NAMES, draws, strict=False))}

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
        check_quadrature_dim(self, 1)
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

        return grid_log_marginal(log_integrand, [t_axis, s_axis, s_axis])
