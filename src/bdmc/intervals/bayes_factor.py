"""Certified Bayes factors between two programs on one data set, behind gates that refuse a comparison of unlike
things.

``log BF = log p_A(y) - log p_B(y)``. Each evidence gets :func:`bdmc.evidence`'s interval at ``level / 2``, so both
hold at once with probability at least ``1 - level`` and ``log BF`` lies in ``[lower_A - upper_B, upper_A -
lower_B]``; each side carries its assumption over (a lower side certified from the program's density alone, an
upper side from reverse runs at posterior draws, which holds if those draws are exact).

A Bayes factor is only meaningful when both evidences are of the same observations and each prior integrates to
one. Three gates run before any evidence, each refusing with a :class:`bdmc.DataError` or
:class:`bdmc.errors.ModelComparisonError` that names the difference:

- **the same observations**: the digest (SHA-256 of names, shapes, dtypes and bytes) of the arrays each program's
  likelihood is evaluated on must be equal; a difference is named by array, shape or the cases that differ;
- **the same likelihood terms**: each program's ``log_likelihood`` must return one term per observation, as many
  for A as for B (110 years against 60 is refused even where a digest could not see it);
- **normalized priors**: :func:`bdmc.checks.prior_normalization.prior_normalization` on each program; a prior that
  does not integrate to one (a half-normal without its 2, a truncation without its normalizer, a ``~`` that dropped
  a constant of the prior) shifts its evidence and the Bayes factor by its log integral.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from ..checks.prior_normalization import NOT_NORMALIZED, prior_normalization
from ..contracts.model import validate_data
from ..errors import DataError, ModelComparisonError, OptionError
from .run import evidence


@dataclass(frozen=True)
class BayesFactor:
    """An interval on ``log BF = log p_A(y) - log p_B(y)`` and what it rests on.

    Attributes
    ----------
    lower, upper : float
        ``log BF`` lies in ``[lower, upper]`` with probability at least ``1 - level`` (given each upper side's
        assumption).
    estimate : float
        The difference of the two evidence estimates.
    level : float
    digest : str
        The SHA-256 of the observations both programs were evaluated on.
    num_cases : int
        Their number of likelihood terms.
    evidence_a, evidence_b : EvidenceResult
    prior_checks : dict
        Each program's prior-normalization check (``None`` where skipped).
    names : tuple of str
    """

    lower: float
    upper: float
    estimate: float
    level: float
    digest: str
    num_cases: int
    evidence_a: Any = field(repr=False)
    evidence_b: Any = field(repr=False)
    prior_checks: dict = field(default_factory=dict, repr=False)
    names: tuple = ("A", "B")

    @property
    def favours(self) -> str | None:
        """The program the data favour at the stated level (None when the interval contains 0)."""
        if self.lower > 0:
            return self.names[0]
        if self.upper < 0:
            return self.names[1]
        return None

    def summary(self) -> str:
        """The interval, the estimate, what it rests on and which program the data favour."""
        a, b = self.names
        verdict = (f"the data favour {self.favours}" if self.favours else
                   "the interval contains 0: the data cannot tell the two programs apart at this level")
        lines = [f"log BF({a} : {b}) in [{self.lower:.3f}, {self.upper:.3f}] with probability >= "
                 f"{1 - self.level:g}, estimate {self.estimate:.3f}; {verdict}",
                 f"{a}: log p(y) in [{self.evidence_a.lower.value:.3f}, {self.evidence_a.upper.value:.3f}]; "
                 f"{b}: [{self.evidence_b.lower.value:.3f}, {self.evidence_b.upper.value:.3f}]; {self._rests_on()}",
                 f"the same {self.num_cases} observations (sha256 {self.digest[:16]}); priors: "
                 + ", ".join(f"{n} {_prior_word(self.prior_checks.get(n))}" for n in self.names)]
        return "\n".join(lines)

    def _rests_on(self) -> str:
        # Each evidence says what its upper side assumes; said once when both programs' draws came the same way.
        rests_a, rests_b = self.evidence_a.upper_rests_on, self.evidence_b.upper_rests_on
        if rests_a == rests_b:
            return f"both upper sides rest on {rests_a}"
        return f"{self.names[0]}'s upper side rests on {rests_a}; {self.names[1]}'s on {rests_b}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"lower": self.lower, "upper": self.upper, "estimate": self.estimate, "level": self.level,
                "digest": self.digest, "num_cases": self.num_cases, "names": list(self.names),
                "favours": self.favours, "evidence": {self.names[0]: self.evidence_a.to_dict(),
                                                      self.names[1]: self.evidence_b.to_dict()},
                "prior_checks": {n: None if c is None else {"verdict": c.verdict, "estimate": c.estimate,
                                                            "interval": [c.interval_low, c.interval_high]}
                                 for n, c in self.prior_checks.items()}}


def _prior_word(check) -> str:
    return "not checked" if check is None else f"normalized (log integral {check.estimate:+.3f})"


def observation_digest(data) -> str:
    """SHA-256 of a data set's arrays: their names (pytree paths), shapes, dtypes and bytes."""
    digest = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_flatten_with_path(data)[0]:
        array = np.ascontiguousarray(np.asarray(leaf))
        digest.update(jax.tree_util.keystr(path).encode())
        digest.update(f"{array.shape}{array.dtype.str}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _leaves(data) -> dict:
    return {jax.tree_util.keystr(p): np.asarray(v) for p, v in jax.tree_util.tree_flatten_with_path(data)[0]}


def same_observations(data_a, data_b, *, names=("A", "B")) -> str:
    """The shared digest of two data sets, or a DataError naming the first difference (array, shape, cases)."""
    digest_a, digest_b = observation_digest(data_a), observation_digest(data_b)
    if digest_a == digest_b:
        return digest_a
    leaves_a, leaves_b = _leaves(data_a), _leaves(data_b)
    a, b = names
    if set(leaves_a) != set(leaves_b):
        raise DataError(f"{a} and {b} were not evaluated on the same observations: {a} has arrays "
                        f"{sorted(leaves_a)}, {b} has {sorted(leaves_b)}")
    for name in leaves_a:
        x, y = leaves_a[name], leaves_b[name]
        if x.shape != y.shape:
            raise DataError(f"{a} and {b} were not evaluated on the same observations: array {name or 'data'} has "
                            f"shape {x.shape} in {a} and {y.shape} in {b}")
        if x.dtype != y.dtype and np.array_equal(x, y):
            continue
        differ = np.flatnonzero(np.any((x != y).reshape(x.shape[0], -1), axis=1)) if x.ndim else np.array([0])
        if differ.size:
            shown = ", ".join(map(str, differ[:5])) + (", ..." if differ.size > 5 else "")
            raise DataError(f"{a} and {b} were not evaluated on the same observations: array {name or 'data'} "
                            f"differs in {differ.size} of {x.shape[0] if x.ndim else 1} cases (cases {shown})")
    return digest_a


def compare(key, model_a, model_b, data, *, data_b=None, level: float = 0.01, draws_a=None, draws_b=None,
            check_prior: bool = True, tolerance: float = 0.5, max_seconds: float | None = None,
            names: tuple[str, str] = ("A", "B"), progress: Any = "auto") -> BayesFactor:
    """A certified interval on the log Bayes factor of two programs on one data set, behind three gates.

    Parameters
    ----------
    key : PRNG key
    model_a, model_b
        bdmc Models: built-in models or programs in any supported PPL (:mod:`bdmc.ppl`).
    data
        The observed data, in A's structure (for a PPL program, ``{observed site: array}``).
    data_b : optional
        The data in B's structure, when it differs from A's (default: ``data``); the gate checks it holds the
        same observations.
    level : float
        The interval fails with probability at most ``level`` (each evidence at ``level / 2``).
    draws_a, draws_b : optional
        Posterior draws of each program for :func:`bdmc.evidence` (None: NUTS).
    check_prior : bool
        Run the prior-normalization gate (recorded as not checked when False).
    tolerance, max_seconds
        Each evidence's target width and time budget.
    names : (str, str)
        The programs' names in messages.

    Returns
    -------
    BayesFactor

    Raises
    ------
    bdmc.DataError
        The two programs were not evaluated on the same observations (named: array, shape or cases).
    bdmc.errors.ModelComparisonError
        Their likelihoods have different numbers of terms, or a prior does not integrate to one.
    """
    if not 0 < level < 1:
        raise OptionError(f"level must lie in (0, 1), got {level}")
    a, b = names
    data_a = validate_data(model_a, data)
    data_b = validate_data(model_b, data if data_b is None else data_b)
    digest = same_observations(data_a, data_b, names=names)
    k_prior_a, k_prior_b, k_a, k_b = jax.random.split(key, 4)
    cases = {}
    for name, model, observed, k in ((a, model_a, data_a, k_a), (b, model_b, data_b, k_b)):
        latent = model.sample_prior(k)
        cases[name] = int(np.size(model.log_likelihood(latent, observed)))
    if cases[a] != cases[b]:
        raise ModelComparisonError(f"the likelihoods of {a} and {b} are not over the same observations: {a} has "
                                   f"{cases[a]} likelihood terms, {b} has {cases[b]}")
    checks = {a: None, b: None}
    if check_prior:
        for name, model, k in ((a, model_a, k_prior_a), (b, model_b, k_prior_b)):
            check = prior_normalization(k, model, level=level)
            if check.verdict == NOT_NORMALIZED:
                raise ModelComparisonError(
                    f"the prior of {name} does not integrate to one: log of its integral {check.estimate:+.3f} "
                    f"nats (in [{check.interval_low:+.3f}, {check.interval_high:+.3f}] at level {level:g}), which "
                    f"shifts its evidence and the Bayes factor by as much; write its normalizing constant (a "
                    "half-normal's log 2, a truncation's normalizer), or pass check_prior=False (--no-check-prior) "
                    "to compare anyway")
            checks[name] = check
    options = {"level": level / 2, "tolerance": tolerance, "max_seconds": max_seconds, "progress": progress}
    ev_a = evidence(k_a, model_a, data_a, draws=draws_a, **options)
    ev_b = evidence(k_b, model_b, data_b, draws=draws_b, **options)
    for name, ev in ((a, ev_a), (b, ev_b)):
        if ev.crossed:
            raise ModelComparisonError(f"no interval on the evidence of {name}: its certified sides crossed "
                                       f"({ev.note}); no Bayes factor can rest on it")
    return BayesFactor(lower=ev_a.lower.value - ev_b.upper.value, upper=ev_a.upper.value - ev_b.lower.value,
                       estimate=ev_a.estimate - ev_b.estimate, level=level, digest=digest, num_cases=cases[a],
                       evidence_a=ev_a, evidence_b=ev_b, prior_checks=checks, names=(a, b))
