"""The peers of the posteriordb evidence table (``benchmarks/posteriordb_peers.py``) at tiny budgets.

On eight schools (non-centred), whose log p(y) is known by quadrature, each peer's row is an estimate near it;
the centred program's hierarchical prior is refused to nautilus with the reason; the page's comparison with
bdmc's interval says inside / below / above and whether the ± reaches it.
"""

import importlib.util
import math
import sys
from pathlib import Path

import pytest

pytest.importorskip("numpyro")
pytest.importorskip("blackjax")
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import posteriordb_peers as peers  # noqa: E402
from posteriordb import exact_log_evidence  # noqa: E402
from posteriordb_models import load  # noqa: E402

pytestmark = pytest.mark.float64
NAME = "eight_schools-eight_schools_noncentered"
TINY = {**peers.DEFAULTS, "particles": 64, "mcmc_steps": 2, "n_live": 100, "max_nautilus_seconds": 60.0}


def exact():
    return exact_log_evidence(NAME, load(NAME)[0])


@pytest.mark.parametrize(("peer", "tolerance"), [("bridge", 0.3), ("blackjax-smc", 1.5),
                                                  pytest.param("nautilus", 1.5, marks=pytest.mark.slow)])
def test_each_peer_row_estimates_log_evidence(peer, tolerance):
    if peer == "nautilus":
        pytest.importorskip("nautilus")
    rows = list(peers.peer_rows(NAME, peer, [0], TINY))
    assert [(r["posterior"], r["peer"], r["seed"], r["status"]) for r in rows] == [(NAME, peer, 0, "ok")]
    row = rows[0]
    assert math.isfinite(row["seconds"]) and row["seconds"] >= 0
    assert abs(row["log_z"] - exact()) < tolerance, (row["log_z"], exact())
    if peer == "bridge":
        assert 0 < row["stderr"] < 0.2 and row["num_draws"] >= 100


def test_done_seeds_are_not_rerun():
    assert list(peers.peer_rows(NAME, "bridge", [0, 1], TINY, done={0, 1})) == []


def test_a_hierarchical_prior_is_refused_to_nautilus_with_its_reason():
    pytest.importorskip("nautilus")
    rows = list(peers.peer_rows("eight_schools-eight_schools_centered", "nautilus", [0], TINY))
    assert len(rows) == 1 and rows[0]["seed"] is None
    assert "hierarchical" in rows[0]["status"] and "'theta'" in rows[0]["status"]
    # the non-centred program's prior is a product of fixed univariate ones: 8 + 1 + 1 parameters
    prior, layout = peers.nautilus_prior(peers.setup(NAME))
    assert prior is not None and prior.dimensionality() == 10
    assert [name for name, _ in layout] == ["theta_trans", "mu", "tau"]


def test_the_page_compares_each_mean_with_the_interval():
    spec = importlib.util.spec_from_file_location("peers_values", BENCHMARKS / "pages/posteriordb/peers_values.py")
    values = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(values)

    def rows(posterior, peer, estimates, stderr=None):
        return [{"posterior": posterior, "peer": peer, "seed": i, "status": "ok", "log_z": z, "seconds": 1.0,
                 **({"stderr": stderr} if stderr is not None else {})} for i, z in enumerate(estimates)]

    stored = (rows("a", "bridge", [-10.0, -10.2], stderr=0.3) + rows("a", "blackjax-smc", [-13.0, -12.0])
              + rows("b", "bridge", [1.0, 1.1], stderr=0.01) + rows("c", "bridge", [0.0])
              + [{"posterior": "a", "peer": "nautilus", "seed": None, "status": "skipped: why"}])
    out = {(r["posterior"], r["peer"]): r for r in values.summary(stored, {"a": (-10.5, -9.5), "b": (0.0, 0.5)})}
    assert out["a", "bridge"]["where"] == "inside" and out["a", "bridge"]["inside"] == 2
    assert out["a", "bridge"]["reaches"] is None
    # below by 2 with an sd over seeds of 0.71: not within twice it
    assert out["a", "blackjax-smc"]["where"] == "below" and out["a", "blackjax-smc"]["reaches"] is False
    # above by 0.55 with its own stderr 0.01: does not reach; with stderr 0.3 it would
    assert out["b", "bridge"]["where"] == "above" and out["b", "bridge"]["reaches"] is False
    again = values.summary(rows("b", "bridge", [1.0, 1.1], stderr=0.3), {"b": (0.0, 0.5)})
    assert again[0]["reaches"] is True
    assert out["c", "bridge"]["where"] is None and out["c", "bridge"]["interval"] is None
    assert out["a", "nautilus"]["runs"] == 0 and out["a", "nautilus"]["note"] == "skipped: why"
