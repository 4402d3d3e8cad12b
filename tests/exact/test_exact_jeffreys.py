"""Exact J and B of AIS on finite state spaces (BREAD paper, Appendix B), and the paper's grid toys."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from bdmc import ScheduleError
from bdmc.exact.grid_toys import (
    barrier,
    easy_random,
    hard_random,
    linear_betas,
    mh_transition_matrices,
    path_log_densities,
    simulate_bread,
    toy_jeffreys,
)
from bdmc.exact.jeffreys import exact_jeffreys, geometric_log_densities, jeffreys_divergence

S_TINY = 3
N_SE = 4.0  # statistical tolerance in standard errors


# ----------------------------------------------------------------------------------------------------------
# tiny instances: forward passes against brute-force enumeration of every trajectory
# ----------------------------------------------------------------------------------------------------------


def tiny_problem(rng, *, num_distributions=4, power=1.0):
    """Random target, non-uniform prior and MH kernels on 3 states with a random symmetric proposal.

    ``power != 1`` gives a wrong acceptance ratio ``min(1, (f(j) / f(i))^power)``: kernels that leave
    ``f^power`` invariant, not ``f``.
    """
    log_target = 2.0 * rng.standard_normal(S_TINY)
    prior = rng.dirichlet(np.ones(S_TINY))
    betas = np.sort(np.concatenate([[0.0, 1.0], rng.uniform(size=num_distributions - 2)]))
    proposal = rng.uniform(size=(S_TINY, S_TINY))
    proposal = proposal + proposal.T
    np.fill_diagonal(proposal, 0.0)
    proposal /= proposal.sum(axis=1).max() * 1.1  # sub-stochastic rows: every state keeps some holding mass
    logf = geometric_log_densities(log_target, prior, betas)[1:]
    ratio = np.exp(power * (logf[:, None, :] - logf[:, :, None]))
    kernels = proposal[None] * np.minimum(1.0, ratio)
    idx = np.arange(S_TINY)
    kernels[:, idx, idx] = 1.0 - kernels.sum(axis=2)
    return log_target, prior, betas, kernels


def brute_force(log_target, prior, betas, kernels):
    """J, B, E_fwd[log w], E_rev[log w] and q by summing over all S^T trajectories."""
    s, n = prior.size, betas.size - 1
    loglik = log_target - np.log(prior)
    p = np.exp(log_target - logsumexp(log_target))
    paths = np.array(list(itertools.product(range(s), repeat=n + 1)))
    fwd = prior[paths[:, 0]].copy()
    rev = p[paths[:, -1]].copy()
    log_w = np.zeros(len(paths))
    for k in range(1, n + 1):
        a, b = paths[:, k - 1], paths[:, k]
        fwd *= kernels[k - 1][a, b]
        rev *= kernels[k - 1][b, a]
        log_w += (betas[k] - betas[k - 1]) * loglik[a]
    q = np.bincount(paths[:, -1], weights=fwd, minlength=s)
    used_f, used_r = fwd > 0, rev > 0
    with np.errstate(divide="ignore"):
        kl_fr = np.sum(fwd[used_f] * np.log(fwd[used_f] / rev[used_f]))
        kl_rf = np.sum(rev[used_r] * np.log(rev[used_r] / fwd[used_r]))
    return {
        "J": jeffreys_divergence(q, p),
        "B": kl_fr + kl_rf,
        "log_w_forward": np.sum(fwd[used_f] * log_w[used_f]),
        "log_w_reverse": np.sum(rev[used_r] * log_w[used_r]),
        "q": q,
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forward_pass_equals_enumeration(seed):
    rng = np.random.default_rng(seed)
    problem = tiny_problem(rng)
    exact = exact_jeffreys(*problem)
    brute = brute_force(*problem)
    for name in ("J", "B", "log_w_forward", "log_w_reverse"):
        assert getattr(exact, name) == pytest.approx(brute[name], rel=1e-10, abs=1e-12), name
    np.testing.assert_allclose(exact.q, brute["q"], rtol=1e-12, atol=1e-15)
    assert exact.log_z == pytest.approx(logsumexp(problem[0]), rel=1e-13)


def test_zero_mass_target_state_matches_enumeration():
    """A state with f = 0 (log f = -inf): forward chains can start there, so E_fwd[log w] = -inf and B = inf."""
    rng = np.random.default_rng(8)
    log_target, prior, _, _ = tiny_problem(rng)
    log_target[1] = -np.inf
    betas = np.array([0.0, 0.2, 0.6, 1.0])
    logf = geometric_log_densities(log_target, prior, betas)[1:]
    kernels = np.stack([mh_like(lf) for lf in logf])
    exact = exact_jeffreys(log_target, prior, betas, kernels)
    brute = brute_force(log_target, prior, betas, kernels)
    assert exact.log_w_forward == brute["log_w_forward"] == -np.inf
    assert exact.log_w_reverse == pytest.approx(brute["log_w_reverse"], rel=1e-10)
    assert exact.B == brute["B"] == np.inf
    assert pytest.approx(brute["J"], rel=1e-10) == exact.J  # finite: chains always leave the zero-mass state
    assert exact.log_w_reverse >= exact.log_z


def mh_like(logf):
    """MH on 3 states with uniform proposal over the other two states; leaves exp(logf) invariant."""
    with np.errstate(invalid="ignore"):
        ratio = np.exp(logf[None, :] - logf[:, None])
    kernel = 0.5 * np.minimum(1.0, np.nan_to_num(ratio, nan=1.0))
    np.fill_diagonal(kernel, 0.0)
    np.fill_diagonal(kernel, 1.0 - kernel.sum(axis=1))
    return kernel


def test_chunking_does_not_change_the_answer(monkeypatch):
    rng = np.random.default_rng(9)
    problem = tiny_problem(rng, num_distributions=11)
    whole = exact_jeffreys(*problem)
    monkeypatch.setattr("bdmc.exact.jeffreys.CHUNK", 3)
    chunked = exact_jeffreys(*problem[:3], lambda b: problem[3][np.searchsorted(problem[2], b) - 1])
    for name in ("J", "B", "log_w_forward", "log_w_reverse", "kl_fwd_rev", "kl_rev_fwd"):
        assert getattr(chunked, name) == pytest.approx(getattr(whole, name), rel=1e-12), name


@pytest.mark.parametrize("seed", [3, 4])
def test_identities_for_reversible_kernels(seed):
    rng = np.random.default_rng(seed)
    r = exact_jeffreys(*tiny_problem(rng, num_distributions=6))
    # B is both the trajectory Jeffreys divergence and the expected gap (Eq. 21) ...
    assert pytest.approx(r.gap, rel=1e-10) == r.B
    # ... and the KL halves are the biases of the two bounds (Eqs. 7 and 10).
    assert r.log_z - r.log_w_forward == pytest.approx(r.kl_fwd_rev, rel=1e-10)
    assert r.log_w_reverse - r.log_z == pytest.approx(r.kl_rev_fwd, rel=1e-10)
    assert r.kl_q_p <= r.kl_fwd_rev and r.kl_p_q <= r.kl_rev_fwd
    assert 0 < r.J < r.B


def test_broken_kernel_is_caught_by_the_identity():
    """Negative control: a wrong acceptance ratio breaks B = E_rev[log w] - E_fwd[log w]."""
    rng = np.random.default_rng(5)
    problem = tiny_problem(rng, power=2.0)
    with pytest.raises(ValueError, match="does not leave"):
        exact_jeffreys(*problem)
    broken = exact_jeffreys(*problem, check_invariance=False)
    brute = brute_force(*problem)
    # the forward pass is still exact for these kernels ...
    assert pytest.approx(brute["B"], rel=1e-10) == broken.B
    assert broken.log_w_forward == pytest.approx(brute["log_w_forward"], rel=1e-10)
    # ... but the identity that holds for every valid kernel fails
    assert abs(broken.B - broken.gap) > 1e-3


def test_broken_kernel_on_barrier_flips_the_sandwich():
    """Negative control: a sampler that accepts every move leaves the reverse 'upper bound' below log Z."""
    log_target = barrier()
    betas = linear_betas(100)
    s = log_target.size

    def always_accept(b):  # the MH kernel at beta = 0 (uniform random walk), whatever beta is asked for
        return mh_transition_matrices(log_target, np.zeros_like(b))

    broken = exact_jeffreys(log_target, np.full(s, 1 / s), betas, always_accept, check_invariance=False)
    good = toy_jeffreys(log_target, 100)
    assert good.log_w_forward <= good.log_z <= good.log_w_reverse
    assert broken.log_w_reverse < broken.log_z - 1.0
    assert broken.gap < broken.J  # BREAD would understate the error


# ----------------------------------------------------------------------------------------------------------
# input validation
# ----------------------------------------------------------------------------------------------------------


def test_validation_errors():
    rng = np.random.default_rng(6)
    log_target, prior, betas, kernels = tiny_problem(rng)
    with pytest.raises(ValueError, match="shape"):
        exact_jeffreys(log_target, prior, betas, kernels[1:])
    with pytest.raises(ValueError, match="prior"):
        exact_jeffreys(log_target, 2 * prior, betas, kernels)
    with pytest.raises(ValueError, match="prior has shape"):
        exact_jeffreys(log_target, prior[:2], betas, kernels)
    with pytest.raises(ScheduleError, match="non-decreasing"):
        exact_jeffreys(log_target, prior, betas[[0, 2, 1, 3]], kernels)
    with pytest.raises(ScheduleError, match="start at 0"):
        exact_jeffreys(log_target, prior, 0.5 + 0.5 * betas, kernels)
    bad = kernels.copy()
    bad[1, 0, 0] += 0.1
    with pytest.raises(ValueError, match=r"transitions\[1\] is not row-stochastic"):
        exact_jeffreys(log_target, prior, betas, bad)
    with pytest.raises(ValueError, match="finite or -inf"):
        exact_jeffreys(np.array([np.nan, 0.0, 0.0]), prior, betas, kernels)
    with pytest.raises(ValueError, match="returned shape"):
        exact_jeffreys(log_target, prior, betas, lambda b: kernels[:1])


# ----------------------------------------------------------------------------------------------------------
# grid toys
# ----------------------------------------------------------------------------------------------------------


def test_grid_kernel_detailed_balance():
    log_target = hard_random(np.random.default_rng(7))
    betas = np.array([0.0, 0.3, 1.0])
    kernels = mh_transition_matrices(log_target, betas)
    f = np.exp(path_log_densities(log_target, betas) - path_log_densities(log_target, betas).max(axis=1)[:, None])
    flux = f[:, :, None] * kernels
    np.testing.assert_allclose(flux, np.swapaxes(flux, 1, 2), atol=1e-15)
    # at beta = 0 every on-grid proposal is accepted: a corner stays put half the time, the centre never
    assert kernels[0, 0, 0] == pytest.approx(0.5)
    np.testing.assert_allclose(kernels[0, 24, [17, 23, 25, 31]], 0.25)
    assert kernels[0, 24].sum() == pytest.approx(1.0) and kernels[0, 24, 24] == 0.0


def test_barrier_matches_paper():
    """BARRIER (Eq. 24): dominant mode ~87%; J = 1.65 at T = 100; J = 1.085, B = 1.184 at T = 1000."""
    log_target = barrier()
    p = np.exp(log_target - logsumexp(log_target)).reshape(7, 7)
    assert round(p[:3, 4:].sum(), 2) == 0.87
    assert round(toy_jeffreys(log_target, 100).J, 2) == 1.65
    r = toy_jeffreys(log_target, 1000)
    assert round(r.J, 3) == 1.085 and round(r.B, 3) == 1.184


def _toys():
    return {
        "easy": easy_random(np.random.default_rng(11)),
        "hard": hard_random(np.random.default_rng(12)),
        "barrier": barrier(),
    }


@pytest.mark.parametrize("name", ["easy", "hard", "barrier"])
def test_j_below_b_and_sandwich_across_t(name):
    log_target = _toys()[name]
    for t in (2, 10, 30, 100, 300, 1000):
        r = toy_jeffreys(log_target, t)
        assert r.log_w_forward <= r.log_z <= r.log_w_reverse, t
        assert 0 <= r.J <= r.B, t
        assert pytest.approx(r.gap, rel=1e-9, abs=1e-12) == r.B, t


def _assert_monte_carlo_matches(name, num_distributions, num_pairs, seed):
    log_target = _toys()[name]
    exact = toy_jeffreys(log_target, num_distributions)
    sim = simulate_bread(np.random.default_rng(seed), log_target, num_distributions, num_pairs=num_pairs)
    root_n = np.sqrt(num_pairs)
    for samples, value in (
        (sim.b_hat, exact.B),
        (sim.log_w_forward, exact.log_w_forward),
        (sim.log_w_reverse, exact.log_w_reverse),
    ):
        se = samples.std(ddof=1) / root_n
        assert abs(samples.mean() - value) < N_SE * se, (samples.mean(), value, se)
    # the forward chains' output states are draws from q: check the mass q puts on its most likely state
    top = int(np.argmax(exact.q))
    hit = (sim.final_states == top).mean()
    assert abs(hit - exact.q[top]) < N_SE * np.sqrt(exact.q[top] * (1 - exact.q[top]) / num_pairs)


@pytest.mark.parametrize("name", ["easy", "hard", "barrier"])
def test_monte_carlo_b_hat_matches_exact_b_t100(name):
    _assert_monte_carlo_matches(name, 100, 20_000, seed=100)


@pytest.mark.parametrize("name", ["easy", "hard", "barrier"])
def test_monte_carlo_b_hat_matches_exact_b_t1000(name):
    _assert_monte_carlo_matches(name, 1000, 20_000, seed=1000)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["easy", "hard", "barrier"])
def test_j_below_b_up_to_t100000(name):
    log_target = _toys()[name]
    for t in (3000, 10_000, 100_000):
        r = toy_jeffreys(log_target, t)
        assert r.log_w_forward <= r.log_z <= r.log_w_reverse, t
        assert 0 <= r.J <= r.B, t


def test_figures_draw_the_given_arrays():
    import pandas as pd

    from bdmc.plotting.bread_toys import plot_bread_divergences, plot_grid_distributions

    table = pd.DataFrame(
        {"toy": ["a", "a", "b", "b"], "num_distributions": [10, 100, 10, 100], "J": [1.0, 0.5, 2.0, 1.5],
         "B": [1.2, 0.7, 2.5, 1.6]}
    )
    ax = plot_bread_divergences(table).axes[0]
    assert ax.get_xscale() == "log"
    styles = {line.get_label(): (line.get_linestyle(), list(line.get_ydata())) for line in ax.get_lines()}
    assert styles["a: J"] == ("-", [1.0, 0.5]) and styles["b: B"] == ("--", [2.5, 1.6])
    q = np.arange(49.0) / np.arange(49.0).sum()
    fig = plot_grid_distributions({"toy": [("q", q), ("p", q[::-1])]})
    image = fig.axes[0].get_images()[0].get_array()
    np.testing.assert_array_equal(image, q.reshape(7, 7))
    with pytest.raises(ValueError, match="columns"):
        plot_bread_divergences(table.drop(columns="B"))
