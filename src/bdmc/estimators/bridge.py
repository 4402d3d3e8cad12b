"""Bridge sampling from posterior draws (Meng and Wong 1996), as R's ``bridgesampling`` does it (Gronau et al. 2017).

Given draws of the posterior ``p(x | y)`` on the model's latent space and the unnormalized density
``q(x) = p(x, y)``, a normal proposal ``g`` fitted to the first half of the draws, ``N2`` draws from ``g``
and the second half of the draws as the posterior sample, the optimal bridge function of Meng and Wong gives
``r = p(y)`` as the fixed point of

    r = [ (1/N2) sum_j l2_j / (s1 l2_j + s2 r) ] / [ (1/N1) sum_i 1 / (s1 l1_i + s2 r) ],

``l1 = q / g`` at the posterior draws, ``l2 = q / g`` at the proposal draws, ``s1 = N1_eff / (N1_eff + N2)``,
``s2 = 1 - s1``. The iteration runs on the log scale (log-sum-exp), so neither ``q`` nor ``r`` overflows.

The estimate is neither a lower nor an upper bound on ``log p(y)``: its error is the approximate relative
mean-squared error of Fruhwirth-Schnatter (2004), the R package's ``error_measures``. This estimator is not in
:data:`bdmc.ESTIMATORS`: it needs the user's posterior draws, and the registry's call shape (and every harness
that walks it) calls an estimator with the model and data alone.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..bracketing.model_draws import posterior_draws_flat
from ..caching import CompiledCache
from ..contracts.capabilities import HostPrior, supports
from ..contracts.estimate import Estimate, seed_of
from ..contracts.model import log_density, validate_data
from ..contracts.nonfinite import describe_nonfinite
from ..errors import DataError, NonFiniteLogWeightError, OptionError, OptionTypeError, RunError
from ._timing import check_positive

# Each half of the draws (the proposal's fit, the posterior sample) needs at least this many, and at least
# dimension + 2, so that the fitted covariance is nonsingular and the posterior half's ESS is estimable.
MIN_HALF = 10
LOG_2PI = math.log(2 * math.pi)


@dataclass(frozen=True)
class BridgeResult:
    """One bridge-sampling estimate of ``log p(y)`` and its error measure.

    Attributes
    ----------
    log_marginal : float
        The estimate of ``log p(y)``.
    iterations : int
        Fixed-point iterations until the relative change of ``r`` fell below ``tol``.
    relative_mse : float
        Fruhwirth-Schnatter's approximate relative mean-squared error of ``r`` (R's ``re2``):
        ``proposal_term + posterior_term``. Its square root is the standard error of ``log_marginal``.
    proposal_term, posterior_term : float
        The two parts of ``relative_mse``: from the proposal draws (independent) and from the posterior draws
        (their autocorrelation accounted for by their effective sample size).
    posterior_ess : float
        The effective size of the posterior sample used in the bridge weights ``s1``, ``s2``.
    num_posterior, num_proposals : int
        ``N1`` and ``N2``.
    """

    log_marginal: float
    iterations: int
    relative_mse: float
    proposal_term: float
    posterior_term: float
    posterior_ess: float
    num_posterior: int
    num_proposals: int

    @property
    def stderr(self) -> float:
        """The standard error of :attr:`log_marginal`: ``sqrt(relative_mse)`` (R's coefficient of variation)."""
        return math.sqrt(self.relative_mse)


@dataclass(frozen=True)
class BridgeDetails:
    """What :func:`bridge_sampling` records in :attr:`Estimate.details`: each run's :class:`BridgeResult` and the
    fitted normal proposal (mean and covariance of the first half of the draws, flattened latent)."""

    results: tuple
    proposal_mean: np.ndarray = dataclasses.field(repr=False)
    proposal_cov: np.ndarray = dataclasses.field(repr=False)
    num_fit: int = 0


def effective_size(values) -> float:
    """ArviZ's effective sample size of the mean of one chain ``values`` (in draw order)."""
    import arviz  # imported only when asked: ArviZ's import takes a second or two

    values = np.asarray(values, dtype=np.float64)
    if np.ptp(values) == 0:
        return float(values.size)
    return float(arviz.ess(values[None, :], method="mean"))


def bridge_fixed_point(log_joint_posterior, log_proposal_posterior, log_joint_proposal, log_proposal_proposal, *,
                       posterior_ess: float | None = None, tol: float = 1e-10,
                       max_iterations: int = 1000) -> BridgeResult:
    """Meng and Wong's optimal-bridge estimate of ``log p(y)`` from densities at two samples, with its error.

    Parameters
    ----------
    log_joint_posterior, log_proposal_posterior : array, shape (N1,)
        ``log q`` (the unnormalized posterior ``log p(x, y)``) and ``log g`` (the proposal) at the posterior draws,
        in draw order (their autocorrelation enters the error).
    log_joint_proposal, log_proposal_proposal : array, shape (N2,)
        The same at independent draws from ``g``. ``log q`` may be -inf there (a draw outside the support).
    posterior_ess : float, optional
        The effective size of the posterior sample, which weighs the two samples in the bridge function
        (R's ``use_neff``); ``N1`` by default (independent draws).
    tol : float
        The iteration stops when ``|r_new - r_old| / r_new`` falls below it (R's criterion ``"r"``).
    max_iterations : int

    Returns
    -------
    BridgeResult

    Raises
    ------
    DataError
        A posterior draw whose ``log q`` or ``log g`` is not finite, or a NaN or +inf anywhere.
    RunError
        No proposal draw has positive density under ``q``, or the iteration did not converge.

    Notes
    -----
    The error is Fruhwirth-Schnatter's (2004) delta-method relative MSE of ``r``,
    ``Var_g(f1) / (N2 E_g(f1)^2) + Var_p(f2) / (ESS(f2) E_p(f2)^2)`` with ``f1 = p / (s1 p + s2 g)`` at the
    proposal draws and ``f2 = g / (s1 p + s2 g)`` at the posterior draws, ``p = q / r`` the normalized posterior.
    Two choices differ from R's ``error_measures``: ``s1``, ``s2`` are the weights the iteration used (R
    recomputes them from ``N1`` rather than the ESS), and the autocorrelation of ``f2`` enters as its effective
    sample size (ArviZ), the normalized spectral density at zero of Fruhwirth-Schnatter's formula, where R's code
    multiplies by coda's unnormalized one.
    """
    q11, q12, q21, q22 = (np.asarray(v, dtype=np.float64).ravel() for v in (
        log_joint_posterior, log_proposal_posterior, log_joint_proposal, log_proposal_proposal))
    n1, n2 = q11.size, q21.size
    if q12.size != n1 or q22.size != n2:
        raise DataError(f"bridge sampling: the posterior sample has {n1} log q and {q12.size} log g values, the "
                        f"proposal sample {n2} and {q22.size}; each pair must have one value per draw")
    if n1 < 2 or n2 < 2:
        raise DataError(f"bridge sampling needs at least 2 posterior and 2 proposal draws, got {n1} and {n2}")
    l1 = q11 - q12
    if not np.all(np.isfinite(l1)):
        i = int(np.argmin(np.isfinite(l1)))
        raise DataError(f"bridge sampling: at posterior draw {i}, log q = {q11[i]} and log g = {q12[i]}; both must "
                        "be finite at a draw from the posterior")
    if np.any(np.isnan(q21) | (q21 == np.inf) | ~np.isfinite(q22)):
        j = int(np.argmax(np.isnan(q21) | (q21 == np.inf) | ~np.isfinite(q22)))
        raise DataError(f"bridge sampling: at proposal draw {j}, log q = {q21[j]} and log g = {q22[j]}; log q may "
                        "be -inf (outside the support) but never NaN or +inf, and log g must be finite")
    l2 = q21 - q22
    if not np.any(np.isfinite(l2)):
        raise RunError(f"bridge sampling: none of the {n2} proposal draws has positive posterior density; the "
                       "proposal misses the posterior's support")
    neff = float(n1 if posterior_ess is None else posterior_ess)
    if not neff > 0:
        raise OptionError(f"posterior_ess must be positive, got {posterior_ess}")
    log_s1, log_s2 = math.log(neff / (neff + n2)), math.log(n2 / (neff + n2))
    lstar = float(np.median(l1))  # centring: r near 1 on the shifted scale
    a1, a2 = l1 - lstar, l2 - lstar
    log_ratio = math.log(n1 / n2)
    log_r, change, iterations = 0.0, math.inf, 0
    from scipy.special import logsumexp  # SciPy is imported where used: ``import bdmc`` stays light

    while change > tol:
        if iterations >= max_iterations:
            raise RunError(f"bridge sampling did not converge in {max_iterations} iterations (last relative change "
                           f"of r: {change:.3g}, tol {tol:g}); raise max_iterations or tol, or check the draws")
        log_num = a2 - np.logaddexp(log_s1 + a2, log_s2 + log_r)
        log_den = -np.logaddexp(log_s1 + a1, log_s2 + log_r)
        new = log_ratio + float(logsumexp(log_num)) - float(logsumexp(log_den))
        change = abs(math.expm1(log_r - new))
        log_r, iterations = new, iterations + 1
    log_ml = lstar + log_r
    # The error: f1 at the proposal draws, f2 at the posterior draws, with p = q / r normalized.
    lp_p, lp_g = q11 - log_ml, q21 - log_ml
    f1 = np.exp(lp_g - np.logaddexp(log_s1 + lp_g, log_s2 + q22))
    f2 = np.exp(q12 - np.logaddexp(log_s1 + lp_p, log_s2 + q12))
    proposal_term = float(np.var(f1, ddof=1) / np.mean(f1) ** 2 / n2)
    var_f2 = float(np.var(f2, ddof=1))
    posterior_term = 0.0 if var_f2 == 0 else var_f2 / float(np.mean(f2)) ** 2 / effective_size(f2)
    return BridgeResult(log_marginal=float(log_ml), iterations=iterations,
                        relative_mse=proposal_term + posterior_term, proposal_term=proposal_term,
                        posterior_term=float(posterior_term), posterior_ess=neff, num_posterior=n1,
                        num_proposals=n2)


def bridge_sampling(key, model, data, *, draws, num_proposals: int | None = None, tol: float = 1e-10,
                    max_iterations: int = 1000, num_runs: int = 1) -> Estimate:
    """Bridge sampling estimate of ``log p(y)`` from posterior draws, with a normal proposal (R's ``method="normal"``).

    The draws are flattened (:func:`bdmc.bracketing.model_draws.posterior_draws_flat`); a multivariate normal
    fitted to the first half (mean and covariance) is the proposal ``g``; the second half, in the order given,
    is the posterior sample; each run draws ``num_proposals`` from ``g`` and solves the fixed point
    (:func:`bridge_fixed_point`) with the posterior sample weighted by its effective size (the median over
    coordinates of ArviZ's ESS, R's ``use_neff``).

    Parameters
    ----------
    key : PRNG key
        Draws the proposal sample of each run.
    model, data
        A Model and its data; the density is ``log_prior + sum(log_likelihood)`` on the model's latent space
        (for a PPL adapter, the program's unconstrained space, with its Jacobian).
    draws : pytree
        Posterior draws of the latent: the model's latent pytree with a leading draw axis (chains concatenated).
        Exact draws or a Markov chain's (their autocorrelation enters the weights and the error).
    num_proposals : int, optional
        Draws from ``g`` per run (``N2``); by default as many as the posterior half (R's default).
    tol : float
        Convergence tolerance on the relative change of ``r = p(y)``.
    max_iterations : int
        Fixed-point iterations allowed; the run fails (``RunError``) if it has not converged by then.
    num_runs : int
        Runs with independent proposal samples (the posterior draws and the fitted proposal are shared, as in R's
        ``repetitions``); their log estimates are averaged.

    Returns
    -------
    Estimate
        ``bound=None`` (bridge sampling bounds neither side), ``combine="mean-log"``, one run per proposal sample.
        ``stderr`` is Fruhwirth-Schnatter's relative error of ``p(y)`` (R's ``error_measures``), which is the
        standard error of ``log p(y)`` to first order: ``sqrt(mean(posterior_term) + mean(proposal_term) /
        num_runs)``, since only the proposal part averages out over runs. ``details`` is a
        :class:`BridgeDetails`.

    Raises
    ------
    DataError
        Draws that are not a latent pytree with a leading draw axis, NaN or infinite draws, draws where the
        model's density is zero or not finite, too few draws (each half needs at least ``max(10, d + 2)``), or
        a first half whose covariance is singular.
    OptionError
        An option out of range.
    RunError
        The fixed point did not converge, or no proposal draw has positive density.
    """
    check_positive(num_runs=num_runs, max_iterations=max_iterations)
    if num_proposals is not None:
        check_positive(num_proposals=num_proposals)
        if num_proposals < 2:
            raise OptionError(f"num_proposals must be at least 2, got {num_proposals}")
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real):
        raise OptionTypeError(f"tol must be a number, got {type(tol).__name__}")
    if not 0 < tol < 1:
        raise OptionError(f"tol must be in (0, 1), got {tol!r}")
    data = validate_data(model, data)
    flat, unravel = _flat_draws(model, draws)
    num_draws, dim = flat.shape
    num_fit = num_draws // 2  # R's split: the first half fits the proposal, the rest is the posterior sample
    need = max(MIN_HALF, dim + 2)
    if num_fit < need:
        raise DataError(f"bridge sampling needs at least {2 * need} draws for a {dim}-dimensional latent (each half "
                        f"at least max({MIN_HALF}, d + 2) = {need}), got {num_draws}")
    fit, posterior = flat[:num_fit], flat[num_fit:]
    mean, cov = fit.mean(axis=0), np.atleast_2d(np.cov(fit, rowvar=False, ddof=1))
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise DataError(f"bridge sampling: the covariance of the first {num_fit} draws is singular (a coordinate "
                        "or combination of coordinates does not vary), so no normal proposal can be fitted") from None
    n2 = posterior.shape[0] if num_proposals is None else int(num_proposals)

    dtype = jnp.result_type(float)
    args = (jax.random.split(key, num_runs), jnp.asarray(posterior, dtype), jnp.asarray(mean, dtype),
            jnp.asarray(chol, dtype), data)
    program, compiled, compile_seconds = _program(model, unravel, n2, args)
    start = time.perf_counter()
    q11, proposals, q21 = jax.block_until_ready(program(*args))
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    q11, q21 = np.asarray(q11, np.float64), np.asarray(q21, np.float64)
    proposals = np.asarray(proposals, np.float64)
    _check_posterior_density(model, data, unravel, posterior, q11, offset=num_fit)
    _check_proposal_density(model, data, unravel, proposals, q21)
    q12 = _normal_log_density(posterior, mean, chol)
    neff = float(np.median([effective_size(posterior[:, j]) for j in range(dim)]))
    results = tuple(
        bridge_fixed_point(q11, q12, q21[r], _normal_log_density(proposals[r], mean, chol), posterior_ess=neff,
                           tol=tol, max_iterations=max_iterations)
        for r in range(num_runs))
    seconds += time.perf_counter() - start
    estimate = Estimate.from_runs(
        [res.log_marginal for res in results], bound=None, seconds=seconds, compile_seconds=compile_seconds,
        n_evals=int(posterior.shape[0] + num_runs * n2),
        settings={"method": "bridge_sampling", "proposal": "normal", "num_draws": int(num_draws),
                  "num_fit": int(num_fit), "num_posterior": int(posterior.shape[0]), "num_proposals": n2,
                  "num_runs": int(num_runs), "tol": float(tol), "max_iterations": int(max_iterations),
                  "posterior_ess": neff},
        seed=seed_of(key), compiled=compiled, who="bridge sampling",
        details=BridgeDetails(results=results, proposal_mean=mean, proposal_cov=cov, num_fit=num_fit))
    # Only the proposal part of the error averages out over runs: they share the posterior draws.
    stderr = math.sqrt(np.mean([res.posterior_term for res in results])
                       + np.mean([res.proposal_term for res in results]) / num_runs)
    return dataclasses.replace(estimate, stderr=stderr)


_PROGRAMS = CompiledCache("bridge_sampling", maxsize=32)


def _program(model, unravel, num_proposals: int, args):
    """The compiled evaluation of ``log q`` at the posterior draws and at each run's proposal draws:
    ``(program, compiled, compile_seconds)``. Cached per (model, latent layout, proposals, argument shapes) when
    the model is hashable, so calls with new keys, draws or data of the same shapes do not compile again."""
    latent = jax.eval_shape(unravel, jax.ShapeDtypeStruct(args[1].shape[1:], args[1].dtype))
    layout = (jax.tree.structure(latent), tuple((leaf.shape, str(leaf.dtype)) for leaf in jax.tree.leaves(latent)))
    leaves, treedef = jax.tree.flatten(args)
    shapes = (treedef, tuple(jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x)) for x in leaves))

    def build():
        def evaluate(keys, post, mu, lower, data):
            log_q = jax.vmap(lambda th: log_density(model, unravel(th), data, 1.0))
            draw = lambda k: mu + jax.random.normal(k, (num_proposals, mu.size), mu.dtype) @ lower.T  # noqa: E731
            proposals = jax.vmap(draw)(keys)
            return log_q(post), proposals, jax.vmap(log_q)(proposals)

        return jax.jit(evaluate).lower(*args).compile()

    start = time.perf_counter()
    try:
        hash(model)
    except TypeError:  # a model with unhashable fields: compile for this call only
        program, built = build(), True
    else:
        program, built = _PROGRAMS.get_or_build((model, layout, int(num_proposals), shapes), build)
    return program, built, (time.perf_counter() - start if built else 0.0)


def _flat_draws(model, draws):
    """The draws as a finite float64 matrix (draw, coordinate) and the unravel of one row, checked against the
    model's latent where its prior can be traced."""
    leaves = jax.tree_util.tree_flatten_with_path(draws)[0]
    if not leaves:
        raise DataError("bridge sampling: draws is empty; give the latent pytree with a leading draw axis")
    names = [jax.tree_util.keystr(path) or "draws" for path, _ in leaves]
    arrays = [np.asarray(leaf) for _, leaf in leaves]
    for name, arr in zip(names, arrays, strict=True):
        if arr.ndim == 0 or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
            raise DataError(f"bridge sampling: draws{'' if name == 'draws' else name} must be a numeric array with a "
                            f"leading draw axis, got dtype {arr.dtype} and shape {arr.shape}")
    counts = {arr.shape[0] for arr in arrays}
    if len(counts) != 1:
        raise DataError("bridge sampling: the draws' leaves differ in their number of draws (leading axis): "
                        + ", ".join(f"{n} {a.shape[0]}" for n, a in zip(names, arrays, strict=True)))
    for name, arr in zip(names, arrays, strict=True):
        bad = ~np.isfinite(arr.reshape(arr.shape[0], -1).astype(np.float64))
        if bad.any():
            draw = int(np.argmax(bad.any(axis=1)))
            raise DataError(f"bridge sampling: draw {draw} of {name} is not finite "
                            f"({int(bad.any(axis=1).sum())} draws affected)")
    if not (supports(model, HostPrior) and model.samples_on_host):
        want = jax.eval_shape(model.sample_prior, jax.random.key(0))
        got = jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a)[1:], np.asarray(a).dtype), draws)
        shapes = lambda tree: jax.tree.map(np.shape, tree)  # noqa: E731
        if not all(jnp.issubdtype(leaf.dtype, jnp.inexact) for leaf in jax.tree.leaves(want)):
            raise OptionTypeError("bridge sampling needs a continuous latent (a normal proposal on it); this model's "
                                  f"latent has discrete leaves: {jax.tree.map(lambda a: str(a.dtype), want)}")
        if jax.tree.structure(want) != jax.tree.structure(got) or shapes(want) != shapes(got):
            raise DataError(f"bridge sampling: one draw has the structure {shapes(got)}, the model's latent "
                            f"{shapes(want)}; give the latent pytree with a leading draw axis")
    # Float leaves of the active dtype: an unravel built from integer draws would round the proposals.
    flat, unravel = posterior_draws_flat(jax.tree.map(lambda a: jnp.asarray(a, jnp.result_type(float)), draws))
    return np.asarray(flat, np.float64), unravel


def _normal_log_density(x, mean, chol) -> np.ndarray:
    """``log N(x; mean, chol chol^T)`` row by row, in float64."""
    import scipy.linalg  # imported where used: ``import bdmc`` stays light

    z = scipy.linalg.solve_triangular(chol, (x - mean).T, lower=True)
    return -0.5 * np.sum(z**2, axis=0) - np.sum(np.log(np.diag(chol))) - 0.5 * mean.size * LOG_2PI


def _check_posterior_density(model, data, unravel, posterior, log_q, *, offset: int) -> None:
    bad = ~np.isfinite(log_q)
    if bad.any():
        i = int(np.argmax(bad))
        found = describe_nonfinite(model, unravel(jnp.asarray(posterior[i])), data, 1.0, zero=True)
        term = "" if found is None else f" ({found[0]}{'' if found[1] is None else f' case {found[1]}'} = {found[2]})"
        raise DataError(f"bridge sampling: the model's log density is {log_q[i]}{term} at draw {offset + i} "
                        f"({int(bad.sum())} of the posterior half's {log_q.size} draws affected); a posterior draw "
                        "must have positive, finite density")


def _check_proposal_density(model, data, unravel, proposals, log_q) -> None:
    bad = np.isnan(log_q) | (log_q == np.inf)
    if bad.any():
        run, j = (int(v) for v in np.unravel_index(int(np.argmax(bad)), bad.shape))
        found = describe_nonfinite(model, unravel(jnp.asarray(proposals[run, j])), data, 1.0)
        term = "" if found is None else f" ({found[0]}{'' if found[1] is None else f' case {found[1]}'} = {found[2]})"
        raise NonFiniteLogWeightError(
            f"bridge sampling: the model's log density is {log_q[run, j]}{term} at proposal draw {j} of run {run}; a "
            "log density may be -inf (zero density) but never NaN or +inf: this is a bug in the model, not a result")
