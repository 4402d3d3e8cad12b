"""``bdmc.audit`` on a small correct model passes every check; with a kernel whose Gibbs conditional has 10% too
much variance (benchmarks/check_power.py's kernel bug) the checks that can see it fail."""

import dataclasses
import math

import jax
import pytest

import bdmc
from bdmc.auditing import AuditResult, Budget, audit
from bdmc.models import LinearRegression

# Tiny budgets: every check runs, with a fixed key, in a few seconds once compiled.
TINY = Budget(triples=8, sbc_replications=60, sbc_draws=19, sbc_warmup=10, sbc_thin=2, geweke_samples=2000,
              geweke_steps=20, sandwich_steps=(5, 50), sandwich_chains=8, evidence_steps=50, evidence_chains=8,
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
    assert verdicts == {"simulator-density": "pass", "sbc": "pass", "geweke": "pass", "bdmc": "pass",
                        "evidence": "pass"}
    assert correct.verdict == "pass"
    assert correct.sampler == "the model's Gibbs kernel"


@slow
def test_levels_add_up_to_the_audit_level(correct):
    tested = [c for c in correct.checks if c.level is not None]
    assert {c.name for c in tested} == {"sbc", "geweke", "bdmc"}
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
