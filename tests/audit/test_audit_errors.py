"""The audit's error path and what its report says: a check that raises becomes that check's "error" verdict
while the others run; the report is written before the first check and rewritten after each, so an interrupted
audit keeps its finished checks; the report names what was run, and neither a quick budget nor an informative
check reads as a clean pass; a sandwich too loose to catch a bug is no pass."""

import json

import jax
import pytest

from bdmc.auditing import (
    AuditResult,
    Budget,
    CheckOutcome,
    audit,
    checks_bdmc,
    checks_evidence,
    checks_geweke,
    checks_prior,
    checks_sbc,
    checks_simulator,
)
from bdmc.auditing.report import render_html
from bdmc.errors import UserProgramError
from bdmc.models import GaussianMean

MODEL = GaussianMean(n=5, dim=2)
BUDGET = Budget(triples=8, sbc_replications=20, sbc_draws=9, sbc_warmup=2, sbc_thin=1, geweke_samples=100,
                geweke_steps=5, sandwich_steps=(5,), sandwich_runs=4, evidence_steps=5, evidence_runs=4,
                evidence_draws=0, prior_steps=10, prior_runs=4)


def passing(name):
    """A stand-in for a check that passes at once (the orchestration, not the check, is under test)."""
    def check(*args, **kwargs):
        return CheckOutcome(name=name, title=name, verdict="pass", statistic="p = 0.5", level=0.001, summary="ok")
    return check


@pytest.fixture
def quick_checks(monkeypatch):
    """Every check replaced by an instant pass; the evidence records the data it was given."""
    seen = {}
    monkeypatch.setattr(checks_simulator, "simulator_outcome", passing(checks_simulator.NAME))
    monkeypatch.setattr(checks_prior, "prior_outcome", passing(checks_prior.NAME))
    monkeypatch.setattr(checks_sbc, "sbc_outcome", passing(checks_sbc.NAME))
    monkeypatch.setattr(checks_geweke, "geweke_outcome", passing(checks_geweke.NAME))

    def evidence(key, model, data, **kwargs):
        seen["data"] = data
        return CheckOutcome(name=checks_evidence.NAME, title="evidence", verdict="informative", statistic="-",
                            level=None, summary="log p(y) >= -3")

    monkeypatch.setattr(checks_evidence, "evidence_outcome", evidence)
    return seen


def test_a_check_that_raises_is_its_error_verdict_and_the_rest_run(quick_checks, monkeypatch, tmp_path):
    def broken(*args, **kwargs):
        raise RuntimeError("the sandwich fell over")

    monkeypatch.setattr(checks_bdmc, "bdmc_outcome", broken)
    res = audit(jax.random.key(0), MODEL, sampler="gibbs", budget=BUDGET, report_dir=tmp_path)
    verdicts = {c.name: c.verdict for c in res.checks}
    assert verdicts == {"simulator-density": "pass", "prior-normalization": "pass", "sbc": "pass",
                        "geweke": "pass", "bdmc": "error", "evidence": "informative"}
    assert res.verdict == "error" and not res.pending
    err = next(c for c in res.checks if c.name == "bdmc")
    assert "RuntimeError: the sandwich fell over" in err.summary and "report it" in err.remedy
    assert err.details["error_type"] == "RuntimeError" and "broken" in err.details["traceback"]
    # The evidence still ran, on a data set of its own (the BDMC check's never came).
    assert quick_checks["data"] is not None
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["verdict"] == "error" and [c["verdict"] for c in saved["checks"]][4] == "error"
    assert "ERROR" in (tmp_path / "report.html").read_text()


def test_an_error_in_the_users_program_says_so(quick_checks, monkeypatch):
    def broken(*args, **kwargs):
        raise UserProgramError("model.py:regression raised TypeError: bad shapes")

    monkeypatch.setattr(checks_sbc, "sbc_outcome", broken)
    res = audit(jax.random.key(0), MODEL, sampler="gibbs", budget=BUDGET)
    sbc = next(c for c in res.checks if c.name == "sbc")
    assert sbc.verdict == "error" and "model.py:regression" in sbc.summary
    assert "your program" in sbc.remedy and "report it" not in sbc.remedy


def test_an_interrupted_audit_keeps_its_finished_checks(quick_checks, monkeypatch, tmp_path):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(checks_bdmc, "bdmc_outcome", interrupted)
    with pytest.raises(KeyboardInterrupt):
        audit(jax.random.key(0), MODEL, sampler="gibbs", budget=BUDGET, report_dir=tmp_path)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [c["name"] for c in saved["checks"]] == ["simulator-density", "prior-normalization", "sbc", "geweke"]
    assert saved["pending"] == ["bdmc", "evidence"] and saved["verdict"] == "incomplete"
    back = AuditResult.from_dict(saved)
    assert back.pending == ("bdmc", "evidence") and "Not finished: bdmc, evidence" in render_html(back)


def test_the_report_says_what_was_run_and_a_quick_pass_is_no_clean_bill(quick_checks, monkeypatch):
    monkeypatch.setattr(checks_bdmc, "bdmc_outcome", lambda *a, **k: (passing("bdmc")(), None))
    res = audit(jax.random.key(7), MODEL, sampler="gibbs", quick=True, budget=None,
                provenance={"command": "bdmc audit --model gaussian-mean --quick", "data_file": None})
    assert res.verdict == "pass"
    assert res.provenance["budget"] == "quick" and res.provenance["seed"] == 7
    assert res.provenance["bdmc_version"] and res.provenance["date"].startswith("20")
    assert "little power" in res.caveat
    page = render_html(res)
    for text in ("bdmc audit --model gaussian-mean --quick", "Budget", "quick", "little power"):
        assert text in page
    # The evidence is informative: a neutral badge, never the green pass.
    assert 'class="badge v-informative"' in page
    # Negative control: the default budget carries no caveat.
    default = audit(jax.random.key(7), MODEL, sampler="gibbs", budget=BUDGET)
    assert default.provenance["budget"] == "custom" and default.caveat == ""


def test_the_repr_of_a_result_is_short(quick_checks, monkeypatch):
    monkeypatch.setattr(checks_bdmc, "bdmc_outcome", lambda *a, **k: (passing("bdmc")(), None))
    res = audit(jax.random.key(0), MODEL, sampler="gibbs", budget=BUDGET)
    assert len(repr(res)) < 400 and "verdict='pass'" in repr(res) and "sbc: pass" in repr(res)


def test_a_sandwich_too_loose_to_catch_a_bug_is_no_pass():
    """Two intermediate distributions from prior to the posterior of 400 points: the bounds do not cross but
    B-hat is far above MAX_B_HAT, so the check has no power and says so (the small audit's sandwich, whose B-hat
    is small, passes: test_audit.py)."""
    model = GaussianMean(n=400, dim=2)
    outcome, res = checks_bdmc.bdmc_outcome(jax.random.key(3), model, kernel=None, steps=(2, 3), num_runs=4,
                                            level=0.01)
    assert not res.verdict.fired
    assert outcome.details["b_hat"][-1] > checks_bdmc.MAX_B_HAT
    assert outcome.verdict == "inconclusive" and "no power" in outcome.summary
