"""Cost curves: warm seconds for one run to reach RMSE < 0.1 nat as the dimension d or the data size N grows.

Three families of problems with a known log Z:

* ``correlated``: the peers' correlated Gaussian (``harness.problems.correlated_problem``) at dimension d: prior
  N(0, I), d observations through a square design whose posterior condition number is 100; closed form.
* ``logistic``: a logistic regression with ``N = 100`` cases, design iid N(0, 1/d) and prior N(0, I), data drawn
  from the model at a seeded coefficient; no closed form: the reference is the midpoint of a long bdmc tempered-SMC
  sandwich (forward from the prior, reverse from the generating coefficient, an exact posterior draw), kept only
  when its gap is below ``REFERENCE_GAP`` nat (:func:`logistic_reference`; stored in ``references.json``).
* ``regression``: the peers' conjugate linear regression (d = 10) with N cases; the closed form by the matrix
  determinant lemma (:func:`conjugate_log_z`), so N = 10^5 needs no N x N matrix.

Tools: bdmc's tempered SMC (``bdmc-tsmc``: its certified lower bound, the pilot inside each call), BlackJAX's
adaptive tempered SMC, PyMC's ``sample_smc`` and nautilus, each through ``peer_tools.make`` and walked up its
budget ladder (``peer_tools.BUDGETS``, with one more rung on top, :data:`LADDERS`). At each rung a tool runs
``--seeds`` seeds: seed 0 is the cell's first call (cold: compilation or set-up included; its time is stored but
left out of the warm time), the others warm. The walk stops at the first rung whose RMSE over the seeds is below
0.1 nat (the < 1 nat crossing is read off the same rungs), or as soon as a run times out or a warm run exceeds
``--cap`` seconds ("not reached within the cap"); a tool capped at one size is not run at the larger sizes of
that family. Tools take turns call by call at each size, so drifting load hits all alike.

Rows go to ``<out>/rows.jsonl`` as each call finishes (one atomic append; a rerun skips the calls already there
and resumes every walk where it stopped). ``--render`` rebuilds ``cost_curves.png`` and the pages
(``benchmarks/pages/cost_curves/``) from the stored rows only.

    python3 benchmarks/cost_curves.py --seeds 3 --cap 30          # the reduced grid (module constants)
    python3 benchmarks/cost_curves.py --dims 2,5,10,20,50,100 --sizes 100,1000,10000,100000 --seeds 5 --cap 60
    python3 benchmarks/cost_curves.py --render
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import problems as peer_problems  # noqa: E402
from harness.store import ROOT, append_row, load_rows, stamp, tree_state, write_text  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "cost_curves"
THRESHOLDS = (1.0, 0.1)
TOOLS = ("bdmc-tsmc", "blackjax", "pymc", "nautilus")
# peer_tools.BUDGETS plus one rung on top of each: the peers' ladders end where their 20-d problems are met.
EXTRA_RUNG = {"bdmc-tsmc": (16384, 300), "blackjax": 16384, "pymc": 16000, "nautilus": 2000}
FAMILIES = {"correlated": "d", "logistic": "d", "regression": "N"}
FULL_DIMS, FULL_SIZES = (2, 5, 10, 20, 50, 100), (100, 1000, 10_000, 100_000)
LOGISTIC_N, REGRESSION_DIM = 100, 10
REFERENCE_GAP = 0.05
COLD_ALLOWANCE = 90.0  # seconds a cold call may take beyond the cap (compilation, PyMC's model set-up)
# The reference sandwich: tempered SMC both ways; temperatures doubled until the gap is under REFERENCE_GAP.
REFERENCE_SETTINGS = {"num_particles": 1024, "num_steps": 300, "num_runs": 4, "max_steps": 2400, "seed": 20261}


def ladders() -> dict:
    """Each tool's budgets, smallest first: ``peer_tools.BUDGETS`` and :data:`EXTRA_RUNG`."""
    from peer_tools import BUDGETS

    return {tool: [*BUDGETS[tool], EXTRA_RUNG[tool]] for tool in TOOLS}


def budget_label(budget) -> str:
    """A budget as the rows' key (``peer_tools.budget_label``'s rule: ``256x100``, ``1024``)."""
    return "x".join(map(str, budget)) if isinstance(budget, (tuple, list)) else str(budget)


# ------------------------------------------------------------------------------------------------ problems
def conjugate_log_z(y, design, prior_sd, noise_sd) -> float:
    """log N(y; 0, noise^2 I + prior_sd^2 X X^T) through d x d matrices (matrix determinant lemma, Woodbury).

    Parameters
    ----------
    y : array, shape (n,)
    design : array, shape (n, d)
    prior_sd, noise_sd : float

    Returns
    -------
    float
        The evidence of ``x ~ N(0, prior_sd^2 I)``, ``y ~ N(X x, noise_sd^2 I)``.
    """
    y, design = np.asarray(y, float), np.asarray(design, float)
    n, d = design.shape
    precision = np.eye(d) / prior_sd**2 + design.T @ design / noise_sd**2
    chol = np.linalg.cholesky(precision)
    b = np.linalg.solve(chol, design.T @ y / noise_sd**2)
    log_det = 2 * n * math.log(noise_sd) + 2 * d * math.log(prior_sd) + 2 * np.sum(np.log(np.diag(chol)))
    quad = y @ y / noise_sd**2 - b @ b
    return float(-0.5 * n * peer_problems.LOG_2PI - 0.5 * log_det - 0.5 * quad)


def _register(problem):
    """Put ``problem`` where ``FlatModel`` finds it (bdmc's tools look it up by name)."""
    peer_problems.PROBLEMS[problem.name] = problem
    return problem


def correlated_at(dim: int):
    """The peers' correlated Gaussian at dimension ``dim`` (>= 2), exact log Z.

    Parameters
    ----------
    dim : int

    Returns
    -------
    harness.problems.Problem
    """
    base = peer_problems.correlated_problem(dim=dim)
    return _register(dataclasses.replace(base, name=f"correlated_d{dim}"))


def regression_at(n: int, *, dim: int = REGRESSION_DIM, seed: int = 1):
    """The peers' conjugate regression with ``n`` cases; at ``n = 200`` it is ``regression_problem()`` exactly.

    Built here rather than by ``regression_problem(n=...)`` because that computes log Z through an n x n
    covariance; the design rows and responses are drawn the same way, so the data sets are nested in n.

    Parameters
    ----------
    n : int
    dim : int
    seed : int

    Returns
    -------
    harness.problems.Problem
    """
    import jax
    import jax.numpy as jnp

    design = np.random.default_rng(seed).standard_normal((n, dim))
    rng = np.random.default_rng(seed + 100)
    y = design @ rng.standard_normal(dim) + rng.standard_normal(n)
    X = jnp.asarray(design)
    half_log_2pi = 0.5 * peer_problems.LOG_2PI

    def log_prior(x):
        return jnp.sum(-0.5 * x**2 - half_log_2pi)

    def log_lik(x, data):
        return -0.5 * (data - X @ x) ** 2 - half_log_2pi

    def pymc_model():
        import pymc as pm

        with pm.Model() as m:
            x = pm.Normal("x", 0.0, 1.0, shape=dim)
            pm.Normal("y", pm.math.dot(design, x), 1.0, observed=y)
        return m

    return _register(peer_problems.Problem(
        name=f"regression_n{n}", title=f"conjugate linear regression (n={n}, d={dim})", dim=dim, data=y,
        log_prior=log_prior, log_lik=log_lik, sample_prior=lambda key: jax.random.normal(key, (dim,)),
        prior_transform=lambda u: special.ndtri(u), pymc_model=pymc_model, pymc_point=lambda x: {"x": np.asarray(x)},
        exact=conjugate_log_z(y, design, 1.0, 1.0), info={"n": n, "dim": dim, "data_seed": seed}))


def logistic_data(dim: int, *, n: int = LOGISTIC_N, seed: int = 7):
    """Design (iid N(0, 1/dim)), the generating coefficient (a prior draw) and the responses drawn from the model.

    Parameters
    ----------
    dim, n, seed : int

    Returns
    -------
    (ndarray, ndarray, ndarray)
        ``design`` (n, dim), ``beta`` (dim,), ``y`` (n,) of 0.0 and 1.0.
    """
    rng = np.random.default_rng([seed, dim])
    design = rng.standard_normal((n, dim)) / math.sqrt(dim)  # the linear predictor's prior variance is 1 at every d
    beta = rng.standard_normal(dim)
    y = (rng.random(n) < special.expit(design @ beta)).astype(np.float64)
    return design, beta, y


def logistic_at(dim: int, *, n: int = LOGISTIC_N, seed: int = 7):
    """Logistic regression at dimension ``dim``, prior N(0, I), data from :func:`logistic_data`; no exact log Z
    (``info["beta"]`` holds the generating coefficient, the reference's exact posterior draw).

    Parameters
    ----------
    dim, n, seed : int

    Returns
    -------
    harness.problems.Problem
    """
    import jax
    import jax.numpy as jnp

    design, beta, y = logistic_data(dim, n=n, seed=seed)
    X = jnp.asarray(design)
    half_log_2pi = 0.5 * peer_problems.LOG_2PI

    def log_prior(x):
        return jnp.sum(-0.5 * x**2 - half_log_2pi)

    def log_lik(x, data):
        eta = X @ x
        return data * eta - jax.nn.softplus(eta)

    def pymc_model():
        import pymc as pm

        with pm.Model() as m:
            x = pm.Normal("x", 0.0, 1.0, shape=dim)
            pm.Bernoulli("y", logit_p=pm.math.dot(design, x), observed=y.astype(np.int64))
        return m

    return _register(peer_problems.Problem(
        name=f"logistic_d{dim}", title=f"logistic regression (n={n}, d={dim})", dim=dim, data=y,
        log_prior=log_prior, log_lik=log_lik, sample_prior=lambda key: jax.random.normal(key, (dim,)),
        prior_transform=lambda u: special.ndtri(u), pymc_model=pymc_model, pymc_point=lambda x: {"x": np.asarray(x)},
        exact=None, info={"n": n, "dim": dim, "data_seed": seed, "beta": beta}))


def logistic_quadrature_log_z(dim: int, *, n: int = LOGISTIC_N, seed: int = 7, half_width: float = 7.0,
                              points: int = 601) -> float:
    """log Z of :func:`logistic_at` for ``dim`` 1 or 2 on a regular grid (NumPy only): an independent check.

    Parameters
    ----------
    dim : {1, 2}
    n, seed : int
    half_width : float
        The grid covers ``[-half_width, half_width]`` per coordinate (prior N(0, 1): the mass outside is < 1e-11).
    points : int
        Grid points per coordinate.

    Returns
    -------
    float
    """
    if dim not in (1, 2):
        raise ValueError(f"quadrature is for dim 1 or 2, got {dim}")
    design, _, y = logistic_data(dim, n=n, seed=seed)
    axis = np.linspace(-half_width, half_width, points)
    grid = np.stack(np.meshgrid(*[axis] * dim, indexing="ij"), axis=-1).reshape(-1, dim)
    eta = grid @ design.T
    log_joint = (y * eta - np.logaddexp(0.0, eta)).sum(axis=1) - 0.5 * (grid**2).sum(axis=1) \
        - 0.5 * dim * peer_problems.LOG_2PI
    return float(special.logsumexp(log_joint) + dim * math.log(axis[1] - axis[0]))


BUILDERS = {"correlated": correlated_at, "logistic": logistic_at, "regression": regression_at}


def logistic_reference(problem, *, settings=REFERENCE_SETTINGS) -> dict:
    """The reference log Z of a logistic problem: the midpoint of a tempered-SMC sandwich whose gap is below
    :data:`REFERENCE_GAP` (temperatures doubled from ``num_steps`` up to ``max_steps`` until it is).

    Parameters
    ----------
    problem : harness.problems.Problem
        From :func:`logistic_at`.
    settings : dict
        :data:`REFERENCE_SETTINGS`.

    Returns
    -------
    dict
        ``value`` (the midpoint), ``lower``, ``upper``, ``gap``, ``accepted`` (gap below the threshold), the
        temperatures, particles and runs used, and seconds.
    """
    import jax
    import jax.numpy as jnp

    import bdmc

    data, exact = jnp.asarray(problem.data), {"x": jnp.asarray(problem.info["beta"])}
    key = jax.random.key(settings["seed"])
    steps, start = settings["num_steps"], time.perf_counter()
    tried = []
    while True:
        common = {"num_steps": steps, "num_particles": settings["num_particles"], "num_runs": settings["num_runs"],
                  "progress": False}
        lower = bdmc.tempered_smc(jax.random.fold_in(key, 2 * steps), problem.model, data, **common)
        upper = bdmc.reverse_tempered_smc(jax.random.fold_in(key, 2 * steps + 1), problem.model, data,
                                          exact_latent=exact, **common)
        gap = float(upper.value) - float(lower.value)
        tried.append({"num_steps": steps, "lower": float(lower.value), "upper": float(upper.value), "gap": gap})
        if gap < REFERENCE_GAP or 2 * steps > settings["max_steps"]:
            break
        steps *= 2
    return {"value": 0.5 * (float(lower.value) + float(upper.value)), "lower": float(lower.value),
            "upper": float(upper.value), "gap": gap, "accepted": bool(abs(gap) < REFERENCE_GAP), "num_steps": steps,
            "tried": tried, "seconds": time.perf_counter() - start,
            "label": (f"bdmc tempered_smc / reverse_tempered_smc from the generating coefficient, "
                      f"{settings['num_particles']} particles, {steps} temperatures, {settings['num_runs']} runs "
                      "each way (log-mean-exp / log-harmonic-mean), midpoint"), "settings": dict(settings)}


def truth_for(family: str, size: int, problem, out: Path, console=print) -> dict | None:
    """``{"value", "kind"}``: exact log Z, or the stored (else newly computed) logistic reference; None where the
    reference's gap is too wide to trust."""
    if problem.exact is not None:
        return {"value": float(problem.exact), "kind": "exact"}
    path = out / "references.json"
    refs = json.loads(path.read_text()) if path.exists() else {}
    if problem.name not in refs:
        console(f"reference for {problem.name} ...")
        ref = logistic_reference(problem)
        if size <= 2:
            ref["quadrature"] = logistic_quadrature_log_z(size)
        refs[problem.name] = {**ref, **stamp(), "uncommitted": uncommitted()}
        write_text(path, json.dumps(refs, indent=2))
        console(f"  {ref['label']}: [{ref['lower']:.4f}, {ref['upper']:.4f}], gap {ref['gap']:.4f}")
    ref = refs[problem.name]
    return {"value": ref["value"], "kind": "reference"} if ref["accepted"] else None


# -------------------------------------------------------------------------------------------- the walk
def cell_rows(rows, problem: str, tool: str, seeds: int) -> dict:
    """``{budget label: {seed: row}}`` of one (problem, tool), seeds below ``seeds`` only."""
    out: dict = {}
    for r in rows:
        if r["problem"] == problem and r["tool"] == tool and r["seed"] < seeds:
            out.setdefault(r["budget"], {})[r["seed"]] = r
    return out


def rmse(rows) -> float:
    """Root mean square error of the rows' ``error`` (inf when a row has none: a timed-out run)."""
    errors = [r.get("error") for r in rows]
    if not errors or any(e is None for e in errors):
        return math.inf
    return math.sqrt(sum(e * e for e in errors) / len(errors))


def over_cap(row, cap: float) -> bool:
    """A run that timed out, or a warm run slower than ``cap`` seconds (a cold call may compile past it)."""
    return bool(row.get("timed_out")) or (row["kind"] == "warm" and row["seconds"] > cap)


def next_step(done: dict, labels, *, seeds: int, cap: float) -> tuple:
    """Where one walk up a ladder stands, from its rows alone (so a rerun resumes it).

    Parameters
    ----------
    done : dict
        :func:`cell_rows` of the walk.
    labels : list of str
        The ladder's budget labels, smallest first.
    seeds : int
        Runs per rung.
    cap : float
        Seconds a warm run may take.

    Returns
    -------
    tuple
        ``("run", rung, seed)``: the next call; or ``("done", outcome, rung)`` with outcome ``"reached"`` (rung:
        the first whose RMSE is below 0.1 nat), ``"capped"`` (a run at that rung exceeded the cap) or
        ``"ladder"`` (no rung reached it; rung None).
    """
    for rung, label in enumerate(labels):
        at = done.get(label, {})
        if any(over_cap(r, cap) for r in at.values()):
            return "done", "capped", rung
        missing = [s for s in range(seeds) if s not in at]
        if missing:
            return "run", rung, missing[0]
        if rmse(at.values()) < THRESHOLDS[-1]:
            return "done", "reached", rung
    return "done", "ladder", None


class CallTimeout(Exception):
    """A run passed its time limit (raised by SIGALRM between Python bytecodes)."""


def _alarm(signum, frame):
    raise CallTimeout


def timed(run, seed: int, limit: float) -> dict:
    """One call of ``run(seed)`` with its wall time, stopped after ``limit`` seconds where the tool's Python code
    can be interrupted (a compiled JAX call finishes first and is judged on its time)."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = run(seed)
        out["timed_out"] = False
    except CallTimeout:
        out = {"log_z": None, "timed_out": True}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return {**out, "seconds": time.perf_counter() - start}


def uncommitted() -> list[str]:
    """``git status --porcelain`` of this checkout, the results folder left out: what differs from the commit."""
    out = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", ".", ":!benchmarks/results"],
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


class Sweep:
    """Runs the walks of one (family, size) round-robin and appends a row per call."""

    def __init__(self, out: Path, *, seeds: int, cap: float, console=print):
        import bdmc

        self.out, self.seeds, self.cap, self.console = out, seeds, cap, console
        self.path = out / "rows.jsonl"
        self.rows = load_rows(self.path)
        self.ladders = ladders()
        self.runs, self.calls = {}, {}
        commit, clean = tree_state()
        self.fixed = {"commit": commit, "clean_tree": clean, "uncommitted": uncommitted(),
                      "bdmc_from": str(Path(bdmc.__file__).resolve().parent), "seeds_planned": seeds, "cap_s": cap}

    def outcome(self, problem: str, tool: str) -> tuple:
        labels = [budget_label(b) for b in self.ladders[tool]]
        return next_step(cell_rows(self.rows, problem, tool, self.seeds), labels, seeds=self.seeds, cap=self.cap)

    def call(self, family, size, problem, truth, tool, rung, seed) -> None:
        import peer_tools

        budget = self.ladders[tool][rung]
        label = budget_label(budget)
        cell = (problem.name, tool, label)
        start = time.perf_counter()
        if cell not in self.runs:
            self.runs[cell] = peer_tools.make(tool, problem, budget)
        setup = time.perf_counter() - start
        kind = "warm" if self.calls.get(cell) else "cold"
        load_before = os.getloadavg()
        # A cold call compiles first: interrupting JAX mid-compilation is avoided with a generous limit.
        out = timed(self.runs[cell], seed, self.cap + (COLD_ALLOWANCE if kind == "cold" else 0.0))
        self.calls[cell] = self.calls.get(cell, 0) + 1
        error = None if out["log_z"] is None else out["log_z"] - truth["value"]
        row = {"family": family, "size_kind": FAMILIES[family], "size": size, "problem": problem.name,
               "tool": tool, "budget": label, "rung": rung, "seed": seed, "kind": kind, "setup_seconds": setup,
               "truth": truth["value"], "truth_kind": truth["kind"], "error": error, "loadavg_before": load_before,
               "loadavg": os.getloadavg(), **self.fixed,
               **out}
        append_row(self.path, row)
        self.rows.append(row)
        shown = "timed out" if error is None else f"error {error:+9.4f}"
        self.console(f"{problem.name:15s} {tool:10s} {label:>9s} seed {seed} {kind:4s} {out['seconds']:8.3f}s "
                     f"{shown}  load {load_before[0]:.2f}")

    def size(self, family: str, size: int, tools, smaller=()) -> None:
        """Every tool's walk at one size, one call per tool in turn; a tool capped at a ``smaller`` size is skipped."""
        names = [f"{family}_{FAMILIES[family].lower()}{s}" for s in smaller]
        active = [t for t in tools if not any(self.outcome(name, t)[1] == "capped" for name in names)]
        if not active:
            return
        problem = BUILDERS[family](size)
        truth = truth_for(family, size, problem, self.out, self.console)
        if truth is None:
            self.console(f"{problem.name}: reference gap too wide, not run")
            return
        while active:
            for tool in list(active):
                step = self.outcome(problem.name, tool)
                if step[0] == "done":
                    active.remove(tool)
                    continue
                self.call(family, size, problem, truth, tool, step[1], step[2])


# ----------------------------------------------------------------------------------------- summaries
def summarize(rows, *, seeds: int, cap: float, tools=TOOLS) -> list[dict]:
    """One record per (family, size, tool): the walk's outcome and its times at each threshold.

    Parameters
    ----------
    rows : list of dict
    seeds : int
        Runs per rung the walks were planned with.
    cap : float
    tools : iterable of str

    Returns
    -------
    list of dict
        ``family, size, tool, outcome`` ("reached", "capped", "ladder", "running" or "skipped": capped at a smaller
        size), and per threshold ``t`` the first rung below it: ``budget_<t>``, ``warm_<t>`` (median warm
        seconds), ``cold_<t>``, ``rmse_<t>``.
    """
    lad = {t: [budget_label(b) for b in ladders()[t]] for t in tools}
    sizes = sorted({(r["family"], r["size"], r["problem"]) for r in rows})
    out, capped = [], set()
    for family, size, problem in sizes:
        for tool in tools:
            done = cell_rows(rows, problem, tool, seeds)
            if not done:
                if (family, tool) in capped:
                    out.append({"family": family, "size": size, "tool": tool, "outcome": "skipped"})
                continue
            step = next_step(done, lad[tool], seeds=seeds, cap=cap)
            rec = {"family": family, "size": size, "tool": tool, "problem": problem,
                   "outcome": step[1] if step[0] == "done" else "running",
                   "rungs": sum(1 for label in lad[tool] if len(done.get(label, {})) == seeds),
                   "load": statistics.mean(r["loadavg_before"][0] for at in done.values() for r in at.values())}
            if rec["outcome"] == "capped":
                capped.add((family, tool))
            for threshold in THRESHOLDS:
                for label in lad[tool]:
                    at = list(done.get(label, {}).values())
                    if len(at) == seeds and not any(over_cap(r, cap) for r in at) and rmse(at) < threshold:
                        # bdmc's pilot may choose a new shape for a seed, so a warm call can compile: left out
                        # of the median unless every warm call did
                        warm = [r["seconds"] for r in at if r["kind"] == "warm" and not r.get("compiled")] or [
                            r["seconds"] for r in at if r["kind"] == "warm"]
                        cold = [r["seconds"] + r["setup_seconds"] for r in at if r["kind"] == "cold"]
                        rec.update({f"budget_{threshold:g}": label, f"rmse_{threshold:g}": rmse(at),
                                    f"warm_{threshold:g}": statistics.median(warm) if warm else math.nan,
                                    f"fastest_{threshold:g}": min(warm) if warm else math.nan,
                                    f"cold_{threshold:g}": statistics.median(cold) if cold else math.nan})
                        break
            out.append(rec)
    return out


def fit_slope(sizes, seconds) -> dict | None:
    """Least-squares line through (log size, log seconds): the exponent of a power law ``seconds ~ size^slope``.

    Parameters
    ----------
    sizes, seconds : sequence of float
        Positive; at least two distinct sizes.

    Returns
    -------
    dict or None
        ``slope``, ``intercept`` (natural logs) and ``points``; None with fewer than two distinct sizes.
    """
    x, y = np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float))
    if len(set(x.tolist())) < 2:
        return None
    slope, intercept = np.polyfit(x, y, 1)
    return {"slope": float(slope), "intercept": float(intercept), "points": len(x)}


def slopes(summary, threshold: float = 0.1, *, which: str = "warm") -> dict:
    """``{(family, tool): fit_slope(...)}`` over the sizes where the tool reached ``threshold``; ``which`` is
    ``"warm"`` (the median warm seconds) or ``"fastest"`` (the fastest warm run)."""
    out = {}
    for family in FAMILIES:
        for tool in TOOLS:
            pts = [(s["size"], s[f"{which}_{threshold:g}"]) for s in summary if s["family"] == family
                   and s["tool"] == tool and math.isfinite(s.get(f"{which}_{threshold:g}", math.nan))]
            out[(family, tool)] = fit_slope(*zip(*pts, strict=True)) if pts else None
    return out


# ------------------------------------------------------------------------------------------------ pages
def _fmt(x) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def _cell(s, threshold) -> str:
    key = f"{threshold:g}"
    if f"warm_{key}" in s:
        return f"{_fmt(s[f'warm_{key}'])} s ({s[f'budget_{key}']}, RMSE {_fmt(s[f'rmse_{key}'])})"
    return {"capped": "not reached within the cap", "ladder": "not reached on the ladder", "running": "unfinished",
            "skipped": "not run (capped at a smaller size)", "reached": "-"}[s["outcome"]]


def page_values(folder: Path) -> dict:
    """Every value of the pages under ``benchmarks/pages/cost_curves/``, from the rows and settings in ``folder``."""
    settings = json.loads((folder / "settings.json").read_text())
    rows = load_rows(folder / "rows.jsonl")
    refs = json.loads((folder / "references.json").read_text()) if (folder / "references.json").exists() else {}
    summary = summarize(rows, seeds=settings["seeds"], cap=settings["cap"])
    fits, fastest = slopes(summary), slopes(summary, which="fastest")
    dims = sorted({r["size"] for r in rows if r["size_kind"] == "d"})
    ns = sorted({r["size"] for r in rows if r["size_kind"] == "N"})
    loads = [r["loadavg_before"][0] for r in rows]
    dates = sorted(r["date"] for r in rows)
    reduced = []
    if [d for d in FULL_DIMS if d not in dims]:
        reduced.append(f"d = {', '.join(map(str, dims))} (the issue's grid: {', '.join(map(str, FULL_DIMS))})")
    if [n for n in FULL_SIZES if n not in ns]:
        reduced.append(f"N = {', '.join(f'{n:,}' for n in ns)} (the issue's grid: "
                       f"{', '.join(f'{n:,}' for n in FULL_SIZES)})")
    if settings["seeds"] < 5:
        reduced.append(f"{settings['seeds']} seeds per rung (5 planned by default)")
    if settings["cap"] < 60:
        reduced.append(f"a cap of {settings['cap']:g} s per run (60 s by default)")
    capped = [f"{s['tool']} from {s['family']} {FAMILIES[s['family']]} = {s['size']:,}" for s in summary
              if s["outcome"] == "capped"]
    if capped:
        reduced.append(f"walks ended by the {settings['cap']:g} s cap (the family's larger sizes not run): "
                       + ", ".join(capped))
    outliers = []
    for r in rows:  # a walk capped by one warm call far slower than its rung's others (a compilation, not the run)
        others = [o["seconds"] for o in rows if (o["problem"], o["tool"], o["budget"]) == (r["problem"], r["tool"],
                  r["budget"]) and o["kind"] == "warm" and o is not r]
        if r["kind"] == "warm" and over_cap(r, settings["cap"]) and others and max(others) < settings["cap"] / 10:
            outliers.append(f"{r['tool']} on {r['problem']} at {r['budget']}: one warm call took {r['seconds']:.1f} s "
                            f"against {', '.join(f'{x:.2f}' for x in others)} s for the rung's other warm calls")
    unfinished = [f"{s['family']} {s['size']} {s['tool']}" for s in summary if s["outcome"] == "running"]
    if unfinished:
        reduced.append("walks stopped before their end (rerun to resume): " + ", ".join(unfinished))
    commits = sorted({f"{r['commit']}" for r in rows})
    dirty = sorted({line for r in rows for line in r.get("uncommitted", [])})
    provenance = (f"Rows taken at commit {', '.join(commits)} between {dates[0]} and {dates[-1]} (UTC), 1-minute "
                  f"load average {min(loads):.1f} to {max(loads):.1f} on {rows[0]['machine']}; clean tree: "
                  + ", ".join(sorted({str(r['clean_tree']) for r in rows}))
                  + (" (uncommitted then: " + ", ".join(f"`{d}`" for d in dirty) + ")" if dirty else "")
                  + f"; bdmc imported from `{rows[0]['bdmc_from'].replace(str(ROOT), '.')}`.")
    slope_lines = ["| family | tool | slope: median warm seconds to < 0.1 nat | slope: fastest warm run | "
                   "sizes fitted | seconds at those sizes (median warm) |", "|---|---|---|---|---|---|"]
    for (family, tool), fit in fits.items():
        pts = [s for s in summary if s["family"] == family and s["tool"] == tool and "warm_0.1" in s]
        slope_lines.append(f"| {family} ({FAMILIES[family]}) | {tool} | "
                           + (f"{fit['slope']:.2f}" if fit else "- (fewer than two sizes reached)") + " | "
                           + (f"{fastest[(family, tool)]['slope']:.2f}" if fastest[(family, tool)] else "-")
                           + f" | {', '.join(str(s['size']) for s in pts) or '-'} | "
                           + (", ".join(_fmt(s["warm_0.1"]) for s in pts) or "-") + " |")
    table = ["| family | size | tool | to < 1 nat: warm s per run (budget, RMSE) | to < 0.1 nat | fastest warm run "
             "at the 0.1 rung (s) | cold s at the 0.1 rung | outcome | rungs run | mean load |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in sorted(summary, key=lambda s: (list(FAMILIES).index(s["family"]), s["size"], TOOLS.index(s["tool"]))):
        table.append(f"| {s['family']} | {FAMILIES[s['family']]} = {s['size']:,} | {s['tool']} | {_cell(s, 1.0)} | "
                     f"{_cell(s, 0.1)} | {_fmt(s.get('fastest_0.1'))} | {_fmt(s.get('cold_0.1'))} | "
                     f"{s['outcome']} | {s.get('rungs', 0)} | {_fmt(s.get('load'))} |")
    ref_lines = ["| problem | lower | upper | gap | temperatures | quadrature (d = 2) | accepted |",
                 "|---|---|---|---|---|---|---|"]
    for name, ref in sorted(refs.items(), key=lambda kv: int(kv[0].split("_d")[1])):
        ref_lines.append(f"| {name} | {ref['lower']:.4f} | {ref['upper']:.4f} | {ref['gap']:.4f} | "
                         f"{ref['num_steps']} | "
                         + (f"{ref['quadrature']:.4f}" if "quadrature" in ref else "-") + f" | {ref['accepted']} |")
    return {"headline": "Reduced from the issue's grid: " + ("; ".join(reduced) if reduced else "nothing") + ".",
            "provenance": provenance,
            "outliers": ("Walks ended by a single outlier warm call (a cap on that call, not on the rung's run "
                         "time): " + "; ".join(outliers) + ".") if outliers else "No walk was ended by a single "
                        "outlier warm call.", "slopes": "\n".join(slope_lines), "table": "\n".join(table),
            "references": "\n".join(ref_lines),
            "ladders": "; ".join(f"{t}: " + ", ".join(budget_label(b) for b in lad) for t, lad in ladders().items()),
            "seeds": settings["seeds"], "cap": settings["cap"], "logistic_n": LOGISTIC_N,
            "regression_dim": REGRESSION_DIM, "reference_gap": REFERENCE_GAP, "cold_allowance": COLD_ALLOWANCE}


def plot(folder: Path) -> Path:
    """``cost_curves.png``: warm seconds to < 0.1 nat against d (two families) and N, log-log, with the fits."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    settings = json.loads((folder / "settings.json").read_text())
    summary = summarize(load_rows(folder / "rows.jsonl"), seeds=settings["seeds"], cap=settings["cap"])
    fits = slopes(summary)
    fig, axes = plt.subplots(1, len(FAMILIES), figsize=(4.4 * len(FAMILIES), 4))
    for ax, family in zip(axes, FAMILIES, strict=True):
        for i, tool in enumerate(TOOLS):
            pts = sorted((s["size"], s["warm_0.1"]) for s in summary
                         if s["family"] == family and s["tool"] == tool and "warm_0.1" in s)
            if not pts:
                continue
            x, y = zip(*pts, strict=True)
            fit = fits[(family, tool)]
            label = tool + (f" (slope {fit['slope']:.2f})" if fit else "")
            line, = ax.plot(x, y, "o-" if tool == "bdmc-tsmc" else "s--", label=label, color=f"C{i}",
                            lw=2.2 if tool == "bdmc-tsmc" else 1.2)
            if fit:
                grid = np.geomspace(min(x), max(x), 20)
                ax.plot(grid, np.exp(fit["intercept"]) * grid ** fit["slope"], ":", color=line.get_color(), lw=0.8)
        ax.set(xscale="log", yscale="log", xlabel=FAMILIES[family], title=family)
        sizes = sorted({s["size"] for s in summary if s["family"] == family})
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # the sizes run are the ticks
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    axes[0].set_ylabel("warm seconds per run to RMSE < 0.1 nat")
    fig.tight_layout()
    path = folder / "cost_curves.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def render(folder: Path = RESULTS) -> None:
    """The figure and the pages, from the stored rows."""
    from harness.pages import write_folder

    plot(folder)
    write_folder("cost_curves", written_to=folder)


# ------------------------------------------------------------------------------------------------- main
def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dims", default="2,5,10,20,50", help="dimensions of correlated and logistic (comma-separated)")
    ap.add_argument("--sizes", default="100,1000,10000", help="data sizes N of the regression (comma-separated)")
    ap.add_argument("--families", default=",".join(FAMILIES), help=f"from {','.join(FAMILIES)}")
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"from {','.join(TOOLS)}")
    ap.add_argument("--seeds", type=int, default=5, help="runs per rung (default 5)")
    ap.add_argument("--cap", type=float, default=60.0, help="seconds a warm run may take (default 60)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    ap.add_argument("--render", action="store_true", help="re-render the figure and pages from the rows and stop")
    args = ap.parse_args(argv)
    args.dims = [int(x) for x in args.dims.split(",")]
    args.sizes = [int(x) for x in args.sizes.split(",")]
    args.families, args.tools = args.families.split(","), args.tools.split(",")
    for bad in (set(args.families) - set(FAMILIES)) | (set(args.tools) - set(TOOLS)):
        ap.error(f"unknown family or tool {bad!r}")
    return args


def main(argv=None) -> None:
    args = parse(argv)
    if args.render:
        render(args.out)
        return
    import bdmc

    bdmc.enable_x64()  # float64, as the closed forms
    args.out.mkdir(parents=True, exist_ok=True)
    write_text(args.out / "settings.json", json.dumps(
        {"dims": args.dims, "sizes": args.sizes, "families": args.families, "tools": args.tools,
         "seeds": args.seeds, "cap": args.cap, **stamp()}, indent=2))
    sweep = Sweep(args.out, seeds=args.seeds, cap=args.cap, console=lambda s: print(s, flush=True))
    grids = {f: args.sizes if FAMILIES[f] == "N" else args.dims for f in args.families}
    # Smallest sizes of every family first, so a sweep stopped early still has each family's smaller sizes.
    for i in range(max(map(len, grids.values()))):
        for family, grid in grids.items():
            if i < len(grid):
                sweep.size(family, grid[i], args.tools, grid[:i])
    if args.out.resolve() == RESULTS.resolve():
        render(args.out)


if __name__ == "__main__":
    main()
