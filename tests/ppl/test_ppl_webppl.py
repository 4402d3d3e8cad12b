"""The WebPPL adapter against closed forms: densities, Jacobians, gradients, prior draws and a sandwich.

Needs Node.js (skipped with the reason otherwise); WebPPL itself is installed into bdmc's cache on first use
(``bdmc.ppl.webppl.install()``, which CI runs before the tests). Every evaluation runs the WebPPL program in a
persistent node process, so the tests keep batches large and step counts small.
"""

import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

import bdmc
from bdmc.contracts.model import log_density
from bdmc.kernels import HMC

if shutil.which("node") is None:
    pytest.skip("the WebPPL adapter needs Node.js (`node` is not on the PATH)", allow_module_level=True)

from bdmc.ppl import (
    from_webppl,  # noqa: E402
    webppl_host,  # noqa: E402
)

M0, S0, S = 0.3, 1.5, 0.8  # prior mean and sd of mu, known noise sd
Y = np.array([0.1, 1.2, -0.4, 0.9, 0.5, 1.6, 0.2, -0.1])
KERNEL = dict(step_size=0.15, num_integration_steps=5)

GAUSSIAN_MEAN = f"""
var model = function(data) {{
  var mu = sample(Gaussian({{mu: {M0}, sigma: {S0}}}));
  mapData({{data: data.y}}, function(y) {{ observe(Gaussian({{mu: mu, sigma: {S}}}), y); }});
}};
model
"""

# The same likelihood as one vectorized observe: one term, the sum of the per-observation ones.
GAUSSIAN_MEAN_VECTOR = f"""
var model = function(data) {{
  var mu = sample(Gaussian({{mu: {M0}, sigma: {S0}}}));
  var n = data.y.length;
  observe(DiagCovGaussian({{mu: Vector(repeat(n, function() {{ return mu; }})),
                            sigma: Vector(repeat(n, function() {{ return {S}; }}))}}), Vector(data.y));
}};
model
"""

# Latents on every kind of support: Gamma (0, inf) -> log, Beta (0, 1) and Uniform (a, b) -> logit, Gaussian.
SUPPORTS = """
var model = function(data) {
  var g = sample(Gamma({shape: 2.5, scale: 0.7}));
  var b = sample(Beta({a: 2, b: 3}));
  var u = sample(Uniform({a: 1, b: 3}));
  var z = sample(Gaussian({mu: -1, sigma: 2}));
  mapData({data: data.y}, function(y) { observe(Gaussian({mu: z + u * b, sigma: g}), y); });
};
model
"""


@pytest.fixture(scope="module")
def installed():
    if not (webppl_host._package_dir(webppl_host.webppl_dir()) / "package.json").exists() and not shutil.which("npm"):
        pytest.skip(f"WebPPL is not installed and npm is missing: run {webppl_host.INSTALL_COMMAND}")
    return webppl_host.install(quiet=True)


@pytest.fixture(scope="module")
def gaussian(installed):
    return from_webppl(GAUSSIAN_MEAN, {"y": Y}, observed="y")


@pytest.fixture(scope="module")
def supports(installed):
    return from_webppl(SUPPORTS, {"y": Y[:3]}, observed="y")


def exact_log_evidence(y):
    n = len(y)
    return stats.multivariate_normal(np.full(n, M0), S**2 * np.eye(n) + S0**2 * np.ones((n, n))).logpdf(y)


def test_densities_and_gradients_equal_the_closed_form(gaussian):
    mus = jnp.linspace(-2.0, 2.0, 7)
    lam = 0.37
    prior = jax.vmap(gaussian.log_prior)(mus[:, None])
    terms = jax.vmap(lambda u: gaussian.log_likelihood(u, {"y": Y}))(mus[:, None])
    np.testing.assert_allclose(prior, stats.norm(M0, S0).logpdf(mus), rtol=1e-12)
    np.testing.assert_allclose(terms, stats.norm(np.asarray(mus)[:, None], S).logpdf(Y), rtol=1e-12)
    # d/dmu [log prior + lam * sum of terms], through WebPPL's autodiff, batched over the points
    grad = jax.jit(jax.vmap(jax.grad(lambda u: log_density(gaussian, u, {"y": Y}, lam))))(mus[:, None])
    want = -(mus - M0) / S0**2 + lam * jnp.sum(Y[None] - mus[:, None], axis=1) / S**2
    np.testing.assert_allclose(grad[:, 0], want, rtol=1e-10)
    # one weight per observation (the data path): the gradient weights each term
    weights = jnp.linspace(0.0, 1.0, len(Y))
    grad = jax.grad(lambda u: log_density(gaussian, u, {"y": Y}, weights))(jnp.array([0.4]))
    np.testing.assert_allclose(grad[0], -(0.4 - M0) / S0**2 + np.sum(weights * (Y - 0.4)) / S**2, rtol=1e-10)


def _closed_form_terms_and_grads(mus, ys):
    terms = stats.norm(np.asarray(mus)[:, None], S).logpdf(np.asarray(ys))
    return terms, jnp.sum(ys - mus[:, None], axis=1) / S**2


def _terms_and_grads(model, mus, ys, sent):
    """The terms, then the gradient of their sum, at each (mu, y) pair, recording the requests of each."""
    sent.clear()
    terms = jax.jit(jax.vmap(lambda u, y: model.log_likelihood(u, {"y": y})))(mus[:, None], ys)
    first = list(sent)
    sent.clear()
    grads = jax.jit(jax.vmap(jax.grad(lambda u, y: jnp.sum(model.log_likelihood(u, {"y": y})))))(mus[:, None], ys)
    return terms, grads[:, 0], (first, list(sent))


@pytest.fixture
def requests(gaussian, monkeypatch):
    """The ops of the requests the host sends the driver."""
    sent, send = [], gaussian._process._request
    monkeypatch.setattr(gaussian._process, "_request", lambda request: sent.append(request["op"]) or send(request))
    return sent


def test_chains_each_scoring_their_own_data_are_one_request(gaussian, requests):
    """Chains that each score their own data (SBC, Geweke): the batch's data sets travel once, in one request, and
    each evaluation after that is one request naming them, whatever the number of data sets; a gradient comes with
    the values from one run (its pull-back sends nothing)."""
    mus = jnp.linspace(-1.0, 1.0, 20)
    ys = jnp.asarray(Y)[None] + 100.0 * jax.random.uniform(jax.random.key(3), (20, 1))  # 20 distinct data sets
    terms, grads, sent = _terms_and_grads(gaussian, mus, ys, requests)
    want_terms, want_grads = _closed_form_terms_and_grads(mus, ys)
    np.testing.assert_allclose(terms, want_terms, rtol=1e-12)
    np.testing.assert_allclose(grads, want_grads, rtol=1e-10)
    assert sent == (["data", "eval"], ["eval"])


def test_gradients_of_shared_and_per_case_weights_in_one_batch(gaussian, requests):
    """A batch whose rows weight the terms alike (tempering: no program run in the pull-back) and differently (a
    data path: one run of the weighted sum, for those rows only): every row's gradient is the closed form's."""
    mus = jnp.linspace(-1.5, 1.5, 6)
    weights = jnp.stack([jnp.full(len(Y), 0.3), jnp.linspace(0.0, 1.0, len(Y)), jnp.zeros(len(Y)),
                         jnp.ones(len(Y)), jnp.linspace(1.0, 0.0, len(Y)), jnp.full(len(Y), 0.7)])
    requests.clear()
    grads = jax.jit(jax.vmap(jax.grad(lambda u, w: log_density(gaussian, u, {"y": Y}, w))))(mus[:, None], weights)
    want = -(mus - M0) / S0**2 + jnp.sum(weights * (Y[None] - mus[:, None]), axis=1) / S**2
    np.testing.assert_allclose(grads[:, 0], want, rtol=1e-10)
    assert requests.count("eval") == 2  # the density's run, and the per-case rows' pull-back


def test_a_density_and_its_gradient_are_one_run_of_the_program(gaussian, requests):
    """The prior and the terms come from one run (JointTerms), and a gradient with them: a step of HMC or NUTS on
    log p(x) + lam log p(y | x) is one request to node, whose values and gradient are the closed form's."""
    mus = jnp.linspace(-1.5, 1.5, 5)
    prior, terms = jax.vmap(lambda u: gaussian.prior_and_terms(u, {"y": Y}))(mus[:, None])
    np.testing.assert_allclose(prior, jax.vmap(gaussian.log_prior)(mus[:, None]), rtol=1e-12)
    np.testing.assert_allclose(terms, jax.vmap(lambda u: gaussian.log_likelihood(u, {"y": Y}))(mus[:, None]),
                               rtol=1e-12)
    requests.clear()
    value, grad = jax.jit(jax.vmap(jax.value_and_grad(lambda u: log_density(gaussian, u, {"y": Y}, 0.4))))(mus[:, None])
    assert requests == ["eval"]
    np.testing.assert_allclose(value, stats.norm(M0, S0).logpdf(mus)
                               + 0.4 * stats.norm(np.asarray(mus)[:, None], S).logpdf(Y).sum(1), rtol=1e-12)
    np.testing.assert_allclose(grad[:, 0], -(mus - M0) / S0**2 + 0.4 * jnp.sum(Y[None] - mus[:, None], 1) / S**2,
                               rtol=1e-10)
    requests.clear()
    state = HMC(gaussian, **KERNEL).init_state(jnp.array([0.2]), {"y": Y})
    assert requests == ["eval"]
    np.testing.assert_allclose(state.grad_prior, [-(0.2 - M0) / S0**2], rtol=1e-10)
    np.testing.assert_allclose(state.grad_likelihood, [np.sum(Y - 0.2) / S**2], rtol=1e-10)


def test_a_latent_off_to_infinity_has_zero_density_and_no_gradient(gaussian):
    """An HMC trajectory that overflowed reaches non-finite latents: their density is zero (the kernel rejects them),
    the other chains of the batch are evaluated as usual, and nothing reaches node that JSON cannot carry."""
    mus = jnp.array([[0.3], [jnp.inf], [-jnp.inf], [jnp.nan], [-0.4]])
    value, grad = jax.jit(jax.vmap(jax.value_and_grad(lambda u: log_density(gaussian, u, {"y": Y}, 1.0))))(mus)
    value, grad = np.asarray(value), np.asarray(grad)
    assert np.all(value[1:4] == -np.inf) and np.all(grad[1:4] == 0.0)
    fine = np.asarray(mus)[[0, 4], 0]
    np.testing.assert_allclose(value[[0, 4]], stats.norm(M0, S0).logpdf(fine)
                               + stats.norm(fine[:, None], S).logpdf(Y).sum(1), rtol=1e-12)
    np.testing.assert_allclose(grad[[0, 4], 0], -(fine - M0) / S0**2 + np.sum(Y[None] - fine[:, None], 1) / S**2,
                               rtol=1e-10)


def test_data_sets_beyond_what_the_driver_keeps_are_sent_again(gaussian, requests, monkeypatch):
    """With room for five data sets, a batch of 20 still keeps all 20 while it is scored; a second batch drops the
    first, which travels again when it is scored again, and every value stays right."""
    monkeypatch.setattr(webppl_host, "MAX_KEPT_VALUES", 5 * len(Y))
    mus = jnp.linspace(-1.0, 1.0, 20)
    first = jnp.asarray(Y)[None] + 1000.0 + jnp.arange(20.0)[:, None]
    second = first + 500.0
    for ys in (first, second, first):
        terms, grads, sent = _terms_and_grads(gaussian, mus, ys, requests)
        want_terms, want_grads = _closed_form_terms_and_grads(mus, ys)
        np.testing.assert_allclose(terms, want_terms, rtol=1e-12)
        np.testing.assert_allclose(grads, want_grads, rtol=1e-10)
        assert sent == (["data", "eval"], ["eval"])
    assert sum(gaussian._process._kept.values()) <= 25 + 20 * len(Y)


INVALID_FAR_OUT = """
var model = function(data) {
  var s = sample(Gamma({shape: 2, scale: 0.5}));
  var t = sample(Gaussian({mu: 0, sigma: 1 / s}));
  var v = sample(Gaussian({mu: 0, sigma: 1}));
  mapData({data: data.y}, function(y) { observe(Gaussian({mu: t, sigma: Math.exp(v)}), y); });
};
model
"""


def test_a_distribution_refusing_its_parameters_is_zero_density_not_an_error(installed):
    """At extreme points a scale computed from the latents underflows to 0 or overflows; WebPPL then refuses the
    distribution. bdmc reads that as zero density there (as Stan rejects such a point): -inf, never an error or
    NaN, with a zero gradient; a refusal in the likelihood leaves the prior's value."""
    model = from_webppl(INVALID_FAR_OUT, {"y": np.zeros(3)}, observed="y")
    y = {"y": jnp.asarray([0.5, -0.2, 1.0])}
    # s = exp(u[0]), t, v: valid; s = inf (the prior's scale 1 / s is 0); v = 800 (the likelihood's scale is inf)
    u = jnp.asarray([[0.3, 0.1, 0.2], [800.0, 0.1, 0.2], [0.3, 0.1, 800.0]])
    prior = jax.vmap(model.log_prior)(u)
    terms = jax.vmap(lambda x: model.log_likelihood(x, y))(u)
    s = np.exp(0.3)
    valid_prior = stats.gamma(2, scale=0.5).logpdf(s) + 0.3 + stats.norm(0, 1 / s).logpdf(0.1)
    np.testing.assert_allclose(prior[0], valid_prior + stats.norm().logpdf(0.2), rtol=1e-10)
    np.testing.assert_allclose(terms[0], stats.norm(0.1, np.exp(0.2)).logpdf(np.asarray(y["y"])), rtol=1e-10)
    assert prior[1] == -np.inf
    np.testing.assert_allclose(prior[2], valid_prior + stats.norm().logpdf(800.0), rtol=1e-10)
    assert np.sum(terms[2]) == -np.inf
    for lam in (0.0, 0.5, 1.0):
        values = jax.vmap(lambda x, lam=lam: log_density(model, x, y, lam))(u)
        assert values[1] == -np.inf and not np.any(np.isnan(values)), (lam, values)
        assert (values[2] == -np.inf) == (lam > 0), (lam, values)  # at lambda = 0 the prior alone
    grads = jax.vmap(jax.grad(lambda x: log_density(model, x, y, 0.5)))(u)
    np.testing.assert_array_equal(grads[1], 0.0)
    assert np.all(np.isfinite(grads[0]))


def test_per_observation_terms_sum_to_the_vectorized_total(gaussian, installed):
    vector = from_webppl(GAUSSIAN_MEAN_VECTOR, {"y": Y}, observed="y")
    assert (gaussian.num_terms, vector.num_terms) == (len(Y), 1)
    us = jnp.linspace(-1.5, 2.5, 5)[:, None]
    per_obs = jax.vmap(lambda u: gaussian.log_likelihood(u, {"y": Y}))(us)
    total = jax.vmap(lambda u: vector.log_likelihood(u, {"y": Y}))(us)
    np.testing.assert_allclose(per_obs.sum(axis=1), total[:, 0], rtol=1e-12)
    other = {"y": Y[::-1] + 1.0}  # other data: the driver is sent the new values and scores them
    np.testing.assert_allclose(gaussian.log_likelihood(us[0], other),
                               stats.norm(float(us[0, 0]), S).logpdf(other["y"]), rtol=1e-12)


def test_jacobians_make_the_prior_a_density_on_the_unconstrained_space(supports):
    """Each site's log prior (with its log-Jacobian) integrates to one over the real line, and equals the
    change-of-variables formula; a missing Jacobian would integrate to E[1/x'(u)] instead."""
    assert [s["dist"] for s in supports.sites] == ["Gamma", "Beta", "Uniform", "Gaussian"]
    grid = np.linspace(-30.0, 30.0, 6001)
    base = np.array([np.log(1.2), 0.3, -0.2, 0.5])  # the other coordinates stay fixed
    refs = [stats.gamma(2.5, scale=0.7), stats.beta(2, 3), stats.uniform(1, 2), stats.norm(-1, 2)]
    at_base = [1.2, 1 / (1 + np.exp(-0.3)), 1 + 2 / (1 + np.exp(0.2)), 0.5]
    prior_at_base = [r.logpdf(x) for r, x in zip(refs, at_base, strict=True)]
    for i, ref in enumerate(refs):
        us = np.tile(base, (grid.size, 1))
        us[:, i] = grid
        lp = np.asarray(jax.vmap(supports.log_prior)(jnp.asarray(us)))
        lp = lp - (sum(prior_at_base) - prior_at_base[i] + log_jacobian(base, skip=i))
        assert abs(integrate.trapezoid(np.exp(lp), grid) - 1.0) < 1e-6, supports.sites[i]
        x = [np.exp(grid), 1 / (1 + np.exp(-grid)), 1 + 2 / (1 + np.exp(-grid)), grid][i]
        sel = np.abs(grid) < 8
        np.testing.assert_allclose(lp[sel], ref.logpdf(x[sel]) + log_jacobian_1d(i, grid[sel]), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(supports.constrain(jnp.asarray(base)),
                               [1.2, 1 / (1 + np.exp(-0.3)), 1 + 2 / (1 + np.exp(0.2)), 0.5], rtol=1e-12)
    np.testing.assert_allclose(supports.unconstrain(supports.constrain(jnp.asarray(base))), base, rtol=1e-10)


def log_jacobian_1d(i, u):
    return [u, -np.logaddexp(0, -u) - np.logaddexp(0, u), np.log(2) - np.logaddexp(0, -u) - np.logaddexp(0, u),
            np.zeros_like(u)][i]


def log_jacobian(base, *, skip):
    return sum(float(log_jacobian_1d(j, np.asarray(base[j]))) for j in range(4) if j != skip)


def test_prior_draws_from_webppl_have_the_right_moments(supports):
    draws = jax.vmap(supports.sample_prior)(jax.random.split(jax.random.key(3), 4000))
    g, b, u, z = np.exp(draws[:, 0]), 1 / (1 + np.exp(-draws[:, 1])), 1 + 2 / (1 + np.exp(-draws[:, 2])), draws[:, 3]
    for x, ref in zip((g, b, u, z), (stats.gamma(2.5, scale=0.7), stats.beta(2, 3), stats.uniform(1, 2),
                                       stats.norm(-1, 2)), strict=False):
        se = ref.std() / np.sqrt(len(x))
        assert abs(x.mean() - ref.mean()) < 4 * se
        assert stats.kstest(x, ref.cdf).pvalue > 1e-3
    # the same key gives the same draw; data are simulated by WebPPL given the latent
    np.testing.assert_array_equal(supports.sample_prior(jax.random.key(5)), supports.sample_prior(jax.random.key(5)))


def test_simulated_data_come_from_the_observe_statements(gaussian):
    latent = jnp.array([0.7])
    ys = jax.vmap(lambda k: gaussian.sample_data(k, latent)["y"])(jax.random.split(jax.random.key(8), 500))
    assert ys.shape == (500, len(Y))
    se = S / np.sqrt(ys.size)
    assert abs(float(ys.mean()) - 0.7) < 4 * se
    assert stats.kstest(np.asarray(ys).ravel(), stats.norm(0.7, S).cdf).pvalue > 1e-3


def test_forward_and_reverse_ais_sandwich_the_closed_form(gaussian):
    data, latent = bdmc.simulate(jax.random.key(0), gaussian)
    exact = exact_log_evidence(np.asarray(data["y"]))
    res = bdmc.sandwich(jax.random.key(1), gaussian, data, latent, steps=[10, 100], num_runs=16,
                        kernel=HMC(gaussian, **KERNEL), progress=False)
    t = res.table.set_index(["num_steps", "direction"])
    for T in (10, 100):
        fwd, rev = t.loc[(T, "forward")], t.loc[(T, "reverse")]
        assert fwd.value < exact + 4 * fwd.stderr and rev.value > exact - 4 * rev.stderr
        assert not fwd.alarm
    gaps = res.table.groupby("num_steps").gap_single.first()
    assert gaps.loc[100] < gaps.loc[10] / 5  # measured: 6.27 -> 0.61 (0.21 at T = 1000, the slow test)
    for direction in ("forward", "reverse"):
        row = t.loc[(100, direction)]
        assert abs(row.value - exact) < 4 * row.stderr


@pytest.mark.slow
def test_annealing_matches_numpyro_step_for_step_and_converges(gaussian):
    """The same model in NumPyro, same kernel, keys and start: reverse AIS (which starts from the same exact
    latent) gives the same log-weights to rounding, so WebPPL's densities and gradients drive HMC exactly as
    NumPyro's do; forward AIS starts from WebPPL's own prior draws. At T = 1000 both sides close on the truth."""
    numpyro = pytest.importorskip("numpyro")
    dist = numpyro.distributions

    def program(y=None):
        mu = numpyro.sample("mu", dist.Normal(M0, S0).expand([1]).to_event(1))
        with numpyro.plate("cases", len(Y)):
            numpyro.sample("y", dist.Normal(mu[0], S), obs=y)

    reference = bdmc.ppl.from_numpyro(program, observed="y")
    data, latent = bdmc.simulate(jax.random.key(0), gaussian)
    exact = exact_log_evidence(np.asarray(data["y"]))
    runs = {}
    for name, model, start in (("webppl", gaussian, latent), ("numpyro", reference, {"mu": latent})):
        runs[name] = bdmc.reverse_ais(jax.random.key(1), model, data, exact_latent=start, num_steps=100,
                                      num_runs=16, kernel=HMC(model, **KERNEL), tune="off", progress=False)
    np.testing.assert_allclose(runs["webppl"].runs, runs["numpyro"].runs, rtol=1e-9)
    res = bdmc.sandwich(jax.random.key(1), gaussian, data, latent, steps=[1000], num_runs=16,
                        kernel=HMC(gaussian, **KERNEL), progress=False)
    t = res.table.set_index(["num_steps", "direction"])
    fwd, rev = t.loc[(1000, "forward")], t.loc[(1000, "reverse")]
    assert fwd.value < exact + 4 * fwd.stderr and rev.value > exact - 4 * rev.stderr
    assert fwd.gap_single < 0.3 and abs(fwd.value - exact) < 0.15 and abs(rev.value - exact) < 0.15


@pytest.mark.slow
def test_sandwich_converges_on_the_positive_latent_model(installed):
    """Unknown noise sd (Gamma prior, log-transformed) and mean: the bounds close on quadrature's log p(y)."""
    program = """
    var model = function(data) {
      var mu = sample(Gaussian({mu: 0, sigma: 1}));
      var s = sample(Gamma({shape: 3, scale: 0.5}));
      mapData({data: data.y}, function(y) { observe(Gaussian({mu: mu, sigma: s}), y); });
    };
    model
    """
    model = from_webppl(program, {"y": Y}, observed="y")
    data, latent = bdmc.simulate(jax.random.key(2), model)
    y = np.asarray(data["y"])

    def joint(s, mu):
        return np.exp(stats.norm(0, 1).logpdf(mu) + stats.gamma(3, scale=0.5).logpdf(s)
                      + stats.norm(mu, s).logpdf(y).sum())

    exact = np.log(integrate.dblquad(joint, -6, 6, 1e-3, 8, epsabs=1e-14)[0])
    res = bdmc.sandwich(jax.random.key(3), model, data, latent, steps=[10, 100, 1000], num_runs=16,
                        kernel=HMC(model, step_size=0.1, num_integration_steps=8), progress=False)
    print("\n" + res.table[["num_steps", "direction", "value", "stderr", "gap_single", "seconds"]].to_string())
    t = res.table.set_index(["num_steps", "direction"])
    for T in (10, 100, 1000):
        fwd, rev = t.loc[(T, "forward")], t.loc[(T, "reverse")]
        assert fwd.value < exact + 4 * fwd.stderr and rev.value > exact - 4 * rev.stderr
    gaps = res.table.groupby("num_steps").gap_single.first()
    assert gaps.is_monotonic_decreasing and gaps.loc[1000] < gaps.loc[10] / 10
    for direction in ("forward", "reverse"):
        assert abs(t.loc[(1000, direction)].value - exact) < 0.1


def test_a_program_whose_structure_changes_is_a_clear_error(installed):
    program = """
    var model = function(data) {
      var a = sample(Gaussian({mu: 0, sigma: 1}));
      var b = a > 0 ? sample(Gamma({shape: 1, scale: 1})) : sample(Gaussian({mu: 0, sigma: 1}));
      observe(Gaussian({mu: a + b, sigma: 1}), data.y[0]);
    };
    model
    """
    model = from_webppl(program, {"y": np.zeros(1)}, observed="y")
    first_positive = model.sites[1]["dist"] == "Gamma"
    with pytest.raises(Exception, match="structure changed: sample site #1 is"):
        jax.block_until_ready(model.log_prior(jnp.array([-3.0 if first_positive else 3.0, 0.1])))
    with pytest.raises(webppl_host.WebPPLStructureError, match="discrete"):
        from_webppl("var m = function(data) { var k = sample(Bernoulli({p: 0.5})); "
                    "observe(Gaussian({mu: k, sigma: 1}), data.y[0]); }; m", {"y": np.zeros(1)}, observed="y")
    with pytest.raises(webppl_host.WebPPLProgramError, match="last expression"):
        from_webppl("var m = function(data) { return 1; }; 3", {"y": np.zeros(1)}, observed="y")
    with pytest.raises(webppl_host.WebPPLProgramError, match="program"):
        from_webppl("var m = function(data) { return 1 +; }; m", {"y": np.zeros(1)}, observed="y")


def test_missing_node_npm_or_webppl_name_the_command(installed, tmp_path, monkeypatch):
    node, empty = shutil.which("node"), tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(webppl_host.WebPPLNotFoundError, match="`node` is not on the PATH.*install"):
        from_webppl(GAUSSIAN_MEAN, {"y": Y}, observed="y")
    (empty / "node").symlink_to(node)  # node alone, without npm
    monkeypatch.setenv("BDMC_CACHE_DIR", str(tmp_path / "cache"))  # nothing installed there
    with pytest.raises(webppl_host.WebPPLNotFoundError, match="npm, which is not on the PATH.*npm install webppl"):
        from_webppl(GAUSSIAN_MEAN, {"y": Y}, observed="y")
    with pytest.raises(webppl_host.WebPPLNotFoundError, match=r"not installed.*bdmc\.ppl\.webppl.*install\(\)"):
        from_webppl(GAUSSIAN_MEAN, {"y": Y}, observed="y", install=False)


def test_float32_and_float64(gaussian):
    from helpers import float32

    u64 = np.array([0.4])
    lp64, g64 = jax.value_and_grad(lambda u: log_density(gaussian, u, {"y": Y}, 0.5))(jnp.asarray(u64))
    with float32():
        u = jnp.asarray(u64, jnp.float32)
        lp, g = jax.jit(jax.value_and_grad(lambda u: log_density(gaussian, u, {"y": Y}, 0.5)))(u)
        assert lp.dtype == g.dtype == jnp.float32
        draw = gaussian.sample_prior(jax.random.key(0))
        data = gaussian.sample_data(jax.random.key(1), draw)
        assert draw.dtype == data["y"].dtype == jnp.float32
        np.testing.assert_allclose(lp, lp64, rtol=1e-6)
        np.testing.assert_allclose(g, g64, rtol=1e-5)
    assert lp64.dtype == jnp.float64 or not jax.config.jax_enable_x64
