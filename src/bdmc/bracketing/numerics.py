"""Numerical helpers of the variational families: nested vmaps, bisection, inverse digamma, small PD algebra.

All are plain XLA ops, usable under ``jit`` and ``vmap``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import digamma, polygamma


def vmap_n(fn, n):
    """``fn`` vmapped over ``n`` leading axes."""
    for _ in range(n):
        fn = jax.vmap(fn)
    return fn


def bisect_decreasing(f, target, lo, hi, iters=200):
    """Solve the decreasing scalar equation ``f(u) = target`` for ``u`` in ``[lo, hi]`` by bisection.

    Fixed iteration count, so it is jit/vmap friendly and cannot diverge.
    """

    def body(_, bounds):
        a, b = bounds
        mid = 0.5 * (a + b)
        above = f(mid) > target  # still left of the root
        return jnp.where(above, mid, a), jnp.where(above, b, mid)

    a, b = jax.lax.fori_loop(0, iters, body, (jnp.asarray(lo, jnp.float64), jnp.asarray(hi, jnp.float64)))
    return 0.5 * (a + b)


def inv_digamma(y, newton: int = 8):
    """Inverse of the digamma function (Minka's initialization and Newton steps)."""
    x = jnp.where(y >= -2.22, jnp.exp(y) + 0.5, -1.0 / (y - digamma(1.0)))
    for _ in range(newton):
        x = x - (digamma(x) - y) / polygamma(1, x)
    return x


def symmetrize(m):
    """The symmetric part ``(m + m^T) / 2`` of a (batch of) square matrices."""
    return 0.5 * (m + jnp.swapaxes(m, -1, -2))


# Small dense linear algebra as plain XLA ops. Under vmap, jnp.linalg.cholesky / inv / solve / slogdet / eigh
# lower to batched LAPACK custom calls, which stalled jaxlib 0.10's CPU thread pool (every thread waiting) on
# a 2-core machine. Event matrices here are small, so the factorizations are unrolled; above SMALL the
# LAPACK versions are used.
SMALL = 24


def pd_cholesky(m):
    """Lower Cholesky factor of a (batch of) symmetric positive definite matrices (NaN when not PD)."""
    d = m.shape[-1]
    if d > SMALL:
        return jnp.linalg.cholesky(m)
    L = [[None] * d for _ in range(d)]
    for j in range(d):
        diag = m[..., j, j] - sum((L[j][k] ** 2 for k in range(j)), jnp.zeros_like(m[..., 0, 0]))
        L[j][j] = jnp.sqrt(jnp.where(diag > 0, diag, jnp.nan))
        for i in range(j + 1, d):
            off = m[..., i, j] - sum((L[i][k] * L[j][k] for k in range(j)), jnp.zeros_like(m[..., 0, 0]))
            L[i][j] = off / L[j][j]
    zero = jnp.zeros_like(m[..., 0, 0])
    return jnp.stack([jnp.stack([L[i][j] if j <= i else zero for j in range(d)], -1) for i in range(d)], -2)


def lower_inverse(L):
    """Inverse of a lower-triangular matrix by forward substitution."""
    d = L.shape[-1]
    if d > SMALL:
        eye = jnp.broadcast_to(jnp.eye(d, dtype=L.dtype), L.shape)
        return jax.scipy.linalg.solve_triangular(L, eye, lower=True)
    rows = []
    for i in range(d):
        row = jnp.zeros(L.shape[:-2] + (d,), L.dtype).at[..., i].set(1.0)
        for j in range(i):
            row = row - L[..., i, j][..., None] * rows[j]
        rows.append(row / L[..., i, i][..., None])
    return jnp.stack(rows, axis=-2)


def pd_inverse(m):
    """Inverse of a (batch of) symmetric positive definite matrices via :func:`pd_cholesky`."""
    Linv = lower_inverse(pd_cholesky(m))
    return symmetrize(jnp.swapaxes(Linv, -1, -2) @ Linv)


def pd_logdet(m):
    """``log|m|`` of a (batch of) symmetric positive definite matrices."""
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(pd_cholesky(m), axis1=-2, axis2=-1)), axis=-1)
