"""What each check can see: the run-level alarm catches the WebPPL sampler bug, and a second implementation
(``bdmc.checks.compare_models``) catches density bugs that leave every forward/reverse comparison honest."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import dtype_tol, simulate_float64
from jax.scipy.stats import multivariate_normal as mvn

import bdmc
from bdmc.checks import compare_models
from bdmc.checks.compare import compare_densities
from bdmc.kernels import Conditional, GibbsSweep, RandomWalkMH
from bdmc.models import CorrelatedGaussianMean, LinearRegression


@dataclasses.dataclass(frozen=True)
class Transposed(CorrelatedGaussianMean):
    """The WebPPL bug (BREAD Sec. 5.2.2): ``V^T`` where ``V`` belongs; the density is untouched."""

    def sample_prior(self, key):
        eps = jax.random.normal(key, (self.dim,))
        scaled = jnp.sqrt(jnp.asarray(self.eigenvalues)) * eps
        return {"x": self.prior_mean + jnp.asarray(self.eigenvectors).T @ scaled}


def test_transposed_eigenvector_sampler_fires_the_run_level_alarm():
    # Forward AIS starts from the buggy prior sampler, whose draws lie where the data (simulated by the same
    # sampler) are; a slowly mixing kernel keeps them there for a short chain, so forward AIS at T = 10 sits far
    # above reverse AIS at T = 1000. The correct sampler on the same seeds stays silent.
    fired = {}
    for name, model in (("buggy", Transposed(n=10, dim=4, rotation_angle=math.pi / 4)),
                        ("correct", CorrelatedGaussianMean(n=10, dim=4, rotation_angle=math.pi / 4))):
        data, latent = simulate_float64(jax.random.key(0), model)  # the same data set in float32 runs
        result = bdmc.sandwich(jax.random.key(100), model, data, latent, steps=[10, 1000], num_runs=16,
                               kernel=RandomWalkMH(model, scale=0.1), progress=False)
        fired[name] = result.verdict
    assert fired["buggy"].fired and fired["buggy"].crossing > 10, fired["buggy"].message()
    assert fired["buggy"].worst.lower == "forward AIS T=10"
    assert not fired["correct"].fired, fired["correct"].message()


# ----------------------------------------------------------------------- a second implementation of the model

@dataclasses.dataclass(frozen=True)
class FullCovariance:
    """The correlated Gaussian mean written a second way: full covariance matrices, Cholesky draws, JAX's MVN."""

    cov: tuple  # the prior covariance, as nested tuples (hashable)
    n: int
    prior_mean: float = 0.0
    noise_std: float = 1.0
    offset: float = 0.0  # a deliberate bug: added to every case's log-likelihood

    @property
    def S(self):
        return jnp.asarray(self.cov)

    @property
    def dim(self):
        return len(self.cov)

    def sample_prior(self, key):
        return {"x": self.prior_mean + jnp.linalg.cholesky(self.S) @ jax.random.normal(key, (self.dim,))}

    def sample_data(self, key, latent):
        return latent["x"] + self.noise_std * jax.random.normal(key, (self.n, self.dim))

    def log_prior(self, latent):
        return mvn.logpdf(latent["x"], jnp.full(self.dim, self.prior_mean), self.S)

    def log_likelihood(self, latent, data):
        cov = self.noise_std**2 * jnp.eye(self.dim)
        return jax.vmap(lambda y: mvn.logpdf(y, latent["x"], cov))(data) + self.offset

    def _conditional(self, data, lam):
        lam = jnp.broadcast_to(jnp.asarray(lam, jnp.result_type(float)), (self.n,))
        Sinv = jnp.linalg.inv(self.S)
        precision = Sinv + jnp.sum(lam) / self.noise_std**2 * jnp.eye(self.dim)
        cov = jnp.linalg.inv(precision)
        mean = cov @ (Sinv @ jnp.full(self.dim, self.prior_mean) + lam @ data / self.noise_std**2)
        return mean, cov

    def _update(self, key, latent, data, lam):
        mean, cov = self._conditional(data, lam)
        return {"x": mean + jnp.linalg.cholesky(cov) @ jax.random.normal(key, (self.dim,))}

    def _log_prob(self, latent, data, lam):
        mean, cov = self._conditional(data, lam)
        return mvn.logpdf(latent["x"], mean, cov)

    def default_kernel(self):
        return GibbsSweep((Conditional("x", self._update, self._log_prob),))


MODEL = CorrelatedGaussianMean(n=20, dim=3, prior_std=2.0, condition=100.0, rotation_angle=0.4)
COV = tuple(map(tuple, np.asarray(MODEL.prior_cov).tolist()))
SECOND = FullCovariance(COV, n=MODEL.n)
COMPARE = dict(steps=[20], num_runs=16)


def test_compare_models_passes_two_correct_implementations():
    result = compare_models(jax.random.key(1), MODEL, SECOND, **COMPARE)
    assert not result.fired, result.message()
    assert result.density.equal and result.density.joint.size == 32
    assert "no disagreement" in result.message()
    # The two agree with the closed form too (a forward/reverse pair per model, within four standard errors).
    exact = result.exact_a
    for (_, side), ests in result.estimates.items():
        for e in ests:
            sign = 1 if side == "lower" else -1
            assert sign * (e.value - exact) < 4 * e.stderr + 0.05, (side, e.value, exact)


def test_compare_models_flags_a_wrong_constant_in_the_log_likelihood():
    # +0.5 nats per case: every sandwich within B is honest about B's own (wrong) log p(y), 10 nats too high,
    # so B's lower bounds exceed A's upper bounds; the densities differ by exactly that constant.
    result = compare_models(jax.random.key(1), MODEL, dataclasses.replace(SECOND, offset=0.5), **COMPARE)
    assert result.fired and result.bounds_cross and result.b_vs_a.fired and not result.a_vs_b.fired
    assert result.b_vs_a.crossing > 8
    d = result.density
    assert d.constant
    # exact up to rounding of log densities of size d.magnitude (relative to the 10-nat offset)
    rtol = dtype_tol(d.magnitude / (0.5 * MODEL.n), floor=1e-9)
    np.testing.assert_allclose(d.offset, -0.5 * MODEL.n, rtol=rtol)
    np.testing.assert_allclose(np.median(d.likelihood) / d.num_cases, -0.5, rtol=rtol)
    np.testing.assert_allclose(np.median(d.prior), 0.0, atol=dtype_tol(d.magnitude, floor=1e-9))
    assert "differ by a constant" in result.message() and "-0.5 per case" in result.message()
    # Neither the run-level alarm of B alone nor its agreement with itself sees it.
    assert not result.verdict("B").fired


def test_compare_models_flags_a_wrong_noise_variance():
    # 10% more noise variance, consistently in B's simulator, kernel and density: a different model that is
    # correct on its own terms. Its log p(y) differs by a fraction of a nat here, below what the bounds can
    # certify, but its density differs from A's at the same latents by a varying amount.
    wrong = dataclasses.replace(SECOND, noise_std=math.sqrt(1.1))
    result = compare_models(jax.random.key(1), MODEL, wrong, **COMPARE)
    assert result.fired and result.density.fired and not result.density.constant, result.message()
    assert "varies with the latent" in result.message()


def test_the_alarm_cannot_see_a_wrong_constant_but_the_closed_form_can():
    @dataclasses.dataclass(frozen=True)
    class Offset(CorrelatedGaussianMean):
        def log_likelihood(self, latent, data):
            return super().log_likelihood(latent, data) + 0.5

    model = Offset(**dataclasses.asdict(MODEL))
    result = bdmc.sandwich(jax.random.key(2), model, steps=[20], num_runs=16, progress=False)
    assert not result.verdict.fired
    for row in result.table.itertuples():  # both bounds sit 0.5 n above the closed form of the right model
        assert abs(row.value - row.exact - 0.5 * model.n) < 4 * row.stderr + 0.3, row


# ----------------------------------------------------------------------------------- against a NumPyro program

def _programs():
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist

    from bdmc.ppl import from_numpyro

    class OffsetNormal(dist.Normal):
        def log_prob(self, value):
            return super().log_prob(value) + 0.5

    def regression(x, y=None, noise_scale=1.0, likelihood=dist.Normal, per_case=0.0):
        s2 = numpyro.sample("s2", dist.InverseGamma(1.0, 1.0))
        beta = numpyro.sample("beta", dist.Normal(0.0, jnp.sqrt(0.1 * s2)).expand([x.shape[1]]).to_event(1))
        with numpyro.plate("cases", x.shape[0]):
            numpyro.sample("y", likelihood(x @ beta, noise_scale * jnp.sqrt(s2)), obs=y)
        if per_case:
            numpyro.factor("constant", per_case * x.shape[0])

    X = np.asarray(LinearRegression().design)
    return {name: from_numpyro(regression, X, observed="y", **kw) for name, kw in (
        ("correct", {}), ("constant", dict(likelihood=OffsetNormal)), ("variance", dict(noise_scale=math.sqrt(1.1))),
        ("factor", dict(per_case=0.5)))}


def _to_program(program):
    return lambda x: program.unconstrain({"beta": x["beta"], "s2": jnp.exp(x["log_s2"])})


def test_density_comparison_with_numpyro_programs():
    builtin = LinearRegression()
    data, latent = bdmc.simulate(jax.random.key(0), builtin)
    more = jax.vmap(builtin.sample_prior)(jax.random.split(jax.random.key(1), 15))
    found = {}
    for name, program in _programs().items():
        found[name] = compare_densities(builtin, program, data, {"y": data}, latent, more, to_b=_to_program(program))
    assert found["correct"].equal
    # exact up to rounding of log densities of size magnitude (relative to the 10-nat offset)
    rtol = {name: dtype_tol(d.magnitude / (0.5 * builtin.n), floor=1e-9) for name, d in found.items()}
    for name in ("constant", "factor"):  # A - B = -10 nats: in the log-likelihood, or in the prior via factor
        assert found[name].constant
        np.testing.assert_allclose(found[name].offset, -0.5 * builtin.n, rtol=rtol[name])
    np.testing.assert_allclose(np.median(found["constant"].likelihood), -0.5 * builtin.n, rtol=rtol["constant"])
    np.testing.assert_allclose(np.median(found["factor"].prior), -0.5 * builtin.n, rtol=rtol["factor"])
    assert found["variance"].fired and not found["variance"].constant


def test_unconstrain_inverts_constrain():
    program = _programs()["correct"]
    u = program.sample_prior(jax.random.key(3))
    back = program.unconstrain(program.constrain(u))
    for name in u:
        np.testing.assert_allclose(back[name], u[name], rtol=1e-12)
    with pytest.raises(bdmc.BDMCError, match=r"missing \['s2'\]"):
        program.unconstrain({"beta": u["beta"]})


@pytest.mark.slow
def test_compare_models_builtin_regression_against_numpyro_programs():
    builtin = LinearRegression()
    verdicts = {}
    for name, program in _programs().items():
        verdicts[name] = compare_models(jax.random.key(3), builtin, program, to_b=_to_program(program),
                                        data_to_b=lambda y: {"y": y}, steps=[100, 1000], num_runs=16)
    assert not verdicts["correct"].fired, verdicts["correct"].message()
    assert verdicts["constant"].b_vs_a.fired and verdicts["constant"].density.constant
    assert verdicts["variance"].density.fired and not verdicts["variance"].density.constant
    # A constant in the prior (a factor site) never reaches an AIS estimate: forward AIS draws from the
    # normalized prior and weighs by the likelihood alone. Only the density comparison sees it.
    assert verdicts["factor"].density.constant and not verdicts["factor"].bounds_cross
