"""The logistic regression of the BREAD paper's Pima experiment, as a NumPyro program for ``bdmc audit``."""

from bdmc.realdata.models import logistic_regression_program

__all__ = ["logistic_regression_program"]
