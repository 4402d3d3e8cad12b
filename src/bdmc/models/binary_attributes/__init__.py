"""The binary attributes model (BG + G) of the BDMC paper, Sec. 6, with the feature matrix A collapsed out.

``z_ik ~ Bernoulli(pi_k)``, ``a_kj ~ N(0, sigma_a^2)``, ``y_ij ~ N(sum_k z_ik a_kj, sigma_n^2)``. Only the
binary matrix Z is kept as a latent; A is integrated analytically. With per-row weights lam (W = diag(lam))
every column a_j of A has the same posterior precision ``P = Z^T W Z / sigma_n^2 + I / sigma_a^2`` and

    log INT p(A) prod_i N(y_i; z_i A, sigma_n^2 I)^{lam_i} dA
        = sum_i lam_i [-D/2 log(2 pi sigma_n^2) - |y_i|^2 / (2 sigma_n^2)]
          - D K log sigma_a - D/2 log|P| + 1/2 sum_j b_j^T P^{-1} b_j,      b_j = Z^T W y_j / sigma_n^2.

Internally we write ``M = Z^T W Z + r I`` with ``r = sigma_n^2 / sigma_a^2`` (so ``P = M / sigma_n^2``) and
``H = Z^T W Y``. The collapsed Gibbs sweep follows Doshi-Velez and Ghahramani (2009): it carries ``M^{-1}``
and ``H``, removes a row with a rank-one downdate, scores each bit from the tempered predictive of that row
and adds the row back with a rank-one update.

``BinaryAttributesHyper`` puts the hyperparameters in the model (pi ~ Beta, collapsed; both variances
~ InvGamma, latent) for cross-model comparisons (paper, Table 1).

Modules
-------
``model``
    :class:`BinaryAttributes`: sampling, the collapsed density, data checks, conditionals, predictive, BIC
    and exact evidence.
``gibbs``
    The rank-one statistics, the collapsed bit sweep, its transition density and :class:`CollapsedBitSweep`.
``hyper``
    :class:`BinaryAttributesHyper` and its kernel :class:`HyperSweep`.
``vb``
    The mean-field variational family (``BinaryVBParams`` and its coordinate updates).
"""

from .gibbs import CollapsedBitSweep, SufficientStats
from .hyper import BinaryAttributesHyper, HyperSweep
from .model import LOG_2PI, MAX_ENUMERATED_BITS, BinaryAttributes, all_binary_rows
from .vb import BinaryVBParams

__all__ = ["BinaryAttributes", "BinaryAttributesHyper", "BinaryVBParams", "CollapsedBitSweep", "HyperSweep",
           "LOG_2PI", "MAX_ENUMERATED_BITS", "SufficientStats", "all_binary_rows"]
