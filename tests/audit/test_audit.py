"""``bdmc.audit`` on a small correct model passes every check; with a kernel whose Gibbs conditional has too much
variance the check that sees it (Geweke) fails.

The default suite audits a two-dimensional Gaussian mean at tiny budgets (the kernel's variance doubled, so Geweke
sees it at 1,000 chains: |z| 8.5-11 against a threshold of 3.4 over 12 seeds, while the correct kernel passed every
check on the same 12 seeds); the slow tests audit linear regression with the 10% error of
benchmarks/check_power.py. Which check sees which bug at the benchmark's budgets: benchmarks/results/audit.
"""

import dataclasses
import math

import jax
import pytest

import bdmc
from bdmc.auditing import AuditResult, Budget, audit
from bdmc.auditing.checks_geweke import geweke_outcome
from bdmc.models import GaussianMean, LinearRegression

# Tiny budgets: every check runs, with a fixed key, in a few seconds once compiled.
TINY = Budget(triples=8, sbc_replications=60, sbc_draws=19, sbc_warmup=10, sbc_thin=2, geweke_samples=2000,
              geweke_steps=20, sandwich_steps=(5, 50), sandwich_runs=8, evidence_steps=50, evidence_runs=8,
              evidence_draws=100)
MODEL = LinearRegression(n=10, degree=1)
LEVEL = 0.01
# Each full audit compiles a dozen programs: 60-120 s on the shared 2-core machine, so these are slow tests.
slow = pytest.mark.slow


@dataclasses.dataclass(frozen=True)
class WideKernelLR(LinearRegression):
    """The conditional of beta given s2 has 1.1 times the right covariance: its Gibbs kernel is the bug."""

    def _beta_conditional(self, latent, data, lam):
        mean, chol = super()._beta_conditional(latent, data, lam)
        return mean, chol / math.sqrt(1.1)


# ------------------------------------------------------------------------------------- default suite: cheap

# Every check runs; evidence_runs equals sandwich_runs so the evidence reuses the sandwich's compiled AIS.
SMALL = Budget(triples=8, sbc_replications=50, sbc_draws=9, sbc_warmup=2, sbc_thin=1, geweke_samples=1000,
               geweke_steps=10, sandwich_steps=(5, 20), sandwich_runs=8, evidence_steps=20, evidence_runs=8,
               evidence_draws=0, prior_steps=50, prior_runs=8)
SMALL_MODEL = GaussianMean(n=5, dim=2)


@dataclasses.dataclass(frozen=True)
class WideKernelGM(GaussianMean):
    """Its Gibbs draw of mu has twice the right variance (draw and conditional density alike)."""

    def _mu_conditional(self, data, lam):
        mean, precision = super()._mu_conditional(data, lam)
        return mean, precision / 2.0


@pytest.fixture(scope="module")
def small_correct() -> AuditResult:
    return audit(jax.random.key(5), SMALL_MODEL, budget=SMALL, level=LEVEL)


@pytest.fixture(scope="module")
def small_broken() -> AuditResult:
    wide = WideKernelGM(**dataclasses.asdict(SMALL_MODEL)).default_kernel()
    return audit(jax.random.key(5), SMALL_MODEL, sampler=wide, budget=SMALL, level=LEVEL)


def test_small_correct_model_passes_every_check(small_correct):
    verdicts = {c.name: c.verdict for c in small_correct.checks}
    assert verdicts == {"simulator-density": "pass", "prior-normalization": "pass", "sbc": "pass", "geweke": "pass",
                        "bdmc": "pass", "evidence": "informative"}
    assert small_correct.verdict == "pass"
    tested = [c for c in small_correct.checks if c.level is not None]
    assert {c.name for c in tested} == {"sbc", "geweke", "bdmc", "prior-normalization"}
    assert sum(c.level for c in tested) == pytest.approx(LEVEL)
    # The budget reached the checks.
    sbc = next(c for c in small_correct.checks if c.name == "sbc")
    assert (sbc.details["num_replications"], sbc.details["num_draws"]) == (50, 9)
    assert next(c for c in small_correct.checks if c.name == "geweke").details["num_samples"] == 1000
    assert next(c for c in small_correct.checks if c.name == "bdmc").details["steps"] == [5, 20]


def test_small_evidence_lies_below_the_exact_value(small_correct):
    ev = next(c for c in small_correct.checks if c.name == "evidence")
    # Markov: the certified value lies below the truth with probability >= 0.95 (fixed key); the forward
    # estimate is a stochastic lower bound, so at worst a few standard errors above it.
    assert ev.details["certified"] <= ev.details["exact"]
    lower = next(r for r in ev.table if r["side"] == "lower")
    assert lower["value"] <= ev.details["exact"] + 4 * lower["stderr"]


def test_broken_kernel_fails_the_audits_geweke_check():
    """The audit's Geweke check on its own (a whole second audit costs twice as much; the slow test below runs
    it), at the share of the level the audit gives it."""
    wide = WideKernelGM(**dataclasses.asdict(SMALL_MODEL)).default_kernel()
    share = LEVEL / 3  # SBC, Geweke and the alarm
    broken = geweke_outcome(jax.random.key(5), SMALL_MODEL, wide, level=share, num_samples=SMALL.geweke_samples,
                            num_steps=SMALL.geweke_steps, sampler="the wide kernel")
    assert broken.verdict == "fail", broken.statistic
    assert broken.details["worst"] == "mean square ['mu']"  # the variance of mu, where the bug is
    assert abs(broken.details["worst_z"]) > broken.details["threshold"]


@slow
def test_small_broken_kernel_fails_the_audit(small_broken):
    verdicts = {c.name: c.verdict for c in small_broken.checks}
    geweke = next(c for c in small_broken.checks if c.name == "geweke")
    assert verdicts["geweke"] == "fail", geweke.statistic
    assert geweke.details["worst"] == "mean square ['mu']"  # the variance of mu, where the bug is
    # The model's density and conditionals are right: the identity holds to rounding.
    assert verdicts["simulator-density"] == "pass"
    assert small_broken.verdict == "fail"


# ---------------------------------------------------------------------------------------- slow: linear regression

@pytest.fixture(scope="module")
def correct() -> AuditResult:
    return audit(jax.random.key(3), MODEL, budget=TINY, level=LEVEL)


@pytest.fixture(scope="module")
def broken() -> AuditResult:
    wide = WideKernelLR(**dataclasses.asdict(MODEL)).default_kernel()
    return audit(jax.random.key(3), MODEL, sampler=wide, budget=TINY, level=LEVEL)


@slow
def test_correct_model_passes_every_check(correct):
    verdicts = {c.name: c.verdict for c in correct.checks}
    assert verdicts == {"simulator-density": "pass", "prior-normalization": "pass", "sbc": "pass", "geweke": "pass",
                        "bdmc": "pass", "evidence": "informative"}
    assert correct.verdict == "pass"
    assert correct.sampler == "the model's Gibbs kernel"


@slow
def test_levels_add_up_to_the_audit_level(correct):
    tested = [c for c in correct.checks if c.level is not None]
    assert {c.name for c in tested} == {"sbc", "geweke", "bdmc", "prior-normalization"}
    assert sum(c.level for c in tested) == pytest.approx(LEVEL)
    assert correct.settings["level"] == LEVEL


@slow
def test_every_run_check_has_figures_statistic_and_remedy(correct):
    for c in correct.checks:
        assert c.figures and c.statistic and c.meaning and c.remedy, c.name


@slow
def test_evidence_brackets_the_exact_value(correct):
    ev = next(c for c in correct.checks if c.name == "evidence")
    exact = ev.details["exact"]
    # Markov: the certified value lies below the truth (probability >= 0.95; fixed key).
    assert ev.details["certified"] <= exact
    # The forward estimate is a stochastic lower bound, within a few standard errors of the truth at worst.
    lower = next(r for r in ev.table if r["side"] == "lower" and r["label"].startswith("forward"))
    assert lower["value"] <= exact + 4 * lower["stderr"]


@slow
def test_broken_kernel_fails_the_checks_that_see_it(broken):
    verdicts = {c.name: c.verdict for c in broken.checks}
    # Geweke compares the kernel with the simulator: a kernel invariant for the wrong posterior fails it.
    assert verdicts["geweke"] == "fail"
    # The density and simulator are right, so the identity passes; the alarm cannot see a kernel bug.
    assert verdicts["simulator-density"] == "pass"
    assert broken.verdict == "fail"


def test_unknown_sampler_is_refused():
    with pytest.raises(bdmc.BDMCError, match="unknown sampler 'slice'"):
        audit(jax.random.key(0), MODEL, sampler="slice", budget=TINY)


def test_evidence_survives_draws_of_a_stuck_chain():
    """Posterior draws that repeat one state (a stuck chain) make the bracketing's fitted Gaussian singular: the
    evidence check keeps its certified AIS bound and says why there is no bracket, instead of ending the audit."""
    from bdmc.auditing.checks_evidence import evidence_outcome
    from bdmc.contracts.model import simulate

    sim = simulate(jax.random.key(1), SMALL_MODEL)
    stuck = jax.tree.map(lambda x: jax.numpy.broadcast_to(x, (40, *x.shape)), sim.exact_latent)
    ev = evidence_outcome(jax.random.key(2), SMALL_MODEL, sim.data, kernel=None, num_steps=20, num_runs=8,
                          data_label="a simulated data set", draws=stuck)
    assert ev.verdict == "informative"
    assert "bracket_error" in ev.details and "bracket_upper" not in ev.details
    assert "no bracketing bounds" in ev.summary
    assert math.isfinite(ev.details["certified"])
    # The draws' own diagnostics are reported (a chain that never moves has no finite R-hat).
    assert ev.details["draws_diagnostics"]["draws"] == 40 and "R-hat" in ev.summary
