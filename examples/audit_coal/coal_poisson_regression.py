"""A Poisson regression of the British coal-mining disasters (yearly counts, log rate a + b t with t the year
standardized), as a NumPyro program for ``bdmc audit``; and the same program with a simulator bug, the negative
control: a hand-written count distribution whose ``sample`` draws at a rate 10% too high while its ``log_prob``
is right, the way a user's own distribution class goes wrong."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def trend(t, y=None):
    a = numpyro.sample("a", dist.Normal(0.0, 2.0))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    with numpyro.plate("years", t.shape[0]):
        numpyro.sample("y", dist.Poisson(jnp.exp(a + b * t)), obs=y)


class PoissonSampledTooHigh(dist.Poisson):
    """Poisson's density, but draws at 1.1 times the rate."""

    def sample(self, key, sample_shape=()):
        return dist.Poisson(1.1 * self.rate).sample(key, sample_shape)


def trend_wrong_rate(t, y=None):
    a = numpyro.sample("a", dist.Normal(0.0, 2.0))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    with numpyro.plate("years", t.shape[0]):
        numpyro.sample("y", PoissonSampledTooHigh(jnp.exp(a + b * t)), obs=y)
