"""A tiny finite Gaussian mixture with discrete assignments: exact log-ML by enumeration."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from ..exact import mixture_log_marginal_enumerate
from ..kernels import Gibbs
from ._contract import check_array_shape

LOG_2PI = jnp.log(2 * jnp.pi)


@dataclass(frozen=True)
class FiniteMixture:
    """``z_i ~ Uniform{1..k}``, ``theta_c ~ N(0, sigma_theta^2 I_dim)``, ``y_i ~ N(theta_{z_i}, sigma_noise^2 I_dim)``.

    Latent ``{"z": int (n,), "theta": (k, dim)}``; data ``(n, dim)``. Small enough (k**n assignments) for
    brute-force enumeration of the log marginal likelihood. Ships a tempered Gibbs kernel.
    """

    n: int = 6
    k: int = 3
    dim: int = 1
    sigma_theta: float = 2.0
    sigma_noise: float = 0.5

    @property
    def log_weights(self):
        return jnp.full(self.k, -jnp.log(self.k))

    def sample_prior(self, key):
        k1, k2 = jax.random.split(key)
        z = jax.random.randint(k1, (self.n,), 0, self.k)
        theta = self.sigma_theta * jax.random.normal(k2, (self.k, self.dim))
        return {"z": z, "theta": theta}

    def sample_data(self, key, latent):
        return latent["theta"][latent["z"]] + self.sigma_noise * jax.random.normal(key, (self.n, self.dim))

    def log_prior(self, latent):
        t = latent["theta"] / self.sigma_theta
        log_theta = jnp.sum(-0.5 * t**2 - jnp.log(self.sigma_theta) - 0.5 * LOG_2PI)
        return jnp.sum(self.log_weights[latent["z"]]) + log_theta

    def _component_loglik(self, theta, data):
        """(n, k) matrix of log N(y_i; theta_c, sigma_noise^2 I)."""
        r = (data[:, None, :] - theta[None, :, :]) / self.sigma_noise
        return jnp.sum(-0.5 * r**2 - jnp.log(self.sigma_noise) - 0.5 * LOG_2PI, axis=-1)

    def log_likelihood(self, latent, data):
        ll = self._component_loglik(latent["theta"], data)
        return jnp.take_along_axis(ll, latent["z"][:, None], axis=1)[:, 0]

    def check_data(self, data):
        check_array_shape("FiniteMixture data", data, (self.n, self.dim))

    def exact_log_marginal(self, data):
        """log p(y) by enumerating all k**n assignments (cluster means integrated analytically)."""
        return mixture_log_marginal_enumerate(
            data, log_weights=self.log_weights, sigma_theta=self.sigma_theta, sigma_noise=self.sigma_noise
        )

    def gibbs_update(self, key, latent, data, lam):
        """z_i | theta for every i (tempered categorical), then theta | z (tempered Gaussian)."""
        k1, k2 = jax.random.split(key)
        lam = jnp.broadcast_to(lam, (self.n,))
        ll = self._component_loglik(latent["theta"], data)
        logits = self.log_weights[None, :] + jnp.where(lam[:, None] == 0, 0.0, lam[:, None] * ll)
        z = jax.random.categorical(k1, logits, axis=-1)
        onehot = jax.nn.one_hot(z, self.k, dtype=data.dtype) * lam[:, None]  # (n, k) weighted membership
        precision = 1.0 / self.sigma_theta**2 + jnp.sum(onehot, axis=0) / self.sigma_noise**2  # (k,)
        mean = (onehot.T @ data) / self.sigma_noise**2 / precision[:, None]
        theta = mean + jax.random.normal(k2, (self.k, self.dim)) / jnp.sqrt(precision)[:, None]
        return {"z": z, "theta": theta}

    def default_kernel(self):
        """The tempered Gibbs sampler."""
        return Gibbs(self.gibbs_update)
