"""Moves per step of the data path chosen by its pilot (bdmc.core.smc_pilot.moves_per_step, kernels.MovesTable):
the count read by lam is the pilot's, frozen; the numbers are RepeatUpTo's; the rule is its closed form; and a
reverse run that must widen its particles (SHME on a broad prior) stays unbiased for 1/Z and gets closer."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_smc_pilot import _Wide, _wide_log_z

import bdmc
from bdmc import BDMCError, simulate
from bdmc.core.smc_pilot import DataPathPilot, _slowest_correlation, moves_per_step
from bdmc.errors import OptionError
from bdmc.kernels import HMC, MovesTable, RepeatUpTo
from bdmc.models import GaussianMean


def test_a_moves_table_reads_its_count_by_lam_and_gives_repeat_up_to_numbers(key):
    model = GaussianMean(n=10, dim=2)
    data = simulate(jax.random.key(3), model).data
    kernel = HMC(model, step_size=0.2, num_integration_steps=3)
    table = MovesTable(kernel, (0.1, 0.5, 1.0), (1, 3, 2), 5)
    # The first entry at or above lam; the mean of a per-case lam; the last entry beyond the table.
    for lam, want in ((0.0, 1), (0.1, 1), (0.3, 3), (0.5, 3), (0.7, 2), (1.0, 2), (jnp.array([0.2, 0.4]), 3)):
        assert int(table.count_at(lam)) == want, lam
    x = model.sample_prior(jax.random.key(4))
    for lam, n in ((0.3, 3), (0.9, 2)):
        a, info_a = table(key, x, data, lam)
        b, info_b = RepeatUpTo(kernel, n, 5)(key, x, data, lam)
        np.testing.assert_allclose(np.asarray(a["mu"]), np.asarray(b["mu"]), rtol=1e-12)
        assert float(info_a.acceptance) == pytest.approx(float(info_b.acceptance))
    # Compiled, the table is data: another table of the same length reuses the program.
    latents = jax.vmap(model.sample_prior)(jax.random.split(key, 8))
    path = np.linspace(0, 1, 4)
    runs = [bdmc.anneal(key, model, data, MovesTable(kernel, (0.1, 0.5, 1.0), counts, 5), path, latents,
                        progress=False) for counts in ((1, 3, 2), (2, 2, 5))]
    assert runs[0].compiled and not runs[1].compiled
    assert table.evals_per_step == 2 * kernel.evals_per_step  # the mean count, rounded up
    padded = MovesTable(kernel, (0.1, 0.5, 1.0, 1.0 + 1e-9, 1.0 + 2e-9), (1, 1, 1, 5, 5), 5)
    assert padded.evals_per_step == kernel.evals_per_step  # entries past lam = 1 are a pilot's padding
    for lams, counts, most in (((0.5, 0.1), (1, 2), 5), ((0.1, 0.5), (1,), 5), ((0.1, 0.5), (0, 2), 5),
                               ((0.1, 0.5), (1, 6), 5)):
        with pytest.raises(OptionError, match="MovesTable"):
            MovesTable(kernel, lams, counts, most)


def test_moves_per_step_is_the_correlation_rule_smoothed_by_a_running_maximum():
    # ceil(log 0.2 / log rho): 3 moves at rho = 0.5, 8 at 0.8; at most `most`; never fewer than `moves`.
    assert moves_per_step([0.5], moves=1, target=0.2, most=32).tolist() == [3]
    assert moves_per_step([0.8], moves=1, target=0.2, most=32).tolist() == [8]
    assert moves_per_step([0.999], moves=1, target=0.2, most=32).tolist() == [32]
    assert moves_per_step([1.0, np.nan], moves=2, target=0.2, most=32).tolist() == [32, 32]
    assert moves_per_step([0.1, 0.2], moves=2, target=0.2, most=32).tolist() == [2, 2]
    # A slow step lends its count to its neighbours (the pilot measures on few particles).
    assert moves_per_step([0.1, 0.1, 0.8, 0.1, 0.1], moves=1, target=0.2, most=32).tolist() == [1, 8, 8, 8, 1]
    # No target: the given moves everywhere.
    assert moves_per_step([0.99, 0.99], moves=3, target=None, most=32).tolist() == [3, 3]
    with pytest.raises(BDMCError, match="moves_target"):
        DataPathPilot(moves_target=1.0)
    with pytest.raises(BDMCError, match="max_moves"):
        DataPathPilot(max_moves=0)


def test_the_pilot_measures_one_moves_correlation_in_the_slowest_coordinate():
    """An autoregressive move x' = rho x + sqrt(1 - rho^2) z leaves N(0, 1) invariant with lag-one correlation rho;
    after m such moves the correlation is rho^m, which the measure takes back to one move's."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20_000, 3))
    rho = np.array([0.2, 0.7, 0.5])
    after = x
    for _ in range(2):
        after = rho * after + np.sqrt(1 - rho**2) * rng.standard_normal(x.shape)
    measured = float(_slowest_correlation({"x": jnp.asarray(x)}, {"x": jnp.asarray(after)}, 2))
    assert measured == pytest.approx(0.7, abs=0.02)
    # A coordinate that never varies is left out; one that never moves is the slowest there is.
    fixed = np.concatenate([x[:, :1], np.zeros((x.shape[0], 1))], axis=1)
    moved = np.concatenate([after[:, :1], np.zeros((x.shape[0], 1))], axis=1)
    assert float(_slowest_correlation({"x": jnp.asarray(fixed)}, {"x": jnp.asarray(moved)}, 2)) < 0.3
    assert float(_slowest_correlation({"x": jnp.asarray(x)}, {"x": jnp.asarray(x)}, 1)) == 1.0


# -m slow: the moves table's counts and cost keep a default test here, SHME's unbiasedness with a tuned table
# test_shme_one_latent.py.
@pytest.mark.slow
def test_shme_takes_more_moves_where_its_particles_must_widen_and_stays_unbiased_for_one_over_z(key):
    """Reverse from a posterior 600 times narrower than its prior: resampling cannot widen the particles, only
    moves can. The pilot's extra moves where one move mixes slowly keep E[1/Z-hat] = 1/Z (the counts are frozen
    before the run) and bring single runs closer than the same moves at every step (the negative control)."""
    model = _Wide()
    data = 137.0 + jax.random.normal(jax.random.key(4), (40,))
    exact = _wide_log_z(np.asarray(data))
    precision = 1 / 100**2 + 40
    runs, particles = 120, 16
    draws = float(np.sum(data)) / precision + precision**-0.5 * np.random.default_rng(0).standard_normal(runs)
    exact_latent = {"x": jnp.asarray(np.repeat(draws, particles))}  # one exact draw per run
    kw = dict(exact_latent=exact_latent, num_particles=particles, num_runs=runs, progress=False)
    chosen = bdmc.shme(key, model, data, **kw)
    fixed = bdmc.shme(key, model, data, tune=DataPathPilot(moves_target=None), **kw)
    counts = chosen.settings["moves_per_step"]
    assert counts.endswith("(pilot-chosen)") and fixed.settings["moves_per_step"] is None
    assert chosen.details.n_evals > fixed.details.n_evals  # the extra moves are priced
    inverse = np.exp(-(np.asarray(chosen.runs) - exact))  # each run's 1/Z-hat over 1/Z: mean 1
    # A mean above 1 (Z-hat too small: an upper bound that does not hold) is what the check can see at 120 runs.
    # Below 1 it cannot: 1/Z-hat has a heavy right tail, so an unbiased sample's mean usually falls short of 1,
    # with a small sample sd (its rare large values unsampled): 0.65 against a 4-sd margin of 0.34 here.
    assert np.mean(inverse) - 1 < 4 * np.std(inverse) / np.sqrt(runs) + 0.02, np.mean(inverse)
    errors = {name: float(np.median(np.abs(np.asarray(e.runs) - exact))) for name, e in (("chosen", chosen),
                                                                                         ("fixed", fixed))}
    assert errors["chosen"] < 0.85 * errors["fixed"], errors
