"""Bracketing ``log p(D)`` between variational upper and lower bounds from posterior samples (Ji, Shen, West).

``bracket(samples, log_joint, family=..., key=...)`` fits a mean-field exponential family to the samples by
moment matching and returns the upper bound (Eq. 6), the quasi-optimized lower bound (Eq. 8) and, on request,
the MCSA-optimized lower bound (Eqs. 9-11). For mixtures with exchangeable components,
``bracket(..., labels="z", components=(...))`` uses the label-symmetrized density (:mod:`.symmetry`).
"""

from .bounds import BracketResult, batch_means_stderr, bracket, fit_symmetric, upper_bound_values
from .families import Categorical, Dirichlet, Family, InverseGamma, InverseWishart, MultivariateNormal
from .mean_field import MeanField, fit_mean_field
from .model_draws import bracket_model, posterior_draws_flat
from .numerics import pd_cholesky, pd_inverse, pd_logdet
from .optimize import MCSAInfo, coordinate_ascent, mcsa_diagnostic, mcsa_run, step_sizes
from .samples import as_sample_dict
from .symmetry import LabelSymmetric, align_labels, log_permanent, log_permanent_bruteforce, relabel
from .terms import draw, log_ratios, lower_bound_values

__all__ = [
    "BracketResult", "Categorical", "bracket_model", "posterior_draws_flat",
    "Dirichlet", "Family", "InverseGamma", "InverseWishart", "MCSAInfo",
    "MeanField", "MultivariateNormal", "as_sample_dict", "batch_means_stderr", "bracket", "coordinate_ascent",
    "draw", "fit_mean_field", "pd_cholesky", "pd_inverse", "pd_logdet", "log_ratios", "lower_bound_values",
    "mcsa_diagnostic", "mcsa_run", "step_sizes",
    "upper_bound_values", "LabelSymmetric", "align_labels", "fit_symmetric", "log_permanent",
    "log_permanent_bruteforce", "relabel",
]
