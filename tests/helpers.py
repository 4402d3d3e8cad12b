"""Test-only tools: exact draws from Gaussian intermediate distributions and a deliberately broken kernel."""

import contextlib
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

import bdmc
from bdmc.contracts import log_density
from bdmc.kernels import KernelInfo

BENCHMARKS = str(Path(__file__).resolve().parents[1] / "benchmarks")


def import_benchmark(name: str):
    """A module of ``benchmarks/``, imported without changing the suite's dtype (``check_power``, which several
    benchmarks import, switches float64 on)."""
    was = bool(jax.config.jax_enable_x64)
    sys.path.insert(0, BENCHMARKS)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(BENCHMARKS)
        bdmc.enable_x64(was)


def gaussian_target(model, data, lam, like):
    """Mean and covariance of f(.; lam) when log f is quadratic, from its gradient and Hessian at zero.

    Independent of any model's Gibbs code: it only differentiates the model's log density.
    """
    flat0, unravel = ravel_pytree(like)
    logf = lambda v: log_density(model, unravel(v), data, lam)  # noqa: E731
    zero = jnp.zeros_like(flat0)
    precision = -jax.hessian(logf)(zero)
    mean = jnp.linalg.solve(precision, jax.grad(logf)(zero))
    return np.asarray(mean), np.asarray(jnp.linalg.inv(precision)), unravel


def invariance_z_scores(key, model, data, kernel, lam, *, n=4000, steps=20):
    """Start n chains at exact draws of f(.; lam), apply the kernel ``steps`` times, return z-scores.

    For each coordinate: the standardized mean (should be N(0, 1)) and the standardized second moment
    minus one (sd sqrt(2/n)). A kernel that leaves f invariant gives |z| < ~4.5; a wrong one does not.
    """
    return invariance_run(key, model, data, kernel, lam, n=n, steps=steps).z


class InvarianceRun(NamedTuple):
    """z-scores of :func:`invariance_z_scores`, the fraction of chains that moved, and every acceptance reported."""

    z: np.ndarray
    moved: float
    acceptance: np.ndarray


def invariance_run(key, model, data, kernel, lam, *, n=4000, steps=20) -> InvarianceRun:
    """:func:`invariance_z_scores` with what a kernel must also do: move the chains, report acceptances in [0, 1]."""
    like = model.sample_prior(jax.random.key(0))
    mean, cov, unravel = gaussian_target(model, data, lam, like)
    k0, k1 = jax.random.split(key)
    chol = np.linalg.cholesky(cov)
    x = mean + jax.random.normal(k0, (n, mean.size)) @ chol.T
    latents = jax.vmap(unravel)(x)

    def run(k, latent):
        def body(z, kk):
            z, info = kernel(kk, z, data, lam)
            return z, info.acceptance

        return jax.lax.scan(body, latent, jax.random.split(k, steps))

    out, acceptance = jax.jit(jax.vmap(run))(jax.random.split(k1, n), latents)
    flat = np.asarray(jax.vmap(lambda t: ravel_pytree(t)[0])(out))
    u = (flat - mean) / np.sqrt(np.diag(cov))
    z_mean = u.mean(0) * np.sqrt(n)
    z_var = (np.mean(u**2, 0) - 1.0) / np.sqrt(2.0 / n)
    moved = float(np.mean(np.any(flat != np.asarray(x), axis=1)))
    return InvarianceRun(np.concatenate([z_mean, z_var]), moved, np.asarray(acceptance))


@dataclass(frozen=True)
class BrokenMH:
    """Random-walk Metropolis whose acceptance ratio is squared (it targets f^2, not f): a negative control."""

    model: Any
    scale: float = 0.1
    evals_per_step: int = 2

    def __call__(self, key, latent, data, lam):
        k1, k2 = jax.random.split(key)
        flat, unravel = ravel_pytree(latent)
        prop = unravel(flat + self.scale * jax.random.normal(k1, flat.shape))
        log_ratio = 2.0 * (log_density(self.model, prop, data, lam) - log_density(self.model, latent, data, lam))
        accept = jnp.log(jax.random.uniform(k2)) < log_ratio
        new = jax.tree.map(lambda a, b: jnp.where(accept, a, b), prop, latent)
        return new, KernelInfo(jnp.minimum(1.0, jnp.exp(log_ratio)))


def eps() -> float:
    """Machine epsilon of JAX's active float dtype: 1.2e-7 in float32, 2.2e-16 in float64."""
    return float(jnp.finfo(jnp.result_type(float)).eps)


def magnitude(*values) -> float:
    """The largest finite absolute value among ``values`` (arrays or pytrees of them), and at least 1.

    The scale of the terms an identity adds up: their rounding errors are relative to it.
    """
    largest = 1.0
    for leaf in jax.tree.leaves(values):
        finite = np.abs(np.asarray(leaf, np.float64))
        finite = finite[np.isfinite(finite)]
        largest = max(largest, float(finite.max(initial=0.0)))
    return largest


def dtype_tol(scale: float = 1.0, *, floor: float = 1e-10, ops: int = 64) -> float:
    """Tolerance of an exact identity between values of magnitude ``scale`` computed in JAX's active dtype.

    ``ops * eps * scale``: the rounding error of about ``ops`` operations on terms of that size (the errors
    seen in float32 are a few ``eps * scale``), never below ``floor``, the test's float64 tolerance. In
    float64 ``ops * eps * scale`` stays below 1e-10 for any scale under 7,000, so float64 runs keep ``floor``
    and are exactly as strict as before. Use it as ``atol`` (absolute, ``scale`` = the terms' magnitude) or
    as ``rtol`` (``scale`` = 1 times a condition number).
    """
    return max(float(floor), ops * eps() * float(scale))


def assert_same_but_rounding(actual, desired, *, ulps: int = 8):
    """Two pytrees equal, floats up to a few ULPs at the scale of each array, integers and booleans exactly.

    For two computations of the same numbers by different compiled programs (a scan and its unrolled loop, a
    jitted call and an eager one, a cached path and a plain one): XLA may fuse and vectorize them differently, so
    even on one CPU the last bits can differ, while a real difference (another move, another draw) is far larger.
    Results of one compiled program run twice are compared bit for bit instead.
    """
    assert jax.tree.structure(actual) == jax.tree.structure(desired)
    for a, b in zip(jax.tree.leaves(actual), jax.tree.leaves(desired), strict=False):
        a, b = np.asarray(a), np.asarray(b)
        if np.issubdtype(a.dtype, np.inexact):
            tol = ulps * float(np.finfo(a.dtype).eps)
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol * magnitude(b))
        else:
            np.testing.assert_array_equal(a, b)


def simulate_float64(key, model):
    """``bdmc.simulate`` drawn in float64 and returned in JAX's active dtype: one data set for either dtype.

    JAX's float32 and float64 draws from one key differ, so a float32 run of a statistical test would check
    its claim on another data set than the one its float64 thresholds and negative controls were set on. In
    float64 this is ``bdmc.simulate`` itself (same key, same numbers).
    """
    import bdmc

    if jnp.result_type(float) == jnp.float64:
        return bdmc.simulate(key, model)
    with jax.enable_x64(True):
        drawn = jax.tree.map(np.asarray, bdmc.simulate(key, model))
    return jax.tree.map(jnp.asarray, drawn)


@contextlib.contextmanager
def float32():
    """A context in which JAX computes in float32 whatever the suite's dtype; the setting is restored after.

    The process-wide setting, with JAX's caches dropped on the way in and out: ``jax.enable_x64`` as a
    context manager can meet an executable cached under the other setting (a float64 buffer handed to a
    float32 program).
    """
    before = jax.config.jax_enable_x64
    jax.clear_caches()
    jax.config.update("jax_enable_x64", False)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)
        jax.clear_caches()


def run_fresh_python(code: str, *, timeout: float = 600) -> str:
    """Run ``code`` in a new interpreter (so that imports happen for the first time) and return its stdout.

    The interpreter starts with JAX's default float32; an assertion error in ``code`` fails the calling test.
    """
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def assert_one_red_line(result, *needles):
    """Exit code 1, one line on stderr containing every needle, no traceback."""
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
