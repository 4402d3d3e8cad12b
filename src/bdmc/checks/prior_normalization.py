"""Does a program's prior density integrate to one? Bounded by BDMC itself, from its simulator.

A program's ``log_prior`` may lose a constant: a half-normal or half-Cauchy on a ``<lower=0>`` parameter in Stan
has half the mass its density says (``log 2`` per parameter), a truncated prior without its truncation term,
``~`` statements that drop constants. Every evidence of that program is then off by the same amount, and a
Bayes factor against another program is wrong. Sampling is blind to it; BDMC is not.

The path runs from a reference ``q`` (a Student-t on the unconstrained space fitted to simulator draws, widened:
normalizer 1) to the program's prior density ``pi`` (normalizer ``c = int pi``, 1 when it is normalized), run in
the reference's whitened coordinates ``z = L^-1 (x - m)`` (:class:`WhitenedPriorPath`: ``q`` becomes the standard
Student-t and ``pi`` gains the constant Jacobian ``|L|``, so every weight ``pi / q`` is unchanged; the fitted ``m``
and ``L`` travel as the runs' data, so a program's runs compile once, whatever the fit). Forward AIS from ``q`` gives
``exp(L)`` with
mean ``c``; reverse AIS from exact draws of ``pi / c`` (the simulator's prior draws, exact whatever constant the
density lost) gives ``exp(-U)`` with mean ``1 / c``. So ``log c`` lies between them:

- **certified** (Markov, each side at ``level / 2``): ``log c`` in ``[L - b, U + b]``, ``b = log(2 / level)``;
  loose by ``b`` (5.3 nats at 0.01), it catches only large losses;
- **the verdict** (independent runs on each side, a t-interval of each side's mean log weight, whose expectation
  lies below / above ``log c`` by Jensen): ``log c`` in ``[mean_f - t se_f, mean_r + t se_r]``, at level ``level``
  asymptotically. Zero outside it: the prior is not normalized, and the middle of the two sides' combined runs
  (``log mean exp(L)`` and ``-log mean exp(-U)``, which a forward run with a weight of almost 0 does not drag
  down) estimates by how much.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jax.scipy.special import gammaln
from scipy import stats

from ..caching import CompiledCache
from ..contracts.capabilities import NamesTerms, supports
from ..contracts.estimate import log_harmonic_mean, log_mean_exp
from ..core.ais import forward_ais, reverse_ais
from ..core.pilot import tune
from ..errors import BDMCError
from ..kernels import HMC

NORMALIZED, NOT_NORMALIZED = "normalized", "not normalized"
ADVICE = ("A prior that does not integrate to one shifts every log p(y) of the program by the same amount, so a "
          "Bayes factor against another program is wrong. In Stan: a half-normal or half-Cauchy on a <lower=0> "
          "parameter needs its truncation term (target += normal_lpdf(s | 0, 1) - normal_lccdf(0 | 0, 1), or "
          "the T[0, ] suffix), as does any truncated prior; `~` statements drop constant terms (write "
          "target += ..._lpdf(...) for an evidence); a hand-written transform needs its log Jacobian.")


@dataclass(frozen=True, eq=False)
class WhitenedPriorPath:
    """The path from a Student-t reference to a program's prior density, in the reference's whitened coordinates.

    The latent is ``z`` (``dim`` coordinates), the point ``x = m + L z`` of the program's unconstrained space
    (flattened in ``ravel_pytree`` order). The path's "prior" is the standard multivariate Student-t with ``df``
    degrees of freedom (``q`` in ``z``), and its one "likelihood" term ``log pi(m + L z) + log|L| - log q(z)``:
    at ``lam = 1`` the target is ``pi`` carried to ``z``, with the same normalizer ``c``. The data are the reference
    ``{"mean": m, "scale_tril": L}``, arguments of the compiled runs rather than constants in them, so one
    program's audits reuse one compiled pilot and one compiled run. Hashed by identity (:func:`whitened_path`
    keeps one per program).
    """

    model: Any
    dim: int
    df: float = 5.0

    @functools.cached_property
    def _unravel(self):
        like = jax.eval_shape(self.model.sample_prior, jax.random.key(0))
        return ravel_pytree(jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), like))[1]

    def sample_prior(self, key):
        """An exact draw from the standard Student-t."""
        dtype = jnp.result_type(float)
        k_normal, k_chi = jax.random.split(key)
        z = jax.random.normal(k_normal, (self.dim,), dtype)
        chi2 = 2.0 * jax.random.gamma(k_chi, self.df / 2.0, dtype=dtype)
        return z / jnp.sqrt(chi2 / self.df)

    def sample_data(self, key, latent):
        """Refused: the path's data are the fitted reference (:func:`prior_normalization` passes them)."""
        raise BDMCError("the data of a WhitenedPriorPath are its reference {'mean': m, 'scale_tril': L}")

    def log_prior(self, z):
        """The standard Student-t's normalized log density."""
        d, df = self.dim, self.df
        return (gammaln((df + d) / 2) - gammaln(df / 2) - 0.5 * d * jnp.log(df * jnp.pi)
                - 0.5 * (df + d) * jnp.log1p(jnp.sum(z**2) / df))

    def log_likelihood(self, z, data):
        """One term: ``log pi(m + L z) + log|L| - log q(z)``."""
        tril = data["scale_tril"]
        x = data["mean"] + tril @ z
        return jnp.atleast_1d(self.model.log_prior(self._unravel(x)) + jnp.sum(jnp.log(jnp.diag(tril)))
                              - self.log_prior(z))

    def describe_nonfinite_term(self, z, data, term: str, case: int | None) -> str:
        """Name a NaN or +inf term as the program's: the path's one "likelihood" term is the program's prior
        density (a NaN in a prior site must not read as ``log_likelihood case 0``), its "prior" the reference."""
        if term != "log_likelihood":
            return f"{term} of the Student-t reference"
        x = self._unravel(data["mean"] + data["scale_tril"] @ z)
        inner = (self.model.describe_nonfinite_term(x, None, "log_prior", None) if supports(self.model, NamesTerms)
                 else "log_prior")
        return f"the program's {inner}, at the reference's point m + L z"

    def __repr__(self):
        return f"WhitenedPriorPath({self.model!r}, Student-t df={self.df:g} on {self.dim} coordinates)"


_PATHS = CompiledCache("prior-normalization paths")


def whitened_path(model, dim: int, df: float) -> WhitenedPriorPath:
    """The one :class:`WhitenedPriorPath` of ``(model, dim, df)``: the compiled runs are cached by its identity."""
    return _PATHS.get_or_build((model, int(dim), float(df)), lambda: WhitenedPriorPath(model, int(dim), float(df)))[0]


@dataclass(frozen=True)
class PriorNormalization:
    """How far a program's prior density is from integrating to one, in nats (``log c``; 0 when normalized).

    Attributes
    ----------
    verdict : {"normalized", "not normalized"}
        Zero inside or outside the t-interval ``[interval_low, interval_high]`` (asymptotic level ``level``).
    estimate : float
        The estimate of ``log c`` (``-log 2 = -0.69`` for one half-normal without its normalizer): the middle of
        the forward runs' ``log mean exp(L)`` and the reverse runs' ``-log mean exp(-U)``.
    interval_low, interval_high : float
        The t-interval on ``log c`` from the forward and reverse means.
    certified_low, certified_high : float
        Markov's interval (each side at ``level / 2``): holds with probability ``1 - level`` whatever the kernel.
    forward_mean, reverse_mean, forward_stderr, reverse_stderr : float
    num_steps, num_runs : int
    level : float
    """

    verdict: str
    estimate: float
    interval_low: float
    interval_high: float
    certified_low: float
    certified_high: float
    forward_mean: float
    reverse_mean: float
    forward_stderr: float
    reverse_stderr: float
    num_steps: int
    num_runs: int
    level: float
    details: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def gap(self) -> float:
        """``reverse_mean - forward_mean``: how tight the bracket is (large: run longer)."""
        return self.reverse_mean - self.forward_mean

    def summary(self) -> str:
        text = (f"log of the prior's integral {self.estimate:+.3f} nats, in [{self.interval_low:+.3f}, "
                f"{self.interval_high:+.3f}] at level {self.level:g} (forward and reverse AIS from a reference "
                f"fitted to simulator draws, T = {self.num_steps}, {self.num_runs} runs each)")
        if self.verdict == NOT_NORMALIZED:
            return f"the prior density does not integrate to one: {text}"
        return f"consistent with a normalized prior: {text}"


def prior_normalization(key, model, *, num_steps: int = 200, num_runs: int = 16, num_fit: int = 2000,
                        level: float = 0.01, df: float = 5.0, widen: float = 1.5) -> PriorNormalization:
    """Bound the log integral of ``model``'s prior density between forward and reverse AIS (module docstring).

    Parameters
    ----------
    key : PRNG key
    model : Model
        Its ``sample_prior`` must draw from the prior exactly (a simulator), on the space of its ``log_prior``.
    num_steps, num_runs : int
        Intermediate distributions T, and independent runs per direction (each reverse run from its own
        simulator draw).
    num_fit : int
        Simulator draws the reference is fitted to (mean and covariance on the unconstrained space).
    level : float
        Level of the verdict (asymptotic) and of the certified interval (Markov).
    df, widen : float
        The reference's degrees of freedom and how much wider than the draws' covariance it is.

    Returns
    -------
    PriorNormalization
    """
    if not 0 < level < 1:
        raise BDMCError(f"level must lie in (0, 1), got {level}")
    if int(num_runs) < 2:
        raise BDMCError(f"prior_normalization needs num_runs >= 2 for its interval, got {num_runs}")
    k_fit, k_pilot, k_fwd, k_rev, k_exact = jax.random.split(key, 5)
    draws = jax.vmap(model.sample_prior)(jax.random.split(k_fit, int(num_fit)))
    flat = np.asarray(jax.vmap(lambda x: ravel_pytree(x)[0])(draws), np.float64)
    if not np.all(np.isfinite(flat)):
        raise BDMCError(f"the simulator of {model!r} drew non-finite latents: its prior draws cannot fit a reference")
    cov = np.atleast_2d(np.cov(flat, rowvar=False)) + 1e-9 * np.eye(flat.shape[1])
    tril = np.linalg.cholesky(widen**2 * cov)
    mean = flat.mean(0)
    path = whitened_path(model, flat.shape[1], df)
    data = {"mean": jnp.asarray(mean), "scale_tril": jnp.asarray(tril)}
    tuned = tune(k_pilot, path, data, HMC(path), int(num_steps))
    options = {"kernel": tuned.kernel, "schedule": tuned.path, "tune": "off", "progress": False}
    forward = forward_ais(k_fwd, path, data, num_runs=int(num_runs), **options)
    # One exact prior draw per reverse run (a batched exact latent, whitened): the runs are independent.
    exact_x = jax.vmap(model.sample_prior)(jax.random.split(k_exact, int(num_runs)))
    exact_flat = np.asarray(jax.vmap(lambda x: ravel_pytree(x)[0])(exact_x), np.float64)
    exact = jnp.asarray(np.linalg.solve(tril, (exact_flat - mean).T).T)
    reverse = reverse_ais(k_rev, path, data, exact_latent=exact, num_runs=int(num_runs), **options)
    lower = np.asarray(forward.runs, np.float64)
    upper = np.asarray(reverse.runs, np.float64)
    n = len(lower)
    t = float(stats.t.isf(level / 2, n - 1))
    mean_f, se_f = float(lower.mean()), float(lower.std(ddof=1) / math.sqrt(n))
    mean_r, se_r = float(upper.mean()), float(upper.std(ddof=1) / math.sqrt(len(upper)))
    low, high = mean_f - t * se_f, mean_r + t * se_r
    b = math.log(2 / level)
    # The estimate is the middle of the two sides' combined runs (the log of the mean weight, unbiased for c, and
    # of the mean inverse weight), not of their mean log weights: a forward run that starts where the prior has
    # almost no mass (the Student-t's tail, beyond a half-normal's doubly exponential one) has a log weight of
    # -1e13, valid (a weight of 0) but enough to drag a mean of log weights anywhere.
    lme_f, lhm_r = float(log_mean_exp(lower)), float(log_harmonic_mean(upper))
    return PriorNormalization(
        verdict=NORMALIZED if low <= 0.0 <= high else NOT_NORMALIZED, estimate=(lme_f + lhm_r) / 2,
        interval_low=low, interval_high=high, certified_low=lme_f - b,
        certified_high=lhm_r + b, forward_mean=mean_f, reverse_mean=mean_r,
        forward_stderr=se_f, reverse_stderr=se_r, num_steps=int(num_steps), num_runs=int(num_runs), level=level,
        details={"forward_runs": lower.tolist(), "reverse_runs": upper.tolist(), "reference_df": df,
                 "weight_health": {side: {"weight_ess": est.weight_ess, "khat": est.khat}
                                   for side, est in (("forward", forward), ("reverse", reverse))},
                 "reference_widen": widen, "num_fit": int(num_fit)})
