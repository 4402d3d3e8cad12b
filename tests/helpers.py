"""Test-only tools: exact draws from Gaussian intermediate distributions and a deliberately broken kernel."""

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from bdmc.kernels import KernelInfo
from bdmc.contracts import log_density


def gaussian_target(model, data, lam, like):
    """Mean and covariance of f(.; lam) when log f is quadratic, from its gradient and Hessian at zero.

    Independent of any model's Gibbs code: it only differentiates the model's log density.
    """
    flat0, unravel = ravel_pytree(like)
    logf = lambda v: log_density(model, unravel(v), data, lam)  # noqa: E731
    zero = jnp.zeros_like(flat0)
    precision = -jax.hessian(logf)(zero)
    mean = jnp.linalg.solve(precision, jax.grad(logf)(zero))
    return np.asarray(mean), np.asarray(jnp.linalg.inv(precision)), unravel


def invariance_z_scores(key, model, data, kernel, lam, *, n=4000, steps=20):
    """Start n chains at exact draws of f(.; lam), apply the kernel ``steps`` times, return z-scores.

    For each coordinate: the standardized mean (should be N(0, 1)) and the standardized second moment
    minus one (sd sqrt(2/n)). A kernel that leaves f invariant gives |z| < ~4.5; a wrong one does not.
    """
    like = model.sample_prior(jax.random.key(0))
    mean, cov, unravel = gaussian_target(model, data, lam, like)
    k0, k1 = jax.random.split(key)
    chol = np.linalg.cholesky(cov)
    x = mean + jax.random.normal(k0, (n, mean.size)) @ chol.T
    latents = jax.vmap(unravel)(x)

    def run(k, latent):
        def body(z, kk):
            z, _ = kernel(kk, z, data, lam)
            return z, None

        return jax.lax.scan(body, latent, jax.random.split(k, steps))[0]

    out = jax.jit(jax.vmap(run))(jax.random.split(k1, n), latents)
    flat = jax.vmap(lambda t: ravel_pytree(t)[0])(out)
    u = (np.asarray(flat) - mean) / np.sqrt(np.diag(cov))
    z_mean = u.mean(0) * np.sqrt(n)
    z_var = (np.mean(u**2, 0) - 1.0) / np.sqrt(2.0 / n)
    return np.concatenate([z_mean, z_var])


@dataclass(frozen=True)
class BrokenMH:
    """Random-walk Metropolis whose acceptance ratio is squared (it targets f^2, not f): a negative control."""

    model: Any
    scale: float = 0.1
    evals_per_step: int = 2

    def __call__(self, key, latent, data, lam):
        k1, k2 = jax.random.split(key)
        flat, unravel = ravel_pytree(latent)
        prop = unravel(flat + self.scale * jax.random.normal(k1, flat.shape))
        log_ratio = 2.0 * (log_density(self.model, prop, data, lam) - log_density(self.model, latent, data, lam))
        accept = jnp.log(jax.random.uniform(k2)) < log_ratio
        new = jax.tree.map(lambda a, b: jnp.where(accept, a, b), prop, latent)
        return new, KernelInfo(jnp.minimum(1.0, jnp.exp(log_ratio)))
