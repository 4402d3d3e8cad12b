"""BDMC on models with exact answers: bounds hold, converge, and break when they should."""

import math

import jax
import numpy as np
import pytest
from helpers import BrokenMH, assert_same_but_rounding

import bdmc
from bdmc import schedules, simulate
from bdmc.kernels import HMC, RandomWalkMH
from bdmc.models import FiniteMixture, GaussianMean, LinearRegression

EXACT_MODELS = {
    "gaussian-mean": GaussianMean(n=20, dim=5),
    "linear-regression": LinearRegression(),
    "finite-mixture": FiniteMixture(n=6, k=3),
}


def _problem(model, seed=1):
    data, latent = simulate(jax.random.key(seed), model)
    return data, latent, float(model.exact_log_marginal(data))


# The linear regression with -m slow: test_data_path_sandwiches_exact brackets it and sees the gap shrink.
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "linear-regression" else n
                                  for n in EXACT_MODELS])
def test_sandwich_brackets_and_converges_to_exact(name, key):
    model = EXACT_MODELS[name]
    data, latent, exact = _problem(model)
    res = bdmc.sandwich(key, model, data, latent, steps=[5, 50, 2000], num_runs=64)
    t = res.table.set_index(["num_steps", "direction"])
    assert res.exact == pytest.approx(exact)
    # Short chains: forward single-run mean below the truth, reverse above, each by more than 1 stderr.
    fwd, rev = t.loc[(5, "forward")], t.loc[(5, "reverse")]
    assert fwd.mean_single < exact - fwd.stderr_single
    assert rev.mean_single > exact + rev.stderr_single
    # Gaps shrink with chain length, and at the longest length both sides agree with the truth.
    gaps = res.table.groupby("num_steps").gap_single.first()
    assert gaps.is_monotonic_decreasing
    assert gaps.loc[2000] < 0.1
    for direction in ("forward", "reverse"):
        assert abs(t.loc[(2000, direction)].value - exact) < 0.1


def test_data_path_sandwiches_exact(key):
    # AIS along the per-data-case path (SMC with one particle) is the same mathematics.
    model = EXACT_MODELS["linear-regression"]
    data, latent, exact = _problem(model)
    gaps = []
    for steps_per_case in (5, 100):
        path = schedules.data_path(model.n, steps_per_case=steps_per_case)
        f = bdmc.forward_ais(key, model, data, schedule=path, num_runs=64)
        r = bdmc.reverse_ais(key, model, data, exact_latent=latent, schedule=path, num_runs=64)
        assert f.mean_single < exact < r.mean_single
        assert f.settings["per_case_path"] and f.settings["num_steps"] == path.shape[0]
        gaps.append(r.mean_single - f.mean_single)
    assert gaps[1] < gaps[0] / 4 and gaps[1] < 0.5


@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_combined_estimate_is_unbiased_on_the_right_scale(direction, key):
    # log-mean-exp of forward runs estimates log Z (Z-hat unbiased); log-harmonic-mean of reverse runs too.
    model = GaussianMean(n=20, dim=5)
    data, latent, exact = _problem(model)
    kw = dict(num_steps=40, num_runs=4000)
    est = (bdmc.forward_ais(key, model, data, **kw) if direction == "forward"
           else bdmc.reverse_ais(key, model, data, exact_latent=latent, **kw))
    assert abs(est.value - exact) < 4 * est.stderr
    assert est.stderr < 0.05  # the check has teeth


def test_markov_tail_bounds_hold(key):
    model = FiniteMixture(n=6, k=3)
    data, latent, exact = _problem(model)
    f = bdmc.forward_ais(key, model, data, num_steps=5, num_runs=3000)
    r = bdmc.reverse_ais(key, model, data, exact_latent=latent, num_steps=5, num_runs=3000)
    for b in (1.0, 2.0, 3.0):
        assert np.mean(f.runs > exact + b) < math.exp(-b)
        assert np.mean(r.runs < exact - b) < math.exp(-b)
        assert f.certified(b) == f.value - b and r.certified(b) == r.value + b
    # Short chains are far from exact, so the tails are populated enough to be a real test.
    assert np.std(f.runs) > 1.0 and np.std(r.runs) > 1.0


def test_reverse_ais_from_a_prior_draw_is_not_an_upper_bound(key):
    # Negative control: starting reverse AIS anywhere but at the exact sample breaks the upper bound.
    model = GaussianMean(n=20, dim=5)
    data, latent, exact = _problem(model)
    wrong = model.sample_prior(jax.random.key(99))
    kernel = RandomWalkMH(model, scale=0.05)
    good = bdmc.reverse_ais(key, model, data, exact_latent=latent, num_steps=200, num_runs=64, kernel=kernel)
    bad = bdmc.reverse_ais(key, model, data, exact_latent=wrong, num_steps=200, num_runs=64, kernel=kernel)
    assert good.mean_single > exact
    assert bad.value < exact - 4 * bad.stderr - 1.0


# The linear regression with -m slow: the same broken kernel on the Gaussian mean stays.
@pytest.mark.parametrize("name", ["gaussian-mean", pytest.param("linear-regression", marks=pytest.mark.slow)])
def test_broken_kernel_violates_the_sandwich(name, key):
    # Negative control: MH with a wrong acceptance ratio pushes the forward "lower bound" above the truth.
    model = EXACT_MODELS[name]
    data, latent, exact = _problem(model)
    # Long enough chains that the broken kernel's excess (about 1 nat here) is many standard errors.
    common = dict(num_steps=3000, num_runs=128)
    good = bdmc.forward_ais(key, model, data, kernel=RandomWalkMH(model, scale=0.1), **common)
    bad = bdmc.forward_ais(key, model, data, kernel=BrokenMH(model, scale=0.1), **common)
    assert good.mean_single < exact
    assert bad.mean_single > exact + 4 * bad.stderr_single


def test_same_key_same_numbers_different_key_different(key):
    model = EXACT_MODELS["linear-regression"]
    data, latent, _ = _problem(model)
    a = bdmc.forward_ais(key, model, data, num_steps=30, num_runs=8)
    b = bdmc.forward_ais(key, model, data, num_steps=30, num_runs=8)
    c = bdmc.forward_ais(jax.random.key(7), model, data, num_steps=30, num_runs=8)
    np.testing.assert_array_equal(a.runs, b.runs)
    assert not np.any(a.runs == c.runs)
    assert a.seed == b.seed != c.seed


def test_chunking_does_not_change_the_numbers(key):
    model = EXACT_MODELS["finite-mixture"]
    data, _, _ = _problem(model)
    path = schedules.sigmoidal(50)
    init = jax.vmap(model.sample_prior)(jax.random.split(key, 4))
    kernel = model.default_kernel()
    a = bdmc.anneal(key, model, data, kernel, path, init, chunk_size=7, progress=False)
    b = bdmc.anneal(key, model, data, kernel, path, init, chunk_size=64, progress=False)
    # Chunks of 7 and of 64 steps are two compiled programs of the same step: equal but for the last bits.
    assert_same_but_rounding(a.log_weights, b.log_weights)
    assert a.info.acceptance.shape == (49,)


def test_hmc_forward_ais_reports_diagnostics_and_costs(key):
    model = EXACT_MODELS["linear-regression"]
    data, _, exact = _problem(model)
    kernel = HMC(model, step_size=0.05, num_integration_steps=10)
    f = bdmc.forward_ais(key, model, data, num_steps=300, num_runs=32, kernel=kernel, record_increments=True)
    info = f.details.info
    assert info.mean_increment.shape == info.acceptance.shape == info.ess.shape == (299,)
    assert np.all((info.acceptance > 0.5) & (info.acceptance <= 1))
    assert np.all((info.ess > 0) & (info.ess <= 32 + 1e-9))
    # Increments add up to the log-weights.
    np.testing.assert_allclose(f.details.increments.sum(0), f.runs, rtol=1e-12)
    # HMC caches the lambda-free parts of the density: one evaluation per chain to start, then 10 gradient
    # evaluations per transition and none for the weights (the rebuilt BlackJAX state costs 12).
    assert f.n_evals == 32 * (1 + 299 * 10)
    assert f.mean_single < exact


def test_annealing_compiles_once_per_kind_of_run_whatever_the_number_of_steps(key):
    import dataclasses

    traces = []

    @dataclasses.dataclass(frozen=True)
    class Counting(LinearRegression):
        tag: str = ""

        def log_likelihood(self, latent, data):
            traces.append(self.tag)  # runs only while JAX traces
            return super().log_likelihood(latent, data)

    def run(tag, T):
        model = Counting(tag=tag)
        data, _ = simulate(key, model)
        init = jax.vmap(model.sample_prior)(jax.random.split(key, 4))
        before = traces.count(tag)
        result = bdmc.anneal(key, model, data, HMC(model), schedules.linear(T), init, progress=False)
        return traces.count(tag) - before, result

    one, _ = run("one chunk", 10)  # a path of one chunk: one program (start, steps and finish)
    many, _ = run("many chunks", 3000)  # longer: the start, the chunk of steps and the finish
    assert one > 0 and many > 0
    # A second run of an equal model at another length of the same kind reuses the compiled code: no trace, no compile.
    for tag, steps in (("one chunk", 50), ("many chunks", 777)):
        again, result = run(tag, steps)
        assert again == 0 and result.compile_seconds == 0.0


def test_lean_path_gives_the_numbers_of_the_plain_path(key):
    # The engine carries HMC's cached state (weights read from cached terms); a wrapper that hides the
    # capability forces the plain path (state rebuilt, weights evaluated). Same algorithm, same keys.
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Plain:
        inner: object

        def __call__(self, k, latent, data, lam):
            return self.inner(k, latent, data, lam)

    model = EXACT_MODELS["linear-regression"]
    data, _, _ = _problem(model)
    kernel = HMC(model, step_size=0.05, num_integration_steps=10)
    init = jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(7), 8))
    path = schedules.sigmoidal(40)
    lean = bdmc.anneal(key, model, data, kernel, path, init, progress=False)
    plain = bdmc.anneal(key, model, data, Plain(kernel), path, init, progress=False)
    # The weights are sums of the same terms in two orders (read from the cached state, or evaluated): equal to
    # rounding, which in float32 is a last bit (an AMD EPYC gave 7e-8 relative on one chain of eight).
    eps = np.finfo(np.asarray(lean.info.acceptance).dtype).eps
    np.testing.assert_allclose(lean.log_weights, plain.log_weights, rtol=max(1e-10, 16 * eps))
    for a, b in zip(jax.tree.leaves(lean.latents), jax.tree.leaves(plain.latents), strict=False):
        np.testing.assert_allclose(a, b, rtol=max(1e-9, 16 * eps), atol=1e-12)
    # Acceptance is exp of an energy difference computed in two orders: a few units of the dtype's rounding.
    rounding = max(1e-9, 64 * eps)
    np.testing.assert_allclose(lean.info.acceptance, plain.info.acceptance, atol=rounding)
    assert lean.n_evals == 8 * (1 + 39 * 10) and plain.n_evals == 8 * 39 * (1 + 1)
