"""Ground truth: closed-form and enumerated log marginal likelihoods used to test everything else."""

from . import grid_toys
from .conjugate import gaussian_mean_log_marginal, linear_regression_log_marginal
from .enumeration import mixture_log_marginal_enumerate
from .jeffreys import JeffreysResult, exact_jeffreys, geometric_log_densities, jeffreys_divergence
from .quadrature import hierarchical_normal_log_marginal, regression_half_normal_scale_log_marginal

__all__ = ["hierarchical_normal_log_marginal", "regression_half_normal_scale_log_marginal",
    "JeffreysResult",
    "exact_jeffreys",
    "geometric_log_densities",
    "grid_toys",
    "jeffreys_divergence",
    "gaussian_mean_log_marginal",
    "linear_regression_log_marginal",
    "mixture_log_marginal_enumerate",
]
