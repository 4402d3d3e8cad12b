"""Conjugate Gaussian mean with known noise: exact log-ML in closed form."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from ..contracts.model import check_array_shape
from ..exact import gaussian_mean_log_marginal
from ..kernels import Conditional
from ..kernels.conditional import CopyBlock
from .gaussian_cases import LOG_2PI, GaussianCases


@dataclass(frozen=True)
class GaussianMean(GaussianCases):
    """``mu ~ N(prior_mean, prior_std^2 I_dim)``, ``y_i ~ N(mu, noise_std^2 I_dim)`` for i = 1..n.

    Latent ``{"mu": (dim,)}``; data ``(n, dim)``. The tempered conditional of ``mu`` is Gaussian for any
    per-case weights, so the model ships an exact Gibbs kernel.
    """

    n: int = 20
    dim: int = 5
    prior_mean: float = 0.0
    prior_std: float = 1.0
    noise_std: float = 1.0

    def sample_prior(self, key):
        return {"mu": self.prior_mean + self.prior_std * jax.random.normal(key, (self.dim,))}

    def log_prior(self, latent):
        z = (latent["mu"] - self.prior_mean) / self.prior_std
        return jnp.sum(-0.5 * z**2 - jnp.log(self.prior_std) - 0.5 * LOG_2PI)

    def check_data(self, data):
        check_array_shape("GaussianMean data", data, (self.n, self.dim))

    def bic_sample_params(self, key):
        """A prior draw of mu: a starting point for maximizing :meth:`bic_log_likelihood`."""
        return self.sample_prior(key)

    def bic_log_likelihood(self, params, data):
        """log p(y | mu): there are no local latents to sum out."""
        return jnp.sum(self.log_likelihood(params, data))

    def exact_log_marginal(self, data):
        """Closed-form log p(y)."""
        return gaussian_mean_log_marginal(
            data, prior_mean=self.prior_mean, prior_std=self.prior_std, noise_std=self.noise_std
        )

    def _mu_conditional(self, data, lam):
        lam = jnp.broadcast_to(lam, (self.n,))
        precision = 1.0 / self.prior_std**2 + jnp.sum(lam) / self.noise_std**2
        mean = (self.prior_mean / self.prior_std**2 + lam @ data / self.noise_std**2) / precision
        return mean, precision

    def gibbs_update(self, key, latent, data, lam):
        """Exact draw of mu from f(mu; lam) (prior times tempered likelihood)."""
        mean, precision = self._mu_conditional(data, lam)
        return {"mu": mean + jax.random.normal(key, (self.dim,)) / jnp.sqrt(precision)}

    def _log_prob_mu(self, latent, data, lam):
        mean, precision = self._mu_conditional(data, lam)
        return jnp.sum(-0.5 * precision * (latent["mu"] - mean) ** 2 + 0.5 * jnp.log(precision) - 0.5 * LOG_2PI)

    def conditionals(self):
        """The single Gibbs block: mu given the data, under f(.; lam)."""
        return (Conditional("mu", self.gibbs_update, self._log_prob_mu, CopyBlock(("mu",))),)
