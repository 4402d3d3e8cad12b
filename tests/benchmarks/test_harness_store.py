"""The benchmarks' row store: stamped rows, NumPy and JAX values as JSON, and a torn line never buried."""

import jax.numpy as jnp
import numpy as np

from tests.helpers import import_benchmark


def test_rows_are_stamped_and_round_trip(tmp_path):
    store = import_benchmark("harness.store")
    path = tmp_path / "rows.jsonl"
    store.append_row(path, {"value": np.float64(1.5), "draws": jnp.arange(3), "commit": "given"})
    (row,) = store.load_rows(path)
    assert row["value"] == 1.5 and row["draws"] == [0, 1, 2]
    assert row["commit"] == "given"  # a row's own field wins over the stamp
    assert {"clean_tree", "date", "load", "machine"} <= set(row)


def test_a_torn_last_line_is_cut_before_the_next_row(tmp_path):
    store = import_benchmark("harness.store")
    path = tmp_path / "rows.jsonl"
    store.append_row(path, {"i": 1})
    with open(path, "ab") as f:
        f.write(b'{"i": 2, "unfinish')  # a writer killed mid-line
    store.append_row(path, {"i": 3})
    assert [r["i"] for r in store.load_rows(path)] == [1, 3]
    assert path.read_bytes().endswith(b"\n") and path.read_bytes().count(b"\n") == 2
