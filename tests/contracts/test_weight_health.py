"""Weight health: the effective sample size of the runs' weights, and stragglers (runs far below the others, the
chains that never reached the posterior's mass, which a log-mean-exp hides)."""

import jax
import numpy as np
import pytest
import scipy.special

from bdmc import forward_ais
from bdmc.contracts import weight_health
from bdmc.contracts.estimate import Estimate
from bdmc.contracts.model import simulate
from bdmc.models import GaussianMean


def test_effective_sample_size_of_equal_and_of_one_dominant_weight():
    assert weight_health.weight_ess(np.zeros(16)) == pytest.approx(16.0)
    assert weight_health.weight_ess(np.r_[0.0, np.full(15, -50.0)]) == pytest.approx(1.0, abs=1e-6)


def test_a_stuck_run_is_a_straggler_and_healthy_spreads_are_not():
    rng = np.random.default_rng(0)
    healthy = -30.0 + 3.0 * rng.normal(size=32)
    assert weight_health.stragglers(healthy) == (0, 0.0)
    stuck = healthy.copy()
    stuck[5] = -22_000.0  # one chain 22,000 nats below the others, as a Stan run once showed
    count, deficit = weight_health.stragglers(stuck)
    assert count == 1 and deficit == pytest.approx(np.median(stuck) + 22_000.0)
    # A wide but honest spread (the left tail of importance weights from the prior) stays silent, and a deficit
    # of 40 nats is below the absolute floor however tight the others are.
    assert weight_health.stragglers(-rng.exponential(30.0, size=64))[0] == 0
    assert weight_health.stragglers(np.r_[np.zeros(15), -40.0])[0] == 0
    assert weight_health.stragglers(np.r_[np.zeros(15), -60.0])[0] == 1


def test_an_upper_bounds_straggler_is_a_run_far_above_the_others():
    runs = np.r_[np.full(15, -30.0) + np.linspace(-1, 1, 15), 500.0]  # reverse estimates: one far too high
    est = Estimate.from_runs(runs, bound="upper", seconds=0.0, compile_seconds=0.0, n_evals=0)
    assert est.straggler_warning is not None and "1 of 16 runs" in est.straggler_warning
    assert Estimate.from_runs(runs, bound="lower", seconds=0.0, compile_seconds=0.0, n_evals=0).straggler_warning \
        is None  # as lower-bound runs the same numbers are one dominant weight, not a straggler


def test_forward_ais_on_a_correct_model_has_no_stragglers():
    model = GaussianMean(n=20, dim=2)
    data = simulate(jax.random.key(0), model).data
    for steps in (5, 50):
        est = forward_ais(jax.random.key(1), model, data, num_steps=steps, num_runs=32)
        assert est.straggler_warning is None, (steps, est.runs)


@pytest.mark.parametrize("values", [
    [1.0, 2.0, 3.0], [-np.inf, -np.inf], [-np.inf, 0.5], [np.inf, 1.0], [np.nan, 1.0], [np.inf, np.nan],
    [1e308, 1e308], [-1e308, -1e308], list(np.random.default_rng(0).normal(0, 50, 257)), [7.0]])
def test_logsumexp_agrees_with_scipys_on_every_kind_of_run(values):
    from scipy.special import logsumexp as scipy_logsumexp

    got, want = weight_health.logsumexp(np.array(values)), float(scipy_logsumexp(np.array(values)))
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(want, rel=1e-13, abs=0.0) or got == want


def test_an_untrusted_stderr_warning_points_at_the_callers_line(key):
    """In Python a warning names the user's line, not bdmc's (stacklevel), for each estimator entry point."""
    import warnings

    import bdmc
    from bdmc.models import LinearRegression

    model = LinearRegression()
    data, _ = bdmc.simulate(jax.random.key(0), model)
    calls = {"forward_ais": lambda: bdmc.forward_ais(key, model, data, num_steps=3, num_runs=16, progress=False),
             "smc": lambda: bdmc.smc(key, model, data, num_runs=16, progress=False),
             "tempered_smc": lambda: bdmc.tempered_smc(key, model, data, num_steps=2, num_particles=2, num_runs=16,
                                                       progress=False)}
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        untrusted = [w for w in caught if issubclass(w.category, bdmc.UntrustedStderrWarning)]
        assert untrusted, name  # runs this short (one SMC move per case) carry their weight on a few runs
        assert all(w.filename == __file__ for w in untrusted), (name, [(w.filename, w.lineno) for w in untrusted])


def test_an_estimates_value_stderr_and_weight_health_are_those_of_the_separate_formulas():
    """``Estimate.from_runs`` computes the combined value, its stderr and the weights' ESS in one pass; each must
    equal what its own function gives (the same arithmetic, so exactly), for lower and upper bounds, one run, zero
    weights (-inf) among the runs, and tiny to huge spreads. It fails if the one pass drops the log(n), mixes up
    the sign of an upper bound or normalizes the weights wrongly."""
    from bdmc.contracts.estimate import log_harmonic_mean, log_mean_exp, log_mean_exp_stderr

    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 16, 30):
        for bound in ("lower", "upper"):
            for trial in range(12):
                runs = rng.normal(size=n) * rng.uniform(0.01, 50) + rng.normal() * 100
                if bound == "lower" and trial % 4 == 0:
                    runs[0] = -np.inf
                with np.errstate(all="ignore"):
                    estimate = Estimate.from_runs(runs, bound=bound, seconds=0.0, compile_seconds=0.0, n_evals=1)
                logw = runs if bound == "lower" else -runs
                assert estimate.value == (log_mean_exp(runs) if bound == "lower" else log_harmonic_mean(runs))
                np.testing.assert_equal(estimate.stderr, log_mean_exp_stderr(logw))
                finite = logw[np.isfinite(logw)]
                if n > 1 and finite.size:  # the delta method written out: sd of w_k / mean(w), over sqrt(n)
                    ratios = np.exp(logw - scipy.special.logsumexp(finite) + np.log(n))
                    np.testing.assert_allclose(estimate.stderr, np.std(ratios, ddof=1) / np.sqrt(n), rtol=1e-10)
                np.testing.assert_equal(estimate.weight_ess, weight_health.weight_ess(logw))
                np.testing.assert_equal(estimate.khat, weight_health.pareto_khat(logw))


def test_pareto_khat_is_arvizs_psislw_k_on_every_kind_of_weights():
    """bdmc computes PSIS's k-hat without ArviZ's xarray wrapping (0.13 ms a call on every estimate of 25 runs or
    more); it must be the k ArviZ's ``psislw`` returns: heavy and light tails, ties, a tail too short to fit (inf),
    25 to 4,000 weights. It fails if the tail's length, the cutoff, the fit's grid or the prior on k were off."""
    import warnings

    import arviz

    rng = np.random.default_rng(1)
    compared = 0
    for n in (25, 26, 31, 64, 257, 1000, 4000):
        for trial in range(12):
            logw = (rng.standard_t(2, size=n) * rng.uniform(0.1, 5), rng.normal(size=n) * rng.uniform(0.01, 30),
                    np.round(rng.normal(size=n), 1), -rng.exponential(size=n) * 50)[trial % 4]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, expected = arviz.psislw(logw.copy())
            np.testing.assert_allclose(weight_health.pareto_khat(logw), float(expected), rtol=1e-12, atol=0)
            compared += 1
    # A tail of at most four distinct weights above the cutoff: no fit, k = inf (as ArviZ).
    ties = np.r_[np.zeros(26), np.ones(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert weight_health.pareto_khat(ties) == float(arviz.psislw(ties.copy())[1]) == np.inf
    assert compared == 84
