"""The simulator-density check on discrete Stan programs (one likelihood term for all cases, checked by
substituting cases): each family as written passes, and its density with a simulator whose rate, probability or
zero inflation is off fails. Slow: each program is compiled once (about 20 s; then cached on disk)."""

import jax
import pytest

pytest.importorskip("stan")

from helpers import import_benchmark  # noqa: E402

from bdmc.checks.simulator_density import simulator_density  # noqa: E402

STAN = import_benchmark("discrete_families_stan").STAN
stan_model = import_benchmark("discrete_families_stan").stan_model

WRONG = {"poisson-regression": 1.1, "binomial": 0.2, "negative-binomial": 1.1, "categorical": 0.2,
         "zero-inflated-poisson": 0.1}  # the full errors of simulator_density_discrete.WRONG


@pytest.mark.slow
@pytest.mark.float64
@pytest.mark.parametrize("family", sorted(STAN))
def test_stan_family_passes_and_its_wrong_simulator_fails(family):
    correct = simulator_density(jax.random.key(0), stan_model(family))
    assert correct.verdict == "consistent", correct.message()
    assert not any(what == "likelihood" for what, _ in correct.not_checked), correct.message()
    wrong = simulator_density(jax.random.key(0), stan_model(family, WRONG[family]))
    assert wrong.verdict == "inconsistent", wrong.message()
    assert wrong.fired["part"].eq("likelihood").all(), wrong.message()
