"""The BREAD paper's real-data experiments: its five models (written in NumPyro, and the regressions also in PyMC
and Stan), their data sets, and the fitted-hyperparameter protocol (see ``docs/real_data.md``)."""

from .cases import CASES, RealDataCase
from .consistency import ForwardConsistency, ReverseAgreement, forward_consistency, reverse_agreement
from .mcmc import PosteriorFit, fit_hyperparameters, posterior_checkpoints
from .models import (
                     ar1,
                     ar1_data,
                     ar1_program,
                     gaussian_mixture,
                     gaussian_mixture_program,
                     linear_regression,
                     linear_regression_program,
                     logistic_regression,
                     logistic_regression_program,
                     matrix_factorization,
                     matrix_factorization_program,
)
from .protocol import RealDataResult, bread_real

__all__ = ["CASES", "ForwardConsistency", "PosteriorFit", "RealDataCase", "RealDataResult", "ReverseAgreement",
           "ar1", "ar1_data", "ar1_program", "bread_real", "fit_hyperparameters", "forward_consistency",
           "gaussian_mixture", "gaussian_mixture_program", "linear_regression", "linear_regression_program",
           "logistic_regression", "logistic_regression_program", "matrix_factorization",
           "matrix_factorization_program", "posterior_checkpoints", "reverse_agreement"]
