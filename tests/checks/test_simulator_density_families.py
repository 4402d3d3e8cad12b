"""The simulator-density check on discrete families written in NumPyro and PyMC: each program as written is
"consistent", and its density with a simulator whose rate (mean, probability) is off is "inconsistent".

The programs are those of ``benchmarks/simulator_density_discrete.py``, which measures the false-alarm rate over
200 seeds and the power over 50; here one key each, at reduced sizes. The simulators' errors (Poisson rate x1.1,
binomial logit +0.2, NB mean x1.1, categorical probabilities tilted by exp(0.2 k), zero-inflation + 0.1 of the
remainder) were caught at p below 1e-8 (the mean test's |z| from 5.9 to 69) at each of the keys 0-5 at these
sizes, in float64 and in float32, and the programs as written passed at all of them, so neither outcome hangs on the
key. Whole file: 20 s with JAX's compilation cache warm, 33-36 s cold, on two cores under a load of 2.4.
"""


import jax
import pytest
from helpers import import_benchmark

from bdmc.checks.simulator_density import simulator_density

SIZES = dict(num_latents=16, num_data=32, num_prior=500)
BENCH = import_benchmark("simulator_density_discrete")
# NumPyro's binomial and negative binomial with -m slow: the Poisson regression (unbounded counts), the categorical
# (a bounded support) and the zero-inflated Poisson (an error that lowers the mean) stay.
SLOW_FAMILIES = ("binomial", "negative-binomial")
NUMPYRO = [pytest.param("numpyro", family, id=f"numpyro-{family}",
                        marks=[pytest.mark.slow] if family in SLOW_FAMILIES else []) for family in BENCH.FAMILIES]
# PyMC's categorical with -m slow: NumPyro's covers the family and PyMC's Poisson regression the adapter (7 s).
PYMC = [pytest.param("pymc", "poisson-regression", id="pymc-poisson-regression"),
        pytest.param("pymc", "categorical", id="pymc-categorical", marks=pytest.mark.slow)]


def _likelihood_mean(result):
    t = result.table
    return t[(t["part"] == "likelihood") & (t["test"] == "mean") & (t["where"] == "all cases")].iloc[0]


@pytest.mark.parametrize("ppl, family", NUMPYRO + PYMC)
def test_program_as_written_is_consistent_and_a_wrong_simulator_is_not(ppl, family):
    pytest.importorskip(ppl)
    good = simulator_density(jax.random.key(0), BENCH.build(ppl, family), **SIZES)
    assert good.verdict == "consistent", good.message()
    # The likelihood is checked (not reported "not checked"), with its moment tests.
    assert not [what for what, _ in good.not_checked if what.startswith("likelihood")], good.message()
    assert abs(_likelihood_mean(good).statistic) < 4.0

    bad = simulator_density(jax.random.key(0), BENCH.build(ppl, family, "wrong rate"), **SIZES)
    assert bad.verdict == "inconsistent", bad.message()
    mean = _likelihood_mean(bad)
    assert mean.fired and mean.p_value < 1e-6, mean  # the simulated data's mean is off: the mean test sees it
    # On the side the error puts it: more zeros lower a zero-inflated Poisson's mean; every other error raises it.
    assert (mean.estimate < 0) == (family == "zero-inflated-poisson"), mean
