"""The likelihood the Gaussian-mean models share: ``y_i ~ N(m, noise_std^2 I_dim)`` for i = 1..n.

:class:`~bdmc.models.GaussianMean` and :class:`~bdmc.models.CorrelatedGaussianMean` differ only in the prior
of the mean ``m`` (isotropic, or a full rotated covariance); the data model, its tempered simulation and the
exact Gibbs kernel built from the mean's conditional are this one base.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ..kernels import GibbsSweep

LOG_2PI = math.log(2 * math.pi)  # a Python float: it takes the dtype of the arrays it meets


class GaussianCases:
    """``y_i ~ N(m, noise_std^2 I_dim)``, i = 1..n, independent given the mean ``m = latent[mean_site]``.

    A subclass is a dataclass with the fields ``n``, ``dim`` and ``noise_std``, names the latent site of the
    mean in the class attribute ``mean_site`` and defines ``conditionals()``: its exact Gibbs block for the
    mean, which :meth:`default_kernel` sweeps.
    """

    mean_site = "mu"

    def sample_data(self, key, latent):
        """``n`` cases about the latent mean, shape (n, dim)."""
        return latent[self.mean_site] + self.noise_std * jax.random.normal(key, (self.n, self.dim))

    def log_likelihood(self, latent, data):
        """``log N(y_i; m, noise_std^2 I)``, one term per case, shape (n,)."""
        z = (data - latent[self.mean_site]) / self.noise_std
        return jnp.sum(-0.5 * z**2 - jnp.log(self.noise_std) - 0.5 * LOG_2PI, axis=-1)

    def sample_data_tempered(self, key, latent, lam):
        """Data from the tempered likelihood normalized in y: noise variance noise_std^2 / lam per case."""
        lam = jnp.broadcast_to(jnp.asarray(lam, jnp.result_type(float)), (self.n,))
        sd = self.noise_std / jnp.sqrt(jnp.where(lam > 0, lam, 1.0))
        y = latent[self.mean_site] + sd[:, None] * jax.random.normal(key, (self.n, self.dim))
        return jnp.where(lam[:, None] > 0, y, 0.0)  # switched-off cases carry no information

    def default_kernel(self):
        """The exact Gibbs update."""
        return GibbsSweep(self.conditionals())
