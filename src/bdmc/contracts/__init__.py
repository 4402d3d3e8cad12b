"""The contracts every other part of bdmc builds on; this package imports nothing else from bdmc but errors and
caching (its registered function caches).

- :mod:`~bdmc.contracts.model`: the Model protocol, the intermediate densities ``f(x; lam)``, simulation;
- :mod:`~bdmc.contracts.capabilities`: what a model can do beyond the four core methods, as protocols;
- :mod:`~bdmc.contracts.kernel`: the Kernel protocol and its per-step info;
- :mod:`~bdmc.contracts.sampler`: the Sampler protocol (a posterior sampler SBC and the audit run) and its hooks;
- :mod:`~bdmc.contracts.estimate`: the Estimate record, its combination rules, and the estimator protocol
  and registry;
- :mod:`~bdmc.contracts.pairs`: estimator pairs (a lower and an upper estimator that sandwich log p(y)) and
  their registry;
- :mod:`~bdmc.contracts.observed`: the user's observed arrays read into the structure of the model's data;
- :mod:`~bdmc.contracts.nonfinite`: where NaN and +inf log densities are caught and explained.
- :mod:`~bdmc.contracts.step_policy`: what an engine step does beyond weighting, resampling and moving (a
  pilot's adaptation).
"""

from .capabilities import (
                           CAPABILITIES,
                           BICFit,
                           CaseProposal,
                           ChecksData,
                           CollapsedDensity,
                           ConditionalPrior,
                           ConstrainedMoves,
                           ExactEvidence,
                           GaussianPriorBlocks,
                           GibbsConditionals,
                           HostDensity,
                           HostPrior,
                           IndexedConditionals,
                           InitialPoints,
                           JointTerms,
                           LabelSymmetry,
                           NamedCoordinates,
                           NamedValues,
                           NamesTerms,
                           OwnKernel,
                           ReleasesResources,
                           TemperedSimulation,
                           VariationalFamily,
                           capabilities,
                           capability_table,
                           missing_methods,
                           require,
                           supports,
)
from .estimate import (
                           COMBINE_RULES,
                           ESTIMATORS,
                           Estimate,
                           EstimatorInfo,
                           combine_runs,
                           gap,
                           log_harmonic_mean,
                           log_mean_exp,
                           log_mean_exp_stderr,
                           register_estimator,
                           seed_of,
)
from .kernel import Kernel, KernelInfo, ReversibleTransition
from .model import (
                           Model,
                           Simulated,
                           check_array_shape,
                           log_density,
                           log_density_increment,
                           log_predictive,
                           n_cases,
                           prior_and_terms,
                           simulate,
                           validate_data,
                           weighted_sum,
)
from .pairs import PAIRS, EstimatorPair, register_pair, unregister_pair
from .sampler import BatchesReplications, DiagnosedDraws, Sampler, Thinned
from .step_policy import StepPolicy

__all__ = [
    "BICFit", "CAPABILITIES", "CaseProposal", "ChecksData", "CollapsedDensity", "ConditionalPrior", "ConstrainedMoves",
    "COMBINE_RULES", "ESTIMATORS", "Estimate", "EstimatorInfo", "ExactEvidence", "combine_runs", "register_estimator",
    "EstimatorPair", "PAIRS", "register_pair", "unregister_pair",
    "seed_of", "GaussianPriorBlocks", "GibbsConditionals", "IndexedConditionals", "Kernel", "KernelInfo",
    "LabelSymmetry", "HostDensity", "HostPrior", "JointTerms", "InitialPoints", "NamedCoordinates", "NamedValues",
    "ReleasesResources", "Sampler", "BatchesReplications",
    "DiagnosedDraws", "Thinned",
    "Model", "NamesTerms", "OwnKernel", "ReversibleTransition", "Simulated", "TemperedSimulation", "VariationalFamily",
    "capabilities", "capability_table", "check_array_shape", "gap", "log_density", "log_density_increment",
    "log_harmonic_mean", "log_mean_exp", "log_mean_exp_stderr", "log_predictive", "missing_methods", "n_cases",
    "prior_and_terms", "require", "simulate", "supports", "validate_data", "weighted_sum", "StepPolicy",
]
