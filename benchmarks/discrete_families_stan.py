"""The discrete families of ``simulator_density_discrete.py`` as Stan programs, written as Stan users write them:
normalized ``_lpmf`` statements, the likelihood marked by ``bdmc_lambda`` (the zero-inflated Poisson by hand,
with ``log_sum_exp``, as Stan has none built in), and NumPy simulators (``from_stan``'s ``simulate``). The same
priors, covariates and sizes as the NumPyro and PyMC programs; categories are 1..K, as Stan counts them. A wrong
variant's error lives in the simulator alone, the program being the density.

Stan reports the likelihood as one term, so ``simulator_density`` checks these programs by substituting each seen
value of each case into a simulated data set (``docs/checks.md``).
"""

import numpy as np

TRIALS, K, N_CASES = 10, 4, 40  # as in simulator_density_discrete.py
YEARS = np.arange(1851, 1963, dtype=np.float64)  # the coal-mining disasters' years

STAN = {
    "poisson-regression": """data { int N; vector[N] x; array[N] int y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real a; real b; }
model { target += normal_lpdf(a | 0, 2) + normal_lpdf(b | 0, 1);
        target += bdmc_lambda * poisson_log_lpmf(y | a + b * x); }""",
    "binomial": """data { int N; int T; vector[N] x; array[N] int y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real a; real b; }
model { target += normal_lpdf(a | 0, 1.5) + normal_lpdf(b | 0, 1);
        target += bdmc_lambda * binomial_logit_lpmf(y | T, a + b * x); }""",
    "negative-binomial": """data { int N; array[N] int y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real a; real<lower=0> phi; }
model { target += normal_lpdf(a | 1, 1) + gamma_lpdf(phi | 2, 0.5);
        target += bdmc_lambda * neg_binomial_2_log_lpmf(y | a, phi); }""",
    "categorical": """data { int N; int K; array[N] int y; real<lower=0, upper=1> bdmc_lambda; }
parameters { simplex[K] p; }
model { target += dirichlet_lpdf(p | rep_vector(1, K));
        target += bdmc_lambda * categorical_lpmf(y | p); }""",
    "zero-inflated-poisson": """data { int N; array[N] int y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real<lower=0, upper=1> gate; real<lower=0> rate; }
model {
  target += beta_lpdf(gate | 1, 1) + gamma_lpdf(rate | 2, 0.5);
  for (n in 1:N) {
    if (y[n] == 0)
      target += bdmc_lambda * log_sum_exp(log(gate), log1m(gate) + poisson_lpmf(0 | rate));
    else
      target += bdmc_lambda * (log1m(gate) + poisson_lpmf(y[n] | rate));
  }
}""",
}


def stan_data(family: str) -> dict:
    """The program's data besides ``y`` and ``bdmc_lambda``."""
    x = (YEARS - YEARS.mean()) / YEARS.std()
    if family == "poisson-regression":
        return {"N": x.size, "x": x}
    if family == "binomial":
        return {"N": N_CASES, "T": TRIALS, "x": np.linspace(-1.5, 1.5, N_CASES)}
    if family == "categorical":
        return {"N": N_CASES, "K": K}
    return {"N": N_CASES}


def stan_simulator(family: str, wrong: float | None = None):
    """``simulate(rng, params=None)`` of the family; ``wrong`` the family's error in the simulator only."""
    data = stan_data(family)

    def simulate(rng, params=None):
        if family == "poisson-regression":
            params = params or {"a": rng.normal(0, 2), "b": rng.normal(0, 1)}
            rate = (1.0 if wrong is None else wrong) * np.exp(params["a"] + params["b"] * data["x"])
            y = rng.poisson(rate)
        elif family == "binomial":
            params = params or {"a": rng.normal(0, 1.5), "b": rng.normal(0, 1)}
            logit = params["a"] + params["b"] * data["x"] + (0.0 if wrong is None else wrong)
            y = rng.binomial(TRIALS, 1 / (1 + np.exp(-logit)))
        elif family == "negative-binomial":
            params = params or {"a": rng.normal(1, 1), "phi": rng.gamma(2.0, 1 / 0.5)}
            mu = (1.0 if wrong is None else wrong) * np.exp(params["a"])
            y = rng.poisson(rng.gamma(params["phi"], mu / params["phi"], size=N_CASES))
        elif family == "categorical":
            params = params or {"p": rng.dirichlet(np.ones(K))}
            q = np.asarray(params["p"]) * np.exp((0.0 if wrong is None else wrong) * np.arange(K))
            y = 1 + rng.choice(K, size=N_CASES, p=q / q.sum())  # Stan's categories are 1..K
        else:
            params = params or {"gate": rng.beta(1, 1), "rate": rng.gamma(2.0, 1 / 0.5)}
            g = params["gate"] + (0.0 if wrong is None else wrong) * (1 - params["gate"])
            y = np.where(rng.uniform(size=N_CASES) < g, 0, rng.poisson(params["rate"], size=N_CASES))
        return params, {"y": np.asarray(y, dtype=np.int64)}

    return simulate


def stan_model(family: str, wrong: float | None = None):
    """``from_stan`` of the family's program with its simulator (``wrong``: the error of a wrong variant, in the
    units of ``simulator_density_discrete.WRONG``)."""
    import bdmc

    return bdmc.ppl.from_stan(STAN[family], data=stan_data(family), observed="y",
                              simulate=stan_simulator(family, wrong))
