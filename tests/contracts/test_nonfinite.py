"""A NaN or +inf log density where one must be finite (a chain's state, an exact prior draw, the exact latent) is an
error naming the culprit; at a kernel's proposal it is a rejection, counted as a divergence; -inf is legal."""

import dataclasses
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import bdmc
from bdmc import BDMCError, NonFiniteLogDensityError, NonFiniteLogWeightError
from bdmc.exact import gaussian_mean_log_marginal
from bdmc.kernels import HMC, NUTS

LOG_2PI = math.log(2 * math.pi)
# Four cases near zero: the posterior of x is N(0.03, 0.2), far inside |x| < 3.
NEAR_ZERO = jnp.array([0.1, -0.2, 0.15, 0.1])


@dataclasses.dataclass(frozen=True)
class Toy:
    """``x ~ N(0, 1)``, ``y_i ~ N(x, 1)``; ``bug`` breaks the log-likelihood on part of the space."""

    n: int = 4
    bug: str = "none"

    def sample_prior(self, key):
        x = jax.random.normal(key)
        return {"x": jnp.abs(x) if self.bug == "half_prior" else x}

    def sample_data(self, key, latent):
        return latent["x"] + jax.random.normal(key, (self.n,))

    def log_prior(self, latent):
        x = latent["x"]
        if self.bug == "half_prior":  # a hard constraint in the prior: the half-normal, zero density for x < 0
            return jnp.where(x >= 0, -0.5 * x**2 - 0.5 * LOG_2PI + math.log(2), -jnp.inf)
        return -0.5 * x**2 - 0.5 * LOG_2PI

    def log_likelihood(self, latent, data):
        x = latent["x"]
        ll = -0.5 * (data - x) ** 2 - 0.5 * LOG_2PI
        if self.bug == "nan_far":  # 1.2% of the prior: the check's 1,024 draws miss it with probability 3e-6
            return jnp.where(jnp.abs(x) > 2.5, jnp.nan, ll)
        if self.bug == "overflow":  # as a likelihood in natural units overflows far out: no prior mass there
            return jnp.where(jnp.abs(x) > 9, jnp.nan, ll)
        if self.bug == "nan_at_5":  # a NaN no prior draw and no correct kernel ever meets
            return jnp.where(jnp.abs(x - 5.0) < 1e-3, jnp.nan, ll)
        if self.bug == "plus_inf_left":
            return jnp.where(x < -1, jnp.inf, ll)
        if self.bug == "constraint":  # a hard constraint: zero density for x < 0
            return jnp.where(x >= 0, ll, -jnp.inf)
        return ll


@dataclasses.dataclass(frozen=True)
class ToyPredictive(Toy):
    """With SMC's posterior-proposal hooks (no local latents); the predictive of case 2 is NaN."""

    def log_predictive(self, latent, data, lam, i):
        ll = self.log_likelihood(latent, data)[i]
        return jnp.where(i == 2, jnp.nan, ll)

    def sample_case(self, key, latent, data, lam, i):
        return latent


def test_a_nan_region_with_prior_mass_is_an_error_never_a_silent_bias(key):
    # The negative control. Leapfrog steps this large are unstable at the posterior: trajectories fly past
    # |x| = 2.5, where the log-likelihood is NaN, and HMC rejects them, so the states and weights of 4 chains
    # would most likely never see the NaN, and the run would sample as if the region (1.2% of the prior) had zero
    # density. (At |x| > 3, 0.27% of the prior, 1,024 draws miss the region with probability 6%: one key in
    # float32 did.)
    # The check at exact prior draws before the run finds it, for a run of one chunk or several (100 distributions).
    model = Toy(bug="nan_far")
    reverse = lambda *a, **k: bdmc.reverse_ais(*a, exact_latent={"x": jnp.asarray(0.1)}, **k)  # noqa: E731
    for run, num_steps in ((bdmc.forward_ais, 30), (bdmc.forward_ais, 100), (reverse, 30)):
        with pytest.raises(NonFiniteLogDensityError) as err:
            run(key, model, NEAR_ZERO, num_steps=num_steps, num_runs=4,
                kernel=HMC(model, step_size=1.5, num_integration_steps=3), progress=False)
        e = err.value
        assert e.term == "log_likelihood" and e.case == 0 and np.isnan(e.value)
        assert e.evaluated_by == "prior draw"
        assert re.search(r"log_likelihood case 0 is NaN at an exact prior draw \(draw \d+; \d+ of the 1024 prior draws",
                         str(e))


def test_the_prior_check_runs_once_per_model_and_data_and_a_failure_is_never_remembered(key, monkeypatch):
    from bdmc.core import prior_check

    calls = []
    real = prior_check._check
    monkeypatch.setattr(prior_check, "_check", lambda *a, **k: calls.append(1) or real(*a, **k))
    model = Toy()
    kw = dict(num_steps=5, num_runs=2, kernel=HMC(model), progress=False)
    bdmc.forward_ais(key, model, NEAR_ZERO, **kw)
    bdmc.forward_ais(jax.random.key(1), model, NEAR_ZERO, **kw)
    assert len(calls) == 1  # the same model and data: checked once
    bdmc.forward_ais(key, model, NEAR_ZERO + 1.0, **kw)
    assert len(calls) == 2  # other data: checked again
    broken = Toy(bug="nan_far")
    for _ in range(2):  # a failed check is not cached: every run on the broken model stops
        with pytest.raises(NonFiniteLogDensityError, match="exact prior draw"):
            bdmc.forward_ais(key, broken, NEAR_ZERO, num_steps=5, num_runs=2, kernel=HMC(broken), progress=False)
    assert len(calls) == 4


def test_divergent_proposals_are_rejected_and_counted_and_the_answer_is_right(key):
    # A likelihood that overflows to NaN far out (|x| > 9: no prior or posterior mass) is a correct model;
    # an unstable step size sends trajectories there. Each is a rejected proposal, counted as a divergence.
    model = Toy(bug="overflow")
    truth = gaussian_mean_log_marginal(np.asarray(NEAR_ZERO)[:, None], prior_mean=0.0, prior_std=1.0, noise_std=1.0)
    kernel = HMC(model, step_size=2.5, num_integration_steps=4)
    lower = bdmc.forward_ais(key, model, NEAR_ZERO, num_steps=300, num_runs=32, kernel=kernel, progress=False)
    upper = bdmc.reverse_ais(key, model, NEAR_ZERO, exact_latent={"x": jnp.asarray(0.1)}, num_steps=300,
                             num_runs=32, kernel=kernel, progress=False)
    for est in (lower, upper):
        assert est.divergences > 0 and est.details.divergences.shape == (32,)
        assert est.divergences == int(est.details.divergences.sum())
        assert 0 < est.divergence_rate == pytest.approx(est.divergences / (32 * 299))
        assert est.details.info.divergent.shape == (299,) and est.details.info.divergent.max() > 0
        assert est.to_dict()["divergences"] == est.divergences
    assert abs(lower.value - truth) < 4 * lower.stderr + 0.02
    assert upper.value > truth - 4 * upper.stderr - 0.02


@dataclasses.dataclass(frozen=True)
class JumpTo:
    """A broken kernel: it moves every chain to ``x = to`` without asking the density."""

    to: float

    def __call__(self, key, latent, data, lam):
        return {"x": jnp.full_like(latent["x"], self.to)}, bdmc.kernels.KernelInfo(jnp.ones(()))


def test_a_state_of_nan_density_that_a_kernel_accepts_is_an_error(key):
    model = Toy(bug="nan_at_5")
    # Weighted at the next step ...
    with pytest.raises(NonFiniteLogDensityError, match=r"case 0 is NaN at step 2 .* while weighting the chain"):
        bdmc.forward_ais(key, model, NEAR_ZERO, num_steps=10, num_runs=2, kernel=JumpTo(5.0), tune="off",
                         progress=False)
    # ... or, after the last move, at the final state.
    with pytest.raises(NonFiniteLogDensityError, match=r"NaN at step 1 .* at the state the kernel moved the chain to"):
        bdmc.forward_ais(key, model, NEAR_ZERO, num_steps=2, num_runs=2, kernel=JumpTo(5.0), tune="off",
                         progress=False)


def test_plus_inf_log_likelihood_stops_reverse_ais(key):
    model = Toy(bug="plus_inf_left")
    with pytest.raises(NonFiniteLogDensityError) as err:
        bdmc.reverse_ais(key, model, NEAR_ZERO, exact_latent={"x": jnp.asarray(0.3)}, num_steps=30, num_runs=8,
                         kernel=HMC(model, step_size=1.0, num_integration_steps=3), progress=False)
    assert err.value.term == "log_likelihood" and err.value.value == np.inf
    assert "is +inf at an exact prior draw" in str(err.value) and "reverse AIS" in str(err.value)


def test_smc_and_shme_name_a_nan_predictive(key):
    model = ToyPredictive()
    kernel = HMC(model, step_size=0.3, num_integration_steps=2)
    with pytest.raises(NonFiniteLogDensityError) as err:
        bdmc.smc(key, model, NEAR_ZERO, num_particles=4, num_runs=2, kernel=kernel, progress=False)
    # Case 2 is switched on at step 3 of the data path.
    where = (err.value.term, err.value.case, err.value.step, err.value.evaluated_by)
    assert where == ("log_predictive", 2, 3, "weight")
    with pytest.raises(NonFiniteLogDensityError) as err:
        bdmc.shme(key, model, NEAR_ZERO, exact_latent={"x": jnp.asarray(0.0)}, num_particles=4, num_runs=2,
                  kernel=kernel, disperse_steps=3, progress=False)
    # SHME's three rounds at the full posterior, then it deletes case 3, then case 2: step 3 + 2.
    assert (err.value.term, err.value.case, err.value.step) == ("log_predictive", 2, 5)
    assert "SHME" in str(err.value)


def test_exact_latent_of_zero_or_nonfinite_density_is_refused(key):
    with pytest.raises(BDMCError, match=r"exact latent has zero density.*log_likelihood case 0 is -inf"):
        bdmc.reverse_ais(key, Toy(bug="constraint"), NEAR_ZERO, exact_latent={"x": jnp.asarray(-0.5)}, num_steps=5)
    with pytest.raises(NonFiniteLogDensityError, match=r"log_likelihood case 0 is NaN.*at the exact latent"):
        bdmc.shme(key, Toy(bug="nan_far"), NEAR_ZERO, exact_latent={"x": jnp.asarray(4.0)})


def _truncated_truth(y):
    """log p(y, x >= 0) for x ~ N(0, 1): the unconstrained evidence times the posterior probability of x >= 0."""
    post_var = 1.0 / (1 + y.size)
    post_mean = float(jnp.sum(y)) * post_var
    unconstrained = gaussian_mean_log_marginal(np.asarray(y)[:, None], prior_mean=0.0, prior_std=1.0, noise_std=1.0)
    return unconstrained + stats.norm.logcdf(post_mean / math.sqrt(post_var)), post_mean, math.sqrt(post_var)


Y = jnp.array([0.8, 1.2, 0.3, 0.9])


def test_hard_constraint_in_the_likelihood_gives_zero_weights_and_the_right_answer(key):
    # Prior draws below zero get weight zero at the first step: legal, and counted as zeros in the mean.
    model = Toy(bug="constraint")
    truth, _, _ = _truncated_truth(Y)
    lower = bdmc.forward_ais(key, model, Y, num_steps=200, num_runs=32,
                             kernel=HMC(model, step_size=0.3, num_integration_steps=5), progress=False)
    assert np.any(lower.runs == -np.inf) and np.all(lower.runs < np.inf)
    assert abs(lower.value - truth) < 4 * lower.stderr


def test_hard_constraint_in_the_prior_is_sandwiched(key):
    # HMC proposals that cross zero meet a -inf density and are rejected: legal, unlike NaN.
    model = Toy(bug="half_prior")
    truth, mean, sd = _truncated_truth(Y)
    truth += math.log(2)  # the half-normal prior is normalized on x >= 0
    exact = {"x": jnp.asarray(stats.truncnorm.rvs(-mean / sd, np.inf, loc=mean, scale=sd, random_state=0))}
    kernel = HMC(model, step_size=0.3, num_integration_steps=5)
    lower = bdmc.forward_ais(key, model, Y, num_steps=1000, num_runs=32, kernel=kernel, progress=False)
    upper = bdmc.reverse_ais(key, model, Y, exact_latent=exact, num_steps=1000, num_runs=32, kernel=kernel,
                             progress=False)
    assert abs(lower.value - truth) < 4 * lower.stderr
    assert upper.value > truth - 4 * upper.stderr
    # Tight: 0.05 nats, or 2.5 standard errors of the gap when 32 chains drew a heavier tail than that allows
    # (float32 draws other random numbers from the same key).
    assert upper.value - lower.value < max(0.05, 2.5 * math.hypot(lower.stderr, upper.stderr))


def test_numpyro_factor_of_plus_inf_names_the_site(key):
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist

    def program(y=None, *, factor=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        numpyro.factor("f", factor(mu))
        with numpyro.plate("cases", 4):
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    data = {"y": NEAR_ZERO}
    partial = bdmc.ppl.from_numpyro(program, factor=lambda mu: jnp.where(mu > 1.0, jnp.inf, 0.0), observed="y")
    plus_inf = r"log_prior \(NumPyro site 'f'\) is \+inf at an exact prior draw"
    with pytest.raises(NonFiniteLogDensityError, match=plus_inf):
        bdmc.forward_ais(key, partial, data, num_steps=20, num_runs=8, progress=False)
    everywhere = bdmc.ppl.from_numpyro(program, factor=lambda mu: jnp.inf, observed="y")
    with pytest.raises(NonFiniteLogDensityError, match=r"log_prior \(NumPyro site 'f'\) is \+inf"):
        bdmc.reverse_ais(key, everywhere, data, exact_latent={"mu": jnp.asarray(0.0)}, num_steps=20)


def test_estimators_outside_the_engine_never_return_nonfinite_values(key):
    with pytest.raises(NonFiniteLogWeightError, match=r"likelihood_weighting produced a non-finite estimate"):
        bdmc.estimators.likelihood_weighting(key, Toy(bug="nan_far"), NEAR_ZERO, num_proposals=4000, num_runs=2)
    common = dict(seconds=0.0, compile_seconds=0.0, n_evals=1)
    with pytest.raises(NonFiniteLogWeightError, match="run 1 of 2"):
        bdmc.Estimate.from_runs([-1.0, np.nan], bound="lower", **common)
    with pytest.raises(NonFiniteLogWeightError, match="exact sample has zero density"):
        bdmc.Estimate.from_runs([-1.0, np.inf], bound="upper", **common)
    with pytest.raises(NonFiniteLogWeightError, match="must be finite"):
        bdmc.Estimate.from_runs([-1.0, -np.inf], bound=None, **common)
    assert bdmc.Estimate.from_runs([-1.0, -np.inf], bound="lower", **common).value == pytest.approx(-1 - math.log(2))
    with pytest.warns(RuntimeWarning, match="true but useless"):
        useless = bdmc.Estimate.from_runs([-np.inf, -np.inf], bound="lower", **common)
    assert useless.value == -np.inf


@pytest.mark.float64  # float64 numbers pinned from the engine before the checks
def test_correct_models_give_the_same_numbers_as_before_the_checks():
    # Computed with the engine as it was before the non-finite checks (same model, keys and settings), on
    # this project's CPU float64 configuration: the checks must not change the numbers of a correct run.
    # Compared to rtol 1e-13 (a few hundred ULPs at most), not bit for bit: XLA's CPU code (vectorized exp, log
    # and sums, fused differently per instruction set) differs in the last bit from one x86-64 CPU to another
    # (1 ULP seen), while anything the checks could change moves these numbers by far more.
    close = dict(rtol=1e-13, atol=0)
    model = Toy()
    nuts = bdmc.forward_ais(jax.random.key(7), model, NEAR_ZERO, num_steps=10, num_runs=3,
                            kernel=NUTS(model, step_size=0.5, max_tree_depth=3), progress=False)
    np.testing.assert_allclose(nuts.runs, [-4.6110047060409665, -12.145199926802162, -3.9410009901886944], **close)
    kernel = HMC(model, step_size=0.3, num_integration_steps=2)
    smc = bdmc.smc(jax.random.key(7), model, NEAR_ZERO, num_particles=4, num_runs=2, kernel=kernel, progress=False)
    np.testing.assert_allclose(smc.runs, [-4.571817021367771, -5.292879402898493], **close)
    shme = bdmc.shme(jax.random.key(7), model, NEAR_ZERO, exact_latent={"x": jnp.asarray(0.1)}, num_particles=4,
                     num_runs=2, kernel=kernel, disperse_steps=0, progress=False)  # the paper's Alg. 3, as then
    np.testing.assert_allclose(shme.runs, [-4.028085626949028, -4.4218594560588835], **close)
