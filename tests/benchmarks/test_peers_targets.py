"""The peers page's targets table: each cell says a ratio only where both bdmc and a peer reached the threshold,
and otherwise who did."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def peers_values():
    spec = importlib.util.spec_from_file_location("peers_values", ROOT / "benchmarks" / "pages" / "peers" / "values.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def warm(problem, tool, budget, errors, seconds):
    """A cell's first (cold) call and its warm calls, with the given errors."""
    return [{"problem": problem, "tool": tool, "budget": budget, "kind": "cold" if i == 0 else "warm",
             "seconds": seconds * (10 if i == 0 else 1), "error": e, "settings": {}} for i, e in enumerate(errors)]


def test_cells_name_who_reached_the_threshold(tmp_path):
    rows = (warm("regression", "bdmc-tsmc", "16x30", [0.5, -0.5, 0.5], 0.2)  # < 1 nat, not < 0.1
            + warm("regression", "blackjax", "64", [0.05, -0.05, 0.05], 0.4)  # both thresholds
            + warm("schools", "bdmc-tsmc", "16x30", [0.05, -0.05, 0.05], 0.6)  # both thresholds
            + warm("schools", "blackjax", "64", [0.5, -0.5, 0.5], 0.3))  # < 1 nat only
    (tmp_path / "peers.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cold = [{"problem": p, "tool": t, "budget": b, "kind": k, "seconds": s}
            for p, t, b, s in (("regression", "bdmc-tsmc", [16, 30], 3.0), ("regression", "blackjax", 64, 2.0),
                               ("schools", "bdmc-tsmc", [16, 30], 3.0), ("schools", "blackjax", 64, 2.0))
            for k in ("cold-nocache", "cold-cache", "cold-rerun")]
    (tmp_path / "cold.jsonl").write_text("\n".join(json.dumps(r) for r in cold) + "\n")
    values = peers_values()
    cell = lambda target, problem: values._target_cell(tmp_path, target, problem)  # noqa: E731
    assert cell("w1", "regression") == "**0.50x**"  # 0.2 s against 0.4 s
    assert cell("w01", "regression") == "bdmc did not reach it"
    assert cell("w01", "schools") == "no peer reached it; bdmc did (bdmc-tsmc 16x30, 0.60 s)"
    assert cell("w1", "pima") == "no tool reached it"
    assert cell("nc1", "regression") == "1.50x"  # cold: 3 s against 2 s, not bold
    assert cell("nc01", "schools") == "no peer reached it"
    table = values.targets_table(tmp_path)
    warm_1 = next(line for line in table.splitlines() if line.startswith("| warm, RMSE < 1 nat"))
    assert warm_1.endswith("| on 1 of 2 |")  # regression 0.50x met; schools 2.00x missed
