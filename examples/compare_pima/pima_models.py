"""The nested logistic regressions of Friel and Wyse (2012) on the Pima Indians data (532 complete cases,
covariates standardized), as NumPyro programs for ``bdmc compare``: an intercept and ``beta ~ Normal(0, 10^2)``
(variance 100) on each coefficient. Model 1: npreg, glu, bmi and ped; model 2: model 1 plus age.
``model1_tilde`` is model 1 with its prior written as Stan's ``~`` writes it, dropping each coefficient's
``-log(10 sqrt(2 pi))``: a prior that does not integrate to one (the compare gate refuses it)."""

import math

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

PRIOR_SD = 10.0


class NormalWithoutConstant(dist.Normal):
    """Normal(0, 10)'s density without its normalizing constant, as ``beta ~ normal(0, 10)`` adds it in Stan."""

    def log_prob(self, value):
        return super().log_prob(value) + math.log(self.scale * math.sqrt(2 * math.pi))


def _logistic(columns, y, prior=dist.Normal):
    x = jnp.stack(columns, axis=1)
    beta = numpyro.sample("beta", prior(0.0, PRIOR_SD).expand([x.shape[1] + 1]).to_event(1))
    with numpyro.plate("women", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=beta[0] + x @ beta[1:]), obs=y)


def model1(npreg, glu, bmi, ped, age=None, y=None):  # age is in the data file; model 1 leaves it out
    _logistic([npreg, glu, bmi, ped], y)


def model2(npreg, glu, bmi, ped, age, y=None):
    _logistic([npreg, glu, bmi, ped, age], y)


def model1_tilde(npreg, glu, bmi, ped, age=None, y=None):
    _logistic([npreg, glu, bmi, ped], y, prior=NormalWithoutConstant)
