"""bdmc.bread: the Jeffreys-divergence bound from paired forward and reverse AIS."""

import jax
import numpy as np
from matplotlib.figure import Figure

import bdmc
from bdmc.kernels import RandomWalkMH
from bdmc.models import GaussianMean
from bdmc.plotting import plot_bread


def test_b_hat_is_the_sum_of_the_one_sided_bounds_and_shrinks(key):
    model = GaussianMean(n=20, dim=5)
    data, latent = bdmc.simulate(jax.random.key(1), model)
    exact = float(model.exact_log_marginal(data))
    res = bdmc.bread(key, model, data, latent, steps=[30, 300, 3000], num_runs=64,
                     kernel=RandomWalkMH(model, scale=0.1), lower_bound=exact, upper_bound=exact)
    t = res.table
    # With the exact value as both external bounds, the one-sided bounds add up to B-hat exactly.
    np.testing.assert_allclose(t["kl_q_p_bound"] + t["kl_p_q_bound"], t["b_hat"], rtol=1e-12)
    # Each is an expectation bound on a KL divergence, so non-negative up to noise; B-hat shrinks with T.
    se = t["b_hat_stderr"]
    assert (t["kl_q_p_bound"] > -4 * se).all() and (t["kl_p_q_bound"] > -4 * se).all()
    assert t["b_hat"].is_monotonic_decreasing and t["b_hat"].iloc[0] > 10 * t["b_hat"].iloc[-1]
    assert not t["alarm"].any()
    assert isinstance(plot_bread(res), Figure)


def test_without_external_bounds_the_one_sided_columns_are_empty(key):
    model = GaussianMean(n=10, dim=2)
    res = bdmc.bread(key, model, steps=[5, 50], num_runs=8)
    assert res.table["kl_q_p_bound"].isna().all() and res.table["kl_p_q_bound"].isna().all()
    assert list(res.table["num_steps"]) == [5, 50]
    assert (res.table["n_evals"] > 0).all()
