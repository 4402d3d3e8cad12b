"""Ready estimators for :func:`bdmc.calibrate_estimator`: other tools' evidence as ``(data, *, seed) -> (log_z,
stderr)`` on a bdmc Model.

Each adapter is built once per model (its compiled functions take the data as an argument, so a new data set of
the same shape does not compile again). The latent is flattened with ``jax.flatten_util.ravel_pytree``: the
tools see the model's own (unconstrained) coordinates, its ``log_prior`` and summed ``log_likelihood``. The stated
± is the one each tool reports, or NaN where it reports none (coverage then cannot be judged; bias and RMSE can).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ..contracts.estimate import ESTIMATORS
from ..errors import MissingExtraError, OptionError

NESTED = ("dynesty", "nautilus", "ultranest")


def bdmc_adapter(model, estimator: str = "ais", **knobs) -> Callable:
    """One of bdmc's registered estimators (``bdmc.ESTIMATORS``): its value and stderr.

    Parameters
    ----------
    model
    estimator : str
        A registry name: ``ais`` (forward AIS), ``tempered-smc``, ``smc``, ``ns`` (nested sampling), ...
    **knobs
        Passed on (``num_steps``, ``num_runs``, ``num_particles``, ...).
    """
    if estimator not in ESTIMATORS:
        raise OptionError(f"unknown estimator {estimator!r}; choose one of: {', '.join(ESTIMATORS)}")
    info = ESTIMATORS[estimator]
    if info.needs_exact:
        raise OptionError(f"{estimator} starts from the exact latent: it is a bound of bdmc's sandwich, not a tool "
                          "a user runs on data")

    def run(data, *, seed: int):
        est = info(jax.random.key(seed), model, data, progress=False, **knobs)
        return float(est.value), float(est.stderr)

    run.__name__ = f"bdmc {estimator}"
    return run


def _flat(model):
    flat, unravel = ravel_pytree(model.sample_prior(jax.random.key(0)))
    return int(flat.size), unravel


def blackjax_adapter(model, *, num_particles: int = 1000, num_mcmc_steps: int = 10,
                     target_ess: float = 0.5) -> Callable:
    """BlackJAX's adaptive tempered SMC, its HMC tuned from the particles with BlackJAX's own tools (inverse mass
    from the particles' variances, step size ``d ** -0.25``, 10 leapfrog steps). BlackJAX states no ± (NaN)."""
    import blackjax
    from blackjax.smc import resampling
    from blackjax.smc.tuning.from_particles import inverse_mass_matrix_from_particles

    dim, unravel = _flat(model)
    step = functools.partial(blackjax.hmc.build_kernel(), num_integration_steps=10)
    step_size = float(dim) ** -0.25

    def params_from(particles):
        inverse_mass = jnp.diag(inverse_mass_matrix_from_particles(particles))
        return {"step_size": jnp.full((1,), step_size), "inverse_mass_matrix": inverse_mass[None]}

    @jax.jit
    def run_jit(key, data):
        log_prior = lambda z: model.log_prior(unravel(z))  # noqa: E731
        loglik = lambda z: jnp.sum(model.log_likelihood(unravel(z), data))  # noqa: E731
        smc = blackjax.inner_kernel_tuning(
            smc_algorithm=blackjax.adaptive_tempered_smc, logprior_fn=log_prior, loglikelihood_fn=loglik,
            mcmc_step_fn=step, mcmc_init_fn=blackjax.hmc.init, resampling_fn=resampling.systematic,
            mcmc_parameter_update_fn=lambda key, state, info: params_from(state.particles),
            initial_parameter_value={}, target_ess=target_ess, num_mcmc_steps=num_mcmc_steps)
        k_init, key = jax.random.split(key)
        particles = jax.vmap(lambda k: ravel_pytree(model.sample_prior(k))[0])(jax.random.split(k_init, num_particles))
        state = blackjax.smc.inner_kernel_tuning.init(blackjax.smc.tempered.init, particles, params_from(particles))

        def body(carry):
            state, key, log_z = carry
            key, sub = jax.random.split(key)
            state, info = smc.step(sub, state)
            return state, key, log_z + info.log_likelihood_increment

        carry = (state, key, jnp.zeros(()))
        return jax.lax.while_loop(lambda c: c[0].sampler_state.tempering_param < 1, body, carry)[2]

    def run(data, *, seed: int):
        return float(run_jit(jax.random.key(seed), data)), math.nan

    run.__name__ = f"BlackJAX tempered SMC ({num_particles} particles)"
    return run


class _NestedLoglike:
    """log L(z) for a nested sampler: jitted, vmapped, batches padded to powers of two (few compiles)."""

    def __init__(self, batch, single, data):
        self._batch, self._single, self._data = batch, single, data

    def __call__(self, z):
        z = np.asarray(z, dtype=np.float64)
        if z.ndim == 1:
            value = float(self._single(z, self._data))
            return value if np.isfinite(value) else -1e300
        n = z.shape[0]
        size = 1 << max(n - 1, 1).bit_length()
        padded = np.concatenate([z, np.repeat(z[:1], size - n, axis=0)]) if size > n else z
        out = np.asarray(self._batch(padded, self._data))[:n]
        return np.where(np.isfinite(out), out, -1e300)  # the samplers want finite values


def nested_adapter(tool: str, model, *, prior_transform: Callable, live: int | None = None, **options) -> Callable:
    """A nested sampler: dynesty (``NestedSampler``), nautilus (``Sampler``) or UltraNest (``ReactiveNestedSampler``).

    Parameters
    ----------
    tool : {"dynesty", "nautilus", "ultranest"}
    model
    prior_transform : callable
        Unit-cube rows ``u`` of shape ``(n, d)`` (or one row) to the model's flat latent (its ``ravel_pytree``
        order, on the model's own unconstrained coordinates): the nested samplers' prior.
    live : int, optional
        Live points (dynesty ``nlive``, nautilus ``n_live``, UltraNest ``min_num_live_points``); default the tool's.
    **options
        Passed to the run call.

    Notes
    -----
    The stated ±: dynesty's ``logzerr`` and UltraNest's ``logzerr``; nautilus states none in its results (its
    documentation gives the rule of thumb ``1 / sqrt(n_eff)``, which is what is returned, and so judged).
    """
    if tool not in NESTED:
        raise OptionError(f"unknown nested sampler {tool!r}; choose one of: {', '.join(NESTED)}")
    try:
        module = __import__(tool)
    except ImportError:
        raise MissingExtraError(f"{tool} is not installed: pip install -e '.[bench]' in bdmc's checkout") from None
    dim, unravel = _flat(model)
    single = lambda z, data: jnp.sum(model.log_likelihood(unravel(z), data))  # noqa: E731
    batch, one = jax.jit(jax.vmap(single, in_axes=(0, None))), jax.jit(single)  # compiled once per data shape

    def transform(u):
        u = np.asarray(u, dtype=np.float64)
        return np.asarray(prior_transform(u), dtype=np.float64)

    def run(data, *, seed: int):
        loglike = _NestedLoglike(batch, one, data)
        if tool == "dynesty":
            kwargs = {} if live is None else {"nlive": int(live)}
            sampler = module.NestedSampler(loglike, transform, dim, rstate=np.random.default_rng(seed), **kwargs)
            sampler.run_nested(print_progress=False, **options)
            res = sampler.results
            return float(res.logz[-1]), float(res.logzerr[-1])
        if tool == "nautilus":
            kwargs = {} if live is None else {"n_live": int(live)}
            sampler = module.Sampler(transform, loglike, n_dim=dim, vectorized=True, pass_dict=False, seed=int(seed),
                                     **kwargs)
            sampler.run(verbose=False, **options)
            return float(sampler.log_z), float(1 / math.sqrt(sampler.n_eff))
        import logging

        np.random.seed(seed)  # UltraNest draws from NumPy's global generator
        names = [f"z{i}" for i in range(dim)]
        sampler = module.ReactiveNestedSampler(names, loglike, transform, vectorized=True, log_dir=None)
        logging.getLogger("ultranest").setLevel(logging.ERROR)  # its constructor installs an INFO handler
        kwargs = {} if live is None else {"min_num_live_points": int(live)}
        res = sampler.run(show_status=False, viz_callback=False, **kwargs, **options)
        return float(res["logz"]), float(res["logzerr"])

    run.__name__ = tool + ("" if live is None else f" ({live} live points)")
    return run


def pymc_smc_adapter(build: Callable, *, draws: int = 2000, chains: int = 4) -> Callable:
    """PyMC's ``sample_smc``: ``build(data) -> pm.Model`` for one data set; log p(y) is the mean over chains of
    PyMC's ``log_marginal_likelihood``, and the stated ± the chains' standard deviation over ``sqrt(chains)`` (the
    ± a PyMC user computes; PyMC states none itself). The model is rebuilt (and compiled) per data set."""
    try:
        import pymc as pm
    except ImportError:
        raise MissingExtraError("PyMC is not installed: pip install -e '.[pymc]' in bdmc's checkout") from None
    import logging
    import warnings

    def run(data, *, seed: int):
        logging.getLogger("pymc").setLevel(logging.ERROR)
        with build(data), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample_smc(draws=int(draws), chains=int(chains), cores=1, random_seed=int(seed),
                                  progressbar=False, compute_convergence_checks=False)
        lml = np.asarray(idata.sample_stats["log_marginal_likelihood"])
        # One entry per chain: a list of its stage values (an object array of lists, (1, chains) or (chains, 1),
        # when the chains ran different numbers of stages), else a row of the (chains, stages) values.
        chains_run = int(idata.posterior.sizes["chain"])
        if lml.dtype == object and any(np.ndim(v) > 0 for v in lml.ravel()):
            entries = lml.ravel()
        else:
            entries = np.asarray(lml, dtype=float).reshape(chains_run, -1)
        per_chain = np.array([_last_finite(entry) for entry in entries])
        stderr = float(np.std(per_chain, ddof=1) / math.sqrt(len(per_chain))) if len(per_chain) > 1 else math.nan
        return float(np.mean(per_chain)), stderr

    run.__name__ = f"PyMC sample_smc ({draws} draws x {chains} chains)"
    return run


def _last_finite(values) -> float:
    """The last finite value of one chain's ``log_marginal_likelihood`` stages (PyMC pads them with NaN)."""
    flat = np.atleast_1d(np.asarray(values, dtype=float)).ravel()
    flat = flat[np.isfinite(flat)]
    return float(flat[-1]) if flat.size else math.nan


def normal_prior_transform(model, scales) -> Callable:
    """The unit-cube transform of independent zero-mean Normal priors on the flat latent (``scales``: their
    standard deviations, one per coordinate, in ``ravel_pytree`` order)."""
    from scipy import stats

    scales = np.asarray(scales, dtype=np.float64)
    dim, _ = _flat(model)
    if scales.shape != (dim,):
        raise OptionError(f"scales must have one entry per latent coordinate ({dim}), got shape {scales.shape}")
    return lambda u: stats.norm.ppf(np.clip(u, 1e-16, 1 - 1e-16)) * scales


def blocks_prior_transform(model, *, checks: int = 3) -> Callable:
    """The unit-cube transform of a model whose prior is its declared zero-mean Gaussian blocks
    (:class:`~bdmc.contracts.capabilities.GaussianPriorBlocks`): what the nested samplers need, built from the
    model.

    The blocks must cover every latent leaf, and the model's ``log_prior`` must equal the sum of those Normals'
    log densities at ``checks`` prior draws (a declared block is a move's hint, not a promise that it is the
    whole prior); otherwise the error says which, and a transform must be given by hand
    (:func:`normal_prior_transform` or one's own).

    Raises
    ------
    bdmc.errors.MissingCapabilityError
        The model declares no Gaussian prior blocks.
    bdmc.errors.OptionError
        A leaf not covered by a block, or a prior that is not the product of the declared Normals.
    """
    from ..contracts.capabilities import GaussianPriorBlocks, require

    require(model, GaussianPriorBlocks, purpose="a nested sampler's prior transform built from the model")
    stds = {name: float(std) for name, _, std in model.gaussian_prior_blocks()}
    draw = model.sample_prior(jax.random.key(0))
    if not isinstance(draw, dict) or set(draw) - set(stds):
        leaves = sorted(set(draw) - set(stds)) if isinstance(draw, dict) else [type(draw).__name__]
        raise OptionError(f"{type(model).__name__}'s Gaussian prior blocks do not cover its latent {leaves}: "
                          "give the prior transform by hand")
    scales, _ = ravel_pytree({name: jnp.full(jnp.shape(leaf), stds[name]) for name, leaf in draw.items()})
    scales = np.asarray(scales, dtype=np.float64)
    for i in range(checks):
        latent = model.sample_prior(jax.random.key(i + 1))
        flat = np.asarray(ravel_pytree(latent)[0], dtype=np.float64)
        declared = float(np.sum(-0.5 * (flat / scales) ** 2 - np.log(scales) - 0.5 * math.log(2 * math.pi)))
        own = float(model.log_prior(latent))
        if not math.isclose(own, declared, rel_tol=1e-6, abs_tol=1e-6):
            raise OptionError(f"{type(model).__name__}'s log_prior ({own:.6g}) is not the product of its declared "
                              f"Gaussian blocks ({declared:.6g}) at a prior draw: give the prior transform by hand")
    return normal_prior_transform(model, scales)
