"""Exact Jeffreys divergences of AIS on a finite state space (BREAD paper, Appendix B.1).

Conventions (the AIS recursion of the BREAD paper, Eq. 1, which is also this project's convention):

* ``betas`` holds the inverse temperatures of *all* distributions, prior and target included:
  ``betas[0] = 0`` (the initial distribution ``p_1``) and ``betas[-1] = 1`` (the target). With ``T`` the
  paper's "number of intermediate distributions", ``len(betas) == T`` and the linear schedule is
  ``betas = linspace(0, 1, T)``. The distributions are ``f_k(x) = p_1(x)^(1 - beta_k) f(x)^beta_k``.
* ``transitions[k - 1]`` is the kernel of distribution ``k`` (``k = 1, ..., T - 1``): ``T - 1`` matrices,
  one per distribution after the prior, ``transitions[k - 1][i, j] = P(x' = j | x = i)``.
* Forward chain: ``x_0 ~ p_1``, ``log w = 0``; for ``k = 1, ..., T - 1``:
  ``log w += log f_k(x_{k-1}) - log f_{k-1}(x_{k-1})``, then ``x_k ~ transitions[k - 1](x_{k-1}, .)``.
  The AIS output sample is ``x_{T-1}`` (after a last move at ``beta = 1``); its law is ``q``.
* Reverse chain (reverse AIS, started at an exact target sample): ``x_{T-1} ~ p_T``; for
  ``k = T - 1, ..., 1``: ``x_{k-1} ~ transitions[k - 1](x_k, .)``. (Its first move, at ``beta = 1``, leaves
  ``p_T`` invariant, so this is the paper's reverse AIS.) Its log-weight is the same function ``log w`` of the
  trajectory; on reverse chains ``log w`` is a stochastic upper bound on ``log Z_T / Z_1``, on forward chains
  a stochastic lower bound.

With kernels in detailed balance with their ``f_k`` (Metropolis-Hastings is), the reverse chain is the time
reversal of the forward chain, ``q_rev(traj) / q_fwd(traj) = w(traj) Z_1 / Z_T``, and so
``B = KL(fwd || rev) + KL(rev || fwd) = E_rev[log w] - E_fwd[log w] >= J``. For kernels that are merely
invariant (not reversible) ``B`` is still the trajectory divergence of the two simulated chains, but the last
identity need not hold; :attr:`JeffreysResult.gap` gives the right-hand side.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from ..errors import OptionError, ScheduleError

CHUNK = 512  # kernels materialized at once: bounds memory to CHUNK * S * S floats for long schedules
ROW_SUM_TOL = 1e-10
INVARIANCE_TOL = 1e-9

Transitions = np.ndarray | Callable[[np.ndarray], np.ndarray]


class JeffreysResult(NamedTuple):
    """Exact divergences of forward and reverse AIS on a finite state space.

    Attributes
    ----------
    J : float
        Jeffreys divergence ``KL(q || p) + KL(p || q)`` between the AIS output law ``q`` and the target ``p``.
    B : float
        Jeffreys divergence between the forward and reverse chains over whole trajectories (Eq. 21-23).
    kl_q_p, kl_p_q : float
        The two halves of ``J``.
    kl_fwd_rev, kl_rev_fwd : float
        The two halves of ``B``.
    log_w_forward : float
        ``E_fwd[log w]``: expected forward-AIS log-weight, a lower bound on ``log_z``.
    log_w_reverse : float
        ``E_rev[log w]``: expected reverse-AIS log-weight (sign chosen so it upper-bounds ``log_z``).
    log_z : float
        Exact ``log Z_T / Z_1 = log sum_x p_1(x) f(x) / p_1(x)``, i.e. ``log sum_x f(x)`` for a normalized prior.
    q : numpy.ndarray
        Law of the AIS output sample, shape (S,).
    p : numpy.ndarray
        Normalized target, shape (S,).
    """

    J: float
    B: float
    kl_q_p: float
    kl_p_q: float
    kl_fwd_rev: float
    kl_rev_fwd: float
    log_w_forward: float
    log_w_reverse: float
    log_z: float
    q: np.ndarray
    p: np.ndarray

    @property
    def gap(self) -> float:
        """Expected BREAD estimate ``E_rev[log w] - E_fwd[log w]``; equals ``B`` for reversible kernels."""
        return self.log_w_reverse - self.log_w_forward


def exact_jeffreys(
    log_target, prior, betas, transitions: Transitions, *, check_invariance: bool = True
) -> JeffreysResult:
    """Exact ``J`` and ``B`` of AIS with given kernels, by forward passes over pairwise marginals.

    Cost is ``O(T S^2)`` time and ``O(CHUNK S^2)`` memory; no trajectory is enumerated.

    Parameters
    ----------
    log_target : array_like, shape (S,)
        Unnormalized log target ``log f(x)``. ``-inf`` entries (zero mass) are allowed.
    prior : array_like, shape (S,)
        Initial distribution ``p_1``: a strictly positive probability vector (the geometric path needs the
        prior's support to cover the target's).
    betas : array_like, shape (T,)
        Non-decreasing inverse temperatures with ``betas[0] = 0`` and ``betas[-1] = 1``, prior and target
        included (see the module docstring).
    transitions : array_like of shape (T - 1, S, S), or callable
        One row-stochastic matrix per distribution after the prior; ``transitions[k - 1]`` must leave
        ``f_k`` invariant. A callable maps an array of betas, shape (n,), to matrices, shape (n, S, S); it
        lets long schedules (``T = 100,000``) run without holding every matrix in memory.
    check_invariance : bool, keyword-only
        Verify ``f_k K_k = f_k`` for every kernel (default). Switch off only to study broken kernels.

    Returns
    -------
    JeffreysResult

    Raises
    ------
    bdmc.errors.OptionError
        If shapes disagree, the prior is not a positive probability vector, a matrix is not stochastic or
        (with ``check_invariance``) does not leave its distribution invariant.
    bdmc.ScheduleError
        If ``betas`` is not a valid schedule.
    """
    log_target, log_prior, betas = _validate(log_target, prior, betas)
    get = _kernel_source(transitions, betas, log_prior.size)
    loglik = log_target - log_prior
    log_p = log_target - logsumexp(log_target)
    p = np.exp(log_p)
    prior_p = np.exp(log_prior)
    n = betas.size - 1
    check = _invariance_checker(log_prior, loglik, betas) if check_invariance else None

    fwd = _forward_pass(prior_p, get, n, loglik, betas, check)
    rev = _reverse_pass(p, get, n, loglik, betas)
    q = fwd.final
    kl_q_p, kl_p_q = _kl(q, p), _kl(p, q)
    kl_fwd_rev = fwd.log_ratio + _expect(prior_p, log_prior) - _expect(q, log_p)
    kl_rev_fwd = rev.log_ratio + _expect(p, log_p) - _expect(rev.final, log_prior)
    return JeffreysResult(
        J=kl_q_p + kl_p_q,
        B=kl_fwd_rev + kl_rev_fwd,
        kl_q_p=kl_q_p,
        kl_p_q=kl_p_q,
        kl_fwd_rev=kl_fwd_rev,
        kl_rev_fwd=kl_rev_fwd,
        log_w_forward=fwd.log_w,
        log_w_reverse=rev.log_w,
        log_z=float(logsumexp(log_target)),
        q=q,
        p=p,
    )


def jeffreys_divergence(q, p) -> float:
    """``KL(q || p) + KL(p || q)`` of two probability vectors (``inf`` when supports differ)."""
    q, p = np.asarray(q, float), np.asarray(p, float)
    return _kl(q, p) + _kl(p, q)


def geometric_log_densities(log_target, prior, betas) -> np.ndarray:
    """Normalized ``log p_k(x)`` of the geometric path ``p_1^(1 - beta) f^beta``, shape (T, S)."""
    log_target, log_prior, betas = _validate(log_target, prior, betas)
    return _normalized_path(log_prior, log_target - log_prior, betas)


class _Pass(NamedTuple):
    final: np.ndarray  # marginal of the last state the pass reaches
    log_w: float  # expected log-weight
    log_ratio: float  # sum over steps of E[log K(a -> b) - log K(b -> a)] under this chain's pair marginals


def _forward_pass(start, get, n, loglik, betas, check) -> _Pass:
    """Propagate ``x_0 ~ start`` through kernels ``1..n``, accumulating weights and transition log-ratios."""
    m, log_w, log_ratio = start, 0.0, 0.0
    for lo, hi in _chunks(n):
        kernels = get(lo, hi)
        if check is not None:
            check(kernels, lo)
        marg = _propagate(m, kernels)  # marg[i] is the law of x_{lo+i}
        dbeta = betas[lo + 1 : hi + 1] - betas[lo:hi]
        log_w += _expected_increments(dbeta, marg[:-1], loglik)
        log_ratio += _pair_log_ratio(marg[:-1], kernels)
        m = marg[-1]
    return _Pass(m, log_w, log_ratio)


def _reverse_pass(start, get, n, loglik, betas) -> _Pass:
    """Propagate ``x_n ~ start`` back through kernels ``n..1`` (reverse AIS)."""
    m, log_w, log_ratio = start, 0.0, 0.0
    for lo, hi in reversed(list(_chunks(n))):
        kernels = get(lo, hi)[::-1]  # kernels hi..lo+1, in the order the reverse chain applies them
        marg = _propagate(m, kernels)  # marg[i] is the law of x_{hi-i}
        dbeta = (betas[lo + 1 : hi + 1] - betas[lo:hi])[::-1]
        log_w += _expected_increments(dbeta, marg[1:], loglik)  # step k's weight reads x_{k-1}, after kernel k
        log_ratio += _pair_log_ratio(marg[:-1], kernels)
        m = marg[-1]
    return _Pass(m, log_w, log_ratio)


def _expected_increments(dbeta, marg, loglik) -> float:
    """``sum_t dbeta[t] E_{marg[t]}[loglik]``; ``-inf`` if a chain can hold a zero-target state while beta moves."""
    finite = np.isfinite(loglik)
    values = marg @ np.where(finite, loglik, 0.0)
    values[marg[:, ~finite].sum(axis=1) > 0] = -np.inf
    return float(np.sum(np.where(dbeta > 0, dbeta * values, 0.0)))  # dbeta = 0 multiplies f by exactly 1


def _propagate(m, kernels) -> np.ndarray:
    """Marginals ``m, m K_1, m K_1 K_2, ...``, shape (len(kernels) + 1, S)."""
    out = np.empty((kernels.shape[0] + 1, m.size))
    out[0] = m
    for i, k in enumerate(kernels):
        out[i + 1] = out[i] @ k
    return out


def _pair_log_ratio(marg, kernels) -> float:
    """``sum_t E_{a ~ marg[t], b ~ K_t(a, .)}[log K_t(a, b) - log K_t(b, a)]``, with 0 log 0 = 0."""
    # Only moves some kernel of the chunk can make contribute: gather them (local kernels are sparse).
    a, b = np.nonzero((kernels > 0).any(axis=0))
    fwd, back = kernels[:, a, b], kernels[:, b, a]
    weight = marg[:, a] * fwd
    used = weight > 0
    if np.any(used & (back <= 0)):
        return np.inf  # a move the other chain can never undo: the trajectory laws are mutually singular
    return float(np.sum(weight[used] * (np.log(fwd[used]) - np.log(back[used]))))


def _kl(a, b) -> float:
    """``KL(a || b)`` of probability vectors with 0 log 0 = 0."""
    used = a > 0
    if np.any(used & (b <= 0)):
        return np.inf
    return float(np.sum(a[used] * (np.log(a[used]) - np.log(b[used]))))


def _expect(weights, values) -> float:
    """``sum weights * values`` ignoring states of zero weight (whose value may be -inf)."""
    used = weights > 0
    return float(np.sum(weights[used] * values[used]))


def _chunks(n) -> Iterator[tuple[int, int]]:
    for lo in range(0, n, CHUNK):
        yield lo, min(lo + CHUNK, n)


def _normalized_path(log_prior, loglik, betas) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        logf = log_prior[None, :] + betas[:, None] * loglik[None, :]
    logf = np.where(np.isnan(logf), -np.inf, logf)  # 0 * -inf at beta = 0: a zero-mass target state, prior mass
    logf[betas == 0] = log_prior
    return logf - logsumexp(logf, axis=1, keepdims=True)


def _invariance_checker(log_prior, loglik, betas):
    def check(kernels, lo):
        dist = np.exp(_normalized_path(log_prior, loglik, betas[lo + 1 : lo + 1 + kernels.shape[0]]))
        err = np.abs(np.einsum("ks,kst->kt", dist, kernels) - dist).sum(axis=1)
        bad = np.flatnonzero(err > INVARIANCE_TOL)
        if bad.size:
            k = lo + 1 + int(bad[0])
            raise OptionError(
                f"transitions[{k - 1}] does not leave f at beta = {betas[k]} invariant "
                f"(L1 error {err[bad[0]]:.3g}); {bad.size} kernel(s) in this chunk fail"
            )

    return check


def _kernel_source(transitions, betas, s):
    """A function ``(lo, hi) -> kernels lo+1..hi`` (shape (hi - lo, S, S)), validated."""
    if callable(transitions):
        return lambda lo, hi: _checked_kernels(transitions(betas[lo + 1 : hi + 1]), hi - lo, s, offset=lo)
    stack = np.asarray(transitions, dtype=float)
    if stack.shape != (betas.size - 1, s, s):
        raise OptionError(
            f"transitions must have shape (len(betas) - 1, S, S) = {(betas.size - 1, s, s)}, got {stack.shape}"
        )
    _checked_kernels(stack, betas.size - 1, s, offset=0)
    return lambda lo, hi: stack[lo:hi]


def _checked_kernels(kernels, n, s, *, offset) -> np.ndarray:
    kernels = np.asarray(kernels, dtype=float)
    if kernels.shape != (n, s, s):
        raise OptionError(f"the transition callable returned shape {kernels.shape}, expected {(n, s, s)}")
    if not np.all(np.isfinite(kernels)) or np.any(kernels < 0):
        k = offset + int(np.flatnonzero(~(np.isfinite(kernels) & (kernels >= 0)).any(axis=(1, 2)))[0])
        raise OptionError(f"transitions[{k}] has a negative or non-finite entry")
    err = np.abs(kernels.sum(axis=2) - 1.0).max(axis=1)
    if np.any(err > ROW_SUM_TOL):
        k = offset + int(np.argmax(err > ROW_SUM_TOL))
        raise OptionError(f"transitions[{k}] is not row-stochastic (a row sums to 1 {err[k - offset]:+.3g})")
    return kernels


def _validate(log_target, prior, betas):
    log_target = np.asarray(log_target, dtype=float)
    prior = np.asarray(prior, dtype=float)
    betas = np.asarray(betas, dtype=float)
    if log_target.ndim != 1 or log_target.size < 1:
        raise OptionError(f"log_target must be a non-empty vector, got shape {log_target.shape}")
    if np.any(np.isnan(log_target) | (log_target == np.inf)) or not np.any(np.isfinite(log_target)):
        raise OptionError("log_target must be finite or -inf, with at least one finite entry")
    if prior.shape != log_target.shape:
        raise OptionError(f"prior has shape {prior.shape}, log_target has {log_target.shape}")
    if not np.all(np.isfinite(prior)) or np.any(prior <= 0) or abs(prior.sum() - 1.0) > ROW_SUM_TOL:
        raise OptionError("prior must be a strictly positive probability vector summing to 1")
    if betas.ndim != 1 or betas.size < 2:
        raise ScheduleError(f"betas must be a vector of at least 2 inverse temperatures, got shape {betas.shape}")
    if betas[0] != 0.0 or betas[-1] != 1.0:
        raise ScheduleError(f"betas must start at 0 and end at 1, got {betas[0]} ... {betas[-1]}")
    if not np.all(np.isfinite(betas)) or np.any(np.diff(betas) < 0):
        k = int(np.argmax(~(np.diff(betas) >= 0)))
        raise ScheduleError(f"betas must be non-decreasing; betas[{k + 1}] = {betas[k + 1]} < betas[{k}] = {betas[k]}")
    return log_target, np.log(prior), betas
