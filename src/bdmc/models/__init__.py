"""The Model contract and built-in models."""

from ..errors import OptionError
from .binary_attributes import BinaryAttributes, BinaryAttributesHyper
from .clustering import Clustering, ClusteringHyper
from .correlated_gaussian import CorrelatedGaussianMean
from .finite_mixture import FiniteMixture
from .gaussian_mean import GaussianMean
from .linear_regression import LinearRegression
from .low_rank import LowRank, LowRankHyper
from .niw_mixture import NIWMixture

REGISTRY = {
    "gaussian-mean": GaussianMean,
    "correlated-gaussian": CorrelatedGaussianMean,
    "linear-regression": LinearRegression,
    "finite-mixture": FiniteMixture,
    "clustering": Clustering,
    "clustering-hyper": ClusteringHyper,
    "low-rank": LowRank,
    "low-rank-hyper": LowRankHyper,
    "binary": BinaryAttributes,
    "binary-hyper": BinaryAttributesHyper,
}


def get_model(name: str, **options):
    """Build a built-in model by its registry name."""
    try:
        cls = REGISTRY[name]
    except KeyError:
        raise OptionError(f"unknown model {name!r}; choose one of {sorted(REGISTRY)}") from None
    return cls(**options)


__all__ = ["BinaryAttributes", "BinaryAttributesHyper", "Clustering", "ClusteringHyper", "CorrelatedGaussianMean",
           "FiniteMixture", "GaussianMean", "LinearRegression", "LowRank", "LowRankHyper", "NIWMixture", "REGISTRY",
           "get_model"]
