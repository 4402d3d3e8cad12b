"""A two-component Gaussian mixture as a user writes it in NumPyro: exchangeable components (the same prior on
each mean, a symmetric Dirichlet on the weights), so its posterior is the same under the two labellings. NUTS keeps
one labelling; the audit finds the symmetry by permuting the components and tests label-invariant quantities.

``mixture_linear`` has a bug: its density mixes the components' log densities linearly (``sum_k w_k log p_k``)
instead of by log-sum-exp, while its simulator draws from the mixture. It is as symmetric in the labels, so only a
label-invariant check can catch it.
"""

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

CASES = 40


def mixture(y=None):
    w = numpyro.sample("w", dist.Dirichlet(jnp.full(2, 2.0)))
    mu = numpyro.sample("mu", dist.Normal(0.0, 3.0).expand([2]))
    numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(w), dist.Normal(mu, 1.0)), obs=y,
                   sample_shape=() if y is not None else (CASES,))


class LinearMixture(dist.Distribution):
    """Draws from the mixture; scores ``sum_k w_k log N(y | mu_k, 1)`` (the bug)."""

    support = dist.constraints.real

    def __init__(self, w, mu, validate_args=None):
        self.w, self.mu = w, mu
        super().__init__(batch_shape=(), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        k1, k2 = jax.random.split(key)
        first = jax.random.uniform(k1, sample_shape) < self.w[0]
        return jnp.where(first, self.mu[0], self.mu[1]) + jax.random.normal(k2, sample_shape)

    def log_prob(self, value):
        return jnp.sum(self.w * dist.Normal(self.mu, 1.0).log_prob(value[..., None]), -1)


def mixture_linear(y=None):
    w = numpyro.sample("w", dist.Dirichlet(jnp.full(2, 2.0)))
    mu = numpyro.sample("mu", dist.Normal(0.0, 3.0).expand([2]))
    numpyro.sample("y", LinearMixture(w, mu), obs=y, sample_shape=() if y is not None else (CASES,))
