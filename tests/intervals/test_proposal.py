"""The proposal stage's runs: importance sampling forward is unbiased for p(y) whatever the fit; reciprocal
importance sampling in reverse is unbiased for 1/p(y) only on exact posterior draws (closed form: the conjugate
Gaussian mean)."""

import jax
import numpy as np
import pytest

import bdmc
from bdmc.contracts.estimate import log_harmonic_mean, log_mean_exp
from bdmc.errors import OptionError
from bdmc.intervals.draws import PosteriorDraws
from bdmc.intervals.proposal import proposal_runs
from bdmc.models import GaussianMean

MODEL = GaussianMean(n=20, dim=2)


@pytest.fixture(scope="module")
def case():
    data, latent = bdmc.simulate(jax.random.key(0), MODEL)
    keys = jax.random.split(jax.random.key(1), 4000)
    draws = jax.vmap(lambda k: MODEL.gibbs_update(k, latent, data, 1.0))(keys)  # exact posterior draws
    return data, draws, float(MODEL.exact_log_marginal(data))


def runs(data, draws, key=2):
    posterior = PosteriorDraws(latents=draws, num_chains=None, source="test", diagnostics={})
    return proposal_runs(jax.random.key(key), MODEL, data, posterior, num_runs=64, reverse_runs=64)


def test_both_directions_meet_the_closed_form_on_exact_draws(case):
    data, draws, exact = case
    fitted = runs(data, draws)
    assert fitted.fitted_on == 2000 and fitted.held_out_draws == 2000 // 64
    assert abs(log_mean_exp(fitted.forward) - exact) < 0.02
    assert abs(log_harmonic_mean(fitted.reverse) - exact) < 0.02


def test_forward_stays_unbiased_with_a_poor_fit_and_reverse_needs_exact_draws(case):
    """Draws shifted by two posterior sds: the forward runs (a fresh proposal, any fit) still average to p(y); the
    reverse runs (held-out draws no longer from the posterior) miss by nats: the negative control."""
    data, draws, exact = case
    shifted = {"mu": draws["mu"] + 2 * np.std(np.asarray(draws["mu"]), axis=0)}
    fitted = runs(data, shifted)
    assert abs(log_mean_exp(fitted.forward) - exact) < 0.1
    assert abs(log_harmonic_mean(fitted.reverse) - exact) > 1.0


def test_too_few_draws_for_the_reverse_runs_are_refused(case):
    data, draws, _ = case
    few = jax.tree.map(lambda x: x[:10], draws)
    with pytest.raises(OptionError, match="held-out draws"):
        runs(data, few)


# -m slow: 20 seeds; one seed's interval on the chosen split stays (tests/intervals/test_evidence.py).
@pytest.mark.slow
def test_the_chosen_split_certifies_the_closed_form_at_its_level(case):
    """With the runs' split, the mixtures and their scales chosen by the pilot and the fitted half, each side's bound
    is still on the right side of the closed form in all but a fraction ``a`` of seeds (here a = 0.2, so that a leak
    shows in few seeds: 20 seeds, 40 bounds; a count above the binomial's 0.999 quantile would mean the choice leaks
    into the runs)."""
    from scipy import stats

    from bdmc.intervals.bounds import certified_lower, certified_upper

    data, draws, exact = case
    posterior = PosteriorDraws(latents=draws, num_chains=None, source="test", diagnostics={})
    failures, widths = 0, []
    for seed in range(20):
        fitted = proposal_runs(jax.random.key(100 + seed), MODEL, data, posterior, level=0.2, forward_budget=2048)
        lower = certified_lower(fitted.forward, level=0.2)
        upper = certified_upper(fitted.reverse, level=0.2, independent=True)
        failures += (lower.value > exact) + (upper.value < exact)
        widths.append(upper.value - lower.value)
    assert failures <= stats.binom.ppf(0.999, 40, 0.2)
    assert np.median(widths) < 0.3  # a Gaussian posterior: the fit is exact, only the certificates' slack is left


def test_predicted_margin_trades_runs_against_their_spread():
    from bdmc.intervals.proposal import predicted_margin

    # No spread: more runs only shrink the slack. Large spread: a few large runs win.
    assert predicted_margin(0.0, 64, 256, 0.01) < predicted_margin(0.0, 256, 64, 0.01)
    assert predicted_margin(50.0, 4096, 16, 0.01) < predicted_margin(50.0, 64, 1024, 0.01)
    assert predicted_margin(1.0, 100, 64, 0.01) < predicted_margin(4.0, 100, 64, 0.01)
