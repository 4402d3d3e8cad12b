"""Correct programs, written the way users write them, for the audit's calibration under each PPL's own NUTS.

Seven programs in each of NumPyro, PyMC and Stan, the same models in every language, one per model class:

- ``regression``: ``y_i ~ N(a + b x_i, sigma)``, ``a, b ~ N(0, 2.5)``, ``sigma ~ HalfNormal(1)``, 20 cases;
- ``hierarchical``: eight schools, non-centred: ``mu ~ N(0, 5)``, ``tau ~ HalfNormal(5)``,
  ``theta_j = mu + tau z_j``, ``z_j ~ N(0, 1)``, ``y_j ~ N(theta_j, sigma_j)`` with the schools' sigma_j;
- ``logistic``: ``y_i ~ Bernoulli(logit^-1(a + x_i b))``, ``a ~ N(0, 2.5)``, ``b ~ N(0, 1)^2``, 40 cases;
- ``counts``: a Poisson regression, ``y_i ~ Poisson(exp(a + b x_i))``, ``a ~ N(1, 1)``, ``b ~ N(0, 0.5)``,
  30 cases (count data);
- ``mixture``: two exchangeable Gaussian components, ``w ~ Dirichlet(2, 2)``, ``mu_k ~ N(0, 3)``,
  ``y_i ~ w_1 N(mu_1, 1) + w_2 N(mu_2, 1)``, 40 cases (label switching);
- ``funnel``: eight schools, centred: ``theta_j ~ N(mu, tau)``, ``y_j ~ N(theta_j, sigma_j)`` (a funnel that
  NUTS samples with divergences);
- ``constrained``: a simplex and a positive rate, ``p ~ Dirichlet(1, 1, 1)``, ``lam ~ Gamma(2, 0.2)``,
  ``y_i ~ Poisson(lam p_{k_i})`` for 30 cases, 10 in each category ``k_i``.

The Stan programs keep every normalizing constant (``_lpdf`` in ``target +=``, and the half-normal's
truncation term ``- normal_lccdf(0 | 0, s)``), as a correct program must for its evidence; their simulators
are written here in NumPy, as a Stan user writes one.
"""

from __future__ import annotations

import numpy as np

PROGRAMS = ("regression", "hierarchical", "logistic", "counts", "mixture", "funnel", "constrained")
# The model class each program stands for, for the calibration page.
CLASSES = {"regression": "continuous regression", "hierarchical": "hierarchical, non-centred",
           "logistic": "binary data", "counts": "count data", "mixture": "mixture (exchangeable labels)",
           "funnel": "hierarchical, centred (a funnel)", "constrained": "simplex and positive parameters"}
PPLS = ("NumPyro", "PyMC", "Stan")

N_REG = 20
X_REG = np.linspace(-1.0, 1.0, N_REG)
SIGMA_SCHOOLS = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
J = len(SIGMA_SCHOOLS)
N_LOG = 40
X_LOG = np.random.default_rng(20261127).normal(size=(N_LOG, 2))
N_COUNT = 30
X_COUNT = np.linspace(-1.5, 1.5, N_COUNT)
N_MIX = 40
CATEGORY = np.repeat(np.arange(3), 10)  # the constrained program's category of each case


# ----------------------------------------------------------------------------------------------- NumPyro
def numpyro_program(name: str):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    import bdmc

    if name == "regression":
        def regression(x, y=None):
            a = numpyro.sample("a", dist.Normal(0.0, 2.5))
            b = numpyro.sample("b", dist.Normal(0.0, 2.5))
            sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
            with numpyro.plate("cases", x.shape[0]):
                numpyro.sample("y", dist.Normal(a + b * x, sigma), obs=y)
        return bdmc.ppl.from_numpyro(regression, jnp.asarray(X_REG), observed="y")
    if name == "hierarchical":
        def schools(sigma, y=None):
            mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
            tau = numpyro.sample("tau", dist.HalfNormal(5.0))
            with numpyro.plate("schools", sigma.shape[0]):
                z = numpyro.sample("z", dist.Normal(0.0, 1.0))
                numpyro.sample("y", dist.Normal(mu + tau * z, sigma), obs=y)
        return bdmc.ppl.from_numpyro(schools, jnp.asarray(SIGMA_SCHOOLS), observed="y")
    if name == "logistic":
        def logistic(x, y=None):
            a = numpyro.sample("a", dist.Normal(0.0, 2.5))
            b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
            with numpyro.plate("cases", x.shape[0]):
                numpyro.sample("y", dist.Bernoulli(logits=a + x @ b), obs=y)
        return bdmc.ppl.from_numpyro(logistic, jnp.asarray(X_LOG), observed="y")
    if name == "counts":
        def counts(x, y=None):
            a = numpyro.sample("a", dist.Normal(1.0, 1.0))
            b = numpyro.sample("b", dist.Normal(0.0, 0.5))
            with numpyro.plate("cases", x.shape[0]):
                numpyro.sample("y", dist.Poisson(jnp.exp(a + b * x)), obs=y)
        return bdmc.ppl.from_numpyro(counts, jnp.asarray(X_COUNT), observed="y")
    if name == "mixture":
        def mixture(n, y=None):
            w = numpyro.sample("w", dist.Dirichlet(jnp.full(2, 2.0)))
            mu = numpyro.sample("mu", dist.Normal(0.0, 3.0).expand([2]))
            with numpyro.plate("cases", n):
                numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(w), dist.Normal(mu, 1.0)), obs=y)
        return bdmc.ppl.from_numpyro(mixture, N_MIX, observed="y")
    if name == "funnel":
        def centred(sigma, y=None):
            mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
            tau = numpyro.sample("tau", dist.HalfNormal(5.0))
            with numpyro.plate("schools", sigma.shape[0]):
                theta = numpyro.sample("theta", dist.Normal(mu, tau))
                numpyro.sample("y", dist.Normal(theta, sigma), obs=y)
        return bdmc.ppl.from_numpyro(centred, jnp.asarray(SIGMA_SCHOOLS), observed="y")
    if name == "constrained":
        def rates(category, y=None):
            p = numpyro.sample("p", dist.Dirichlet(jnp.ones(3)))
            lam = numpyro.sample("lam", dist.Gamma(2.0, 0.2))
            with numpyro.plate("cases", category.shape[0]):
                numpyro.sample("y", dist.Poisson(lam * p[category]), obs=y)
        return bdmc.ppl.from_numpyro(rates, jnp.asarray(CATEGORY), observed="y")
    raise KeyError(name)


# -------------------------------------------------------------------------------------------------- PyMC
def pymc_program(name: str):
    import pymc as pm

    import bdmc

    with pm.Model() as program:
        if name == "regression":
            a = pm.Normal("a", 0.0, 2.5)
            b = pm.Normal("b", 0.0, 2.5)
            sigma = pm.HalfNormal("sigma", 1.0)
            pm.Normal("y", a + b * X_REG, sigma, observed=np.zeros(N_REG))
        elif name == "hierarchical":
            mu = pm.Normal("mu", 0.0, 5.0)
            tau = pm.HalfNormal("tau", 5.0)
            z = pm.Normal("z", 0.0, 1.0, shape=J)
            pm.Normal("y", mu + tau * z, SIGMA_SCHOOLS, observed=np.zeros(J))
        elif name == "logistic":
            a = pm.Normal("a", 0.0, 2.5)
            b = pm.Normal("b", 0.0, 1.0, shape=2)
            pm.Bernoulli("y", logit_p=a + pm.math.dot(X_LOG, b), observed=np.zeros(N_LOG, dtype=np.int64))
        elif name == "counts":
            a = pm.Normal("a", 1.0, 1.0)
            b = pm.Normal("b", 0.0, 0.5)
            pm.Poisson("y", pm.math.exp(a + b * X_COUNT), observed=np.zeros(N_COUNT, dtype=np.int64))
        elif name == "mixture":
            w = pm.Dirichlet("w", np.full(2, 2.0))
            mu = pm.Normal("mu", 0.0, 3.0, shape=2)
            pm.NormalMixture("y", w=w, mu=mu, sigma=1.0, observed=np.zeros(N_MIX))
        elif name == "funnel":
            mu = pm.Normal("mu", 0.0, 5.0)
            tau = pm.HalfNormal("tau", 5.0)
            theta = pm.Normal("theta", mu, tau, shape=J)
            pm.Normal("y", theta, SIGMA_SCHOOLS, observed=np.zeros(J))
        elif name == "constrained":
            p = pm.Dirichlet("p", np.ones(3))
            lam = pm.Gamma("lam", alpha=2.0, beta=0.2)
            pm.Poisson("y", lam * p[CATEGORY], observed=np.zeros(len(CATEGORY), dtype=np.int64))
        else:
            raise KeyError(name)
    return bdmc.ppl.from_pymc(program, observed="y")


# -------------------------------------------------------------------------------------------------- Stan
STAN = {
    "regression": """
data { int<lower=1> n; vector[n] x; vector[n] y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real a; real b; real<lower=0> sigma; }
model {
  target += normal_lpdf(a | 0, 2.5) + normal_lpdf(b | 0, 2.5);
  target += normal_lpdf(sigma | 0, 1) - normal_lccdf(0 | 0, 1);
  target += bdmc_lambda * normal_lpdf(y | a + b * x, sigma);
}
""",
    "hierarchical": """
data { int<lower=1> J; vector<lower=0>[J] sigma; vector[J] y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real mu; real<lower=0> tau; vector[J] z; }
model {
  target += normal_lpdf(mu | 0, 5);
  target += normal_lpdf(tau | 0, 5) - normal_lccdf(0 | 0, 5);
  target += normal_lpdf(z | 0, 1);
  target += bdmc_lambda * normal_lpdf(y | mu + tau * z, sigma);
}
""",
    "logistic": """
data { int<lower=1> n; matrix[n, 2] x; array[n] int<lower=0, upper=1> y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real a; vector[2] b; }
model {
  target += normal_lpdf(a | 0, 2.5) + normal_lpdf(b | 0, 1);
  target += bdmc_lambda * bernoulli_logit_lpmf(y | a + x * b);
}
""",
    "counts": """
data { int<lower=1> n; vector[n] x; array[n] int<lower=0> y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real a; real b; }
model {
  target += normal_lpdf(a | 1, 1) + normal_lpdf(b | 0, 0.5);
  target += bdmc_lambda * poisson_log_lpmf(y | a + b * x);
}
""",
    "mixture": """
data { int<lower=1> n; vector[n] y; real<lower=0, upper=1> bdmc_lambda; }
parameters { simplex[2] w; vector[2] mu; }
model {
  target += dirichlet_lpdf(w | rep_vector(2, 2)) + normal_lpdf(mu | 0, 3);
  for (i in 1:n)
    target += bdmc_lambda * log_mix(w[1], normal_lpdf(y[i] | mu[1], 1), normal_lpdf(y[i] | mu[2], 1));
}
""",
    "funnel": """
data { int<lower=1> J; vector<lower=0>[J] sigma; vector[J] y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real mu; real<lower=0> tau; vector[J] theta; }
model {
  target += normal_lpdf(mu | 0, 5);
  target += normal_lpdf(tau | 0, 5) - normal_lccdf(0 | 0, 5);
  target += normal_lpdf(theta | mu, tau);
  target += bdmc_lambda * normal_lpdf(y | theta, sigma);
}
""",
    "constrained": """
data { int<lower=1> n; array[n] int<lower=1, upper=3> k; array[n] int<lower=0> y; real<lower=0, upper=1> bdmc_lambda; }
parameters { simplex[3] p; real<lower=0> lam; }
model {
  target += dirichlet_lpdf(p | rep_vector(1, 3)) + gamma_lpdf(lam | 2, 0.2);
  target += bdmc_lambda * poisson_lpmf(y | lam * p[k]);
}
""",
}


def simulate_regression(rng, params=None):
    p = dict(params or {})
    p.setdefault("a", float(2.5 * rng.normal()))
    p.setdefault("b", float(2.5 * rng.normal()))
    p.setdefault("sigma", float(abs(rng.normal())))
    return p, {"y": p["a"] + p["b"] * X_REG + p["sigma"] * rng.normal(size=N_REG)}


def simulate_hierarchical(rng, params=None):
    p = dict(params or {})
    p.setdefault("mu", float(5.0 * rng.normal()))
    p.setdefault("tau", float(abs(5.0 * rng.normal())))
    p.setdefault("z", rng.normal(size=J))
    theta = p["mu"] + p["tau"] * np.asarray(p["z"])
    return p, {"y": theta + SIGMA_SCHOOLS * rng.normal(size=J)}


def simulate_logistic(rng, params=None):
    p = dict(params or {})
    p.setdefault("a", float(2.5 * rng.normal()))
    p.setdefault("b", rng.normal(size=2))
    logits = p["a"] + X_LOG @ np.asarray(p["b"])
    return p, {"y": (rng.uniform(size=N_LOG) < 1.0 / (1.0 + np.exp(-logits))).astype(np.int64)}


def simulate_counts(rng, params=None):
    p = dict(params or {})
    p.setdefault("a", float(1.0 + rng.normal()))
    p.setdefault("b", float(0.5 * rng.normal()))
    return p, {"y": rng.poisson(np.exp(p["a"] + p["b"] * X_COUNT)).astype(np.int64)}


def simulate_mixture(rng, params=None):
    p = dict(params or {})
    p.setdefault("w", rng.dirichlet([2.0, 2.0]))
    p.setdefault("mu", 3.0 * rng.normal(size=2))
    first = rng.uniform(size=N_MIX) < np.asarray(p["w"])[0]
    mu = np.asarray(p["mu"])
    return p, {"y": np.where(first, mu[0], mu[1]) + rng.normal(size=N_MIX)}


def simulate_funnel(rng, params=None):
    p = dict(params or {})
    p.setdefault("mu", float(5.0 * rng.normal()))
    p.setdefault("tau", float(abs(5.0 * rng.normal())))
    p.setdefault("theta", p["mu"] + p["tau"] * rng.normal(size=J))
    return p, {"y": np.asarray(p["theta"]) + SIGMA_SCHOOLS * rng.normal(size=J)}


def simulate_constrained(rng, params=None):
    p = dict(params or {})
    p.setdefault("p", rng.dirichlet(np.ones(3)))
    p.setdefault("lam", float(rng.gamma(2.0, 1.0 / 0.2)))
    return p, {"y": rng.poisson(p["lam"] * np.asarray(p["p"])[CATEGORY]).astype(np.int64)}


def stan_program(name: str):
    import bdmc

    data = {"regression": {"n": N_REG, "x": X_REG, "y": np.zeros(N_REG)},
            "hierarchical": {"J": J, "sigma": SIGMA_SCHOOLS, "y": np.zeros(J)},
            "logistic": {"n": N_LOG, "x": X_LOG, "y": np.zeros(N_LOG, dtype=np.int64)},
            "counts": {"n": N_COUNT, "x": X_COUNT, "y": np.zeros(N_COUNT, dtype=np.int64)},
            "mixture": {"n": N_MIX, "y": np.zeros(N_MIX)},
            "funnel": {"J": J, "sigma": SIGMA_SCHOOLS, "y": np.zeros(J)},
            "constrained": {"n": len(CATEGORY), "k": CATEGORY + 1, "y": np.zeros(len(CATEGORY), dtype=np.int64)},
            }[name]
    simulate = {"regression": simulate_regression, "hierarchical": simulate_hierarchical,
                "logistic": simulate_logistic, "counts": simulate_counts, "mixture": simulate_mixture,
                "funnel": simulate_funnel, "constrained": simulate_constrained}[name]
    return bdmc.ppl.from_stan(STAN[name], data=data, observed="y", simulate=simulate, name=f"calibration-{name}")


def program(ppl: str, name: str):
    """The program ``name`` written in ``ppl`` (one of :data:`PPLS`), as a bdmc model."""
    return {"NumPyro": numpyro_program, "PyMC": pymc_program, "Stan": stan_program}[ppl](name)
