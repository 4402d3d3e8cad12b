"""The Chib-Murray-Salakhutdinov estimator and the kernel hooks it needs (``log_transition``, ``reversed``).

Everything is checked against something that cannot be fooled: normalization of the transition density
(enumeration, quadrature), detailed balance ``pi(x) T(x'|x) = pi(x') T~(x|x')``, two independent
implementations of the same density, the sampler's empirical frequencies, the exact expectation of
``1 / p_hat`` by path enumeration, and Monte Carlo unbiasedness against exact log marginals. Negative
controls (the forward operator posing as its own reverse, a fixed start position) make the identities fail.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import dtype_tol, magnitude, simulate_float64
from scipy import stats
from scipy.special import logsumexp

import bdmc
from bdmc import BDMCError
from bdmc.contracts import log_density
from bdmc.estimators import chib_murray_salakhutdinov, cms
from bdmc.kernels import Conditional, GibbsSweep, RandomWalkMH
from bdmc.models import (
    BinaryAttributes,
    BinaryAttributesHyper,
    Clustering,
    ClusteringHyper,
    FiniteMixture,
    GaussianMean,
    LinearRegression,
    LowRank,
    LowRankHyper,
)


@dataclass(frozen=True)
class SelfReverse:
    """A wrong reverse operator: T~ replaced by T itself (right only when T is reversible)."""

    inner: Any

    def __call__(self, key, latent, data, lam):
        return self.inner(key, latent, data, lam)

    def log_transition(self, latent_from, latent_to, data, lam):
        return self.inner.log_transition(latent_from, latent_to, data, lam)

    def reversed(self):
        return self


def _all_latents(model):
    """Every latent of a tiny discrete model, stacked along a leading axis."""
    if isinstance(model, Clustering):
        z = np.array(list(itertools.product(range(model.k), repeat=model.n)), np.int32)
        return {"z": jnp.asarray(z)}
    bits = np.array(list(itertools.product((0, 1), repeat=model.n * model.k)), np.int32)
    return {"Z": jnp.asarray(bits.reshape(-1, model.n, model.k))}


def _transition_matrix(kernel, states, data, lam):
    """``M[i, j] = log T(states_j | states_i)``."""
    row = jax.vmap(kernel.log_transition, in_axes=(None, 0, None, None))
    return np.asarray(jax.jit(jax.vmap(row, in_axes=(0, None, None, None)))(states, states, data, lam))


# ----- the transition density ---------------------------------------------------------------------------------

DISCRETE = [Clustering(n=3, k=3, dim=2), BinaryAttributes(n=2, dim=2, k=2)]


@pytest.mark.parametrize("model", DISCRETE, ids=lambda m: type(m).__name__)
def test_log_transition_sums_to_one_over_all_targets(model):
    data, _ = bdmc.simulate(jax.random.key(0), model)
    states = _all_latents(model)
    kernel = model.default_kernel()
    tol = dtype_tol(magnitude(jax.vmap(lambda s: log_density(model, s, data, 1.0))(states)))
    for lam in (1.0, 0.4):
        for k in (kernel, kernel.reversed()):
            sums = logsumexp(_transition_matrix(k, states, data, lam), axis=1)
            np.testing.assert_allclose(sums, 0.0, atol=tol)


def test_log_transition_integrates_to_one_over_continuous_targets():
    # GaussianMean: one block, T(mu' | mu) is the exact conditional; trapezoid rule on a fine grid.
    gm = GaussianMean(n=4, dim=1)
    data, x = bdmc.simulate(jax.random.key(1), gm)
    grid = np.linspace(-12.0, 12.0, 4801)
    logt = jax.vmap(lambda mu: gm.default_kernel().log_transition(x, {"mu": mu[None]}, data, 0.7))(grid)
    tol = dtype_tol(magnitude(log_density(gm, x, data, 0.7)))
    np.testing.assert_allclose(logsumexp(logt) + np.log(grid[1] - grid[0]), 0.0, atol=tol)

    # FiniteMixture: z' summed over all k**n assignments, theta' (k = 2, dim = 1) on a 2-d grid.
    fm = FiniteMixture(n=3, k=2, dim=1, sigma_theta=1.0, sigma_noise=0.7)
    data, x = bdmc.simulate(jax.random.key(2), fm)
    axis = np.linspace(-10.0, 10.0, 401)
    thetas = jnp.asarray(np.stack(np.meshgrid(axis, axis, indexing="ij"), -1).reshape(-1, 2, 1))
    zs = jnp.asarray(list(itertools.product(range(fm.k), repeat=fm.n)), jnp.int32)
    for kernel in (fm.default_kernel(), fm.default_kernel().reversed()):
        def over_theta(z, kernel=kernel):
            logt = jax.vmap(lambda th: kernel.log_transition(x, {"z": z, "theta": th}, data, 1.0))(thetas)
            return jax.scipy.special.logsumexp(logt)

        total = logsumexp(np.asarray(jax.jit(jax.vmap(over_theta))(zs))) + 2 * np.log(axis[1] - axis[0])
        tol = dtype_tol(magnitude(log_density(fm, x, data, 1.0)), floor=1e-9)
        np.testing.assert_allclose(total, 0.0, atol=tol)


SLOW = pytest.mark.slow
SMALL = [
    FiniteMixture(n=5, k=3, dim=2),
    Clustering(n=6, k=3, dim=2),
    BinaryAttributes(n=3, dim=2, k=2),
    pytest.param(GaussianMean(n=5, dim=2), marks=SLOW),
    pytest.param(LinearRegression(n=8), marks=SLOW),
    pytest.param(LowRank(n=6, d=4, k=2), marks=SLOW),
    pytest.param(LowRankHyper(n=6, d=4, k=2), marks=SLOW),
]


@pytest.mark.parametrize("model", SMALL, ids=lambda m: type(m).__name__)
def test_detailed_balance_with_the_reverse_operator(model):
    """``log f(x) + log T(x'|x) = log f(x') + log T~(x|x')`` at random pairs and several lam."""
    data, _ = bdmc.simulate(jax.random.key(0), model)
    kernel = model.default_kernel()
    pairs = [jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(s), 4)) for s in (10, 11)]

    def imbalance(reverse, x, xp, lam):
        lhs = log_density(model, x, data, lam) + kernel.log_transition(x, xp, data, lam)
        return lhs - log_density(model, xp, data, lam) - reverse.log_transition(xp, x, data, lam)

    def check(reverse):
        return jax.jit(jax.vmap(lambda x, xp, lam: imbalance(reverse, x, xp, lam), in_axes=(0, 0, None)))

    right = check(kernel.reversed())
    tol = dtype_tol(magnitude([jax.vmap(lambda x: log_density(model, x, data, 1.0))(p) for p in pairs]))
    for lam in (1.0, 0.37, jnp.linspace(0.0, 1.0, model.n)):
        err = np.asarray(right(*pairs, lam))
        assert np.max(np.abs(err)) < tol, (lam, err)
    if not isinstance(model, GaussianMean):  # one exact block: T(x'|x) = f(x'), so T is its own reverse
        err = np.asarray(check(kernel)(*pairs, 1.0))
        assert np.max(np.abs(err)) > max(1e-3, 100 * tol), "the forward operator must not pass as its own reverse"


@pytest.mark.parametrize("model", [Clustering(n=5, k=3, dim=2),
                                   pytest.param(BinaryAttributes(n=2, dim=3, k=2), marks=SLOW)],
                         ids=lambda m: type(m).__name__)
def test_collapsed_sweep_density_matches_generic_gibbs_sweep(model):
    """The scanned sweep's density equals the GibbsSweep of the per-site conditionals (stats from scratch)."""
    data, _ = bdmc.simulate(jax.random.key(3), model)
    fast, generic = model.default_kernel(), GibbsSweep(model.conditionals())
    xs = jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(4), 6))
    xps = jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(5), 6))
    tol = dtype_tol(magnitude([jax.vmap(lambda x: log_density(model, x, data, 1.0))(p) for p in (xs, xps)]))
    for a, b in ((fast, generic), (fast.reversed(), generic.reversed())):
        for lam in (1.0, 0.5):
            va = jax.vmap(a.log_transition, in_axes=(0, 0, None, None))(xs, xps, data, lam)
            vb = jax.vmap(b.log_transition, in_axes=(0, 0, None, None))(xs, xps, data, lam)
            np.testing.assert_allclose(va, vb, rtol=0, atol=tol)
    # and the two orders really differ (so the reverse check above is not vacuous)
    va = jax.vmap(fast.log_transition, in_axes=(0, 0, None, None))(xs, xps, data, 1.0)
    vr = jax.vmap(fast.reversed().log_transition, in_axes=(0, 0, None, None))(xs, xps, data, 1.0)
    assert np.max(np.abs(np.asarray(va - vr))) > 1e-3


@pytest.mark.parametrize("model", [Clustering(n=3, k=3, dim=2),
                                   pytest.param(BinaryAttributes(n=2, dim=3, k=2), marks=SLOW)],
                         ids=lambda m: type(m).__name__)
def test_log_transition_matches_the_sweeps_empirical_frequencies(model):
    """20k sweeps from one start: chi-square of the visited targets against exp(log_transition)."""
    data, x0 = bdmc.simulate(jax.random.key(6), model)
    states = _all_latents(model)
    leaf = np.asarray(jax.tree.leaves(states)[0])
    flat = leaf.reshape(leaf.shape[0], -1)
    index = {tuple(r): i for i, r in enumerate(flat)}
    kernel = model.default_kernel()
    num = 20_000

    def pvalue(sampler, density):
        draws = jax.jit(jax.vmap(lambda k: sampler(k, x0, data, 1.0)[0]))(jax.random.split(jax.random.key(7), num))
        leaf = np.asarray(jax.tree.leaves(draws)[0]).reshape(num, -1)
        counts = np.bincount([index[tuple(r)] for r in leaf], minlength=flat.shape[0])
        log_p = jax.vmap(density.log_transition, in_axes=(None, 0, None, None))(x0, states, data, 1.0)
        p = np.exp(np.asarray(log_p, np.float64))
        # normalized up to rounding (float32: ~1e-7, more than scipy's chisquare accepts), then exactly
        assert abs(p.sum() - 1.0) < dtype_tol(), p.sum()
        p = p / p.sum()
        # cells in increasing expectation, the rare ones pooled until each cell expects at least 5 draws
        order = np.argsort(p)
        cell = np.minimum(np.searchsorted(np.cumsum(num * p[order]), 5.0, side="right"), len(p) - 1)
        cells = np.where(np.arange(len(p)) <= cell, cell, np.arange(len(p)))
        obs = np.bincount(cells, counts[order])[np.unique(cells)]
        exp = np.bincount(cells, num * p[order])[np.unique(cells)]
        return stats.chisquare(obs, exp).pvalue

    for k in (kernel, kernel.reversed()):
        assert pvalue(k, k) > 1e-6
    if isinstance(model, Clustering):  # negative control: the other order's density is detectably different
        assert pvalue(kernel, kernel.reversed()) < 1e-6


# ----- unbiasedness -------------------------------------------------------------------------------------------


def _expected_inverse_p_hat(log_t, log_r, star, num_steps, position=None):
    """``E[1 / p_hat]`` of CMS at state ``star`` by enumerating s and every path (matrices of log T, log T~)."""
    t, r = np.exp(log_t), np.exp(log_r)
    paths = np.array(list(itertools.product(range(t.shape[0]), repeat=num_steps)))
    positions = range(num_steps) if position is None else [position]
    inverse_p_hat = 1.0 / np.mean(t[paths, star], axis=1)
    total = 0.0
    for s in positions:
        prob = r[star, paths[:, s]]  # x_s ~ T~(. | x*)
        for j in range(s + 1, num_steps):  # forward from x_s with T
            prob = prob * t[paths[:, j - 1], paths[:, j]]
        for j in range(s):  # backward from x_s with T~
            prob = prob * r[paths[:, j + 1], paths[:, j]]
        total += np.sum(prob * inverse_p_hat) / len(positions)
    return total


@pytest.mark.parametrize("case", ["collapsed", "bits", pytest.param("generic", marks=SLOW)])
def test_expected_inverse_p_hat_is_exact_by_path_enumeration(case):
    """E[1/p_hat] = 1/p(x*|y) exactly; a fixed position s or the forward operator as reverse break it."""
    model = BinaryAttributes(n=2, dim=2, k=2) if case == "bits" else Clustering(n=3, k=2, dim=2)
    data, x = simulate_float64(jax.random.key(8), model)  # float32 runs: the negative controls' data set
    kernel = GibbsSweep(model.conditionals()) if case == "generic" else model.default_kernel()
    states = _all_latents(model)
    log_t = _transition_matrix(kernel, states, data, 1.0)
    log_r = _transition_matrix(kernel.reversed(), states, data, 1.0)
    log_post = np.array(jax.vmap(lambda s: log_density(model, s, data, 1.0))(states))
    tol = dtype_tol(magnitude(log_post))
    np.testing.assert_allclose(logsumexp(log_post), model.exact_log_marginal(data), atol=tol)
    log_post -= logsumexp(log_post)
    num_steps = 3
    for star in range(len(log_post)):
        exact = _expected_inverse_p_hat(log_t, log_r, star, num_steps) * np.exp(log_post[star])
        np.testing.assert_allclose(exact, 1.0, rtol=tol)
    # negative controls: the same exact computation misses by orders of magnitude more than its tolerance
    wrong = {
        "s fixed at 1": [_expected_inverse_p_hat(log_t, log_r, a, num_steps, 0) for a in range(len(log_post))],
        f"s fixed at {num_steps}": [_expected_inverse_p_hat(log_t, log_r, a, num_steps, num_steps - 1)
                                    for a in range(len(log_post))],
        "T as reverse": [_expected_inverse_p_hat(log_t, log_t, a, num_steps) for a in range(len(log_post))],
    }
    for name, values in wrong.items():
        assert np.max(np.abs(np.asarray(values) * np.exp(log_post) - 1.0)) > max(1e-5, 3 * tol), name


def _ratio(estimate, exact):
    r = np.exp(estimate.runs - exact)
    return r.mean(), r.std(ddof=1) / np.sqrt(r.size)


def test_unbiased_on_tiny_clustering_and_wrong_reverse_is_caught():
    model = Clustering(n=4, k=3, dim=2)
    data, x = bdmc.simulate(jax.random.key(1), model)
    exact = float(model.exact_log_marginal(data))
    est = cms(jax.random.key(2), model, data, exact_latent=x, num_steps=4, num_runs=4000)
    mean, se = _ratio(est, exact)
    assert abs(mean - 1.0) < 4 * se, (mean, se)
    assert est.bound == "lower" and est.runs.shape == (4000,)
    assert est.n_evals == 4000 * (2 * 4 * model.k + 1)
    assert set(np.unique(est.details["start"])) == {1, 2, 3, 4}  # s is drawn uniformly from 1..S

    bad = cms(jax.random.key(2), model, data, exact_latent=x, num_steps=4, num_runs=4000,
              kernel=SelfReverse(model.default_kernel()))
    mean, se = _ratio(bad, exact)
    assert abs(mean - 1.0) > 4 * se, (mean, se)


def test_unbiased_on_finite_mixture_gibbs_sweep():
    model = FiniteMixture(n=4, k=2, dim=1, sigma_theta=1.0, sigma_noise=1.0)
    data, x = bdmc.simulate(jax.random.key(1), model)
    exact = float(model.exact_log_marginal(data))
    est = chib_murray_salakhutdinov(jax.random.key(3), model, data, exact_latent=x, num_steps=4, num_runs=4000)
    mean, se = _ratio(est, exact)
    assert abs(mean - 1.0) < 4 * se, (mean, se)


def test_single_exact_block_gives_the_exact_value_with_no_spread():
    model = GaussianMean(n=10, dim=3)
    data, x = bdmc.simulate(jax.random.key(4), model)
    est = cms(jax.random.key(5), model, data, exact_latent=x, num_steps=7, num_runs=8)
    np.testing.assert_allclose(est.runs, float(model.exact_log_marginal(data)), rtol=0, atol=1e-10)


# ----- bad input ----------------------------------------------------------------------------------------------


def test_kernel_without_hooks_is_rejected_by_name():
    model = GaussianMean(n=4, dim=1)
    data, x = jnp.zeros((4, 1)), {"mu": jnp.zeros(1)}
    with pytest.raises(BDMCError, match=r"RandomWalkMH.*log_transition.*reversed"):
        cms(jax.random.key(0), model, data, exact_latent=x, kernel=RandomWalkMH(model))
    hyper = BinaryAttributesHyper(n=3, dim=2, k=2)
    with pytest.raises(BDMCError, match=r"HyperSweep.*log_transition.*reversed"):
        cms(jax.random.key(0), hyper, jnp.zeros((3, 2)), exact_latent=hyper.sample_prior(jax.random.key(0)))
    chyper = ClusteringHyper(n=3, dim=2, k=2)
    with pytest.raises(BDMCError, match=r"ClusteringHyper.*sweep_log_transition"):
        cms(jax.random.key(0), chyper, jnp.zeros((3, 2)), exact_latent=chyper.sample_prior(jax.random.key(0)))
    no_assign = GibbsSweep((Conditional("mu", model.gibbs_update, model._log_prob_mu),))
    with pytest.raises(BDMCError, match=r"assign.*'mu'"):
        cms(jax.random.key(0), model, data, exact_latent=x, kernel=no_assign)
    with pytest.raises(BDMCError, match="num_steps"):
        cms(jax.random.key(0), model, data, exact_latent=x, num_steps=0)
