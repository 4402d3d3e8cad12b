"""The clustering model MG+G of the BDMC paper (Sec. 6), with the cluster centres integrated out.

``z_i ~ Categorical(pi)``, ``theta_kj ~ N(0, sigma_theta^2)``, ``y_ij ~ N(theta_{z_i j}, sigma_noise^2)``.
The latent state keeps only the assignments ``z``; every computation works with the tempered sufficient
statistics of each cluster under per-row likelihood weights ``lam``:
``W_k = sum_{i in k} lam_i``, ``S_k = sum_{i in k} lam_i y_i`` and ``Q_k = sum_{i in k} lam_i |y_i|^2``.
Per dimension, completing the square in theta gives

``log INT N(theta; 0, s^2) prod_i N(y_i; theta, sigma^2)^{lam_i} dtheta
= -W/2 log(2 pi sigma^2) - Q/(2 sigma^2) - log s - log(P)/2 + (S / sigma^2)^2 / (2 P)``,
``P = 1/s^2 + W/sigma^2``, which is exactly 0 at ``W = S = Q = 0`` (the density is normalized at lam = 0).

:class:`Clustering` fixes pi and both variances (the paper's experiments); :class:`ClusteringHyper` integrates
them out (Dirichlet and inverse-gamma priors, the paper's footnote 6). Both use the collapsed Gibbs sweep
:func:`collapsed_gibbs_sweep`.

Modules
-------
``statistics``
    Tempered cluster statistics and the collapsed likelihood of a cluster.
``gibbs``
    The collapsed Gibbs sweep, its transition density and the :class:`CollapsedGibbs` kernel.
``model``
    :class:`Clustering`: sampling, densities, data checks, exact evidence, BIC and the Gibbs conditionals.
``hyper``
    :class:`ClusteringHyper` and the slice sampler that moves its log-variances.
``vb``
    The mean-field variational family of :class:`Clustering`.
"""

from .gibbs import CollapsedGibbs, collapsed_gibbs_log_transition, collapsed_gibbs_sweep
from .hyper import ClusteringHyper, log_inverse_gamma_of_log, slice_sample
from .model import Clustering
from .statistics import (
                         LOG_2PI,
                         chain_rule_terms,
                         cluster_stats,
                         collapsed_cluster_term,
                         predictive_gain,
                         sample_tempered_data,
)

__all__ = ["Clustering", "ClusteringHyper", "CollapsedGibbs", "LOG_2PI", "chain_rule_terms", "cluster_stats",
           "collapsed_cluster_term", "collapsed_gibbs_log_transition", "collapsed_gibbs_sweep",
           "log_inverse_gamma_of_log", "predictive_gain", "sample_tempered_data", "slice_sample"]
