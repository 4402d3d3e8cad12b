"""Tool adapters for ``peers.py``: each turns (problem, budget) into ``run(seed) -> {"log_z", "n_evals"}``.

Every adapter gets the same log density (:mod:`peer_problems`). Settings not named here are the tool's
defaults. The gradient-based peers (BlackJAX, TFP) use HMC with identity mass, step size 0.05 and 10 leapfrog
steps, which is bdmc's default kernel at the time of writing; BlackJAX's tempered SMC instead tunes its HMC from
its particles with BlackJAX's own tools (``blackjax_smc_fn``), the information bdmc's pilot uses. bdmc itself is
always called with its own defaults, so a change of those flows into a rerun.

``make(tool, problem, budget)`` does the setup a user would do once (build the jitted function or the PyMC
model); the first ``run`` pays any compilation. ``n_evals`` is the tool's own count of density or gradient
evaluations where it reports one, else None.
"""

from __future__ import annotations

import functools
import json
import logging
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import bdmc

HMC_STEP, HMC_LEAPFROG = 0.05, 10

# Budgets per tool: the knob a user turns for more accuracy. bdmc-smc is (particles, moves per data case).
BUDGETS = {
    "bdmc-ais": [30, 100, 300, 1000, 3000, 10000],
    "bdmc-smc": [(64, 1), (256, 1)],
    "bdmc-tsmc": [(16, 30), (64, 30), (64, 100), (256, 100), (256, 300), (1024, 300), (4096, 300)],
    "blackjax": [64, 256, 1024, 4096],
    "pymc": [250, 1000, 4000],
    "tfp": [100, 1000],
    "tfp-refreshed": [100, 1000, 3000],
    "dynesty": [50],
    "ultranest": [100],
    "nautilus": [500],
}
KNOBS = {"bdmc-ais": "num_steps T (1 run)", "bdmc-smc": "particles x moves/case (1 run)",
         "bdmc-tsmc": "particles x temperatures (1 run; moves per temperature the pilot's)",
         "blackjax": "particles", "pymc": "draws (particles)", "tfp": "num_steps (1 chain)",
         "tfp-refreshed": "num_steps (1 chain)",
         "dynesty": "nlive", "ultranest": "min_num_live_points", "nautilus": "n_live"}
TOOLS = tuple(BUDGETS)


def budget_label(budget) -> str:
    """A budget as a short string (the JSONL key)."""
    return "x".join(map(str, budget)) if isinstance(budget, (tuple, list)) else str(budget)


def make(tool: str, problem, budget):
    """``run(seed)`` for one tool at one budget on one problem."""
    return MAKERS[tool](problem, budget)


def make_named(tool: str, problem: str, budget: str):
    """:func:`make` from a problem's name and a budget as JSON (a list for a particles x steps pair): what a fresh
    process is handed on its command line."""
    import peer_problems

    value = json.loads(budget)
    return make(tool, peer_problems.get_problem(problem), tuple(value) if isinstance(value, list) else value)


# ------------------------------------------------------------------------------------------------ bdmc
def make_bdmc_ais(problem, num_steps):
    model, data = problem.model, jnp.asarray(problem.data)

    def run(seed):
        est = bdmc.forward_ais(jax.random.key(seed), model, data, num_steps=int(num_steps), num_runs=1,
                               progress=False)
        return {"log_z": float(est.value), "n_evals": int(est.n_evals), "compiled": bool(est.compiled),
                "settings": {k: v for k, v in est.settings.items() if isinstance(v, (int, float, str, bool))}}
    return run


def make_bdmc_smc(problem, budget):
    model, data = problem.model, jnp.asarray(problem.data)
    particles, moves = budget

    def run(seed):
        est = bdmc.smc(jax.random.key(seed), model, data, num_moves=int(moves), num_particles=int(particles),
                       num_runs=1, progress=False)
        return {"log_z": float(est.value), "n_evals": int(est.n_evals), "compiled": bool(est.compiled),
                "settings": {k: v for k, v in est.settings.items() if isinstance(v, (int, float, str, bool))}}
    return run


def make_bdmc_tsmc(problem, budget):
    model, data = problem.model, jnp.asarray(problem.data)
    particles, temperatures = budget

    def run(seed):
        est = bdmc.tempered_smc(jax.random.key(seed), model, data, num_steps=int(temperatures),
                                num_particles=int(particles), num_runs=1, progress=False)
        return {"log_z": float(est.value), "n_evals": int(est.n_evals), "compiled": bool(est.compiled),
                "settings": {k: v for k, v in est.settings.items() if isinstance(v, (int, float, str, bool))}}
    return run


# --------------------------------------------------------------------------------------------- BlackJAX
def blackjax_smc_fn(problem, num_particles, num_mcmc_steps=10):
    """A jitted ``key -> (log Z, tempering steps)``: adaptive tempered SMC in one ``lax.while_loop``, with the
    inner HMC tuned from the particles by BlackJAX's own tools (``blackjax.inner_kernel_tuning``): after each
    tempering step the inverse mass matrix is the particles' variances (``inverse_mass_matrix_from_particles``,
    Buchholz et al. 2018, Sec. 3.1), and the step size on that preconditioned scale is ``d ** -0.25`` (the
    optimal scaling of HMC in d dimensions, Beskos et al. 2013), 10 leapfrog steps."""
    import blackjax
    from blackjax.smc import resampling
    from blackjax.smc.tuning.from_particles import inverse_mass_matrix_from_particles

    data = jnp.asarray(problem.data)
    loglik = lambda x: jnp.sum(problem.log_lik(x, data))  # noqa: E731
    step = functools.partial(blackjax.hmc.build_kernel(), num_integration_steps=HMC_LEAPFROG)
    step_size = float(problem.dim) ** -0.25

    def params_from(particles):
        inverse_mass = jnp.diag(inverse_mass_matrix_from_particles(particles))
        return {"step_size": jnp.full((1,), step_size), "inverse_mass_matrix": inverse_mass[None]}

    smc = blackjax.inner_kernel_tuning(
        smc_algorithm=blackjax.adaptive_tempered_smc, logprior_fn=problem.log_prior, loglikelihood_fn=loglik,
        mcmc_step_fn=step, mcmc_init_fn=blackjax.hmc.init, resampling_fn=resampling.systematic,
        mcmc_parameter_update_fn=lambda key, state, info: params_from(state.particles),
        initial_parameter_value={}, target_ess=0.5, num_mcmc_steps=num_mcmc_steps)

    @jax.jit
    def run(key):
        k_init, key = jax.random.split(key)
        particles = jax.vmap(problem.sample_prior)(jax.random.split(k_init, num_particles))
        # The first moves use the prior particles' variances, as every later one the current particles'.
        state = blackjax.smc.inner_kernel_tuning.init(blackjax.smc.tempered.init, particles, params_from(particles))

        def body(carry):
            state, key, log_z, n = carry
            key, sub = jax.random.split(key)
            state, info = smc.step(sub, state)
            return state, key, log_z + info.log_likelihood_increment, n + 1

        carry = (state, key, jnp.zeros(()), jnp.zeros((), jnp.int32))
        _, _, log_z, n = jax.lax.while_loop(lambda c: c[0].sampler_state.tempering_param < 1, body, carry)
        return log_z, n
    return run


def make_blackjax(problem, num_particles, num_mcmc_steps=10):
    fn = blackjax_smc_fn(problem, int(num_particles), num_mcmc_steps)

    def run(seed):
        log_z, n = jax.block_until_ready(fn(jax.random.key(seed)))
        # per tempering step: one likelihood per particle for the weights, then the HMC moves
        evals = int(n) * num_particles * (1 + num_mcmc_steps * (HMC_LEAPFROG + 1))
        return {"log_z": float(log_z), "n_evals": evals, "tempering_steps": int(n)}
    return run


# -------------------------------------------------------------------------------------------------- TFP
def make_tfp(problem, num_steps, refresh=False):
    """Stock TFP AIS, or with ``refresh`` its HMC results recomputed at the current beta before each move.

    Stock TFP HMC reuses the log density and gradient cached at the last accepted state, computed under an
    older beta, so its Metropolis test is not for the current intermediate density
    (``benchmarks/README.md``, ais_throughput). The refreshed kernel costs one more gradient per move.
    """
    from tensorflow_probability.substrates import jax as tfp

    class RefreshedHMC(tfp.mcmc.HamiltonianMonteCarlo):
        def one_step(self, state, previous_results, seed=None):
            return super().one_step(state, self.bootstrap_results(state), seed=seed)

    hmc = RefreshedHMC if refresh else tfp.mcmc.HamiltonianMonteCarlo

    data = jnp.asarray(problem.data)
    prior = jax.vmap(problem.log_prior)
    target = jax.vmap(lambda x: problem.log_prior(x) + jnp.sum(problem.log_lik(x, data)))

    @jax.jit
    def ais(key):
        k_init, k_run = jax.random.split(key)
        init = problem.sample_prior(k_init)[None]  # one chain: one run, as bdmc's num_runs=1
        _, weights, _ = tfp.mcmc.sample_annealed_importance_chain(
            num_steps=int(num_steps), proposal_log_prob_fn=prior, target_log_prob_fn=target, current_state=init,
            make_kernel_fn=lambda tlp: hmc(tlp, HMC_STEP, HMC_LEAPFROG), seed=k_run)
        return weights[0]

    def run(seed):
        evals = int(num_steps) * (HMC_LEAPFROG + 2 + int(refresh))
        return {"log_z": float(ais(jax.random.key(seed))), "n_evals": evals}
    return run


def make_tfp_refreshed(problem, num_steps):
    return make_tfp(problem, num_steps, refresh=True)


# ------------------------------------------------------------------------------------------------- PyMC
def make_pymc(problem, draws):
    import pymc as pm

    model = problem.pymc_model()
    logging.getLogger("pymc").setLevel(logging.ERROR)

    def run(seed):
        with model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample_smc(draws=int(draws), chains=1, cores=1, random_seed=int(seed), progressbar=False,
                                  compute_convergence_checks=False)
        lml = np.asarray(idata.sample_stats["log_marginal_likelihood"]).ravel()
        lml = lml[np.isfinite(lml.astype(float))].astype(float)
        return {"log_z": float(lml[-1]), "n_evals": None}
    return run


# ------------------------------------------------------------------------------------- nested samplers
class NestedLoglike:
    """log L(z) for the nested samplers: jitted, vmapped, batches padded to powers of two (few compiles)."""

    def __init__(self, problem):
        data = jnp.asarray(problem.data)
        single = lambda z: jnp.sum(problem.log_lik(problem.z_to_x(z), data))  # noqa: E731
        self.batch = jax.jit(jax.vmap(single))
        self.one = jax.jit(single)
        self.calls = 0

    def __call__(self, z):
        """One point (shape (dim,)) to a float, or rows (shape (n, dim)) to an array."""
        z = np.asarray(z, dtype=np.float64)
        if z.ndim == 1:
            self.calls += 1
            return float(self.one(z))
        n = z.shape[0]
        self.calls += n
        size = 1 << max(n - 1, 1).bit_length()
        padded = np.concatenate([z, np.repeat(z[:1], size - n, axis=0)]) if size > n else z
        out = np.asarray(self.batch(padded))[:n]
        return np.where(np.isfinite(out), out, -1e300)  # samplers want finite values


def make_dynesty(problem, nlive):
    import dynesty

    loglike = NestedLoglike(problem)

    def run(seed):
        sampler = dynesty.NestedSampler(loglike, problem.prior_transform, problem.dim, nlive=int(nlive),
                                        rstate=np.random.default_rng(seed))
        sampler.run_nested(print_progress=False)
        res = sampler.results
        return {"log_z": float(res.logz[-1]), "stderr": float(res.logzerr[-1]), "n_evals": int(np.sum(res.ncall))}
    return run


def make_ultranest(problem, live):
    import ultranest

    loglike = NestedLoglike(problem)
    names = [f"z{i}" for i in range(problem.dim)]

    def run(seed):
        np.random.seed(seed)  # UltraNest draws from NumPy's global generator
        sampler = ultranest.ReactiveNestedSampler(names, loglike, problem.prior_transform, vectorized=True,
                                                  log_dir=None)
        logging.getLogger("ultranest").setLevel(logging.ERROR)  # the constructor installs an INFO handler
        res = sampler.run(min_num_live_points=int(live), show_status=False, viz_callback=False)
        return {"log_z": float(res["logz"]), "n_evals": int(res["ncall"])}
    return run


def make_nautilus(problem, n_live, *, n_networks=4, n_eff=10_000, timeout=float("inf")):
    """nautilus at ``n_live`` (its other options at its defaults unless given); a run past ``timeout`` seconds
    raises rather than report the unfinished estimate."""
    import nautilus

    loglike = NestedLoglike(problem)

    def run(seed):
        began = time.perf_counter()
        sampler = nautilus.Sampler(problem.prior_transform, loglike, n_dim=problem.dim, n_live=int(n_live),
                                   n_networks=int(n_networks), vectorized=True, pass_dict=False, seed=int(seed))
        sampler.run(verbose=False, n_eff=int(n_eff), timeout=timeout)
        if time.perf_counter() - began >= timeout:
            raise TimeoutError(f"nautilus had not finished in {timeout:.0f} s")
        return {"log_z": float(sampler.log_z), "n_evals": int(sampler.n_like)}
    return run


MAKERS = {"bdmc-ais": make_bdmc_ais, "bdmc-smc": make_bdmc_smc, "bdmc-tsmc": make_bdmc_tsmc, "blackjax": make_blackjax,
          "pymc": make_pymc,
          "tfp": make_tfp, "tfp-refreshed": make_tfp_refreshed, "dynesty": make_dynesty, "ultranest": make_ultranest,
          "nautilus": make_nautilus}


def tool_versions() -> dict:
    """Installed versions of every peer (None where one is missing)."""
    out = {"bdmc": bdmc.__version__, "jax": jax.__version__}
    for name, module in [("blackjax", "blackjax"), ("pymc", "pymc"), ("tfp", "tensorflow_probability"),
                         ("dynesty", "dynesty"), ("ultranest", "ultranest"), ("nautilus", "nautilus")]:
        try:
            out[name] = __import__(module).__version__
        except Exception:  # a peer that fails to import is reported, not fatal
            out[name] = None
    return out


def long_reference(problem, seed=12345, quick=False):
    """A long bdmc AIS run and a long BlackJAX run; their mean is the reference where there is no exact answer."""
    steps, runs, particles, moves = (1000, 4, 1024, 10) if quick else (10000, 16, 4096, 10)
    ais = bdmc.forward_ais(jax.random.key(seed), problem.model, jnp.asarray(problem.data), num_steps=steps,
                           num_runs=runs, progress=False)
    peer = make_blackjax(problem, particles, num_mcmc_steps=moves)(seed)["log_z"]
    return {"bdmc": float(ais.value), "bdmc_stderr": float(ais.stderr),
            "bdmc_label": f"forward_ais T={steps}, {runs} runs combined", "peer": peer,
            "peer_label": f"adaptive tempered SMC, {particles} particles, {moves} HMC moves per step",
            "value": 0.5 * (float(ais.value) + peer), "agree_nats": abs(float(ais.value) - peer)}
