"""The pure parts of benchmarks/cost_curves.py: slope fit, problems' log Z, stopping rule, resume, pages."""

import json
import math

import numpy as np
import pytest
from scipy import special, stats

from tests.helpers import import_benchmark

cc = import_benchmark("cost_curves")
peer_problems = import_benchmark("harness.problems")


def test_slope_fit_is_exact_on_power_laws():
    sizes = np.array([2, 5, 10, 20, 50, 100])
    for slope, scale in [(1.0, 0.01), (2.5, 3e-4), (0.5, 7.0), (-0.3, 1.0)]:
        fit = cc.fit_slope(sizes, scale * sizes**slope)
        assert fit["slope"] == pytest.approx(slope, abs=1e-12)
        assert fit["intercept"] == pytest.approx(math.log(scale), abs=1e-10)
        assert fit["points"] == len(sizes)
    assert cc.fit_slope([10], [1.0]) is None  # one size gives no slope
    assert cc.fit_slope([10, 10], [1.0, 2.0]) is None


def test_slopes_use_only_reached_points():
    summary = [{"family": "regression", "size": n, "tool": "pymc", "warm_0.1": 0.2 * n**0.8} for n in (100, 1000)]
    summary += [{"family": "regression", "size": 10_000, "tool": "pymc", "outcome": "capped"}]
    fits = cc.slopes(summary)
    assert fits[("regression", "pymc")]["slope"] == pytest.approx(0.8)
    assert fits[("regression", "pymc")]["points"] == 2
    assert fits[("regression", "blackjax")] is None


def test_conjugate_log_z_matches_the_direct_marginal_likelihood():
    rng = np.random.default_rng(0)
    for n, d, prior_sd, noise_sd in [(50, 10, 1.0, 1.0), (7, 3, 2.0, 0.3), (30, 40, 0.5, 1.5)]:
        design, y = rng.standard_normal((n, d)), rng.standard_normal(n)
        cov = noise_sd**2 * np.eye(n) + prior_sd**2 * design @ design.T
        direct = stats.multivariate_normal(np.zeros(n), cov).logpdf(y)
        assert cc.conjugate_log_z(y, design, prior_sd, noise_sd) == pytest.approx(direct, abs=1e-9)
        assert cc.conjugate_log_z(y, design, prior_sd, noise_sd) == pytest.approx(
            peer_problems.linear_gaussian_log_z(y, design, prior_sd, noise_sd), abs=1e-9)


def test_regression_at_200_is_the_peers_regression():
    mine, peers = cc.regression_at(200), peer_problems.regression_problem()
    np.testing.assert_array_equal(mine.data, peers.data)
    assert mine.exact == pytest.approx(peers.exact, abs=1e-9)
    x = np.linspace(-1, 1, mine.dim)
    assert float(mine.log_joint(x)) == pytest.approx(float(peers.log_joint(x)), rel=1e-5)
    small = cc.regression_at(100)
    np.testing.assert_array_equal(small.data[:5], cc.regression_at(1000).data[:5])  # nested data sets


def _grid_log_z(log_joint, half_width=8.0, points=801):
    axis = np.linspace(-half_width, half_width, points)
    grid = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2)
    return special.logsumexp(log_joint(grid)) + 2 * math.log(axis[1] - axis[0])


def test_correlated_at_two_dimensions_against_quadrature():
    problem = cc.correlated_at(2)
    design, y = problem.info["design_matrix"], problem.data

    def log_joint(x):
        resid = y - x @ design.T
        return (stats.norm.logpdf(x).sum(axis=1) + stats.norm.logpdf(resid).sum(axis=1))
    assert problem.name == "correlated_d2"
    assert _grid_log_z(log_joint) == pytest.approx(problem.exact, abs=1e-6)
    assert cc.correlated_at(5).exact == pytest.approx(peer_problems.correlated_problem(dim=5).exact)


def test_logistic_quadrature_against_prior_importance_sampling():
    """The grid log Z at d = 2 against a plain average of the likelihood over 200,000 prior draws."""
    design, beta, y = cc.logistic_data(2)
    draws = np.random.default_rng(3).standard_normal((200_000, 2))
    eta = draws @ design.T
    log_lik = (y * eta - np.logaddexp(0.0, eta)).sum(axis=1)
    by_prior = special.logsumexp(log_lik) - math.log(len(draws))
    quadrature = cc.logistic_quadrature_log_z(2, points=401)
    assert quadrature == pytest.approx(by_prior, abs=0.02)
    assert cc.logistic_quadrature_log_z(2, points=301) == pytest.approx(quadrature, abs=1e-6)  # converged
    with pytest.raises(ValueError):
        cc.logistic_quadrature_log_z(3)


def test_logistic_problem_density_is_the_quadratures():
    problem = cc.logistic_at(2)
    design, beta, y = cc.logistic_data(2)
    np.testing.assert_array_equal(problem.info["beta"], beta)
    for x in (np.zeros(2), np.array([0.3, -1.2])):
        eta = design @ x
        expected = (y * eta - np.logaddexp(0.0, eta)).sum() + stats.norm.logpdf(x).sum()
        assert float(problem.log_joint(x)) == pytest.approx(expected, rel=1e-5)


def _row(budget, seed, error, *, kind=None, seconds=0.1, timed_out=False):
    return {"problem": "p", "tool": "t", "budget": budget, "seed": seed, "kind": kind or ("cold" if seed == 0 else
            "warm"), "error": None if timed_out else error, "seconds": seconds, "timed_out": timed_out}


def test_stopping_rule():
    labels = ["a", "b", "c"]

    def step(rows, seeds=3, cap=10.0):
        return cc.next_step(cc.cell_rows(rows, "p", "t", seeds), labels, seeds=seeds, cap=cap)

    assert step([]) == ("run", 0, 0)
    rows = [_row("a", 0, 0.5), _row("a", 1, 0.5)]
    assert step(rows) == ("run", 0, 2)
    rows.append(_row("a", 2, 0.5))  # RMSE 0.5: climb
    assert step(rows) == ("run", 1, 0)
    rows += [_row("b", s, 0.05) for s in range(3)]  # RMSE 0.05 < 0.1: reached at rung 1
    assert step(rows) == ("done", "reached", 1)
    assert step(rows, seeds=4) == ("run", 0, 3)  # more seeds planned: the walk resumes at the first rung
    # a warm run over the cap ends the walk, even mid-rung; a slow cold call (compilation) does not
    assert step([_row("a", 0, 0.5, seconds=50.0)]) == ("run", 0, 1)
    assert step([_row("a", 0, 0.5), _row("a", 1, 0.5, seconds=11.0)]) == ("done", "capped", 0)
    assert step([_row("a", 0, None, timed_out=True)]) == ("done", "capped", 0)
    rows = [_row(label, s, 0.2) for label in labels for s in range(3)]
    assert step(rows) == ("done", "ladder", None)
    assert math.isinf(cc.rmse([_row("a", 0, None, timed_out=True)]))


def test_a_rerun_skips_finished_calls_and_the_pages_render(tmp_path, monkeypatch):
    import peer_tools

    calls = []

    def fake_make(tool, problem, budget):
        def run(seed):
            calls.append((tool, cc.budget_label(budget), seed))
            # RMSE falls with the budget: the third rung of each ladder gets under 0.1 nat
            error = {0: 2.0, 1: 0.5}.get(cc.ladders()[tool].index(budget), 0.01) * (-1) ** seed
            return {"log_z": problem.exact + error, "n_evals": 1, "compiled": False}
        return run

    monkeypatch.setattr(peer_tools, "make", fake_make)
    tools = ["pymc", "blackjax"]
    sweep = cc.Sweep(tmp_path, seeds=2, cap=30.0, console=lambda s: None)
    sweep.size("correlated", 2, tools)
    assert len(calls) == 2 * 3 * 2  # two tools, three rungs, two seeds
    assert [c[0] for c in calls[:4]] == ["pymc", "blackjax", "pymc", "blackjax"]  # round-robin
    rows = cc.load_rows(tmp_path / "rows.jsonl")
    assert len(rows) == 12 and {"commit", "clean_tree", "date", "loadavg", "uncommitted"} <= set(rows[0])
    assert [r["kind"] for r in rows[:4]] == ["cold", "cold", "warm", "warm"]

    calls.clear()
    cc.Sweep(tmp_path, seeds=2, cap=30.0, console=lambda s: None).size("correlated", 2, tools)
    assert calls == []  # everything was there

    # an interrupted run: the last two rows lost; the rerun makes exactly those calls
    lines = (tmp_path / "rows.jsonl").read_text().splitlines()
    (tmp_path / "rows.jsonl").write_text("\n".join(lines[:-2]) + "\n")
    cc.Sweep(tmp_path, seeds=2, cap=30.0, console=lambda s: None).size("correlated", 2, tools)
    assert sorted(calls) == sorted((r["tool"], r["budget"], r["seed"]) for r in rows[-2:])

    cc.write_text(tmp_path / "settings.json", json.dumps({"seeds": 2, "cap": 30.0}))
    summary = cc.summarize(cc.load_rows(tmp_path / "rows.jsonl"), seeds=2, cap=30.0)
    pymc = next(s for s in summary if s["tool"] == "pymc")
    assert pymc["outcome"] == "reached" and pymc["budget_0.1"] == "4000" and pymc["budget_1"] == "1000"
    values = cc.page_values(tmp_path)
    assert "d = 2 (the issue's grid" in values["headline"] and "2 seeds per rung" in values["headline"]
    assert "| correlated | d = 2 | pymc |" in values["table"]
