"""Simulation-based calibration: uniform ranks for an exact posterior sampler, and a sampler that is wrong (a
kernel leaving a 10% too wide posterior invariant, a NUTS that never converges) flagged."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from matplotlib.figure import Figure

from bdmc import BDMCError
from bdmc.checks import KernelSampler, NumPyroNUTS, SBCResult, sbc
from bdmc.checks.sbc import quantity_names, uniformity_test
from bdmc.models import CorrelatedGaussianMean
from bdmc.plotting import plot_sbc_ecdf, plot_sbc_histograms

pytestmark = pytest.mark.usefixtures("arviz_without_numba")


@dataclasses.dataclass(frozen=True)
class WideKernel(CorrelatedGaussianMean):
    """Its exact Gibbs draw has 1.1 times the posterior's covariance: the density and simulator are right."""

    def _x_conditional(self, data, lam):
        mean, precision = super()._x_conditional(data, lam)
        return mean, precision / 1.1


# dim 64: a 10% variance error moves the log-likelihood of a posterior draw by ~0.5 of its spread (chi-square
# with 64 degrees of freedom), where a single coordinate's rank moves by ~0.05; Modrak et al.'s joint quantity.
DIM, N = 64, 5


def _exact(cls):
    model = cls(n=N, dim=DIM)
    return model, KernelSampler(model.default_kernel(), model=model, warmup=1, thin=1)


def test_quantity_names_flatten_the_latent_in_ravel_order():
    latent = {"beta": jnp.zeros(3), "s2": jnp.zeros(()), "w": jnp.zeros((2, 2))}
    assert quantity_names(latent) == ("beta[0]", "beta[1]", "beta[2]", "s2", "w[0, 0]", "w[0, 1]", "w[1, 0]",
                                      "w[1, 1]", "log-likelihood")


def test_uniformity_test_accepts_uniform_ranks_and_rejects_a_narrow_or_shifted_set():
    rng = np.random.default_rng(0)
    L, R = 99, 400
    uniform = rng.integers(0, L + 1, size=(R, 1))
    # A posterior too wide puts the truth in the middle (ranks from the middle half), one shifted puts it low.
    middle = rng.integers(25, 75, size=(R, 1))
    low = np.minimum(rng.integers(0, L + 1, size=(R, 1)), rng.integers(0, L + 1, size=(R, 1)))
    test = uniformity_test(np.hstack([uniform, middle, low]), L, level=0.01)
    assert test["outside"].tolist() == [False, True, True]
    assert test["p_values"][0] > 0.01 and test["p_values"][1:].max() < 1e-3
    lower, upper = test["band"]
    z = np.arange(1, L + 1) / (L + 1)
    assert np.all(lower <= z) and np.all(z <= upper)


@pytest.fixture(scope="module")
def exact_results():
    model, sampler = _exact(CorrelatedGaussianMean)
    return [sbc(jax.random.key(seed), model, sampler, num_replications=300, num_draws=99) for seed in range(5)]


def test_exact_posterior_sampler_gives_uniform_ranks_over_seeds(exact_results):
    # The model's Gibbs kernel is one exact draw from the posterior, so draws are independent and exact: each
    # seed's verdict is a false alarm with probability <= 0.01; two alarms in five has probability < 0.001.
    results = exact_results
    assert sum(r.verdict == "miscalibrated" for r in results) <= 1, [r.message() for r in results]
    r = results[0]
    assert isinstance(r, SBCResult) and r.ranks.shape == (300, DIM + 1) and r.names[-1] == "log-likelihood"
    assert r.ranks.min() >= 0 and r.ranks.max() <= 99
    # Mean rank 49.5 (sd of one rank 28.9): pooled over coordinates and seeds, within 4 standard errors.
    ranks = np.concatenate([x.ranks for x in results])
    assert abs(ranks.mean() - 49.5) < 4 * 28.9 / np.sqrt(ranks.size / 2)  # coordinates are correlated: halve n
    assert np.median(r.ess) > 80  # independent draws
    frame = r.to_frame()
    assert list(frame["quantity"]) == list(r.names) and frame["level_each"].iloc[0] == pytest.approx(0.01 / 65)


def test_a_kernel_with_ten_percent_too_much_variance_is_flagged_by_the_log_likelihood():
    model, sampler = _exact(WideKernel)
    for seed in range(2):
        r = sbc(jax.random.key(seed), model, sampler, num_replications=300, num_draws=99)
        assert r.verdict == "miscalibrated", r.message()
        assert "log-likelihood" in r.miscalibrated
        # Too wide: the truth's log-likelihood beats most draws' (its rank runs high).
        assert r.ranks[:, -1].mean() > 49.5 + 4 * 28.9 / np.sqrt(300)


@pytest.mark.slow
def test_a_chain_that_never_leaves_its_prior_start_is_flagged():
    # A kernel that never moves: every draw is the chain's prior start, so ranks follow the prior, not the
    # posterior (too wide); its draws carry no information (ESS 0).
    model = CorrelatedGaussianMean(n=N, dim=4)
    stuck = KernelSampler(lambda k, x, d, lam: (x, None), model=model, warmup=0, thin=1)
    r = sbc(jax.random.key(0), model, stuck, num_replications=200, num_draws=19)
    assert r.verdict == "miscalibrated" and np.all(r.ess == 0)


def test_sbc_refuses_bad_options_and_a_kernel_without_a_model():
    model, sampler = _exact(CorrelatedGaussianMean)
    with pytest.raises(BDMCError, match="num_replications"):
        sbc(jax.random.key(0), model, sampler, num_replications=1)
    with pytest.raises(BDMCError, match="level"):
        sbc(jax.random.key(0), model, sampler, level=1.5)
    with pytest.raises(BDMCError, match="pass model"):
        KernelSampler(model.default_kernel())


def test_plots_draw_one_panel_per_quantity_up_to_a_cap(exact_results):
    r = exact_results[0]
    edges, counts, lower, upper = r.histogram()
    assert counts.sum(0).tolist() == [300] * (DIM + 1) and edges[0] == 0 and edges[-1] == 100 and len(counts) == 25
    assert np.all(lower < 12) and np.all(upper > 12)  # 300 ranks in 25 bins: 12 expected per bin
    for plot in (plot_sbc_histograms, plot_sbc_ecdf):
        fig = plot(r, max_panels=3)
        assert isinstance(fig, Figure) and len([a for a in fig.axes if a.has_data()]) == 3
        assert "log-likelihood" in " ".join(a.get_title() for a in fig.axes)  # the joint quantity is kept


# ------------------------------------------------------------------------------- NumPyro's NUTS (slow: compiles)

def _numpyro_regression():
    import numpyro
    import numpyro.distributions as dist

    import bdmc

    def regression(x, y=None):
        s2 = numpyro.sample("s2", dist.InverseGamma(3.0, 2.0))
        beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
        with numpyro.plate("cases", x.shape[0]):
            numpyro.sample("y", dist.Normal(x @ beta, jnp.sqrt(s2)), obs=y)

    x = np.random.default_rng(0).standard_normal((10, 2))
    return bdmc.ppl.from_numpyro(regression, x, observed="y")


@pytest.mark.slow
def test_numpyro_nuts_is_calibrated_and_a_far_too_large_step_or_no_warmup_is_flagged():
    model = _numpyro_regression()
    good = sbc(jax.random.key(0), model, NumPyroNUTS(model, num_warmup=100), num_replications=100, num_draws=49)
    assert good.verdict == "consistent", good.message()
    assert good.names == ("beta[0]", "beta[1]", "s2", "log-likelihood")
    for bad in (NumPyroNUTS(model, num_warmup=0, step_size=3.0, adapt_step_size=False, adapt_mass_matrix=False),
                NumPyroNUTS(model, num_warmup=0, step_size=1e-3, adapt_step_size=False, adapt_mass_matrix=False,
                            max_tree_depth=2)):
        r = sbc(jax.random.key(0), model, bad, num_replications=100, num_draws=49)
        assert r.verdict == "miscalibrated", r.message()


def test_chain_diagnostics_tell_independent_draws_from_a_random_walk():
    from bdmc.checks.sbc import chain_diagnostics

    rng = np.random.default_rng(0)
    iid = chain_diagnostics(rng.normal(size=(20, 100, 3)))
    walk = chain_diagnostics(rng.normal(size=(20, 100, 3)).cumsum(axis=1))
    assert iid["rhat"].shape == (20, 3) and np.median(iid["rhat"]) < 1.02 and np.median(iid["ess_bulk"]) > 60
    assert np.median(walk["rhat"]) > 1.2 and np.median(walk["ess_bulk"]) < 15 and np.median(walk["ess_tail"]) < 30
    assert chain_diagnostics(rng.normal(size=(20, 7, 3))) is None  # too few draws to split
