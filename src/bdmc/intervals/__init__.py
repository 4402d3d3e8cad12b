"""Two-sided intervals on log p(y) of a data set (:func:`bdmc.evidence`): certified bounds from independent runs
and posterior draws.

- :mod:`~bdmc.intervals.bounds`: the certified lower and upper bounds of independent runs (the extreme of the runs
  and Markov's inequality, the tighter at a split level);
- :mod:`~bdmc.intervals.draws`: the user's posterior draws read onto the model's latent space, checked (and NUTS
  draws when none are given);
- :mod:`~bdmc.intervals.run`: the escalation, forward runs against reverse runs from the draws, until the interval
  is narrow; :mod:`~bdmc.intervals.result`: what it returns.
"""

from .bounds import CertifiedBound, certified_lower, certified_upper
from .draws import PosteriorDraws, check_draws, nuts_draws, posterior_draws
from .result import EvidenceResult, EvidenceRound
from .run import BoundsCrossedWarning, DrawsCheckWarning, evidence

__all__ = ["BoundsCrossedWarning", "CertifiedBound", "DrawsCheckWarning", "EvidenceResult", "EvidenceRound",
           "PosteriorDraws", "certified_lower", "certified_upper", "check_draws", "evidence", "nuts_draws",
           "posterior_draws"]
