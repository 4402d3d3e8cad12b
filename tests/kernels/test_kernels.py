"""Every kernel leaves f(.; lam) invariant, for scalar and per-case lam; a broken one is caught."""

import jax
import numpy as np
import pytest

from bdmc import simulate
from bdmc.kernels import HMC, MALA, NUTS, Cycle, Gibbs, RandomWalkMH, repeat
from bdmc.models import GaussianMean

from helpers import BrokenMH, invariance_z_scores

MODEL = GaussianMean(n=20, dim=3, prior_mean=0.5, prior_std=1.5, noise_std=1.0)
THRESHOLD = 4.5  # ~4 standard errors, with 6 statistics per test


def _data():
    return simulate(jax.random.key(1), MODEL)[0]


def _lams():
    per_case = np.asarray(jax.random.uniform(jax.random.key(2), (MODEL.n,)))
    return {"0.3": 0.3, "1.0": 1.0, "per-case": per_case}


KERNELS = {
    "rwmh": RandomWalkMH(MODEL, scale=0.15),
    "mala": MALA(MODEL, step_size=0.01),
    "hmc": HMC(MODEL, step_size=0.05, num_integration_steps=8),
    "hmc-mass": HMC(MODEL, step_size=0.1, num_integration_steps=5, inverse_mass=(0.5, 1.0, 2.0)),
    "nuts": NUTS(MODEL, step_size=0.2, inverse_mass=(0.5, 1.0, 2.0), max_tree_depth=5),
    "gibbs": MODEL.default_kernel(),
    "cycle": Cycle((Gibbs(MODEL.gibbs_update), RandomWalkMH(MODEL, scale=0.15))),
    "repeat": repeat(MALA(MODEL, step_size=0.01), 3),
}


@pytest.mark.parametrize("lam_name", ["0.3", "1.0", "per-case"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_kernel_leaves_intermediate_distribution_invariant(name, lam_name, key):
    z = invariance_z_scores(key, MODEL, _data(), KERNELS[name], _lams()[lam_name], n=4000, steps=10)
    assert np.max(np.abs(z)) < THRESHOLD, z


@pytest.mark.parametrize("lam_name", ["0.3", "per-case"])
def test_broken_acceptance_ratio_is_caught(lam_name, key):
    z = invariance_z_scores(key, MODEL, _data(), BrokenMH(MODEL, scale=0.15), _lams()[lam_name], n=4000, steps=10)
    assert np.max(np.abs(z)) > 3 * THRESHOLD, z


def test_kernels_move_and_report_acceptance(key):
    data = _data()
    x = {"mu": data.mean(0)}  # a high-density point, so every kernel should move from it
    for name, kernel in KERNELS.items():
        moved, accs = False, []
        for k in jax.random.split(key, 5):
            new, info = kernel(k, x, data, 0.5)
            moved |= not np.allclose(new["mu"], x["mu"])
            accs.append(float(info.acceptance))
        assert moved, name
        assert all(0.0 <= a <= 1.0 for a in accs), name


def test_combinators_validate_and_count_evaluations():
    with pytest.raises(ValueError, match="at least one"):
        Cycle(())
    with pytest.raises(ValueError, match="n >= 1"):
        repeat(KERNELS["rwmh"], 0)
    assert repeat(HMC(MODEL, num_integration_steps=4), 3).evals_per_step == 15
    assert KERNELS["cycle"].evals_per_step == 3
