"""Experiments built on the estimators: the benchmark harness against BDMC ground truth."""

from .bench import (
    ESTIMATORS,
    BenchSettingsError,
    GroundTruth,
    GroundTruthError,
    connect,
    ground_truth,
    run_bench,
    time_to_rmse,
)

__all__ = ["ESTIMATORS", "BenchSettingsError", "GroundTruth", "GroundTruthError", "connect",
           "ground_truth", "run_bench", "time_to_rmse"]
