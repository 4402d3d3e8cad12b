"""The bug corpus: twelve programs in NumPyro, PyMC and Stan, each a bug class users make, each beside its
correct twin, each naming the audit check that should see it.

A Stan program's likelihood is one opaque term to bdmc (no per-case terms, no gradient in the data), so the
forward-simulation simulator check tests only its prior: a bug in a Stan likelihood is SBC's to see (the
simulator's data against Stan's NUTS on the program's density).

An entry's ``build(bug)`` returns ``(model, sampler)``: the program with the bug (``bug=True``) or its correct
twin, and the user's kernel where the bug is in the sampler (else None). ``twin`` names the correct program,
shared where several bugs are edits of one program.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Bug:
    ppl: str
    name: str
    bug_class: str
    where: str
    checks: tuple  # the audit checks that should see it
    twin: str

    @property
    def key(self) -> str:
        return f"{self.ppl.lower()}/{self.name}"

    def build(self, bug: bool):
        return _builder(self.ppl, self.name)(bug)


def _builder(ppl: str, name: str) -> Callable:
    if ppl == "NumPyro":
        import numpyro_programs as module
    elif ppl == "PyMC":
        import pymc_programs as module
    else:
        import stan_programs as module
    return module.PROGRAMS[name]


ADAPTER = "adapter"  # the PPL adapter's checks on loading a program (e.g. Stan's: the prior may not read the data)
SIM, PRIOR, SBC, GEWEKE, BDMC = "simulator-density", "prior-normalization", "sbc", "geweke", "bdmc"

BUGS = (
    Bug("Stan", "half-normal", "a half-normal without its normalizer",
        "`target += normal_lpdf(sigma | 0, 1);` on `real<lower=0> sigma` (mass 1/2: log p(y) 0.69 nats low)",
        (PRIOR,), "stan/regression"),
    Bug("Stan", "data-prior", "a prior that depends on the data",
        "`normal_lpdf(a | mean(y), 2.5)`: the intercept's prior centred at the data", (ADAPTER,),
        "stan/regression"),
    Bug("Stan", "off-by-one", "a likelihood indexed off by one against its simulator",
        "`normal_lpdf(y[2:n] | a + b * x[1:(n - 1)], sigma)` while the simulator draws y[i] from x[i]", (SBC,),
        "stan/regression"),
    Bug("Stan", "mixture", "a mixture whose weights skip log-sum-exp",
        "`w * normal_lpdf(y[i] | mu1, 1) + (1 - w) * normal_lpdf(y[i] | mu2, 1)` for `log_mix(w, ...)`", (SBC,),
        "stan/mixture"),
    Bug("Stan", "eigenvectors", "a multivariate-normal sampler with transposed eigenvectors (BREAD's WebPPL bug)",
        "the simulator draws theta as `V.T @ (sqrt(w) * eps)` for `V @ (sqrt(w) * eps)`", (SIM,), "stan/eigenvectors"),
    Bug("PyMC", "truncation", "a truncated prior without its truncation term",
        "`pm.CustomDist` drawing N(-1, 1) truncated to (0, inf) but scoring the untruncated density (-1.84 nats)",
        (PRIOR,), "pymc/truncation"),
    Bug("PyMC", "scale-for-variance", "a simulator using a scale where the density uses a variance",
        "`random=` draws `rng.normal(mu, s2)` where `logp=` reads s2 as a variance", (SIM,), "pymc/scale-for-variance"),
    Bug("PyMC", "broadcast", "a broadcast that sums an n x n likelihood instead of n terms",
        "`logp=` scores `value[:, None]` against `mu[None, :]`", (SIM,), "pymc/broadcast"),
    Bug("NumPyro", "jacobian", "a hand-written transform with a wrong Jacobian",
        "a custom distribution of log s for s ~ Gamma(2, 2) whose `log_prob` leaves out `+ log s`", (SIM, PRIOR),
        "numpyro/jacobian"),
    Bug("NumPyro", "mixture", "a mixture whose weights skip log-sum-exp",
        "a custom distribution whose `log_prob` is `w * log p1 + (1 - w) * log p2`", (SIM,), "numpyro/mixture"),
    Bug("NumPyro", "broadcast", "a broadcast that sums an n x n likelihood instead of n terms",
        "a custom likelihood scoring `value[:, None]` against `loc[None, :]`", (SIM,), "numpyro/broadcast"),
    Bug("NumPyro", "metropolis", "a user-written Metropolis kernel missing its Hastings correction",
        "a multiplicative random walk on sigma accepted without the factor sigma' / sigma", (SBC, GEWEKE),
        "numpyro/metropolis"),
)
