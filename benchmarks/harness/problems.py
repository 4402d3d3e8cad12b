"""The peers' common problems (``peers.py`` and the scripts comparing bdmc with other tools): one log density per
problem, written once, and exact log Z computed without bdmc.

Every problem has a flat unconstrained latent ``x`` (shape ``(dim,)``) with

* ``log_prior(x)`` (normalized, Jacobian included) and ``log_lik(x, data)`` (one term per data case), in JAX;
* ``prior_transform(u)``: unit cube to the nested samplers' parameters ``z`` (vectorized over rows, NumPy),
  and ``z_to_x(z)``: those parameters to ``x`` (the identity except eight schools, whose ``z`` has tau
  where ``x`` has log tau); the nested samplers see ``log_lik(z_to_x(z))`` summed;
* ``pymc_model()``: the same math in PyMC, and ``pymc_point(x)``, the matching point of its value variables;
* ``exact``: log p(y) in closed form or by quadrature (NumPy/SciPy), or None (Pima logistic).

:class:`FlatModel` wraps a problem as a bdmc Model (latent ``{"x": x}``), so bdmc runs with its own defaults.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from scipy import integrate, special, stats

from bdmc.errors import MissingCapabilityError, RunError

LOG_2PI = math.log(2 * math.pi)
SCHOOLS_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
MU_SD, TAU_SCALE = 5.0, 5.0


@dataclass(frozen=True, eq=False)
class Problem:
    """One benchmark problem: densities, prior transform, PyMC twin and exact answer (module docstring)."""

    name: str
    title: str
    dim: int
    data: np.ndarray
    log_prior: Callable
    log_lik: Callable
    sample_prior: Callable
    prior_transform: Callable
    pymc_model: Callable
    pymc_point: Callable
    exact: float | None
    z_to_x: Callable = staticmethod(lambda z: z)
    info: dict = field(default_factory=dict)

    def log_joint(self, x):
        """log prior + summed log likelihood at one flat latent."""
        return self.log_prior(x) + jnp.sum(self.log_lik(x, jnp.asarray(self.data)))

    @property
    def model(self):
        """The problem as a bdmc Model (no kernel of its own, so bdmc picks its default)."""
        return FlatModel(self.name)


PROBLEMS: dict[str, Problem] = {}


@dataclass(frozen=True)
class FlatModel:
    """A bdmc Model over one flat latent ``{"x": (dim,)}``, delegating to ``PROBLEMS[name]``."""

    name: str

    @property
    def problem(self) -> Problem:
        return PROBLEMS[self.name]

    def sample_prior(self, key):
        return {"x": self.problem.sample_prior(key)}

    def sample_data(self, key, latent):
        raise MissingCapabilityError("peers problems have fixed data sets", missing=("sample_data",))

    def log_prior(self, latent):
        return self.problem.log_prior(latent["x"])

    def log_likelihood(self, latent, data):
        return self.problem.log_lik(latent["x"], data)


# ------------------------------------------------------------------------------------- linear Gaussian
def linear_gaussian_log_z(y, design, prior_sd, noise_sd) -> float:
    """log N(y; 0, noise^2 I + prior_sd^2 X X^T), the evidence of ``x ~ N(0, prior_sd^2 I)``, ``y ~ N(Xx, noise^2)``."""
    cov = noise_sd**2 * np.eye(len(y)) + prior_sd**2 * design @ design.T
    return float(stats.multivariate_normal(np.zeros(len(y)), cov).logpdf(y))


def _linear_gaussian(name, title, design, prior_sd, noise_sd, seed, info) -> Problem:
    """A linear-Gaussian problem with data drawn from its own prior (seeded)."""
    rng = np.random.default_rng(seed)
    n, dim = design.shape
    y = design @ (prior_sd * rng.standard_normal(dim)) + noise_sd * rng.standard_normal(n)
    X = jnp.asarray(design)

    def log_prior(x):
        return jnp.sum(-0.5 * (x / prior_sd) ** 2 - math.log(prior_sd) - 0.5 * LOG_2PI)

    def log_lik(x, data):
        r = (data - X @ x) / noise_sd
        return -0.5 * r**2 - math.log(noise_sd) - 0.5 * LOG_2PI

    def pymc_model():
        import pymc as pm

        with pm.Model() as m:
            x = pm.Normal("x", 0.0, prior_sd, shape=dim)
            pm.Normal("y", pm.math.dot(design, x), noise_sd, observed=y)
        return m

    return Problem(
        name=name, title=title, dim=dim, data=y, log_prior=log_prior, log_lik=log_lik,
        sample_prior=lambda key: prior_sd * jax.random.normal(key, (dim,)),
        prior_transform=lambda u: prior_sd * special.ndtri(u), pymc_model=pymc_model,
        pymc_point=lambda x: {"x": np.asarray(x)},
        exact=linear_gaussian_log_z(y, design, prior_sd, noise_sd),
        info={**info, "n": n, "dim": dim, "prior_sd": prior_sd, "noise_sd": noise_sd, "design_matrix": design,
              "data_seed": seed},
    )


def regression_problem(n=200, dim=10, seed=1) -> Problem:
    """Conjugate Bayesian linear regression: standard-normal design, ``beta ~ N(0, I)``, noise sd 1."""
    design = np.random.default_rng(seed).standard_normal((n, dim))
    return _linear_gaussian("regression", f"conjugate linear regression (n={n}, d={dim})", design, 1.0, 1.0,
                            seed + 100, {"design": "iid N(0, 1)"})


def narrow_problem(n=200, dim=5, prior_sd=10.0, noise_sd=0.05, seed=3) -> Problem:
    """A well-identified regression: ``beta ~ N(0, 10^2 I)``, noise sd 0.05, standard-normal design; the posterior
    is about 3,000 times narrower than the prior in every coordinate (``info["narrowing"]`` has the ratios)."""
    design = np.random.default_rng(seed).standard_normal((n, dim))
    problem = _linear_gaussian("narrow", f"well-identified regression (n={n}, d={dim}, posterior ~3,000x narrower)",
                               design, prior_sd, noise_sd, seed + 100, {"design": "iid N(0, 1)"})
    precision = np.eye(dim) / prior_sd**2 + design.T @ design / noise_sd**2
    posterior_sd = np.sqrt(np.diag(np.linalg.inv(precision)))
    problem.info["narrowing"] = (prior_sd / posterior_sd).tolist()
    return problem


def correlated_design(dim=20, condition=100.0, seed=2) -> np.ndarray:
    """A square design ``A = U diag(s) V^T`` with ``I + A^T A`` of eigenvalues geometric from 1 to ``condition``."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    v, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    s = np.sqrt(condition ** (np.arange(dim) / (dim - 1)) - 1.0)
    return (u * s) @ v.T


def correlated_problem(dim=20, condition=100.0, seed=2) -> Problem:
    """A 20-d Gaussian target: prior N(0, I), one observation per row of :func:`correlated_design`, noise sd 1."""
    return _linear_gaussian("correlated", f"correlated Gaussian (d={dim}, posterior condition {condition:g})",
                            correlated_design(dim, condition, seed), 1.0, 1.0, seed + 100,
                            {"posterior_condition": condition})


# ------------------------------------------------------------------------------------------ eight schools
def schools_log_z(y=SCHOOLS_Y, sigma=SCHOOLS_SIGMA, mu_sd=MU_SD, tau_scale=TAU_SCALE) -> float:
    """Exact log p(y) of non-centered eight schools: mu and theta in closed form, tau by quadrature.

    Given tau, ``y ~ N(0, diag(sigma^2 + tau^2) + mu_sd^2 11^T)``. With ``tau = tau_scale tan(pi u / 2)`` the
    half-Cauchy prior becomes ``u ~ U(0, 1)``, so ``p(y) = int_0^1 N(y; 0, Sigma(tau(u))) du``, a smooth
    bounded integrand; it is integrated with the log of its maximum factored out.
    """
    def log_f(u):
        tau = tau_scale * math.tan(0.5 * math.pi * u)
        cov = np.diag(sigma**2 + tau**2) + mu_sd**2
        return stats.multivariate_normal(np.zeros(len(y)), cov).logpdf(y)

    grid = np.linspace(1e-6, 1 - 1e-6, 2001)
    peak = max(log_f(u) for u in grid)
    value, err = integrate.quad(lambda u: math.exp(log_f(u) - peak), 0.0, 1.0, epsabs=0, epsrel=1e-12, limit=500)
    assert err < 1e-9 * value, (value, err)
    return float(peak + math.log(value))


def schools_problem() -> Problem:
    """Eight schools, non-centered: ``mu ~ N(0, 5^2)``, ``tau ~ HalfCauchy(5)``, ``eta ~ N(0, I)``,
    ``y_j ~ N(mu + tau eta_j, sigma_j^2)``; latent ``x = (mu, log tau, eta_1..8)``."""
    sigma = jnp.asarray(SCHOOLS_SIGMA)
    log_half_cauchy_norm = math.log(2.0 / (math.pi * TAU_SCALE))

    def log_prior(x):
        mu, log_tau, eta = x[0], x[1], x[2:]
        tau = jnp.exp(log_tau)
        return (-0.5 * (mu / MU_SD) ** 2 - math.log(MU_SD) - 0.5 * LOG_2PI
                + log_half_cauchy_norm - jnp.log1p((tau / TAU_SCALE) ** 2) + log_tau
                + jnp.sum(-0.5 * eta**2 - 0.5 * LOG_2PI))

    def log_lik(x, data):
        r = (data - x[0] - jnp.exp(x[1]) * x[2:]) / sigma
        return -0.5 * r**2 - jnp.log(sigma) - 0.5 * LOG_2PI

    def sample_prior(key):
        k1, k2, k3 = jax.random.split(key, 3)
        tau = TAU_SCALE * jnp.abs(jax.random.cauchy(k2))
        return jnp.concatenate([MU_SD * jax.random.normal(k1, (1,)), jnp.log(tau)[None],
                                jax.random.normal(k3, (8,))])

    def prior_transform(u):
        u = np.asarray(u)
        return np.concatenate([MU_SD * special.ndtri(u[..., :1]), TAU_SCALE * np.tan(0.5 * np.pi * u[..., 1:2]),
                               special.ndtri(u[..., 2:])], axis=-1)

    def z_to_x(z):
        return jnp.concatenate([z[..., :1], jnp.log(z[..., 1:2]), z[..., 2:]], axis=-1)

    def pymc_model():
        import pymc as pm

        with pm.Model() as m:
            mu = pm.Normal("mu", 0.0, MU_SD)
            tau = pm.HalfCauchy("tau", TAU_SCALE)
            eta = pm.Normal("eta", 0.0, 1.0, shape=8)
            pm.Normal("y", mu + tau * eta, SCHOOLS_SIGMA, observed=SCHOOLS_Y)
        return m

    return Problem(
        name="schools", title="eight schools (non-centered, tau ~ HalfCauchy(5))", dim=10, data=SCHOOLS_Y,
        log_prior=log_prior, log_lik=log_lik, sample_prior=sample_prior, prior_transform=prior_transform,
        pymc_model=pymc_model,
        pymc_point=lambda x: {"mu": np.asarray(x[0]), "tau_log__": np.asarray(x[1]), "eta": np.asarray(x[2:])},
        exact=schools_log_z(), z_to_x=z_to_x, info={"mu_sd": MU_SD, "tau_scale": TAU_SCALE},
    )


# ----------------------------------------------------------------------------------------- Pima logistic
def pima_problem(prior_sd=1.0) -> Problem:
    """Logistic regression on Pima (standardized covariates plus intercept), ``beta ~ N(0, prior_sd^2 I)``."""
    from bdmc.datasets import load_pima

    pima = load_pima(standardize=True)
    design = np.column_stack([np.ones(len(pima["y"])), pima["x"]])
    y = np.asarray(pima["y"], dtype=np.float64)
    X, dim = jnp.asarray(design), design.shape[1]

    def log_prior(x):
        return jnp.sum(-0.5 * (x / prior_sd) ** 2 - math.log(prior_sd) - 0.5 * LOG_2PI)

    def log_lik(x, data):
        eta = X @ x
        return data * eta - jax.nn.softplus(eta)

    def pymc_model():
        import pymc as pm

        with pm.Model() as m:
            beta = pm.Normal("x", 0.0, prior_sd, shape=dim)
            pm.Bernoulli("y", logit_p=pm.math.dot(design, beta), observed=y.astype(np.int64))
        return m

    return Problem(
        name="pima", title=f"Pima logistic regression (n={len(y)}, d={dim}, N(0, {prior_sd:g}^2) prior)", dim=dim,
        data=y, log_prior=log_prior, log_lik=log_lik,
        sample_prior=lambda key: prior_sd * jax.random.normal(key, (dim,)),
        prior_transform=lambda u: prior_sd * special.ndtri(u), pymc_model=pymc_model,
        pymc_point=lambda x: {"x": np.asarray(x)}, exact=None, info={"prior_sd": prior_sd, "n": len(y)},
    )


BUILDERS = {"regression": regression_problem, "schools": schools_problem, "correlated": correlated_problem,
            "pima": pima_problem, "narrow": narrow_problem}


def get_problem(name: str) -> Problem:
    """Build (once) and register the named problem, so :class:`FlatModel` can find it."""
    if name not in PROBLEMS:
        PROBLEMS[name] = BUILDERS[name]()
    return PROBLEMS[name]


def check_pymc_density(problem: Problem, num_points=3, seed=0, tol=1e-8) -> float:
    """Largest |PyMC logp - ours| at prior draws of the flat latent (PyMC's logp includes its log-transform
    Jacobian, as ours does); raises if it exceeds ``tol``."""
    model = problem.pymc_model()
    logp = model.compile_logp(jacobian=True)
    keys = jax.random.split(jax.random.key(seed), num_points)
    worst = 0.0
    for key in keys:
        x = np.asarray(problem.sample_prior(key))
        ours = float(problem.log_joint(jnp.asarray(x)))
        worst = max(worst, abs(float(logp(problem.pymc_point(x))) - ours))
    if worst > tol * max(1.0, abs(ours)):
        raise RunError(f"{problem.name}: PyMC log density differs from ours by {worst}")
    return worst
