"""Three posteriordb posteriors, as their authors wrote them, at small budgets: bdmc runs, and its bounds hold.

The full benchmark (16 posteriors, larger budgets) is ``benchmarks/posteriordb.py``; its NumPyro ports are checked
against the Stan programs' log densities by ``benchmarks/posteriordb_check.py`` (``stan_check.json``).
"""

import math
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

pytest.importorskip("numpyro")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import posteriordb  # noqa: E402
from posteriordb_models import POSTERIORS, stan_checks  # noqa: E402

import bdmc  # noqa: E402

pytestmark = pytest.mark.float64


def test_every_port_matches_its_stan_program_up_to_a_stated_constant():
    checks = stan_checks()
    assert len(POSTERIORS) >= 15
    for name, entry in POSTERIORS.items():
        check = checks[name]
        # The log-density difference was constant over 20 points (relative spread below 1e-6), and is recorded.
        assert check["ok"], name
        assert entry.stan_offset is not None and entry.stan_normalized == (abs(entry.stan_offset) < 1e-6), name


# Eight schools with -m slow (its port stays in test_posteriordb_peers.py): sblrc runs the same checks.
@pytest.mark.parametrize("name", [pytest.param("eight_schools-eight_schools_noncentered", marks=pytest.mark.slow),
                                  "sblrc-blr",
                                  pytest.param("gp_pois_regr-gp_regr", marks=pytest.mark.slow)])
def test_a_posteriordb_posterior_runs_and_its_bounds_hold(name):
    entry, model, data, data_json, reference, _ = posteriordb.build(name)
    est = bdmc.forward_ais(jax.random.key(0), model, data, num_steps=50, num_runs=8, progress=False)
    assert np.isfinite(est.value) and est.divergences is not None
    draws = posteriordb.reference_latents(entry, model, data_json)
    flat, unravel = posteriordb.posterior_draws_flat(draws)
    upper = bdmc.bracket({"x": flat}, lambda th: bdmc.contracts.log_density(model, unravel(th["x"]), data, 1.0),
                         family={"x": bdmc.bracketing.families.MultivariateNormal}, key=jax.random.key(1),
                         num_draws=200).upper
    exact = posteriordb.exact_log_evidence(name, data_json)
    if exact is not None:
        assert est.certified(3.0) <= exact  # holds with probability 0.95 by Markov; these keys are fixed
        assert upper.value >= exact - 3 * upper.stderr - 0.05
    # A lower bound below an upper bound, up to their noise.
    assert est.value <= upper.value + 3 * math.hypot(est.stderr, upper.stderr) + 0.05
