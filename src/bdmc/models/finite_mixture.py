"""A tiny finite Gaussian mixture with discrete assignments: exact log-ML by enumeration."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from ..contracts.model import check_array_shape
from ..exact import mixture_log_marginal_enumerate
from ..kernels import Conditional, GibbsSweep
from ..kernels.conditional import CopyBlock


def log_2pi() -> jax.Array:
    """``log(2 pi)`` as a constant array of the active float dtype, built eagerly even while tracing.

    A captured array constant, not a Python literal: XLA then rounds this model's Gaussian terms exactly as
    when the constant was built at import in float64 (a literal changed some SMC runs by one ulp).
    """
    with jax.ensure_compile_time_eval():
        return jnp.log(2 * jnp.pi)


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
        log_theta = jnp.sum(-0.5 * t**2 - jnp.log(self.sigma_theta) - 0.5 * log_2pi())
        return jnp.sum(self.log_weights[latent["z"]]) + log_theta

    def _component_loglik(self, theta, data):
        """(n, k) matrix of log N(y_i; theta_c, sigma_noise^2 I)."""
        r = (data[:, None, :] - theta[None, :, :]) / self.sigma_noise
        return jnp.sum(-0.5 * r**2 - jnp.log(self.sigma_noise) - 0.5 * log_2pi(), axis=-1)

    def log_likelihood(self, latent, data):
        ll = self._component_loglik(latent["theta"], data)
        return jnp.take_along_axis(ll, latent["z"][:, None], axis=1)[:, 0]

    def check_data(self, data):
        check_array_shape("FiniteMixture data", data, (self.n, self.dim))

    def bic_sample_params(self, key):
        """Means drawn from their prior: a starting point for maximizing :meth:`bic_log_likelihood`."""
        return self.sigma_theta * jax.random.normal(key, (self.k, self.dim))

    def bic_log_likelihood(self, theta, data):
        """log p(y | means) with every assignment summed out."""
        return jnp.sum(jax.nn.logsumexp(self.log_weights[None, :] + self._component_loglik(theta, data), axis=1))

    def exact_log_marginal(self, data):
        """log p(y) by enumerating all k**n assignments (cluster means integrated analytically)."""
        return mixture_log_marginal_enumerate(
            data, log_weights=self.log_weights, sigma_theta=self.sigma_theta, sigma_noise=self.sigma_noise
        )

    def _z_logits(self, latent, data, lam):
        lam = jnp.broadcast_to(lam, (self.n,))
        ll = self._component_loglik(latent["theta"], data)
        logits = self.log_weights[None, :] + jnp.where(lam[:, None] == 0, 0.0, lam[:, None] * ll)
        return jax.nn.log_softmax(logits, axis=-1)

    def _update_z(self, key, latent, data, lam):
        return {**latent, "z": jax.random.categorical(key, self._z_logits(latent, data, lam), axis=-1)}

    def _log_prob_z(self, latent, data, lam):
        logp = self._z_logits(latent, data, lam)
        return jnp.sum(jnp.take_along_axis(logp, latent["z"][:, None], axis=1))

    def _theta_conditional(self, latent, data, lam):
        lam = jnp.broadcast_to(lam, (self.n,))
        members = jax.nn.one_hot(latent["z"], self.k, dtype=data.dtype) * lam[:, None]  # weighted membership
        precision = 1.0 / self.sigma_theta**2 + jnp.sum(members, axis=0) / self.sigma_noise**2  # (k,)
        mean = (members.T @ data) / self.sigma_noise**2 / precision[:, None]
        return mean, precision[:, None]

    def _update_theta(self, key, latent, data, lam):
        mean, precision = self._theta_conditional(latent, data, lam)
        return {**latent, "theta": mean + jax.random.normal(key, mean.shape) / jnp.sqrt(precision)}

    def _log_prob_theta(self, latent, data, lam):
        mean, precision = self._theta_conditional(latent, data, lam)
        return jnp.sum(-0.5 * precision * (latent["theta"] - mean) ** 2 + 0.5 * jnp.log(precision) - 0.5 * log_2pi())

    def conditionals(self):
        """Gibbs blocks of f(z, theta; lam): all assignments given the means, then the means given z."""
        return (
            Conditional("z | theta", self._update_z, self._log_prob_z, CopyBlock(("z",))),
            Conditional("theta | z", self._update_theta, self._log_prob_theta, CopyBlock(("theta",))),
        )

    def log_predictive(self, latent, data, lam, i):
        """log p(y_i | theta): the density of case i with its assignment summed out (given the means)."""
        ll = self._component_loglik(latent["theta"], data[i][None, :])[0]
        return jax.nn.logsumexp(self.log_weights + ll)

    def sample_case(self, key, latent, data, lam, i):
        """Redraw z_i from its conditional under ``f(.; lam)`` given the means (its prior when lam_i = 0)."""
        logits = self._z_logits(latent, data, lam)[i]
        return {**latent, "z": latent["z"].at[i].set(jax.random.categorical(key, logits))}

    def sample_data_tempered(self, key, latent, lam):
        """Data from the tempered likelihood normalized in y: noise variance sigma_noise^2 / lam per case."""
        lam = jnp.broadcast_to(jnp.asarray(lam, jnp.result_type(float)), (self.n,))
        sd = self.sigma_noise / jnp.sqrt(jnp.where(lam > 0, lam, 1.0))
        y = latent["theta"][latent["z"]] + sd[:, None] * jax.random.normal(key, (self.n, self.dim))
        return jnp.where(lam[:, None] > 0, y, 0.0)  # switched-off cases carry no information

    def default_kernel(self):
        """The tempered Gibbs sampler."""
        return GibbsSweep(self.conditionals())
