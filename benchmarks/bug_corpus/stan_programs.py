"""Stan programs of the bug corpus, each beside its correct twin (``bug=False``), with NumPy simulators as a Stan
user writes them.

Every program keeps the likelihood under ``bdmc_lambda`` (bdmc's annealing hook). The correct regression (a
half-normal scale with its normalizer, the likelihood on every case) is the twin of three bugs: a half-normal
without its normalizer, a prior that reads the data, and a likelihood indexed off by one against its simulator.
The multivariate-normal program is its own twin: there the bug is in the simulator (BREAD's WebPPL bug, the
eigenvectors transposed). Each builder returns ``(model, None)``.
"""

from __future__ import annotations

import calibration_programs  # benchmarks/: on the path of every script that imports this module
import numpy as np

import bdmc

# The calibration's correct regression (its program and simulator): the twin of three bugs below.
REGRESSION = calibration_programs.STAN["regression"]
N, X = calibration_programs.N_REG, calibration_programs.X_REG
BUGS = {
    # The half-normal's normalizer dropped: its density on sigma > 0 has mass 1/2 (log 2 = 0.69 nats).
    "half-normal": ("target += normal_lpdf(sigma | 0, 1) - normal_lccdf(0 | 0, 1);",
                    "target += normal_lpdf(sigma | 0, 1);"),
    # The intercept's prior centred at the data's mean: the 'prior' changes with y.
    "data-prior": ("target += normal_lpdf(a | 0, 2.5) + normal_lpdf(b | 0, 2.5);",
                   "target += normal_lpdf(a | mean(y), 2.5) + normal_lpdf(b | 0, 2.5);"),
    # y[n] scored against x[n - 1] (and y[1] not at all), while the simulator draws y[n] from x[n].
    "off-by-one": ("target += bdmc_lambda * normal_lpdf(y | a + b * x, sigma);",
                   "target += bdmc_lambda * normal_lpdf(y[2:n] | a + b * x[1:(n - 1)], sigma);"),
}


def regression(name: str, bug: bool):
    code = REGRESSION
    if bug:
        right, wrong = BUGS[name]
        assert right in code
        code = code.replace(right, wrong)
    return bdmc.ppl.from_stan(code, data={"n": N, "x": X, "y": np.zeros(N)}, observed="y",
                              simulate=calibration_programs.simulate_regression,
                              name=f"corpus-{name}-{'bug' if bug else 'correct'}"), None


# --------------------------------------------------------------------------- a mixture that skips log_mix
MIXTURE = """
data { int<lower=1> n; vector[n] y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real<lower=0, upper=1> w; real mu1; real mu2; }
model {
  target += beta_lpdf(w | 2, 2) + normal_lpdf(mu1 | -2, 1) + normal_lpdf(mu2 | 2, 1);
  for (i in 1:n)
    target += bdmc_lambda * log_mix(w, normal_lpdf(y[i] | mu1, 1), normal_lpdf(y[i] | mu2, 1));
}
"""
MIXTURE_BUG = ("target += bdmc_lambda * log_mix(w, normal_lpdf(y[i] | mu1, 1), normal_lpdf(y[i] | mu2, 1));",
               "target += bdmc_lambda * (w * normal_lpdf(y[i] | mu1, 1) + (1 - w) * normal_lpdf(y[i] | mu2, 1));")
N_MIX = 30


def simulate_mixture(rng, params=None):
    p = dict(params or {})
    p.setdefault("w", float(rng.beta(2.0, 2.0)))
    p.setdefault("mu1", float(-2.0 + rng.normal()))
    p.setdefault("mu2", float(2.0 + rng.normal()))
    first = rng.uniform(size=N_MIX) < p["w"]
    return p, {"y": np.where(first, p["mu1"], p["mu2"]) + rng.normal(size=N_MIX)}


def mixture(bug: bool):
    code = MIXTURE.replace(*MIXTURE_BUG) if bug else MIXTURE
    return bdmc.ppl.from_stan(code, data={"n": N_MIX, "y": np.zeros(N_MIX)}, observed="y", simulate=simulate_mixture,
                              name=f"corpus-mixture-{'bug' if bug else 'correct'}"), None


# ---------------------------- BREAD's WebPPL bug: a multivariate normal with transposed eigenvectors
MVN = """
data { int<lower=1> n; matrix[n, 3] y; cov_matrix[3] Sigma; real<lower=0, upper=1> bdmc_lambda; }
parameters { vector[3] theta; }
model {
  target += multi_normal_lpdf(theta | rep_vector(0, 3), Sigma);
  for (i in 1:n)
    target += bdmc_lambda * normal_lpdf(y[i]' | theta, 1);
}
"""
SIGMA = np.array([[1.0, 0.8, 0.3], [0.8, 2.0, -0.5], [0.3, -0.5, 1.5]])
N_MVN = 5


def _mvn_simulator(*, transposed: bool):
    values, vectors = np.linalg.eigh(SIGMA)
    root = (vectors.T if transposed else vectors) * np.sqrt(values)  # the bug: V^T diag(sqrt(w)), not V diag(...)

    def simulate(rng, params=None):
        p = dict(params or {})
        p.setdefault("theta", root @ rng.normal(size=3))
        return p, {"y": np.asarray(p["theta"])[None, :] + rng.normal(size=(N_MVN, 3))}

    return simulate


def eigenvectors(bug: bool):
    return bdmc.ppl.from_stan(MVN, data={"n": N_MVN, "y": np.zeros((N_MVN, 3)), "Sigma": SIGMA}, observed="y",
                              simulate=_mvn_simulator(transposed=bug), name="corpus-mvn"), None


PROGRAMS = {"half-normal": lambda bug: regression("half-normal", bug),
            "data-prior": lambda bug: regression("data-prior", bug),
            "off-by-one": lambda bug: regression("off-by-one", bug),
            "mixture": mixture, "eigenvectors": eigenvectors}
