"""Decoder-based generative models (Wu et al. 2017): per-image AIS, reverse AIS and BDMC.

The decoder model and its per-image evaluation; training and the comparison estimators live beside them.
"""

from .ais import EncoderStart, ImageEstimates, ais_log_likelihood, reverse_ais_log_likelihood
from .bdmc import GapResult, bdmc_gap
from .model import (
                    DecoderData,
                    DecoderModel,
                    EncoderData,
                    EncoderStartModel,
                    linear_gaussian,
                    linear_gaussian_log_marginal,
                    linear_gaussian_posterior,
                    simulate_images,
)
from .rate_distortion import RateDistortion, linear_gaussian_rate_distortion
from .sigma import SigmaSweep, tune_sigma

__all__ = [
    "DecoderData", "DecoderModel", "EncoderData", "EncoderStart", "EncoderStartModel", "GapResult",
    "ImageEstimates", "SigmaSweep", "ais_log_likelihood", "bdmc_gap", "linear_gaussian",
    "linear_gaussian_log_marginal", "linear_gaussian_posterior", "linear_gaussian_rate_distortion",
    "RateDistortion", "reverse_ais_log_likelihood",
    "simulate_images", "tune_sigma",
]
