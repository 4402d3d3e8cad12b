"""The four models of the evidence-calibration page (``calibrate_tools.py``), each as a NumPyro program (bdmc's
Model, through ``bdmc.ppl.from_numpyro``), a unit-cube prior transform for the nested samplers and a PyMC twin for
``sample_smc``.

Every prior factorizes on the program's own unconstrained coordinates (the hierarchical model is written
non-centred), so the nested samplers' transform is a product of inverse CDFs: a positive scale ``s`` with a
half-normal prior is ``log s`` on the latent, drawn as ``log(HalfNormal.ppf(u))``. ``check_pymc_density`` checks each
PyMC twin's log density against the NumPyro program's at prior draws (the same function of the same point).

- ``regression``: ``y ~ Normal(X beta, 1)``, ``beta ~ Normal(0, 1)``, 5 coefficients, 40 cases;
- ``schools``: eight schools, non-centred: ``mu ~ Normal(0, 5)``, ``tau ~ HalfNormal(5)``, ``eta_j ~ Normal(0, 1)``,
  ``y_j ~ Normal(mu + tau eta_j, sigma_j)`` with the classic ``sigma_j`` (hierarchical, 10 parameters);
- ``logistic``: ``y ~ Bernoulli(logit^-1(X beta))``, ``beta ~ Normal(0, 1)``, 10 coefficients, 100 cases;
- ``student``: ``y ~ StudentT(3, a + b x, sigma)``, ``a, b ~ Normal(0, 2)``, ``sigma ~ HalfNormal(1)``, 30 cases
  (a constrained scale and a heavy-tailed likelihood).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.flatten_util import ravel_pytree
from scipy import stats

import bdmc

RNG = np.random.default_rng(20261128)
REG_X = RNG.standard_normal((40, 5))
LOGIT_X = RNG.standard_normal((100, 10)) / np.sqrt(10)
STUDENT_X = np.linspace(-1.0, 1.0, 30)
SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def regression(x, y=None):
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
    with numpyro.plate("cases", x.shape[0]):
        numpyro.sample("y", dist.Normal(x @ beta, 1.0), obs=y)


def schools(sigma, y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfNormal(5.0))
    eta = numpyro.sample("eta", dist.Normal(0.0, 1.0).expand([sigma.shape[0]]).to_event(1))
    with numpyro.plate("schools", sigma.shape[0]):
        numpyro.sample("y", dist.Normal(mu + tau * eta, sigma), obs=y)


def logistic(x, y=None):
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
    with numpyro.plate("cases", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=x @ beta), obs=y)


def student(x, y=None):
    a = numpyro.sample("a", dist.Normal(0.0, 2.0))
    b = numpyro.sample("b", dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("cases", x.shape[0]):
        numpyro.sample("y", dist.StudentT(3.0, a + b * x, sigma), obs=y)


def _ppf(kind: str, scale: float):
    """One coordinate's inverse CDF on the program's unconstrained scale."""
    if kind == "normal":
        return lambda u: stats.norm.ppf(u, scale=scale)
    return lambda u: np.log(stats.halfnorm.ppf(u, scale=scale))


@dataclass(frozen=True, eq=False)
class CalibrationModel:
    """One model of the page: the bdmc Model, its prior transform and its PyMC twin."""

    name: str
    title: str
    model: object
    coordinates: tuple  # per flat coordinate, in ravel_pytree order: (kind, scale)
    pymc: Callable  # data -> pm.Model

    @property
    def dim(self) -> int:
        return len(self.coordinates)

    def prior_transform(self, u):
        u = np.clip(np.asarray(u, dtype=np.float64), 1e-12, 1 - 1e-12)
        columns = [_ppf(kind, scale)(u[..., i]) for i, (kind, scale) in enumerate(self.coordinates)]
        return np.stack(columns, axis=-1)


def _pymc_regression(data):
    import pymc as pm

    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0, shape=REG_X.shape[1])
        pm.Normal("y", pm.math.dot(REG_X, beta), 1.0, observed=np.asarray(data["y"]))
    return model


def _pymc_schools(data):
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 5.0)
        eta = pm.Normal("eta", 0.0, 1.0, shape=8)
        pm.Normal("y", mu + tau * eta, SCHOOLS_SIGMA, observed=np.asarray(data["y"]))
    return model


def _pymc_logistic(data):
    import pymc as pm

    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0, shape=LOGIT_X.shape[1])
        pm.Bernoulli("y", logit_p=pm.math.dot(LOGIT_X, beta), observed=np.asarray(data["y"]))
    return model


def _pymc_student(data):
    import pymc as pm

    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 2.0)
        b = pm.Normal("b", 0.0, 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.StudentT("y", nu=3.0, mu=a + b * STUDENT_X, sigma=sigma, observed=np.asarray(data["y"]))
    return model


def build(name: str) -> CalibrationModel:
    """One of ``NAMES`` (a fresh Model: it holds compiled programs)."""
    if name == "regression":
        return CalibrationModel(name, "linear regression (5 coefficients, 40 cases)",
                                bdmc.ppl.from_numpyro(regression, jnp.asarray(REG_X), observed="y"),
                                (("normal", 1.0),) * 5, _pymc_regression)
    if name == "schools":
        # ravel_pytree orders the sites by name: eta (8), mu, tau
        return CalibrationModel(name, "eight schools, non-centred (10 parameters, hierarchical)",
                                bdmc.ppl.from_numpyro(schools, jnp.asarray(SCHOOLS_SIGMA), observed="y"),
                                (("normal", 1.0),) * 8 + (("normal", 5.0), ("halfnormal", 5.0)), _pymc_schools)
    if name == "logistic":
        return CalibrationModel(name, "logistic regression (10 coefficients, 100 cases)",
                                bdmc.ppl.from_numpyro(logistic, jnp.asarray(LOGIT_X), observed="y"),
                                (("normal", 1.0),) * 10, _pymc_logistic)
    if name == "student":
        return CalibrationModel(name, "Student-t regression (nu = 3, half-normal scale)",
                                bdmc.ppl.from_numpyro(student, jnp.asarray(STUDENT_X), observed="y"),
                                (("normal", 2.0), ("normal", 2.0), ("halfnormal", 1.0)), _pymc_student)
    raise KeyError(name)


NAMES = ("regression", "schools", "logistic", "student")


def check_transform(entry: CalibrationModel, draws: int = 4000) -> float:
    """The largest difference of mean and standard deviation, per coordinate, between the transform's draws and
    the program's prior draws (small when the transform is the program's prior)."""
    ours = entry.prior_transform(np.random.default_rng(0).uniform(size=(draws, entry.dim)))
    theirs = np.asarray(jax.vmap(lambda k: ravel_pytree(entry.model.sample_prior(k))[0])(
        jax.random.split(jax.random.key(0), draws)))
    return float(max(np.max(np.abs(ours.mean(0) - theirs.mean(0))), np.max(np.abs(ours.std(0) - theirs.std(0)))))


def check_pymc_density(entry: CalibrationModel, points: int = 3) -> float:
    """The largest difference, up to a constant, between the PyMC twin's and the program's log density at prior
    draws (PyMC's value variables are the same unconstrained coordinates: log tau, log sigma)."""
    sim = bdmc.simulate(jax.random.key(1), entry.model)
    pm_model = entry.pymc(sim.data)
    logp = pm_model.compile_logp()
    diffs = []
    for i in range(points):
        latent = entry.model.sample_prior(jax.random.key(10 + i))
        ours = float(entry.model.log_prior(latent) + jnp.sum(entry.model.log_likelihood(latent, sim.data)))
        point = {}
        for var in pm_model.value_vars:
            site = var.name.replace("_log__", "")
            point[var.name] = np.asarray(latent[site])
        diffs.append(ours - float(logp(point)))
    return float(np.ptp(diffs) + abs(diffs[0]))
