"""Optimizing the variational ``q`` (Ji, Shen, West): MCSA for the lower bound and mean-field coordinate ascent.

- MCSA, Eqs. (9)-(11) and Sec. 3.3: Robbins-Monro iterations on the natural parameters towards the maximizer
  of the lower bound ``L``, with the inverse Fisher matrix as gain.
- Standard variational coordinate ascent (Sec. 3.1, Eq. 7) for conjugate models.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError
from .families import Family, stats_of
from .mean_field import MeanField
from .numerics import pd_inverse
from .terms import draw, log_ratios

# ------------------------------------------------------------------------------------------------- MCSA


class MCSAState(NamedTuple):
    eta: Any  # natural parameters, dict name -> (*batch, dim)
    eta_avg: Any  # Polyak average over the averaging window
    num_avg: jax.Array


class MCSAInfo(NamedTuple):
    lower: jax.Array  # MC estimate of L at the current iterate (Eq. 10's draws)
    step_norm: jax.Array  # norm of the natural-gradient direction
    accepted: jax.Array  # False when the step left the parameter space and was rejected
    step_size: jax.Array


def step_sizes(num_iterations: int, *, step_size: float = 0.5, decay: float = 0.7, offset: float = 1.0):
    """Robbins-Monro gains ``s_t = step_size * (t + offset)^-decay``, ``t = 1..T``.

    With ``0.5 < decay <= 1``, ``sum s_t = inf`` and ``sum s_t^2 < inf`` (the conditions under Eq. 10).
    """
    if not 0.5 < decay <= 1.0:
        raise BDMCError(f"MCSA decay must lie in (0.5, 1] so that sum s = inf and sum s^2 < inf, got {decay}")
    if step_size <= 0 or offset <= -1:
        raise BDMCError(f"MCSA step_size must be positive and offset > -1, got {step_size}, {offset}")
    t = jnp.arange(1, num_iterations + 1, dtype=jnp.float64)
    return step_size * (t + offset) ** (-decay)


def _natural_direction(f: Family, eta_f, draws_f, c):
    """``F(eta)^-1 g`` with ``g = mean_i c_i T(theta_i)``: the natural gradient of L for one factor.

    ``g`` estimates ``dL/deta = Cov_q(T, log p - log q)`` (Eq. 9 with ``d log q / d eta = T - E_q T``); the
    "1 +" term of Eq. (9) has zero expectation and, with the baseline ``c = f - mean f``, is dropped. The
    Fisher matrix ``F`` is the exact Hessian of the log partition; a ridge of 1e-10 of its mean eigenvalue handles
    redundant coordinates (the symmetric halves of a matrix parameter, the softmax shift of categorical logits).
    """
    nb = len(f.batch_shape)
    T = jax.vmap(lambda x: stats_of(f, x))(draws_f)  # (N, *batch, dim)
    g = jnp.tensordot(c, T, axes=(0, 0)) / c.shape[0]
    hess = jax.hessian(type(f).log_partition)
    for _ in range(nb):
        hess = jax.vmap(hess)
    F = hess(eta_f)
    def solve(F_, g_):
        # A tiny ridge stands in for the pseudo-inverse: g has no component along F's null directions.
        dim = F_.shape[-1]
        return pd_inverse(F_ + (1e-10 * jnp.trace(F_) / dim) * jnp.eye(dim)) @ g_

    for _ in range(nb):
        solve = jax.vmap(solve)
    return solve(F, g)


def mcsa_run(key, q0: MeanField, log_joint: Callable, *, num_iterations: int = 1000, num_draws: int = 64,
             step_size: float = 0.5, decay: float = 0.7, offset: float = 1.0, average_from: float = 0.5):
    """The MCSA recursion of Sec. 3.3 as one ``lax.scan`` (pure: jit and vmap it).

    ``gamma^(t+1) = gamma^(t) + s_(t+1) lambda(gamma^(t))`` on the natural parameters, with the gain matrix
    ``F^-1`` (inverse Fisher) in front of the Monte Carlo gradient (10): a Robbins-Monro scheme with a
    positive definite gain, which keeps one step size sensible for every factor. A step that leaves the
    parameter space is rejected. Iterates after ``average_from * num_iterations`` are Polyak-averaged.

    Returns
    -------
    q_avg, q_last : MeanField
        The averaged and the last iterate.
    info : MCSAInfo
        Per-iteration traces.
    """
    gains = step_sizes(num_iterations, step_size=step_size, decay=decay, offset=offset)
    start_avg = int(average_from * num_iterations)
    eta0 = q0.natural()

    def body(state: MCSAState, inp):
        t, k, s = inp
        q = q0.from_natural(state.eta)
        thetas = draw(k, q, num_draws)
        f = log_ratios(log_joint, q, thetas)
        c = f - jnp.mean(f)
        direction = {n: _natural_direction(q[n], state.eta[n], thetas[n], c) for n in q.factors}
        new_eta = jax.tree.map(lambda e, d: e + s * d, state.eta, direction)
        q_new = q0.from_natural(new_eta)
        finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(new_eta)]))
        ok = finite & q_new.valid() & jnp.all(jnp.isfinite(f))
        eta = jax.tree.map(lambda a, b: jnp.where(ok, a, b), new_eta, state.eta)
        in_window = t >= start_avg
        num = state.num_avg + in_window
        w = jnp.where(in_window, 1.0 / jnp.maximum(num, 1), 0.0)
        eta_avg = jax.tree.map(lambda avg, e: avg + w * (e - avg), state.eta_avg, eta)
        norm = jnp.sqrt(sum(jnp.sum(d**2) for d in jax.tree.leaves(direction)))
        return MCSAState(eta, eta_avg, num), MCSAInfo(jnp.mean(f), norm, ok, s)

    keys = jax.random.split(key, num_iterations)
    init = MCSAState(eta0, eta0, jnp.zeros((), jnp.int32))
    state, info = jax.lax.scan(body, init, (jnp.arange(num_iterations), keys, gains))
    return q0.from_natural(state.eta_avg), q0.from_natural(state.eta), info


def mcsa_diagnostic(trace_lower, *, window: float = 0.1) -> dict:
    """Convergence check on the per-iteration lower-bound estimates.

    Compares the mean of the last ``window`` fraction of iterations with the window before it: a drift of
    more than 3 standard errors means the iterates are still climbing (``converged`` is False).
    """
    v = np.asarray(trace_lower, dtype=np.float64)
    w = max(int(window * v.size), 2)
    last, prev = v[-w:], v[-2 * w:-w]
    se = math.sqrt(np.var(last, ddof=1) / last.size + np.var(prev, ddof=1) / prev.size)
    drift = float(np.mean(last) - np.mean(prev))
    z = drift / se if se > 0 else 0.0
    return {"drift": drift, "drift_z": float(z), "converged": bool(abs(z) < 3.0), "window": w}


# --------------------------------------------------------------------------------- coordinate ascent VB


def coordinate_ascent(q0: MeanField, updates: Mapping[str, Callable[[MeanField], Family]], *,
                      num_iterations: int = 200):
    """Standard mean-field VB by coordinate ascent (Sec. 3.1, Eq. 7) as one ``lax.scan``.

    Parameters
    ----------
    q0 : MeanField
        The starting point.
    updates : mapping of str to callable
        ``updates[name](q)`` returns the new factor for ``name`` given the current ``q``: for a conditionally
        conjugate model, the complete conditional's natural parameter averaged over the other factors (Eq. 7).
        They are applied in order, each seeing the factors already updated in this sweep.
    num_iterations : int
        Sweeps.

    Returns
    -------
    q : MeanField
    changes : array (num_iterations,)
        Largest absolute change of any parameter in each sweep (0 at a fixed point).
    """
    unknown = set(updates) - set(q0.factors)
    if unknown:
        raise BDMCError(f"coordinate_ascent updates name {sorted(unknown)}, which are not factors of q0")

    def sweep(q, _):
        new = q
        for name, fn in updates.items():
            new = new.replace(**{name: fn(new)})
        change = jnp.max(jnp.stack([jnp.max(jnp.abs(a - b))
                                    for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(q), strict=False)]))
        return new, change

    return jax.lax.scan(sweep, q0, None, length=num_iterations)
