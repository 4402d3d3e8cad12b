"""Peers on the posteriordb evidence table: other tools' log p(y) on the same NumPyro ports, data and draws.

For every ported posterior of ``benchmarks/posteriordb_models.py`` with reference draws (the two ODE ports
excepted: each density evaluation solves an ODE, beyond this table's budget), three peers, each on the port's own
density and data, and a fourth on a PyMC port of the same posterior where one is written:

- ``bridge``: :func:`bdmc.estimators.bridge_sampling` (R's ``bridgesampling``, ``method="normal"``) from
  posteriordb's reference draws (``draws.npz``), mapped to the port's unconstrained space; its own stderr is
  reported. The draws are the same for every seed: the seeds vary the proposal sample only.
- ``blackjax-smc``: BlackJAX's adaptive tempered SMC with HMC moves tuned from the particles, built exactly as
  ``peer_tools.blackjax_smc_fn`` builds it for the peers benchmark, on the port's log prior (with the Jacobian of
  its unconstrained space) and log likelihood; ``--particles`` particles (1,000), 10 moves per temperature.
- ``nautilus``: nested sampling (``nautilus-sampler``) with a ``nautilus.Prior`` of one independent univariate
  distribution per parameter, read off the program: possible only where every latent site's prior has fixed
  parameters (no hierarchy) and is a product of univariate distributions SciPy has (no ordered or simplex
  parameter). Elsewhere the row says why not; no hand-written prior transform is used. ``n_live`` 500 and one
  neural network per bound (nautilus's defaults: 2,000 and 4), within this table's budget; a run still going
  after 30 s is stopped and the posterior gets no more seeds.
- ``pymc-smc``: PyMC's ``pm.sample_smc`` (its default kernel: independent Metropolis-Hastings moves from a normal
  fitted to the particles) with ``--pymc-draws`` particles (1,000) in one chain, on the PyMC port of the posterior
  in ``benchmarks/posteriordb_pymc_ports.py`` (the same priors and likelihood, checked against the NumPyro port's
  density); its log Z is the final stage's ``log_marginal_likelihood``. Only where a PyMC port is written.

Each (posterior, peer, seed) is one row of ``benchmarks/results/posteriordb/peers.jsonl``, appended as it finishes,
so an interrupted run resumes; a peer that cannot run on a posterior gets one row saying why. The page ``peers.md``
compares each peer's estimates with bdmc's interval in ``evidence.csv``.

    python benchmarks/posteriordb_peers.py                              # those with reference draws (resumes)
    python benchmarks/posteriordb_peers.py --names sblrc-blr --seeds 2  # some
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import traceback
import warnings
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

sys.path.insert(0, str(Path(__file__).parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows  # noqa: E402
from peer_tools import blackjax_smc_fn  # noqa: E402
from posteriordb_evidence import reference_draws  # noqa: E402
from posteriordb_models import DATA_DIR, POSTERIORS, load  # noqa: E402

import bdmc  # noqa: E402
from bdmc.errors import MissingCapabilityError  # noqa: E402
from bdmc.files import to_jsonable  # noqa: E402
from bdmc.intervals.draws import posterior_draws  # noqa: E402

OUT = Path(__file__).parent / "results" / "posteriordb"
PEERS = ("bridge", "blackjax-smc", "nautilus", "pymc-smc")
ODE = ("hudson_lynx_hare-lotka_volterra", "one_comp_mm_elim_abs-one_comp_mm_elim_abs")
DEFAULTS = {"particles": 1000, "mcmc_steps": 10, "n_live": 500, "n_networks": 1, "max_blackjax_seconds": 60.0,
            "max_nautilus_seconds": 30.0, "pymc_draws": 1000}


def setup(name: str) -> SimpleNamespace:
    """A port as ``run_posterior`` builds it: the bdmc model, its data, and the reference draws' sites (or None)."""
    entry = POSTERIORS[name]
    data_json, _, _ = load(name)
    model = bdmc.ppl.from_numpyro(entry.model, observed=list(entry.observed), **entry.covariates(data_json))
    data = {k: jnp.asarray(v) for k, v in entry.observations(data_json).items()}
    return SimpleNamespace(name=name, entry=entry, model=model, data=data,
                           covariates=entry.covariates(data_json), sites=reference_draws(entry, data_json))


# ------------------------------------------------------------------------------------------------ bridge
def bridge_run(port, seed: int) -> dict:
    """One bridge-sampling estimate from the reference draws."""
    latents = posterior_draws(port.model, port.sites).latents
    began = time.perf_counter()
    est = bdmc.estimators.bridge_sampling(jax.random.key(seed), port.model, port.data, draws=latents)
    return {"log_z": float(est.value), "stderr": float(est.stderr), "seconds": time.perf_counter() - began,
            "num_draws": int(jax.tree.leaves(latents)[0].shape[0])}


# ---------------------------------------------------------------------------------------------- BlackJAX
def smc_problem(model, data):
    """The port as the problem ``peer_tools.blackjax_smc_fn`` takes: a flat latent vector.

    The data are closed over (``blackjax_smc_fn`` hands its ``problem.data`` to ``log_lik``, unused here).
    """
    flat, unravel = ravel_pytree(model.sample_prior(jax.random.key(0)))

    def flat_prior_draw(key):
        return ravel_pytree(model.sample_prior(key))[0]

    return SimpleNamespace(dim=int(flat.size), data=jnp.zeros(()), sample_prior=flat_prior_draw,
                           log_prior=lambda z: model.log_prior(unravel(z)),
                           log_lik=lambda z, _: model.log_likelihood(unravel(z), data))


def blackjax_runner(port, *, particles: int, mcmc_steps: int):
    """``seed -> row fields``, compiled ahead of the first run (its seconds are ``compile_seconds``)."""
    fn = blackjax_smc_fn(smc_problem(port.model, port.data), particles, num_mcmc_steps=mcmc_steps)
    began = time.perf_counter()
    compiled = fn.lower(jax.random.key(0)).compile()
    compile_seconds = time.perf_counter() - began

    def run(seed):
        began = time.perf_counter()
        log_z, steps = jax.block_until_ready(compiled(jax.random.key(seed)))
        return {"log_z": float(log_z), "tempering_steps": int(steps), "seconds": time.perf_counter() - began,
                "compile_seconds": compile_seconds}
    return run


# ---------------------------------------------------------------------------------------------- nautilus
class FoldedAtZero:
    """``|X|`` for a SciPy distribution symmetric about zero, with the ``isf`` a ``nautilus.Prior`` asks for."""

    def __init__(self, base):
        self.base = base

    def isf(self, q):
        return self.base.isf(np.asarray(q) / 2.0)


def _scipy_leaf(leaf, shape):
    """One SciPy distribution per component of a univariate NumPyro leaf broadcast to ``shape`` (None: none)."""
    from numpyro import distributions as dist
    from scipy import stats

    def p(*names):
        return [np.broadcast_to(np.asarray(getattr(leaf, n), float), shape).ravel() for n in names]

    table = {
        dist.Normal: (("loc", "scale"), lambda m, s: stats.norm(m, s)),
        dist.Cauchy: (("loc", "scale"), lambda m, s: stats.cauchy(m, s)),
        dist.StudentT: (("df", "loc", "scale"), lambda v, m, s: stats.t(v, m, s)),
        dist.HalfNormal: (("scale",), lambda s: stats.halfnorm(scale=s)),
        dist.HalfCauchy: (("scale",), lambda s: stats.halfcauchy(scale=s)),
        dist.Exponential: (("rate",), lambda r: stats.expon(scale=1.0 / r)),
        dist.Gamma: (("concentration", "rate"), lambda a, r: stats.gamma(a, scale=1.0 / r)),
        dist.InverseGamma: (("concentration", "rate"), lambda a, r: stats.invgamma(a, scale=r)),
        dist.Beta: (("concentration1", "concentration0"), lambda a, b: stats.beta(a, b)),
        dist.LogNormal: (("loc", "scale"), lambda m, s: stats.lognorm(s, scale=math.exp(m))),
        dist.Uniform: (("low", "high"), lambda lo, hi: stats.uniform(lo, hi - lo)),
    }
    if type(leaf) in table:
        names, make = table[type(leaf)]
        return [make(*args) for args in zip(*p(*names), strict=True)], p(*names)
    if isinstance(leaf, dist.FoldedDistribution):
        base = leaf.base_dist
        if type(base) in (dist.Normal, dist.Cauchy, dist.StudentT) and np.all(np.asarray(base.loc) == 0):
            inner, params = _scipy_leaf(base, shape)
            return [FoldedAtZero(d) for d in inner], params
    return None, None


def site_marginals(fn, shape):
    """The univariate SciPy marginals of one latent site's prior, and their parameters, or (None, reason)."""
    from numpyro import distributions as dist

    leaf = fn
    while isinstance(leaf, (dist.Independent, dist.ExpandedDistribution)):
        leaf = leaf.base_dist
    if leaf.event_shape:
        return None, f"{type(leaf).__name__} (a joint prior over {leaf.event_shape}: no univariate marginals)"
    marginals, params = _scipy_leaf(leaf, shape)
    if marginals is None:
        return None, f"{type(leaf).__name__} (no SciPy counterpart here)"
    return marginals, params


def nautilus_prior(port, *, traces: int = 3):
    """``(nautilus.Prior, site layout)`` for a port whose prior is a product of fixed univariate distributions,
    or ``(None, reason)``.

    Each latent site's prior is read from ``traces`` runs of the program from different seeds: a site whose
    distribution's parameters change between them depends on another latent (a hierarchical prior).
    """
    import nautilus
    from numpyro import handlers

    runs = [handlers.trace(handlers.seed(port.entry.model, jax.random.key(s))).get_trace(**port.covariates)
            for s in range(traces)]
    prior, layout = nautilus.Prior(), []
    for name in port.model.latent_sites:
        shape = tuple(np.shape(runs[0][name]["value"]))
        found = [site_marginals(run[name]["fn"], shape) for run in runs]
        marginals, params = found[0]
        if marginals is None:
            return None, f"site {name!r}: {params}"
        if any(not all(np.array_equal(a, b) for a, b in zip(params, other, strict=True)) for _, other in found[1:]):
            return None, f"site {name!r}: its prior's parameters depend on other latent sites (hierarchical)"
        for i, marginal in enumerate(marginals):
            prior.add_parameter(f"{name}[{i}]", dist=marginal)
        layout.append((name, shape))
    return prior, layout


class ConstrainedLogLikelihood:
    """log p(y | theta) at rows of constrained parameters: jitted, vmapped, batches padded to powers of two."""

    def __init__(self, port, layout):
        model, data = port.model, port.data

        def one(theta):
            values, start = {}, 0
            for name, shape in layout:
                size = math.prod(shape)
                values[name] = jnp.reshape(theta[start:start + size], shape)
                start += size
            return jnp.sum(model.log_likelihood(model.unconstrain(values), data))

        self.batch = jax.jit(jax.vmap(one))
        self.calls = 0

    def __call__(self, theta):
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        n = theta.shape[0]
        self.calls += n
        size = 1 << max(n - 1, 1).bit_length()
        padded = np.concatenate([theta, np.repeat(theta[:1], size - n, axis=0)]) if size > n else theta
        out = np.asarray(self.batch(padded))[:n]
        return np.where(np.isfinite(out), out, -1e300)  # nautilus wants finite values


def nautilus_runner(port, *, n_live: int, n_networks: int, timeout: float):
    """``seed -> row fields``, or a reason string where the prior cannot be given to nautilus."""
    import nautilus

    prior, layout = nautilus_prior(port)
    if prior is None:
        return layout
    loglike = ConstrainedLogLikelihood(port, layout)

    def run(seed):
        began = time.perf_counter()
        sampler = nautilus.Sampler(prior, loglike, n_live=n_live, n_networks=n_networks, vectorized=True,
                                   pass_dict=False, seed=seed)
        finished = sampler.run(verbose=False, timeout=timeout)
        seconds = time.perf_counter() - began
        if not finished:
            return {"seconds": seconds, "status": f"stopped: over {timeout:.0f} s"}
        return {"log_z": float(sampler.log_z), "n_like": int(sampler.n_like), "seconds": seconds,
                "dim": prior.dimensionality()}
    return run


# -------------------------------------------------------------------------------------------------- PyMC
def pymc_smc_runner(name: str, *, draws: int):
    """``seed -> row fields`` running ``pm.sample_smc`` on the PyMC port of ``name``, or None where none is written.

    One chain in this process (``sample_smc`` forks only for several chains on several cores).
    """
    import posteriordb_pymc_ports
    import pymc as pm

    if name not in posteriordb_pymc_ports.PORTS:
        return None
    model = posteriordb_pymc_ports.pymc_model(name)

    def run(seed):
        began = time.perf_counter()
        with model:
            idata = pm.sample_smc(draws=draws, chains=1, cores=1, random_seed=seed, progressbar=False,
                                  compute_convergence_checks=False)
        seconds = time.perf_counter() - began
        # (chain, stage): NaN at every stage but the last, where the temperature reaches 1
        stages = np.asarray(idata.sample_stats["log_marginal_likelihood"].values, dtype=float)[0]
        return {"log_z": float(stages[-1]), "stages": int(stages.size), "seconds": seconds}
    return run


# --------------------------------------------------------------------------------------------------- rows
def peer_rows(name: str, peer: str, seeds, settings: dict, *, done=frozenset()):
    """The rows of one (posterior, peer): one per seed not in ``done``, or one row saying why it cannot run.

    Parameters
    ----------
    name : str
        A posterior of ``POSTERIORS``.
    peer : str
        One of ``PEERS``.
    seeds : iterable of int
    settings : dict
        ``DEFAULTS``' keys.
    done : set of int
        Seeds already stored (skipped).

    Yields
    ------
    dict
        ``posterior``, ``peer``, ``seed`` (None on a row saying why not), ``status`` ("ok", "skipped: ...",
        "error: ...") and the run's fields (``log_z``, ``seconds``, ...).
    """
    base = {"posterior": name, "peer": peer}
    seeds = [s for s in seeds if s not in done]
    if not seeds:
        return
    if name in ODE:
        yield {**base, "seed": None, "status": "skipped: an ODE port (each density evaluation solves the ODE)"}
        return
    port = setup(name)
    if peer == "bridge":
        if port.sites is None:
            yield {**base, "seed": None, "status": "skipped: posteriordb ships no reference draws"}
            return
        run = lambda seed: bridge_run(port, seed)  # noqa: E731
    elif peer == "blackjax-smc":
        run = blackjax_runner(port, particles=settings["particles"], mcmc_steps=settings["mcmc_steps"])
    elif peer == "nautilus":
        run = nautilus_runner(port, n_live=settings["n_live"], n_networks=settings["n_networks"],
                              timeout=settings["max_nautilus_seconds"])
        if isinstance(run, str):
            yield {**base, "seed": None, "status": f"skipped: no independent univariate prior: {run}"}
            return
    elif peer == "pymc-smc":
        run = pymc_smc_runner(name, draws=settings["pymc_draws"])
        if run is None:
            yield {**base, "seed": None, "status": "skipped: no PyMC port here"}
            return
    else:
        raise MissingCapabilityError(f"no peer {peer!r}; the peers are {PEERS}")
    limit = {"blackjax-smc": settings["max_blackjax_seconds"]}.get(peer)
    for seed in seeds:
        row = {**base, "seed": seed, "status": "ok", **run(seed)}
        yield row
        if row["status"] != "ok":
            return
        if limit is not None and row["seconds"] > limit:
            yield {**base, "seed": None,
                   "status": f"skipped: one run took {row['seconds']:.0f} s (over {limit:.0f} s); no more seeds"}
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--names", nargs="+", default=None)
    parser.add_argument("--peers", nargs="+", default=list(PEERS), choices=PEERS)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--particles", type=int, default=DEFAULTS["particles"])
    parser.add_argument("--n-live", type=int, default=DEFAULTS["n_live"])
    parser.add_argument("--pymc-draws", type=int, default=DEFAULTS["pymc_draws"])
    parser.add_argument("--out", type=Path, default=OUT / "peers.jsonl")
    parser.add_argument("--render", action="store_true", help="re-render the pages from the rows and stop")
    args = parser.parse_args()
    if not args.render:
        settings = {**DEFAULTS, "particles": args.particles, "n_live": args.n_live, "pymc_draws": args.pymc_draws}
        rows = load_rows(args.out)
        # By default the posteriors with reference draws (bridge sampling needs them; the others' draws are NUTS's).
        names = args.names or sorted(n for n in POSTERIORS if (DATA_DIR / n / "draws.npz").exists())
        for name in names:
            for peer in args.peers:
                mine = [r for r in rows if r["posterior"] == name and r["peer"] == peer]
                if any(r["seed"] is None or r["status"] != "ok" for r in mine):
                    continue  # a stored "cannot run" or "stopped" row
                done = {r["seed"] for r in mine}
                if peer == "blackjax-smc":
                    watched(name, peer, list(range(args.seeds)), settings, done, args.out)
                else:
                    write_rows(name, peer, list(range(args.seeds)), settings, done, args.out)
    write_folder("posteriordb", written_to=args.out.parent)


def write_rows(name: str, peer: str, seeds: list, settings: dict, done: set, out: Path) -> None:
    """Run one (posterior, peer) and append its rows; an error is a row too."""
    jax.config.update("jax_enable_x64", True)
    try:
        for row in peer_rows(name, peer, seeds, settings, done=done):
            save(out, {**row, "settings": settings})
    except Exception as err:  # a peer that fails on a posterior is a result: recorded, the run goes on
        traceback.print_exception(err)
        save(out, {"posterior": name, "peer": peer, "seed": None, "settings": settings,
                   "status": f"error: {type(err).__name__}: {err}"[:300]})


def watched(name: str, peer: str, seeds: list, settings: dict, done: set, out: Path, *,
            compile_allowance: float = 120.0) -> None:
    """:func:`write_rows` in a child process, stopped when a run does not end in time.

    A compiled run cannot be interrupted from inside (a tempered SMC whose temperature stops rising never ends), so
    the child is stopped from outside when no row has come for ``max_blackjax_seconds`` (plus ``compile_allowance``
    before the first), and the posterior gets a row saying so.
    """
    import multiprocessing

    def count():
        return sum(r["posterior"] == name and r["peer"] == peer for r in load_rows(out))

    child = multiprocessing.get_context("spawn").Process(target=write_rows,
                                                         args=(name, peer, seeds, settings, done, out))
    seen, limit = count(), settings["max_blackjax_seconds"]
    deadline = time.monotonic() + compile_allowance + limit
    child.start()
    while child.is_alive():
        child.join(1.0)
        now = count()
        if now > seen:
            seen, deadline = now, time.monotonic() + limit + 5.0
        elif time.monotonic() > deadline and child.is_alive():
            child.kill()
            child.join()
            save(out, {"posterior": name, "peer": peer, "seed": None, "settings": settings,
                       "status": f"skipped: a run did not end within {limit:.0f} s (stopped)"})


def save(path: Path, row: dict) -> None:
    append_row(path, to_jsonable(row, nonfinite="string"))
    est = f" {row['log_z']:.3f}" if "log_z" in row else ""
    print(f"{row['posterior']} {row['peer']} seed={row['seed']}: {row['status']}{est}"
          + (f" ({row['seconds']:.1f} s)" if "seconds" in row else ""), flush=True)


if __name__ == "__main__":
    warnings.filterwarnings("ignore", category=FutureWarning)
    main()
