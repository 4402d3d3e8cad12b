"""Export posteriordb posteriors for the benchmark set, and check each NumPyro port against its Stan program.

Subcommands (run from the repository root)::

    # once, from a checkout / bare git dir of stan-dev/posteriordb: writes benchmarks/data/posteriordb/
    python3 benchmarks/posteriordb_check.py export --pdb /path/to/posteriordb [--names NAME ...]

    # only the reference draws (all of them, chains in order) of the shipped posteriors that have them
    python3 benchmarks/posteriordb_check.py draws --pdb /path/to/posteriordb

    # compare the NumPyro ports' log joint densities with the Stan programs' (pystan, ~30 s per build);
    # writes benchmarks/data/posteriordb/stan_check.json
    python3 benchmarks/posteriordb_check.py check [--pdb /path/to/posteriordb] [--names NAME ...]

``check`` evaluates both densities on the constrained space at 20 points: NumPyro's
``log_density(model, (), args, values)`` (every sample site, observed ones included, NumPyro's normalized
densities) and Stan's ``log_prob(unconstrain_pars(values), adjust_transform=False)``. With ``--pdb`` the
points are draws of the full reference posterior (random chains and iterations, seed 0); without it, and for
posteriors whose draws posteriordb does not hold, they are reference-like points: the shipped reference mean
plus 0.2 times its sd times a standard normal, per flat name, projected onto each site's support (``--source prior``
takes prior draws of the NumPyro program instead, ``--source posterior`` NUTS draws of it: for vague priors whose
prior draws reach log densities where rounding swamps the comparison). The difference log p_numpyro - log p_stan
must be constant across points (spread below 1e-6 relative to the median absolute log density); the constant is
set against the constant the Stan program drops (``~`` statements drop every term that does not depend on a parameter;
``normal``/``cauchy`` on a ``<lower=0>`` parameter miss the half-distribution's log 2; ordered parameters miss
their region's mass), computed independently in :data:`EXPECTED`.

The check also builds every port with ``bdmc.ppl.from_numpyro`` (covariates only, the observed values as
data): log_prior and log_likelihood finite at a prior draw, and one log-likelihood term per data case.

Phases run in separate processes: ``points`` (JAX, NumPyro, bdmc) and one ``stan`` process per posterior
(pystan, no JAX), so nothing forks a process in which JAX has started threads.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "data" / "posteriordb"
N_POINTS = 20
TOLERANCE = 1e-6
JITTER = 0.2  # reference-like points: mean + JITTER * sd * N(0, 1) (independent per name, so kept small)

C = 0.5 * math.log(2 * math.pi)
LOG2, LOGPI = math.log(2.0), math.log(math.pi)


def _lgamma(x):
    return math.lgamma(x)


def _log_beta(a, b):
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _log_ordered_mass(loc, scale, positive):
    sys.path.insert(0, str(HERE))
    from scipy import integrate, stats

    if not positive:
        return float(stats.norm.logcdf((loc[1] - loc[0]) / math.hypot(*scale)))
    mass, _ = integrate.quad(lambda x: stats.norm.pdf(x, loc[0], scale[0]) * stats.norm.sf(x, loc[1], scale[1]),
                             0.0, np.inf, epsabs=1e-14, epsrel=1e-12)
    return math.log(mass)


def _norm_logcdf(x):
    from scipy import stats

    return float(stats.norm.logcdf(x))


# Expected log p_numpyro - log p_stan, computed from the Stan programs' statements (independently of the
# measured difference), with the reason. d is the posterior's data.json.
EXPECTED = {
    "eight_schools-eight_schools_noncentered": (
        lambda d: -17 * C - 2 * math.log(5) + LOG2 - LOGPI - float(np.sum(np.log(d["sigma"]))),
        "`~` drops the normal constants of theta_trans (8 x -log sqrt(2 pi)), mu (-log sqrt(2 pi) - log 5) and "
        "y (8 x -log sqrt(2 pi) - sum log sigma_j, sigma being data), and cauchy(0, 5)'s -log(pi) - log 5 on "
        "tau; NumPyro's HalfCauchy(5) adds the half-Cauchy's log 2."),
    "eight_schools-eight_schools_centered": (
        lambda d: -17 * C - 2 * math.log(5) + LOG2 - LOGPI - float(np.sum(np.log(d["sigma"]))),
        "`~` drops the normal constants of theta (8 x -log sqrt(2 pi); tau is a parameter), mu "
        "(-log sqrt(2 pi) - log 5) and y (8 x -log sqrt(2 pi) - sum log sigma_j, sigma being data), and "
        "cauchy(0, 5)'s -log(pi) - log 5 on tau; NumPyro's HalfCauchy(5) adds the half-Cauchy's log 2. "
        "posteriordb's reference posterior for it is the noncentered program's (the same posterior of theta, "
        "mu, tau)."),
    "sblrc-blr": (lambda d: LOG2,
                  "Stan's target += normal_lpdf keeps every constant, but normal(0, 10) on the <lower=0> sigma is a "
                  "half-normal that misses its log 2 (NumPyro's HalfNormal(10))."),
    "sblri-blr": (lambda d: LOG2,
                  "Stan's target += normal_lpdf keeps every constant, but normal(0, 10) on the <lower=0> sigma is a "
                  "half-normal that misses its log 2 (NumPyro's HalfNormal(10))."),
    "arK-arK": (
        lambda d: 6 * (-C - math.log(10)) + LOG2 - LOGPI - math.log(2.5) - (d["T"] - d["K"]) * C,
        "`~` drops the normal(0, 10) constants of alpha and beta[1..5] (6 x (-log sqrt(2 pi) - log 10)), "
        "cauchy(0, 2.5)'s -log(pi) - log 2.5 on sigma, and -log sqrt(2 pi) per modelled time point (T - K = "
        "195); NumPyro's HalfCauchy(2.5) adds the half-Cauchy's log 2."),
    "arma-arma11": (
        lambda d: -C - math.log(10) + 2 * (-C - LOG2) + LOG2 - LOGPI - math.log(2.5) - d["T"] * C,
        "`~` drops the normal constants of mu (-log sqrt(2 pi) - log 10), phi and theta (2 x (-log sqrt(2 pi) - "
        "log 2)), cauchy(0, 2.5)'s -log(pi) - log 2.5 on sigma and -log sqrt(2 pi) per error term (T = 200); "
        "NumPyro's HalfCauchy(2.5) adds the half-Cauchy's log 2."),
    "low_dim_gauss_mix-low_dim_gauss_mix": (
        lambda d: 2 * (LOG2 - C - LOG2) + 2 * (-C - LOG2) + LOG2 - _log_beta(5, 5),
        "`~` drops normal(0, 2)'s -log sqrt(2 pi) - log 2 on sigma[1..2] and mu[1..2] and beta(5, 5)'s "
        "-log B(5, 5) on theta; NumPyro adds the half-normal's log 2 per sigma and, for the ordered mu, the "
        "log 2 that normalizes two iid normals restricted to mu[1] < mu[2] (the mixture likelihood uses "
        "target +=, normalized)."),
    "gp_pois_regr-gp_regr": (
        lambda d: 25 * math.log(4) - _lgamma(25) + (LOG2 - C - LOG2) + (LOG2 - C) - d["N"] * C,
        "`~` drops gamma(25, 4)'s 25 log 4 - log Gamma(25) on rho, the normal constants of alpha (normal(0, 2)) "
        "and sigma (normal(0, 1)) together with the half-normals' log 2, and multi_normal_cholesky's "
        "-N log sqrt(2 pi) (N = 11)."),
    "gp_pois_regr-gp_pois_regr": (
        lambda d: 25 * math.log(4) - _lgamma(25) + (LOG2 - C - LOG2) - d["N"] * C
        - float(sum(math.lgamma(k + 1) for k in d["k"])),
        "`~` drops gamma(25, 4)'s 25 log 4 - log Gamma(25) on rho, normal(0, 2)'s constant and the "
        "half-normal's log 2 on alpha, -log sqrt(2 pi) per f_tilde (N = 11) and poisson_log's -sum log k!."),
    "hmm_example-hmm_example": (
        lambda d: -_log_ordered_mass([3.0, 10.0], [1.0, 1.0], True) - LOG2,
        "Everything is target += (normalized, and the flat simplexes are Dirichlet(1, 1) with density 1), but "
        "(a) the positive_ordered mu's normal(3, 1) x normal(10, 1) prior is not divided by the mass of "
        "0 < mu[1] < mu[2], which NumPyro's OrderedNormal does, and (b) Stan's forward algorithm starts every "
        "state with weight 1 instead of 1/K, so its likelihood is K = 2 times the HMM likelihood with a uniform "
        "initial state (-log 2)."),
    "bball_drive_event_0-hmm_drive_0": (
        lambda d: -2 * _log_ordered_mass([0.0, 3.0], [1.0, 1.0], True) - LOG2,
        "Everything is target += (normalized), but (a) the positive_ordered phi and lambda priors (normal(0, 1) x "
        "normal(3, 1)) are not divided by the mass of 0 < x[1] < x[2], which NumPyro's OrderedNormal does, and "
        "(b) Stan's forward algorithm starts every state with weight 1 instead of 1/K (-log 2)."),
    "bball_drive_event_1-hmm_drive_1": (
        lambda d: -2 * _log_ordered_mass([0.0, 3.0], [1.0, 1.0], False) - LOG2,
        "Everything is target += (normalized), but (a) the ordered phi and lambda priors (normal(0, 1) x "
        "normal(3, 1)) are not divided by P(x[1] < x[2]) = Phi(3 / sqrt 2), which NumPyro's OrderedNormal does, "
        "and (b) Stan's forward algorithm starts every state with weight 1 instead of 1/K (-log 2)."),
    "diamonds-diamonds": (lambda d: 0.0,
                          "Normalized: every statement is target += *_lpdf, and the half-Student-t on sigma "
                          "subtracts student_t_lccdf(0 | 3, 0, 10) = log 1/2."),
    "mcycle_gp-accel_gp": (lambda d: 0.0,
                           "Normalized: every statement is target += *_lpdf, and the half-Student-t priors on "
                           "sdgp_1, sdgp_sigma_1 subtract student_t_lccdf(0 | 3, 0, 36) = log 1/2."),
    "hudson_lynx_hare-lotka_volterra": (
        lambda d: 2 * (-C - math.log(0.5) - _norm_logcdf(2.0)) + 2 * (-C - math.log(0.05) - _norm_logcdf(1.0))
        - float(np.sum(np.log(d["y"])) + np.sum(np.log(d["y_init"]))),
        "`~` drops the normal constants of theta (normal(1, 0.5) on theta[1,3], normal(0.05, 0.05) on "
        "theta[2,4]) and lognormal's -log y of the 42 measurements (data); NumPyro's TruncatedNormal(low=0) "
        "divides theta's priors by Phi(2) and Phi(1). Stan's lognormal_lpdf keeps its -log sqrt(2 pi) even "
        "under `~` (Stan Math adds N * NEG_LOG_SQRT_TWO_PI unconditionally), so nothing is missing there. "
        "The verbatim program's integrate_ode_rk45 tolerances (relative 1e-5, absolute 1e-3) make its log "
        "density differ from the exact one by up to ~1e-4 (the spread below); the check's pass is on the same "
        "program with tolerances 1e-10, 1e-10, 1e8 (spread_tight)."),
    "one_comp_mm_elim_abs-one_comp_mm_elim_abs": (
        lambda d: 4 * (LOG2 - LOGPI) - float(np.sum(np.log(d["C_hat"]))),
        "`~` drops cauchy(0, 1)'s -log(pi) on k_a, K_m, V_m, sigma and lognormal's -log C_hat per measurement "
        "(data; Stan's lognormal_lpdf keeps its -log sqrt(2 pi) even under `~`); NumPyro's HalfCauchy(1) adds "
        "log 2 per parameter. The ODE is solved by Stan's integrate_ode_bdf (default tolerances 1e-6) and by "
        "JAX's odeint (1e-10): the spread is that solver difference."),
}

def _ported_families():
    sys.path.insert(0, str(HERE))
    import posteriordb_ports

    return posteriordb_ports


EXPECTED.update(_ported_families().expected())
SELECTED = list(EXPECTED)

# Posteriors whose Stan program solves an ODE at loose tolerances: the check also runs the program with these
# replacements (not shipped), and passes on that variant when the verbatim program's spread is the solver's.
TIGHT = {"hudson_lynx_hare-lotka_volterra": ("0, 0), 1e-5, 1e-3, 5e2);", "0, 0), 1e-10, 1e-10, 1e8);")}


# ------------------------------------------------------------------------------------------------ export




def _git_show(pdb, path):
    return subprocess.run(["git", "-C", str(pdb), "show", f"HEAD:{path}"], check=True,
                          capture_output=True).stdout


def _unzip_json(raw):
    z = zipfile.ZipFile(io.BytesIO(raw))
    return json.loads(z.read(z.namelist()[0]))


def export(pdb: Path, names=None):
    sys.path.insert(0, str(HERE))
    from harness.store import write_text

    commit = subprocess.run(["git", "-C", str(pdb), "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "LICENSE").write_bytes(_git_show(pdb, "LICENCE.md"))
    for name in names or SELECTED:
        post = json.loads(_git_show(pdb, f"posterior_database/posteriors/{name}.json"))
        model_name, data_name = post["model_name"], post["data_name"]
        model_info = json.loads(_git_show(pdb, f"posterior_database/models/info/{model_name}.info.json"))
        data_info = json.loads(_git_show(pdb, f"posterior_database/data/info/{data_name}.info.json"))
        code = _git_show(pdb, f"posterior_database/models/stan/{model_name}.stan")
        data = _unzip_json(_git_show(pdb, f"posterior_database/data/data/{data_name}.json.zip"))
        reference_name = post.get("reference_posterior_name")
        reference, source = _reference(pdb, reference_name) if reference_name else ({}, "none")
        folder = OUT / name
        folder.mkdir(exist_ok=True)
        (folder / "model.stan").write_bytes(code)
        write_text(folder / "data.json", json.dumps(data, separators=(",", ":")))
        write_text(folder / "reference.json", json.dumps(reference, indent=1))
        n_cases = _n_cases(name, data)
        info = {
            "posterior": name, "model": model_name, "data": data_name,
            "model_title": model_info.get("title"), "model_keywords": model_info.get("keywords", []),
            "posterior_keywords": post.get("keywords", []), "data_keywords": data_info.get("keywords", []),
            "dimensions": post.get("dimensions"),
            "n_parameters": int(sum(post["dimensions"].values())),
            "n_reference_names": len(reference),
            "n_cases": n_cases,
            "data_values": int(sum(np.size(v) for v in data.values())),
            "reference_posterior": reference_name, "reference_source": source,
            "posteriordb_commit": commit,
        }
        write_text(folder / "info.json", json.dumps(info, indent=1))
        ship_draws(pdb, name)
        print(f"{name}: {info['n_parameters']} parameters, {n_cases} cases, reference from {source}")


def _n_cases(name, data):
    return {"arK-arK": lambda d: d["T"] - d["K"], "arma-arma11": lambda d: d["T"],
            "hudson_lynx_hare-lotka_volterra": lambda d: d["N"] + 1,
            "one_comp_mm_elim_abs-one_comp_mm_elim_abs": lambda d: d["N_t"],
            "eight_schools-eight_schools_noncentered": lambda d: d["J"],
            "eight_schools-eight_schools_centered": lambda d: d["J"],
            **_ported_families().n_cases()}.get(name, lambda d: d["N"])(data)


def _reference(pdb, name):
    """Per-name mean, sd and number of draws: from the draws file, or (when absent) the summary statistics."""
    try:
        chains = _unzip_json(_git_show(pdb, f"posterior_database/reference_posteriors/draws/draws/{name}.json.zip"))
    except (subprocess.CalledProcessError, zipfile.BadZipFile):
        base = "posterior_database/reference_posteriors/summary_statistics"
        mean = json.loads(_git_show(pdb, f"{base}/mean_value/mean_value/{name}.json"))
        msq = json.loads(_git_show(pdb, f"{base}/mean_squared_value/mean_squared_value/{name}.json"))
        info = json.loads(_git_show(pdb, f"posterior_database/reference_posteriors/draws/info/{name}.info.json"))
        n = int(info["diagnostics"]["ndraws"])
        assert mean["names"] == msq["names"]
        out = {}
        for k, m, s in zip(mean["names"], mean["mean_value"], msq["mean_squared_value"], strict=False):
            var = max(s - m * m, 0.0) * n / (n - 1)
            out[k] = {"mean": m, "sd": math.sqrt(var), "n_draws": n}
        return out, ("summary_statistics (mean_value, mean_squared_value; the draws file is listed in the repository "
                     "but its blob was absent from the fetched snapshot)")
    out = {}
    for k in chains[0]:
        x = np.concatenate([np.asarray(c[k], float) for c in chains])
        out[k] = {"mean": float(x.mean()), "sd": float(x.std(ddof=1)), "n_draws": int(x.size)}
    return out, "draws"


def ship_draws(pdb, name):
    """Write every reference draw of ``name`` to ``draws.npz`` (flat name -> array, chains concatenated in order)
    and their chain count to ``info.json`` (``reference_chains``); nothing when posteriordb lacks the draws."""
    sys.path.insert(0, str(HERE))
    from harness.store import write_text

    post = json.loads(_git_show(pdb, f"posterior_database/posteriors/{name}.json"))
    reference_name = post.get("reference_posterior_name")
    if not reference_name:
        return
    try:
        chains = _unzip_json(_git_show(
            pdb, f"posterior_database/reference_posteriors/draws/draws/{reference_name}.json.zip"))
    except (subprocess.CalledProcessError, zipfile.BadZipFile):
        return
    draws = {k: np.concatenate([np.asarray(c[k], float) for c in chains]) for k in chains[0]}
    np.savez_compressed(OUT / name / "draws.npz", **draws)
    info_path = OUT / name / "info.json"
    info = json.loads(info_path.read_text())
    info["reference_chains"] = len(chains)
    write_text(info_path, json.dumps(info, indent=1))


def reference_draws(pdb, name, n, seed=0):
    """n draws (flat name -> array) of the full reference posterior, or None when posteriordb lacks them."""
    post = json.loads(_git_show(pdb, f"posterior_database/posteriors/{name}.json"))
    name = post.get("reference_posterior_name") or name
    try:
        chains = _unzip_json(_git_show(pdb, f"posterior_database/reference_posteriors/draws/draws/{name}.json.zip"))
    except (subprocess.CalledProcessError, zipfile.BadZipFile):
        return None
    rng = np.random.default_rng(seed)
    n_chains, n_draws = len(chains), len(next(iter(chains[0].values())))
    picks = [(int(rng.integers(n_chains)), int(rng.integers(n_draws))) for _ in range(n)]
    return {k: np.array([chains[c][k][i] for c, i in picks], float) for k in chains[0]}


# ------------------------------------------------------------------------------------------------ points phase


def _project(value, support):
    """A perturbed value moved onto a NumPyro support (for reference-like points)."""
    from numpyro.distributions import constraints as c

    value = np.asarray(value, float)
    if support is c.positive_ordered_vector:
        return np.sort(np.abs(value), -1)
    if support is c.ordered_vector:
        return np.sort(value, -1)
    if support is c.simplex:
        value = np.abs(value) + 1e-3
        return value / value.sum(-1, keepdims=True)
    if support is c.unit_interval:
        return np.clip(value, 1e-3, 1 - 1e-3)
    if isinstance(support, (c._GreaterThan,)) or support is c.positive:
        return np.abs(value)
    if isinstance(support, c.independent):
        return _project(value, support.base_constraint)
    return value


def points_phase(names, pdb, source, tmp: Path):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpyro
    from numpyro.infer.util import log_density

    sys.path.insert(0, str(HERE))
    import posteriordb_models as P
    from harness.store import write_text

    import bdmc

    results = {}
    for name in names:
        t0 = time.time()
        entry = P.POSTERIORS[name]
        data, reference, info = P.load(name)
        args = entry.args(data)
        trace = numpyro.handlers.trace(numpyro.handlers.seed(entry.model, jax.random.key(0))).get_trace(**args)
        supports = {n: trace[n]["fn"].support for n in entry.sites}
        # --- points
        flat = reference_draws(pdb, name, N_POINTS) if (pdb is not None and source == "reference") else None
        origin = "reference draws"
        if flat is None and source == "reference":
            rng = np.random.default_rng(0)
            flat = {k: v["mean"] + JITTER * v["sd"] * rng.standard_normal(N_POINTS) for k, v in reference.items()}
            origin = f"reference mean + {JITTER} sd x N(0, 1) per name, projected onto the supports"
        if flat is not None:
            latents = entry.latents(flat, {k: np.asarray(v) for k, v in args.items()})
            latents = {n: _project(latents[n], supports[n]) for n in entry.sites}
        elif source == "posterior":
            # Where prior draws reach |log p| of 1e15 and beyond (vague priors), rounding swamps the comparison:
            # posterior draws of the port itself (NumPyro NUTS, one chain), spaced out.
            from numpyro.infer import MCMC, NUTS

            mcmc = MCMC(NUTS(entry.model), num_warmup=300, num_samples=20 * 10, progress_bar=False)
            mcmc.run(jax.random.key(2), **args)
            drawn = mcmc.get_samples()
            latents = {n: np.asarray(drawn[n])[::10] for n in entry.sites}
            origin = "posterior draws of the NumPyro port (NUTS, one chain, every tenth of 200 after 300 warm-up)"
        else:
            origin = "prior draws of the NumPyro program"
            keys = jax.random.split(jax.random.key(1), N_POINTS)
            draws = [numpyro.handlers.trace(numpyro.handlers.seed(entry.model, k)).get_trace(
                **entry.covariates(data)) for k in keys]
            latents = {n: np.stack([np.asarray(t[n]["value"]) for t in draws]) for n in entry.sites}
        # params / latents round trip
        flat_back = entry.params(latents)
        missing = sorted(set(reference) - set(flat_back))
        again = entry.latents(flat_back, {k: np.asarray(v) for k, v in args.items()})
        roundtrip = max(float(np.max(np.abs(np.asarray(again[n]) - latents[n]))) for n in entry.sites)
        # --- NumPyro log joint at each point
        lp = jax.jit(lambda values, entry=entry, args=args: log_density(entry.model, (), args, values)[0])
        numpyro_lp = [float(lp({n: jnp.asarray(latents[n][i]) for n in entry.sites})) for i in range(N_POINTS)]
        # --- bdmc adapter
        m = bdmc.ppl.from_numpyro(entry.model, observed=list(entry.observed), **entry.covariates(data))
        u = m.sample_prior(jax.random.key(0))
        obs = entry.observations(data)
        log_prior = float(m.log_prior(u))
        log_lik = np.asarray(m.log_likelihood(u, obs))
        m_obs = bdmc.ppl.from_numpyro(entry.model, observed=list(entry.observed), **args)
        log_lik_obs = np.asarray(m_obs.log_likelihood(m_obs.sample_prior(jax.random.key(0)), obs))
        results[name] = {
            "points": {n: latents[n].tolist() for n in entry.sites},
            "numpyro": numpyro_lp, "origin": origin,
            "reference_names_missing_from_params": missing, "params_roundtrip_max_abs": roundtrip,
            "bdmc": {"latent_sites": list(m.latent_sites), "log_prior_finite": bool(np.isfinite(log_prior)),
                     "log_likelihood_finite": bool(np.all(np.isfinite(log_lik))),
                     "n_terms": int(log_lik.size), "n_cases": int(info["n_cases"]),
                     "same_with_observed_kwargs": bool(np.allclose(log_lik, log_lik_obs, rtol=1e-10, atol=1e-10))},
        }
        print(f"points {name}: {origin}; {time.time() - t0:.1f} s; bdmc {results[name]['bdmc']}", flush=True)
    write_text(tmp, json.dumps(results))


# ------------------------------------------------------------------------------------------------ stan phase


def stan_phase(name, infile: Path, outfile: Path, tight=False):
    import stan

    folder = OUT / name
    code = (folder / "model.stan").read_text()
    if tight:
        old, new = TIGHT[name]
        assert code.count(old) == 1
        code = code.replace(old, new)
    data = json.loads((folder / "data.json").read_text())
    points = json.loads(infile.read_text())[name]["points"]
    t0 = time.time()
    posterior = stan.build(code, data=data, random_seed=1)
    built = time.time() - t0
    n = len(next(iter(points.values())))
    values = []
    for i in range(n):
        pars = {k: (v[i] if np.ndim(v[i]) else float(v[i])) for k, v in points.items()}
        values.append(float(posterior.log_prob(posterior.unconstrain_pars(pars), adjust_transform=False)))
    # to the parent process, which reads it back: a temporary file, not a result (this child imports no bdmc)
    outfile.write_text(json.dumps({"stan": values, "build_s": built}))


# ------------------------------------------------------------------------------------------------ check


def check(names, pdb, source, out_path=None):
    sys.path.insert(0, str(HERE))
    from harness.store import stamp, write_text

    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        pts = d / "points.json"
        cmd = [sys.executable, __file__, "points", "--tmp", str(pts), "--source", source, "--names", *names]
        if pdb is not None:
            cmd += ["--pdb", str(pdb)]
        subprocess.run(cmd, check=True)
        points = json.loads(pts.read_text())
        out_path = out_path or OUT / "stan_check.json"
        results = json.loads(out_path.read_text()) if out_path.exists() else {}
        for name in names:
            sout = d / f"{name}.stan.json"
            run = subprocess.run([sys.executable, __file__, "stan", "--name", name, "--tmp", str(pts),
                                  "--out", str(sout)], capture_output=True, text=True)
            if run.returncode != 0:
                print(f"stan {name}: FAILED\n{run.stderr[-3000:]}", flush=True)
                results[name] = {"ok": False, "error": run.stderr[-1500:], **stamp()}
                continue
            stan_lp = np.asarray(json.loads(sout.read_text())["stan"])
            np_lp = np.asarray(points[name]["numpyro"])
            diff = np_lp - stan_lp
            offset, spread = float(np.mean(diff)), float(np.max(diff) - np.min(diff))
            scale = max(1.0, float(np.median(np.abs(stan_lp))))
            data = json.loads((OUT / name / "data.json").read_text())
            expected, why = EXPECTED[name]
            expected = float(expected(data))
            ok = spread / scale < TOLERANCE and abs(offset - expected) / scale < TOLERANCE
            extra = {}
            if name in TIGHT:
                tout = d / f"{name}.tight.json"
                subprocess.run([sys.executable, __file__, "stan", "--name", name, "--tmp", str(pts),
                                "--out", str(tout), "--tight"], check=True, capture_output=True, text=True)
                tdiff = np_lp - np.asarray(json.loads(tout.read_text())["stan"])
                t_offset, t_spread = float(np.mean(tdiff)), float(np.max(tdiff) - np.min(tdiff))
                ok = t_spread / scale < TOLERANCE and abs(t_offset - expected) / scale < TOLERANCE
                extra = {"offset_tight": t_offset, "spread_tight": t_spread,
                         "relative_spread_tight": t_spread / scale, "tight_tolerances": TIGHT[name][1]}
                print(f"stan {name} (tight tolerances): offset {t_offset:.8f} spread {t_spread:.2e}", flush=True)
            normalized = abs(offset) / scale < TOLERANCE
            results[name] = {
                "ok": bool(ok), "offset": offset, "expected_offset": expected, "spread": spread,
                "relative_spread": spread / scale, "median_abs_log_density": scale, "n_points": int(len(diff)),
                "points": points[name]["origin"], "normalized": bool(normalized),
                "explanation": why if normalized else f"log p_numpyro - log p_stan = {expected:.6f}: {why}",
                "bdmc": points[name]["bdmc"],
                "params_roundtrip_max_abs": points[name]["params_roundtrip_max_abs"],
                "reference_names_missing_from_params": points[name]["reference_names_missing_from_params"],
                **extra, **stamp(),
            }
            print(f"stan {name}: offset {offset:.8f} (expected {expected:.8f}) spread {spread:.2e} "
                  f"(relative {spread / scale:.1e}) {'OK' if ok else 'MISMATCH'}", flush=True)
            write_text(out_path, json.dumps(dict(sorted(results.items())), indent=1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["export", "draws", "check", "points", "stan"])
    parser.add_argument("--pdb", type=Path, help="posteriordb git directory (checkout or bare)")
    parser.add_argument("--names", nargs="+", default=None, help="posteriors (default: every shipped one)")
    parser.add_argument("--source", choices=["reference", "prior", "posterior"], default="reference",
                        help="points: reference draws / reference-like points (default), prior draws, or the "
                             "port's own NUTS draws")
    parser.add_argument("--tmp", type=Path)
    parser.add_argument("--name")
    parser.add_argument("--out", type=Path, help="check: results file (default data/posteriordb/stan_check.json)")
    parser.add_argument("--tight", action="store_true", help="stan: the TIGHT variant of the program")
    a = parser.parse_args(argv)
    names = a.names or SELECTED
    if a.command == "export":
        export(a.pdb, a.names)
    elif a.command == "draws":
        for name in names:
            ship_draws(a.pdb, name)
    elif a.command == "check":
        check(names, a.pdb, a.source, a.out)
    elif a.command == "points":
        points_phase(names, a.pdb, a.source, a.tmp)
    else:
        stan_phase(a.name, a.tmp, a.out, a.tight)


if __name__ == "__main__":
    main()
