"""Ground truth: closed-form and enumerated log marginal likelihoods used to test everything else."""

from .conjugate import gaussian_mean_log_marginal, linear_regression_log_marginal
from .enumeration import mixture_log_marginal_enumerate

__all__ = [
    "gaussian_mean_log_marginal",
    "linear_regression_log_marginal",
    "mixture_log_marginal_enumerate",
]
