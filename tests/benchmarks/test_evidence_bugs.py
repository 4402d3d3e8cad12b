"""The evidence-bug corpus's mutations are the bugs they claim: on one data set, with the same random numbers, the
unnormalized truncation moves the correct estimator's log Z by exactly -log 2 and the dropped constants by exactly
+15 log(2 pi); the correct estimators agree with each other; the likelihood-integrated and maximum-posterior
mutations land far from them."""

import math
import sys
from pathlib import Path

import jax
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS / "bug_corpus"))

import evidence_bugs  # noqa: E402

import bdmc  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return bdmc.simulate(jax.random.key(3), evidence_bugs.program_model()).data


def test_program_bugs_shift_the_estimate_by_their_constants_exactly(data):
    correct = evidence_bugs.laplace_is(evidence_bugs.program_model())(data, seed=1)[0]
    truncated = evidence_bugs.laplace_is(evidence_bugs.program_model("truncation"))(data, seed=1)[0]
    dropped = evidence_bugs.laplace_is(evidence_bugs.program_model("dropped-constants"))(data, seed=1)[0]
    # abs: the rounding of log-sum-exps near 50 in float32
    assert truncated - correct == pytest.approx(-math.log(2.0), abs=1e-4)
    assert dropped - correct == pytest.approx(15 * math.log(2 * math.pi), abs=1e-4)
    bugs = {b.name: b for b in evidence_bugs.BUGS}
    assert evidence_bugs.exact_offset(bugs["truncation"]) == pytest.approx(-math.log(2.0))


def test_the_correct_estimators_agree_and_the_estimator_bugs_do_not(data):
    model = evidence_bugs.program_model()
    laplace, stderr = evidence_bugs.laplace_is(model)(data, seed=1)
    smc = evidence_bugs.tempered_smc(model)(data, seed=1)[0]
    assert 0 < stderr < 0.1 and abs(laplace - smc) < 0.5
    integrated = evidence_bugs.laplace_is(model, drop_prior=True)(data, seed=1)[0]
    peak = evidence_bugs.laplace_is(model, report_mode=True)(data, seed=1)
    assert integrated - laplace > 2.0  # the prior's density (< 1 in natural units) is missing from every weight
    assert abs(peak[0] - laplace) > 1.0 and peak[1] == 0.0
