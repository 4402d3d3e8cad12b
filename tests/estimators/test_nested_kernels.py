"""Constrained-prior kernels of nested sampling, and nested sampling with them, against exact references.

A constrained-prior kernel must leave ``pi(x) 1[L(x) > C] / V(C)`` invariant and never leave the region. The
reference draws come from rejection sampling of the prior (exact for any model), the threshold is a prior
quantile of the likelihood so that rejection stays cheap.
"""

import functools
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from scipy import stats

import bdmc
from bdmc import BDMCError
from bdmc.estimators.nested import (
    ConstrainedEllipticalSlice,
    ConstrainedGibbs,
    ConstrainedRandomWalk,
    _log_l,
    default_nested_kernel,
    nested_sampling,
)
from bdmc.models import GaussianMean, LowRank, LowRankHyper
from bdmc.models.low_rank import ConstrainedCoordinateGibbs

TINY_LOW_RANK = LowRank(n=3, d=2, k=1)
TWO_DIM_LOW_RANK = LowRank(n=3, d=2, k=2)  # k = 2: the coordinate kernel's shear moves take part
GAUSSIAN = GaussianMean(n=5, dim=2)


def _data(model, seed=1):
    return bdmc.simulate(jax.random.key(seed), model)[0]


def _constrained_draws(key, model, data, num, prior_volume):
    """Threshold ``log_c`` with prior volume about ``prior_volume``, and two independent sets of ``num`` exact draws
    from the prior restricted to ``log L > log_c`` (rejection from the prior)."""
    k_c, k_draw = jax.random.split(key)
    draw = jax.jit(lambda k, m: jax.vmap(model.sample_prior)(jax.random.split(k, m)), static_argnums=1)
    log_l = jax.jit(jax.vmap(lambda x: _log_l(model, x, data)))
    log_c = float(np.quantile(np.asarray(log_l(draw(k_c, 20_000))), 1.0 - prior_volume))
    draws = draw(k_draw, int(3 * num / prior_volume))
    inside = np.flatnonzero(np.asarray(log_l(draws)) > log_c)
    assert inside.size >= 2 * num, "rejection sampling ran short; raise the candidate count"
    take = lambda idx: jax.tree.map(lambda a: a[idx], draws)  # noqa: E731
    return log_c, take(inside[:num]), take(inside[num:2 * num])


def _apply(kernel, model, data, log_c, key, starts, num_moves):
    """``num_moves`` kernel moves from every start: (final states, min over moves of log L - log_c)."""

    def chain(k, x):
        def body(i, carry):
            x, low = carry
            x = kernel(jax.random.fold_in(k, i), x, data, log_c)
            return x, jnp.minimum(low, _log_l(model, x, data) - log_c)

        return jax.lax.fori_loop(0, num_moves, body, (x, jnp.asarray(jnp.inf)))

    num = jax.tree.leaves(starts)[0].shape[0]
    return jax.jit(jax.vmap(chain))(jax.random.split(key, num), starts)


def _invariance(kernel, model, *, key, num=2000, num_moves=10, prior_volume=0.5):
    """Smallest KS p-value (over the coordinates and log L) between moved exact draws and fresh exact draws,
    the smallest log L - log C seen along the way, and the fraction of chains that moved."""
    data = _data(model)
    k_draw, k_move = jax.random.split(key)
    log_c, starts, fresh = _constrained_draws(k_draw, model, data, num, prior_volume)
    finals, low = _apply(kernel, model, data, log_c, k_move, starts, num_moves)
    flat = jax.vmap(lambda x: ravel_pytree(x)[0])
    log_l = jax.vmap(lambda x: _log_l(model, x, data))
    moved_cols = np.column_stack([np.asarray(flat(finals)), np.asarray(log_l(finals))])
    fresh_cols = np.column_stack([np.asarray(flat(fresh)), np.asarray(log_l(fresh))])
    p_min = min(stats.ks_2samp(moved_cols[:, j], fresh_cols[:, j]).pvalue for j in range(moved_cols.shape[1]))
    moved = np.mean(np.any(np.asarray(flat(finals)) != np.asarray(flat(starts)), axis=1))
    return p_min, float(np.min(np.asarray(low))), float(moved), moved_cols.shape[1]


# Bonferroni-corrected level for the smallest of the per-coordinate KS p-values.
ALPHA = 1e-3


def _assert_invariant(kernel, model, key):
    p_min, low, moved, ncols = _invariance(kernel, model, key=key)
    assert low > 0, f"left the constrained region: min log L - log C = {low}"
    assert p_min > ALPHA / ncols, f"constrained prior not invariant: smallest KS p-value {p_min:.2e}"
    assert moved > 0.5, f"only {moved:.0%} of chains moved"


KERNELS = {
    "ess-rows": (lambda m: ConstrainedEllipticalSlice(m), TINY_LOW_RANK),
    "coordinate-k2": (lambda m: ConstrainedCoordinateGibbs(m), TWO_DIM_LOW_RANK),
    "random-walk": (lambda m: ConstrainedRandomWalk(m, scale=0.5), TINY_LOW_RANK),
    "gibbs": (lambda m: ConstrainedGibbs(m), TINY_LOW_RANK),
    "coordinate-k1": (lambda m: ConstrainedCoordinateGibbs(m), TINY_LOW_RANK),
}
SLOW = pytest.mark.slow


@pytest.mark.parametrize("name", [n if i < 2 else pytest.param(n, marks=SLOW) for i, n in enumerate(KERNELS)])
def test_kernel_leaves_the_constrained_low_rank_prior_invariant(name, key):
    make, model = KERNELS[name]
    _assert_invariant(make(model), model, key)


def test_random_walk_leaves_the_constrained_gaussian_prior_invariant(key):
    # The configuration of the reported +0.1 nat offset (GaussianMean, default scale): the kernel itself is exact.
    _assert_invariant(ConstrainedRandomWalk(GAUSSIAN), GAUSSIAN, key)


# ---------------------------------------------------------------------------------------- negative controls


@dataclass(frozen=True)
class WideEllipticalSlice(ConstrainedEllipticalSlice):
    """Broken: the ellipse's auxiliary draw uses twice the prior standard deviation."""

    def _blocks(self):
        return tuple((name, axis, 2.0 * std) for name, axis, std in super()._blocks())


@dataclass(frozen=True)
class UnconstrainedRandomWalk:
    """Broken: random-walk Metropolis on the prior that forgets the likelihood constraint."""

    model: object
    scale: float = 0.5

    def __call__(self, key, latent, data, log_c):
        k1, k2 = jax.random.split(key)
        flat, unravel = ravel_pytree(latent)
        proposal = unravel(flat + self.scale * jax.random.normal(k1, flat.shape))
        accept = jnp.log(jax.random.uniform(k2)) < self.model.log_prior(proposal) - self.model.log_prior(latent)
        return jax.tree.map(lambda a, b: jnp.where(accept, a, b), proposal, latent)


@dataclass(frozen=True)
class NoPriorRatioRandomWalk:
    """Broken: accepts every proposal inside the constraint (the prior ratio is left out)."""

    model: object
    scale: float = 0.5

    def __call__(self, key, latent, data, log_c):
        flat, unravel = ravel_pytree(latent)
        proposal = unravel(flat + self.scale * jax.random.normal(key, flat.shape))
        accept = _log_l(self.model, proposal, data) > log_c
        return jax.tree.map(lambda a, b: jnp.where(accept, a, b), proposal, latent)


def test_elliptical_slice_with_the_wrong_prior_variance_fails_the_invariance_check(key):
    p_min, low, _, ncols = _invariance(WideEllipticalSlice(TINY_LOW_RANK), TINY_LOW_RANK, key=key)
    assert low > 0  # it still respects the constraint...
    assert p_min < ALPHA / ncols  # ...but samples the wrong prior


def test_coordinate_gibbs_with_the_wrong_prior_variance_fails_the_invariance_check(key):
    # The kernel believes sigma_u = 1.3 (its truncated draws and symmetry moves use that prior); the target
    # has sigma_u = 1. The likelihood, and so the constraint, is the same for both.
    model = TWO_DIM_LOW_RANK
    wrong = LowRank(n=model.n, d=model.d, k=model.k, sigma_u=1.3)
    p_min, low, _, ncols = _invariance(ConstrainedCoordinateGibbs(wrong), model, key=key)
    assert low > 0 and p_min < ALPHA / ncols


@SLOW
def test_random_walk_without_the_constraint_or_the_prior_ratio_fails_the_invariance_check(key):
    p_min, low, _, ncols = _invariance(UnconstrainedRandomWalk(TINY_LOW_RANK), TINY_LOW_RANK, key=key)
    assert low < 0 and p_min < ALPHA / ncols
    p_min, low, _, ncols = _invariance(NoPriorRatioRandomWalk(TINY_LOW_RANK), TINY_LOW_RANK, key=key)
    assert low > 0 and p_min < ALPHA / ncols


# ------------------------------------------------------------------------------- elliptical slice mechanics


def test_elliptical_slice_counts_its_evaluations_and_stays_put_at_the_cap(key):
    model = TINY_LOW_RANK
    data = _data(model)
    x = model.sample_prior(key)
    kernel = ConstrainedEllipticalSlice(model, max_shrinks=7)
    # No constraint: every block accepts its first angle, one evaluation per block (3 rows of U, 2 columns of V).
    moved, evals = jax.jit(kernel.counted)(key, x, data, -jnp.inf)
    assert float(evals) == model.n + model.d
    assert not np.allclose(moved["U"], x["U"]) and not np.allclose(moved["V"], x["V"])
    # A threshold no point satisfies (not even the current one): every block shrinks to the cap and stays.
    stuck, evals = jax.jit(kernel.counted)(key, x, data, jnp.inf)
    assert float(evals) == (model.n + model.d) * (7 + 1)
    np.testing.assert_array_equal(stuck["U"], x["U"])
    np.testing.assert_array_equal(stuck["V"], x["V"])


def test_bad_elliptical_slice_settings_are_named():
    with pytest.raises(BDMCError, match="gaussian_prior_blocks"):
        ConstrainedEllipticalSlice(GAUSSIAN)
    with pytest.raises(BDMCError, match="max_shrinks"):
        ConstrainedEllipticalSlice(TINY_LOW_RANK, max_shrinks=0)
    with pytest.raises(BDMCError, match="block"):
        ConstrainedEllipticalSlice(TINY_LOW_RANK, blocks=(("U", 0),))


def test_default_kernel_changes_for_low_rank_only():
    assert isinstance(default_nested_kernel(LowRank()), ConstrainedCoordinateGibbs)
    assert isinstance(default_nested_kernel(GaussianMean()), ConstrainedGibbs)
    assert isinstance(default_nested_kernel(LowRankHyper()), ConstrainedGibbs)

    @dataclass(frozen=True)
    class Blocks:
        def gaussian_prior_blocks(self):
            return (("x", None, 1.0),)

    assert isinstance(default_nested_kernel(Blocks()), ConstrainedEllipticalSlice)
    assert isinstance(default_nested_kernel(object()), ConstrainedRandomWalk)


# ------------------------------------------------------------------------------------ nested sampling runs


STOP_RATIO = math.exp(-10)


def _ideal_nested_sampling_gaussian_mean(model, data, *, num_particles, num_runs, seed=0, stop_ratio=STOP_RATIO):
    return _ideal_runs(model, np.asarray(data).tobytes(), num_particles, num_runs, seed, stop_ratio).copy()


@functools.cache
def _ideal_runs(model, data_bytes, num_particles, num_runs, seed, stop_ratio):
    """Per-run log estimates of nested sampling with exact constrained-prior draws on a GaussianMean.

    ``log L`` depends on mu only through ``r^2 = |mu - ybar|^2``, and the prior volume of ``r^2 < q`` is a
    noncentral chi-square CDF, so a run is simulated in volume space: a prior draw has volume U(0, 1) and an
    exact constrained draw below volume X has volume U(0, X). Same volumes, threshold and stopping rule as
    :func:`nested_sampling` with geometric volumes.
    """
    y = np.frombuffer(data_bytes).reshape(model.n, model.dim)
    ybar, s0, sn, n, dim = y.mean(0), model.prior_std, model.noise_std, model.n, model.dim
    nc = np.sum((model.prior_mean - ybar) ** 2) / s0**2
    const = np.sum(stats.norm.logpdf(y, ybar, sn))
    log_q = np.linspace(np.log(1e-14), np.log(stats.ncx2.ppf(1 - 1e-15, dim, nc)), 40_000)
    log_x = stats.ncx2.logcdf(np.exp(log_q), dim, nc)
    keep = np.isfinite(log_x) & (np.diff(log_x, prepend=-np.inf) > 0)
    log_q, log_x = log_q[keep], log_x[keep]

    def log_l(lx):
        return const - 0.5 * n * s0**2 * np.exp(np.interp(lx, log_x, log_q)) / sn**2

    K, R, rng, rows = num_particles, num_runs, np.random.default_rng(seed), np.arange(num_runs)
    shrink = -1.0 / K
    lx = np.log(rng.uniform(size=(R, K)))
    ll = log_l(lx)
    log_z, log_vol, active = np.full(R, -np.inf), np.zeros(R), np.ones(R, bool)
    while active.any():
        worst = np.argmin(ll, 1)
        term = log_vol + math.log(-math.expm1(shrink)) + ll[rows, worst]
        active &= term - log_z >= math.log(stop_ratio)
        log_z[active] = np.logaddexp(log_z[active], term[active])
        log_vol[active] += shrink
        new = lx[rows, worst] + np.log(rng.uniform(size=R))
        idx = rows[active]
        lx[idx, worst[idx]], ll[idx, worst[idx]] = new[idx], log_l(new[idx])
    return np.logaddexp(log_z, log_vol + np.logaddexp.reduce(ll, 1) - math.log(K))


@SLOW
def test_ideal_nested_sampling_reference_matches_exact_log_ml_up_to_its_known_bias():
    # With K = 2 and geometric volumes even exact constrained sampling leaves a small positive bias of order
    # 1/K in the log estimate. The reference must reproduce log Z as K grows: the bias shrinks about like 1/K.
    data = _data(GAUSSIAN)
    exact = float(GAUSSIAN.exact_log_marginal(data))
    bias = {}
    for K in (2, 8):
        runs = _ideal_nested_sampling_gaussian_mean(GAUSSIAN, data, num_particles=K, num_runs=40_000)
        se = runs.std() / np.sqrt(runs.size)
        bias[K] = (runs.mean() - exact, se)
    (b2, se2), (b8, se8) = bias[2], bias[8]
    assert b2 > 4 * se2  # the estimator's own bias at K = 2 is real...
    assert abs(b8 - b2 / 4) < 4 * math.hypot(se8, se2 / 4) + 0.25 * b2  # ...and falls like 1/K (to 25%)


@pytest.mark.parametrize("name", [pytest.param("ess", marks=SLOW), pytest.param("random-walk", marks=SLOW)])
def test_nested_sampling_with_a_good_kernel_matches_ideal_nested_sampling(name, key):
    # Against the estimator's expectation under exact constrained sampling, not against log Z: this isolates
    # the kernel. (The +0.1 nat offset once seen with the random walk on GaussianMean is the estimator's own
    # finite-K bias, which the ideal reference shares.)
    model = GAUSSIAN
    data = _data(model)
    kernel = (ConstrainedEllipticalSlice(model, blocks=(("mu", None, model.prior_std),)) if name == "ess"
              else ConstrainedRandomWalk(model, scale=0.3))
    assert model.prior_mean == 0.0  # the elliptical slice kernel needs a zero-mean prior
    est = nested_sampling(key, model, data, num_moves=20, num_runs=512, kernel=kernel)
    ideal = _ideal_nested_sampling_gaussian_mean(model, data, num_particles=2, num_runs=40_000)
    se = math.hypot(est.stderr, ideal.std() / np.sqrt(ideal.size))
    assert abs(est.value - ideal.mean()) < 4 * se, (est.value, ideal.mean(), se)
    assert est.settings["capped_runs"] == 0


@SLOW
def test_nested_sampling_with_a_sticky_random_walk_is_far_from_ideal(key):
    # Negative control for the comparison above: one small random-walk move per step leaves the new particle
    # next to its copy, and the estimate falls well below the ideal one.
    model = GAUSSIAN
    data = _data(model)
    est = nested_sampling(key, model, data, num_moves=1, num_runs=512, kernel=ConstrainedRandomWalk(model, scale=0.1))
    ideal = _ideal_nested_sampling_gaussian_mean(model, data, num_particles=2, num_runs=40_000)
    assert ideal.mean() - est.value > 4 * math.hypot(est.stderr, ideal.std() / np.sqrt(ideal.size)) + 0.5


@pytest.mark.parametrize("name", ["coordinate", pytest.param("ess", marks=SLOW)])
def test_nested_sampling_on_tiny_low_rank_matches_the_exact_log_ml(name, key):
    # K = 8 keeps the estimator's own O(1/K) bias (see the reference test above) below the standard error of
    # 128 runs. "coordinate" is the default kernel for the model.
    model = LowRank(n=6, d=2, k=1)
    data = _data(model)
    exact = float(model.exact_log_marginal(data))
    kernel = None if name == "coordinate" else ConstrainedEllipticalSlice(model)
    est = nested_sampling(key, model, data, num_moves=3, num_particles=8, num_runs=128, kernel=kernel)
    assert est.settings["capped_runs"] == 0
    assert abs(est.value - exact) < 4 * est.stderr, (est.value - exact, est.stderr)
    steps = est.settings["mean_steps"] * 128
    if name == "coordinate":
        assert est.settings["kernel"] == "ConstrainedCoordinateGibbs"
        assert est.n_evals == round(steps) * 3 * 4 + 8 * 128  # 3 moves of 4 evaluations per step
    else:  # counted: at least one evaluation per block (6 rows of U, 2 columns of V) and move
        assert est.n_evals >= steps * 3 * (model.n + model.d) + 8 * 128
