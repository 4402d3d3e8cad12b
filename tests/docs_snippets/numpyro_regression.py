"""The conjugate regression of the docs in NumPyro, for the commands that name a program file (``model.py:fn``,
``regression.py:regression``, ``m.py:model``): the docs' function under each of those names."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def regression(x, y=None):
    s2 = numpyro.sample("s2", dist.InverseGamma(1.0, 1.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, jnp.sqrt(0.1 * s2)).expand([x.shape[1]]).to_event(1))
    with numpyro.plate("cases", x.shape[0]):
        numpyro.sample("y", dist.Normal(x @ beta, jnp.sqrt(s2)), obs=y)


fn = model = regression
