"""The five models of the BREAD paper's real-data experiments, written in NumPyro (see ``docs/real_data.md``)."""

from .models import (ar1, ar1_data, ar1_program, gaussian_mixture, gaussian_mixture_program, linear_regression,
                     linear_regression_program, logistic_regression, logistic_regression_program,
                     matrix_factorization, matrix_factorization_program)

__all__ = ["ar1", "ar1_data", "ar1_program", "gaussian_mixture", "gaussian_mixture_program", "linear_regression",
           "linear_regression_program", "logistic_regression", "logistic_regression_program",
           "matrix_factorization", "matrix_factorization_program"]
