"""Bayesian polynomial regression with conjugate normal-inverse-gamma prior (Ji, Shen, West, Sec. 4.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from ..contracts.model import check_array_shape
from ..exact import linear_regression_log_marginal
from ..kernels import Conditional, GibbsSweep
from ..kernels.conditional import CopyBlock

LOG_2PI = math.log(2 * math.pi)  # a Python float: it takes the dtype of the arrays it meets


@dataclass(frozen=True)
class LinearRegression:
    """``y ~ N(X beta, s2 I)``, ``beta ~ N(0, tau s2 I)``, ``s2 ~ IG(h0, k0)`` (shape h0, scale k0).

    The design has rows ``(1, x, x^2, ..., x^degree)`` at ``n`` equally spaced points in ``x_range``;
    the defaults are the paper's (n = 20, cubic, tau = 0.1, h0 = k0 = 1). The latent is unconstrained:
    ``{"beta": (degree + 1,), "log_s2": ()}``, and ``log_prior`` includes the log-transform Jacobian.
    """

    n: int = 20
    degree: int = 3
    tau: float = 0.1
    h0: float = 1.0
    k0: float = 1.0
    x_range: tuple = (-2.0, 2.0)

    @property
    def design(self) -> jax.Array:
        x = np.linspace(self.x_range[0], self.x_range[1], self.n)
        return jnp.asarray(np.vander(x, self.degree + 1, increasing=True))

    @property
    def p(self) -> int:
        return self.degree + 1

    def sample_prior(self, key):
        k1, k2 = jax.random.split(key)
        s2 = self.k0 / jax.random.gamma(k1, self.h0)
        beta = jnp.sqrt(self.tau * s2) * jax.random.normal(k2, (self.p,))
        return {"beta": beta, "log_s2": jnp.log(s2)}

    def sample_data(self, key, latent):
        sd = jnp.exp(0.5 * latent["log_s2"])
        return self.design @ latent["beta"] + sd * jax.random.normal(key, (self.n,))

    def log_prior(self, latent):
        ls2, beta = latent["log_s2"], latent["beta"]
        # log IG(s2; h0, k0) + log s2 (Jacobian of s2 = exp(log_s2)).
        log_s2_density = self.h0 * jnp.log(self.k0) - gammaln(self.h0) - self.h0 * ls2 - self.k0 * jnp.exp(-ls2)
        var = self.tau * jnp.exp(ls2)
        log_beta = jnp.sum(-0.5 * beta**2 / var - 0.5 * jnp.log(var) - 0.5 * LOG_2PI)
        return log_s2_density + log_beta

    def log_likelihood(self, latent, data):
        ls2 = latent["log_s2"]
        r = data - self.design @ latent["beta"]
        return -0.5 * r**2 * jnp.exp(-ls2) - 0.5 * ls2 - 0.5 * LOG_2PI

    def check_data(self, data):
        check_array_shape("LinearRegression data", data, (self.n,))

    def bic_sample_params(self, key):
        """A prior draw of (beta, log s2): a starting point for maximizing :meth:`bic_log_likelihood`."""
        return self.sample_prior(key)

    def bic_log_likelihood(self, params, data):
        """log p(y | beta, s2): there are no local latents to sum out."""
        return jnp.sum(self.log_likelihood(params, data))

    def exact_log_marginal(self, data):
        """Closed-form log p(y) (Ji, Shen, West, Sec. 4.1)."""
        return linear_regression_log_marginal(data, self.design, tau=self.tau, h0=self.h0, k0=self.k0)

    def _beta_conditional(self, latent, data, lam):
        """Mean and Cholesky factor of the precision of beta | s2 under f(.; lam)."""
        X = self.design
        lam = jnp.broadcast_to(lam, (self.n,))
        A = (jnp.eye(self.p) / self.tau + (X.T * lam) @ X) * jnp.exp(-latent["log_s2"])
        chol = jnp.linalg.cholesky(A)
        mean = jax.scipy.linalg.cho_solve((chol, True), (X.T * lam) @ data * jnp.exp(-latent["log_s2"]))
        return mean, chol

    def _update_beta(self, key, latent, data, lam):
        mean, chol = self._beta_conditional(latent, data, lam)
        noise = jax.scipy.linalg.solve_triangular(chol.T, jax.random.normal(key, (self.p,)), lower=False)
        return {**latent, "beta": mean + noise}

    def _log_prob_beta(self, latent, data, lam):
        mean, chol = self._beta_conditional(latent, data, lam)
        w = chol.T @ (latent["beta"] - mean)
        return jnp.sum(jnp.log(jnp.diag(chol))) - 0.5 * w @ w - 0.5 * self.p * LOG_2PI

    def _s2_conditional(self, latent, data, lam):
        """Shape and scale of the inverse-gamma s2 | beta under f(.; lam)."""
        lam = jnp.broadcast_to(lam, (self.n,))
        beta = latent["beta"]
        r = data - self.design @ beta
        shape = self.h0 + 0.5 * self.p + 0.5 * jnp.sum(lam)
        scale = self.k0 + 0.5 * beta @ beta / self.tau + 0.5 * jnp.sum(jnp.where(lam == 0, 0.0, lam * r**2))
        return shape, scale

    def _update_s2(self, key, latent, data, lam):
        shape, scale = self._s2_conditional(latent, data, lam)
        return {**latent, "log_s2": jnp.log(scale) - jnp.log(jax.random.gamma(key, shape))}

    def _log_prob_s2(self, latent, data, lam):
        shape, scale = self._s2_conditional(latent, data, lam)
        ls2 = latent["log_s2"]
        return shape * jnp.log(scale) - gammaln(shape) - shape * ls2 - scale * jnp.exp(-ls2)  # in log s2

    def conditionals(self):
        """The two Gibbs blocks of f(beta, s2; lam): beta | s2 (Gaussian) and s2 | beta (inverse gamma)."""
        return (
            Conditional("beta | s2", self._update_beta, self._log_prob_beta, CopyBlock(("beta",))),
            Conditional("s2 | beta", self._update_s2, self._log_prob_s2, CopyBlock(("log_s2",))),
        )

    def default_kernel(self):
        """The exact two-block Gibbs sampler."""
        return GibbsSweep(self.conditionals())
