"""Low-rank factorization Y = U V + noise (GG+G, BDMC paper Sec. 6), with fixed or integrated variances.

Modules
-------
``conditionals``
    The Gaussian conditionals of U and V (the Gibbs blocks) and the row likelihood with U integrated out.
``model``
    :class:`LowRank` and the base :class:`~bdmc.models.low_rank.model.FactorModel` it shares with
    :class:`LowRankHyper`: sampling, densities, data checks, BIC and exact evidence on tiny instances.
``hyper``
    :class:`LowRankHyper`: the three variances integrated out, with their conjugate Gibbs block.
``nested``
    :class:`ConstrainedCoordinateGibbs`, nested sampling's move (``LowRank.constrained_kernel()``).
``vb``
    The mean-field variational family (``LowRankVBParams`` and its coordinate updates).
"""

from .conditionals import LOG_2PI, marginal_row_loglik
from .hyper import VARIANCE_NAMES, LowRankHyper
from .model import MAX_QUADRATURE_DIM, LowRank
from .nested import ConstrainedCoordinateGibbs
from .vb import LowRankVBParams

__all__ = ["ConstrainedCoordinateGibbs", "LOG_2PI", "LowRank", "LowRankHyper", "LowRankVBParams",
           "MAX_QUADRATURE_DIM", "VARIANCE_NAMES", "marginal_row_loglik"]
