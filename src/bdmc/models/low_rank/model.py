"""The low-rank model with fixed variances, and the base it shares with the hyperparameter variant.

:class:`FactorModel` holds what both variants share (likelihood, data, predictive, the U and V Gibbs blocks);
:class:`LowRank` adds the prior, BIC, exact evidence on tiny instances, and the hooks of nested sampling and
variational Bayes, whose algebra lives in ``nested`` and ``vb``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from ...contracts.model import check_array_shape
from ...errors import OptionError
from ...kernels import Conditional, GibbsSweep
from ...kernels.conditional import CopyBlock
from . import vb
from .conditionals import (
    draw_precision,
    gaussian_log_prior,
    gaussian_rows_loglik,
    log_normal_precision,
    marginal_row_loglik,
    sample_tempered_rows,
    u_conditional,
    v_conditional,
)
from .nested import ConstrainedCoordinateGibbs

# Largest number of entries of V that exact_log_marginal integrates by a tensor-product grid.
MAX_QUADRATURE_DIM = 2


def grid_log_marginal(log_integrand, axes, chunk=1 << 16):
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


def check_quadrature_dim(model, limit):
    """Raise ValueError unless the k * d entries of ``model``'s V are few enough (``<= limit``) for a grid."""
    dim = model.k * model.d
    if dim > limit:
        raise OptionError(
            f"{type(model).__name__}.exact_log_marginal integrates V on a grid and needs k * d <= {limit}; "
            f"got k * d = {model.k} * {model.d} = {dim}"
        )


class FactorModel:
    """What the fixed- and integrated-variance models share: likelihood, data, predictive, U and V blocks.

    Subclasses define ``n, d, k`` and ``_vars(latent) -> (sigma_u^2, sigma_v^2, sigma_n^2)``.
    """

    def sample_data(self, key, latent):
        """Y = U V + N(0, sigma_n^2) noise."""
        return self.sample_data_tempered(key, latent, 1.0)

    def sample_data_tempered(self, key, latent, lam):
        """Data from the tempered likelihood normalized in y: row i has noise variance sigma_n^2 / lam_i."""
        sn2 = self._vars(latent)[2]
        return sample_tempered_rows(key, latent["U"] @ latent["V"], lam, sn2)

    def log_likelihood(self, latent, data):
        """(n,) array of log p(y_i | u_i, V)."""
        return gaussian_rows_loglik(latent["U"] @ latent["V"], data, self._vars(latent)[2])

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
        mean, chol = u_conditional(latent["V"], data, lam, su2, sn2)
        return {**latent, "U": draw_precision(key, mean, chol)}

    def _log_prob_u(self, latent, data, lam):
        su2, _, sn2 = self._vars(latent)
        mean, chol = u_conditional(latent["V"], data, lam, su2, sn2)
        return jnp.sum(log_normal_precision(latent["U"], mean, chol))

    def _update_v(self, key, latent, data, lam):
        _, sv2, sn2 = self._vars(latent)
        mean, chol = v_conditional(latent["U"], data, lam, sv2, sn2)
        chols = jnp.broadcast_to(chol, (self.d, self.k, self.k))
        return {**latent, "V": draw_precision(key, mean, chols).T}

    def _log_prob_v(self, latent, data, lam):
        _, sv2, sn2 = self._vars(latent)
        mean, chol = v_conditional(latent["U"], data, lam, sv2, sn2)
        return jnp.sum(log_normal_precision(latent["V"].T, mean, chol[None]))

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
class LowRank(FactorModel):
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
        return gaussian_log_prior(latent["U"], su2) + gaussian_log_prior(latent["V"], sv2)

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
        check_quadrature_dim(self, MAX_QUADRATURE_DIM)
        data = jnp.asarray(data)
        sv2 = self.sigma_v**2
        axis = np.linspace(-half_width * self.sigma_v, half_width * self.sigma_v, num_points)

        def log_integrand(v):
            V = v.reshape(self.k, self.d)
            return gaussian_log_prior(V, sv2) + self.log_marginal_given_v(V, data)

        return grid_log_marginal(log_integrand, [axis] * (self.k * self.d))

    # --- variational Bayes: mean-field Gaussian q(U) q(V) ------------------------------------------------
    # The functions of ``vb`` take the model first, so they are its methods as they stand (docstrings included).

    vb_log_symmetries = property(vb.log_symmetries)
    vb_init = vb.init
    vb_update = vb.update
    vb_bound = vb.bound
