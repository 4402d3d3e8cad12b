"""NumPyro programs of the bug corpus, each beside its correct twin (``bug=False``).

The bugs live where NumPyro users write code by hand: a custom distribution (its ``sample`` and ``log_prob``
written separately, so they can disagree) and a custom MCMC kernel. Each builder returns
``(model, sampler)``: the model is the program through :func:`bdmc.ppl.from_numpyro`; the sampler is the user's
kernel where the bug is in it, else None.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

import bdmc
from bdmc.contracts.model import log_density
from bdmc.kernels import KernelInfo

N = 20
X = np.linspace(-1.0, 1.0, N)


# ------------------------------------------------------------------- a hand-written transform (Jacobian)
class LogGamma(dist.Distribution):
    """log s for s ~ Gamma(concentration, rate): the user samples log s so the sampler needs no bound.

    The density of u = log s is Gamma(e^u) e^u; the bug leaves out the Jacobian e^u (``+ value``)."""

    support = constraints.real

    def __init__(self, concentration, rate, *, jacobian=True, validate_args=None):
        self.concentration, self.rate, self.jacobian = concentration, rate, jacobian
        super().__init__(batch_shape=jnp.shape(concentration), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return jnp.log(dist.Gamma(self.concentration, self.rate).sample(key, sample_shape))

    def log_prob(self, value):
        lp = dist.Gamma(self.concentration, self.rate).log_prob(jnp.exp(value))
        return lp + value if self.jacobian else lp


def _jacobian_program(x, y=None, *, bug: bool):
    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5))
    log_s = numpyro.sample("log_s", LogGamma(2.0, 2.0, jacobian=not bug))
    with numpyro.plate("cases", x.shape[0]):
        numpyro.sample("y", dist.Normal(a + b * x, jnp.exp(log_s)), obs=y)


def jacobian(bug: bool):
    return bdmc.ppl.from_numpyro(functools.partial(_jacobian_program, bug=bug), jnp.asarray(X), observed="y"), None


# ------------------------------------------------------------------ a mixture that skips log-sum-exp
class TwoNormals(dist.Distribution):
    """w N(mu1, 1) + (1 - w) N(mu2, 1), written by hand. The bug mixes the log densities linearly
    (``w log p1 + (1 - w) log p2``) instead of ``log(w p1 + (1 - w) p2)``."""

    support = constraints.real

    def __init__(self, w, mu1, mu2, *, logsumexp=True, validate_args=None):
        self.w, self.mu1, self.mu2, self.logsumexp = w, mu1, mu2, logsumexp
        shape = jax.lax.broadcast_shapes(jnp.shape(w), jnp.shape(mu1), jnp.shape(mu2))
        super().__init__(batch_shape=shape, validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        k1, k2 = jax.random.split(key)
        shape = sample_shape + self.batch_shape
        first = jax.random.uniform(k1, shape) < self.w
        return jnp.where(first, self.mu1, self.mu2) + jax.random.normal(k2, shape)

    def log_prob(self, value):
        l1, l2 = dist.Normal(self.mu1, 1.0).log_prob(value), dist.Normal(self.mu2, 1.0).log_prob(value)
        if self.logsumexp:
            return jnp.logaddexp(jnp.log(self.w) + l1, jnp.log1p(-self.w) + l2)
        return self.w * l1 + (1 - self.w) * l2


def _mixture_program(n, y=None, *, bug: bool):
    w = numpyro.sample("w", dist.Beta(2.0, 2.0))
    mu1 = numpyro.sample("mu1", dist.Normal(-2.0, 1.0))
    mu2 = numpyro.sample("mu2", dist.Normal(2.0, 1.0))
    with numpyro.plate("cases", n):
        numpyro.sample("y", TwoNormals(w, mu1, mu2, logsumexp=not bug), obs=y)


def mixture(bug: bool):
    return bdmc.ppl.from_numpyro(functools.partial(_mixture_program, bug=bug), 30, observed="y"), None


# ----------------------------------------------------------- a broadcast that sums n x n likelihood terms
class CaseNormal(dist.Distribution):
    """A hand-written normal likelihood of n cases. The bug compares every case with every mean
    (``value[:, None] - loc[None, :]``, as when x is an (n, 1) column), so each case's term sums n terms."""

    support = constraints.real

    def __init__(self, loc, scale, *, broadcast_bug=False, validate_args=None):
        self.loc, self.scale, self.broadcast_bug = loc, scale, broadcast_bug
        super().__init__(batch_shape=jnp.shape(loc), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return self.loc + self.scale * jax.random.normal(key, sample_shape + self.batch_shape)

    def log_prob(self, value):
        if self.broadcast_bug:
            return dist.Normal(self.loc[None, :], self.scale).log_prob(value[..., :, None]).sum(-1)
        return dist.Normal(self.loc, self.scale).log_prob(value)


def _broadcast_program(x, y=None, *, bug: bool):
    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    numpyro.sample("y", CaseNormal(a + b * x, sigma, broadcast_bug=bug), obs=y)


def broadcast(bug: bool):
    return bdmc.ppl.from_numpyro(functools.partial(_broadcast_program, bug=bug), jnp.asarray(X), observed="y"), None


# ------------------------------------------------------- a Metropolis kernel without its Hastings correction
def _scale_program(n, y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("cases", n):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


@dataclass(frozen=True)
class MultiplicativeMetropolis:
    """A user's Metropolis kernel: a Gaussian random walk on mu and a multiplicative one on sigma,
    sigma' = sigma exp(c eps), accepted with the ratio of the densities of (mu, sigma).

    A multiplicative proposal is not symmetric in sigma: its Hastings factor is sigma' / sigma. The bug leaves it
    out. The model's latent is log sigma (NumPyro's unconstrained space), whose density is that of sigma times
    sigma, so the density of sigma is the latent's minus log sigma."""

    model: object
    step: float = 0.6
    hastings: bool = True

    def __call__(self, key, latent, data, lam):
        k_mu, k_s, k_u = jax.random.split(key, 3)
        proposal = {"mu": latent["mu"] + self.step * jax.random.normal(k_mu),
                    "sigma": latent["sigma"] + self.step * jax.random.normal(k_s)}  # log sigma' = log sigma + c eps

        def log_density_of_sigma(x):  # the density of (mu, sigma), as the user writes the target
            return log_density(self.model, x, data, lam) - x["sigma"]

        log_ratio = log_density_of_sigma(proposal) - log_density_of_sigma(latent)
        if self.hastings:
            log_ratio = log_ratio + (proposal["sigma"] - latent["sigma"])  # log(sigma' / sigma)
        accept = jnp.log(jax.random.uniform(k_u)) < log_ratio
        new = jax.tree.map(lambda p, c: jnp.where(accept, p, c), proposal, latent)
        return new, KernelInfo(jnp.minimum(1.0, jnp.exp(log_ratio)))


def metropolis(bug: bool):
    model = bdmc.ppl.from_numpyro(_scale_program, 5, observed="y")
    return model, MultiplicativeMetropolis(model, hastings=not bug)


PROGRAMS = {"jacobian": jacobian, "mixture": mixture, "broadcast": broadcast, "metropolis": metropolis}
