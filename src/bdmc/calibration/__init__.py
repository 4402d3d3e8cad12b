"""Evidence calibration of another tool: its ``log p(y)`` and stated ± on data sets simulated from the model,
against bdmc's ground truth (:func:`calibrate_estimator`), with ready adapters for other tools
(:mod:`bdmc.calibration.adapters`)."""

from .adapters import bdmc_adapter, blackjax_adapter, nested_adapter, normal_prior_transform, pymc_smc_adapter
from .result import Calibration, Coverage, clopper_pearson
from .run import calibrate_estimator, ground_truth

__all__ = ["Calibration", "Coverage", "bdmc_adapter", "blackjax_adapter", "calibrate_estimator", "clopper_pearson",
           "ground_truth", "nested_adapter", "normal_prior_transform", "pymc_smc_adapter"]
