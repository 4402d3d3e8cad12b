"""A bench sweep on a Dask worker in another process gives the in-process rows (float64 carried over)."""

import jax
import pandas as pd
import pytest

from bdmc.experiments import bench
from bdmc.models import GaussianMean

distributed = pytest.importorskip("dask.distributed")

MODEL = GaussianMean(n=5, dim=2)
SETTINGS = dict(estimators=["lw", "ais"], knobs={"lw": [4], "ais": [3]}, trials=3, truth_steps=50, truth_runs=4)
TIMING = ["seconds", "seconds_batch", "compile_seconds"]


def test_a_process_worker_gives_the_in_process_rows_in_the_callers_dtype(tmp_path):
    local = bench.run_bench(jax.random.key(3), MODEL, **SETTINGS)
    # A spawned worker starts in JAX's float32 default; the harness runs each task in the caller's dtype.
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        remote = bench.run_bench(jax.random.key(3), MODEL, client=client, out=tmp_path, **SETTINGS)
    pd.testing.assert_frame_equal(remote.drop(columns=TIMING), local.drop(columns=TIMING), check_exact=True)
    stored = pd.read_csv(tmp_path / bench.CSV_NAME)
    # each row as it finished
    assert sorted(zip(stored["estimator"], stored["knob"], strict=False)) == [("ais", 3), ("lw", 4)]
