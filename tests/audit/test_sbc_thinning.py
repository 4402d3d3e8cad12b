"""The audit's SBC check and autocorrelated draws.

A correct kernel that mixes slowly must not be reported "fail": ranks of autocorrelated draws are not uniform
even for a correct sampler. The audit picks the thinning of a fixed kernel from a pilot (``sbc_thin=None``) and
calls a failure with too few effective draws "inconclusive". Neither may hide a wrong sampler.

The slow kernel is an exact AR(1) move for the conjugate posterior of ``GaussianMean``,
``mu' = m + rho (mu - m) + sqrt(1 - rho^2) sd z``: its lag-k autocorrelation is ``rho^k``, so its ESS per
transition is ``(1 - rho) / (1 + rho)`` exactly, and the thinning the pilot should pick is known.
"""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bdmc.auditing import Budget, resolve_sampler
from bdmc.auditing.checks_sbc import LOW_ESS, MAX_THIN, pilot_thin, sbc_outcome
from bdmc.checks.samplers import KernelSampler
from bdmc.models import CorrelatedGaussianMean, GaussianMean

MODEL = GaussianMean(n=5, dim=2)
RHO = 0.9
EXPECTED_THIN = (1 + RHO) / (1 - RHO)  # 1 / ESS per transition = 19
LEVEL = 0.01
DRAWS = 19


@dataclasses.dataclass(frozen=True)
class ARKernel:
    """Exact AR(1) move for GaussianMean's posterior at ``lam`` (``variance`` 1); ``variance`` != 1 leaves
    ``N(m, variance * posterior variance)`` invariant instead: a wrong kernel."""

    model: GaussianMean
    rho: float
    variance: float = 1.0

    def __call__(self, key, latent, data, lam):
        m = self.model
        precision = 1.0 / m.prior_std**2 + lam * m.n / m.noise_std**2
        mean = (m.prior_mean / m.prior_std**2 + lam * jnp.sum(data, 0) / m.noise_std**2) / precision
        sd = jnp.sqrt(self.variance / precision)
        noise = jax.random.normal(key, mean.shape, mean.dtype)
        return {"mu": mean + self.rho * (latent["mu"] - mean) + math.sqrt(1 - self.rho**2) * sd * noise}, None


def _outcome(kernel, *, thin, replications, key=3, model=MODEL):
    resolved = resolve_sampler(jax.random.key(key), model, kernel, warmup=100, thin=thin, num_draws=DRAWS)
    out = sbc_outcome(jax.random.key(key + 1), model, resolved.sampler, label=resolved.label, level=LEVEL,
                      num_replications=replications, num_draws=DRAWS, thinning=resolved.settings["thinning"])
    return resolved, out


@pytest.mark.slow
def test_pilot_thinning_at_the_extremes():
    # An independent sampler (rho = 0) needs no thinning; one that never moves hits the cap.
    sampler = KernelSampler(ARKernel(MODEL, 0.0), warmup=100, model=MODEL)
    assert pilot_thin(jax.random.key(0), MODEL, sampler, num_draws=DRAWS)[0] <= 2
    frozen = dataclasses.replace(sampler, kernel=ARKernel(MODEL, 1.0))
    thin, how = pilot_thin(jax.random.key(0), MODEL, frozen, num_draws=DRAWS)
    assert (thin, how["capped"]) == (MAX_THIN, True)


@pytest.mark.slow  # 12 s
def test_slow_correct_kernel_is_not_reported_fail():
    kernel = ARKernel(MODEL, RHO)
    # Unthinned, the ranks are far from uniform (the raw test rejects) ...
    resolved, raw = _outcome(kernel, thin=1, replications=200)
    assert resolved.settings["thinning"] == {"thin": 1, "automatic": False}
    assert raw.details["miscalibrated"], "negative control: autocorrelated draws should fail the raw rank test"
    # ... but with about 19 / 19 = 1 effective draw per data set the audit says so instead of "fail".
    assert raw.details["autocorrelated"] and raw.details["worst_median_ess"] < LOW_ESS * DRAWS
    assert raw.verdict == "inconclusive"
    assert "thin more / run longer" in raw.summary and "ESS" in raw.statistic
    # Automatic thinning (the audit's default) makes the same kernel pass, its thinning recorded. Known answer:
    # 1 / ESS per transition = (1 + rho) / (1 - rho) = 19; the pilot's ESS comes from 2 chains of 200 draws
    # (about 10 effective each), so its relative error is about 30%: accept a factor of two.
    resolved, auto = _outcome(kernel, thin=None, replications=200)
    how = resolved.settings["thinning"]
    assert how["automatic"] and resolved.sampler.thin == auto.details["thin"] == how["thin"]
    assert EXPECTED_THIN / 2 <= how["thin"] <= 2 * EXPECTED_THIN, how
    assert how["worst_quantity"].startswith("mu") and not how["capped"]
    assert not auto.details["autocorrelated"]
    assert auto.verdict == "pass", auto.summary


def test_budget_leaves_thinning_automatic_and_keeps_a_given_one():
    assert Budget.default().sbc_thin is None and Budget.quick().sbc_thin is None
    resolved = resolve_sampler(jax.random.key(0), MODEL, ARKernel(MODEL, RHO), warmup=10, thin=7, num_draws=DRAWS)
    assert resolved.sampler.thin == 7 and resolved.settings["thinning"] == {"thin": 7, "automatic": False}


def test_chains_that_never_move_fail_not_inconclusive():
    # rho = 1: the kernel leaves the posterior invariant but never moves, so every draw is the chain's start (a
    # prior draw). With ESS 0 that is a sampler that does not sample the posterior, not autocorrelation.
    _, out = _outcome(ARKernel(MODEL, 1.0), thin=1, replications=100)
    assert out.details["worst_median_ess"] < 1 and out.details["autocorrelated"]
    assert out.verdict == "fail" and "did not move" in out.summary


@pytest.mark.slow
def test_slow_wrong_kernel_still_fails():
    # The same slow AR(1) move leaving half the posterior variance invariant: after automatic thinning the
    # draws are near independent, so the too-narrow draws give U-shaped ranks and the verdict is "fail".
    resolved, out = _outcome(ARKernel(MODEL, RHO, variance=0.5), thin=None, replications=400)
    assert resolved.settings["thinning"]["automatic"]
    assert not out.details["autocorrelated"]
    assert out.verdict == "fail", out.summary


@dataclasses.dataclass(frozen=True)
class TransposedCG(CorrelatedGaussianMean):
    """The prior sampler uses ``V^T`` where ``S = V diag(e) V^T`` needs ``V`` (BREAD's WebPPL bug)."""

    def sample_prior(self, key):
        eps = jax.random.normal(key, (self.dim,))
        return {"x": self.prior_mean + jnp.asarray(self.eigenvectors).T @ (jnp.sqrt(jnp.asarray(self.eigenvalues))
                                                                           * eps)}


def test_transposed_eigenvectors_still_fail_under_automatic_thinning():
    model = TransposedCG(n=5, dim=2, prior_std=3.0, condition=100.0, rotation_angle=math.pi / 4)
    resolved, out = _outcome("gibbs", thin=None, replications=100, model=model)
    assert resolved.settings["thinning"]["automatic"] and resolved.sampler.thin <= 2  # exact Gibbs: independent
    assert out.verdict == "fail", out.summary
    assert np.isfinite(out.details["worst_median_ess"])


def test_a_step_adapted_to_each_data_set_in_warm_up_frees_chains_a_fixed_step_leaves_stuck():
    """HMC with a step 30 times too large for the posterior rejects nearly every move: its chains stay at their
    prior starts and SBC fails (rightly: those are not posterior draws). With ``target_accept`` each data set's
    warm-up adapts the step (dual averaging, then fixed): the same kernel gives calibrated ranks."""
    from bdmc.kernels import HMC

    model = GaussianMean(n=50, dim=2, noise_std=0.3)
    posterior_sd = 1.0 / math.sqrt(1.0 + model.n / model.noise_std**2)
    kernel = HMC(model, step_size=30 * posterior_sd, num_integration_steps=5)
    key = jax.random.key(5)
    fixed = sbc_outcome(key, model, KernelSampler(kernel, warmup=150, thin=2), label="fixed", level=LEVEL,
                        num_replications=60, num_draws=DRAWS, thinning=None)
    adapted_sampler = KernelSampler(kernel, warmup=150, thin=2, target_accept=0.8)
    adapted = sbc_outcome(key, model, adapted_sampler, label="adapted", level=LEVEL, num_replications=60,
                          num_draws=DRAWS, thinning=None)
    assert fixed.verdict == "fail" and fixed.details["stuck_replications"] > 30
    assert adapted.verdict == "pass" and adapted.details["stuck_replications"] == 0, adapted.summary
    # The adapted kernel is a fixed HMC with a step near the posterior's scale.
    _, kept = adapted_sampler._warmup(key, model.sample_prior(key), model.sample_data(key, model.sample_prior(key)),
                                      jnp.ones(()))
    assert 0.05 * posterior_sd < float(kept.step_size) < 3 * posterior_sd
