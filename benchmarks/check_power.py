"""Which check catches which bug: firing rates of bdmc's checks on deliberate bugs, with the correct model as control.

Extends ``alarm_power.py`` (the run-level alarm against simulator variance errors) to every check bdmc has and to
four classes of bug, each built as a subclass of a correct model (never a flag in the library):

- **simulator** bugs: every Gaussian draw of the prior and data samplers with its variance multiplied by 1.1 or
  4; the multivariate-normal sampler with transposed eigenvectors (``x = m + V^T (sqrt(e) * eps)`` in place of
  ``V``), the WebPPL bug of BREAD Sec. 5.2.2. The density is correct, the samplers are not.
- a **kernel** bug: the Gibbs conditional's variance 10% too large (its draw and its log density alike).
- **density** bugs: +0.5 nats per case in the log-likelihood; the log-likelihood's noise variance 10% too large
  (simulator and kernel correct).
- the **correct** model: every check's false-alarm rate.

The checks, each at its own stated level:

- ``alarm``: the run-level bug alarm (``bdmc.bug_alarm``: every forward against every reverse estimate, pooled;
  level 0.01 by Markov's inequality) on forward and reverse AIS at T = 10, 100, 1000 with the model's kernel.
- ``alarm (random-walk MH)``: the same with a slowly mixing kernel (random-walk Metropolis, scale 0.1), for the
  simulator bugs and the correct model: a wrong prior sampler is visible only while the kernel remembers the
  forward chains' starting points.
- ``exact value``: the same estimates against the correct model's closed-form log p(y), by the same Markov
  argument (pooled lower above it, or pooled upper below it, each at level 0.005).
- ``second implementation``: ``bdmc.checks.compare_models`` against an independent correct implementation (here
  the correct built-in model with its own kernel; ``--numpyro-seeds`` adds linear regression against NumPyro
  programs): bounds crossing between the two at level 0.01, or log densities that differ at the same latents.
- ``Geweke``: ``bdmc.checks.geweke`` at lambda = 1 (family-wise level 0.001 over its statistics), with the default
  statistics and, for the correlated Gaussian, with first and second moments in the prior's eigenbasis.
- ``conditional-vs-joint``: ``bdmc.checks.conditional_consistency`` of every conditional of the kernel against
  the model's joint density, at lambda = 1 and 0.5.

    python benchmarks/check_power.py                      # everything (resumes from rows.jsonl)
    python benchmarks/check_power.py --seeds 10 --geweke-seeds 5 --numpyro-seeds 0
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

import bdmc
from bdmc.checks import compare_models, conditional_consistency, geweke
from bdmc.checks.geweke import DataAtOne, DefaultStatistics  # DataAtOne: Geweke through sample_data at lambda = 1
from bdmc.contracts.estimate import log_harmonic_mean, log_mean_exp
from bdmc.kernels import RandomWalkMH
from bdmc.models import CorrelatedGaussianMean, LinearRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, write_text  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

ALPHA = 0.01
MODELS = {
    "linear-regression": LinearRegression(),
    # Four dimensions, eigenvalues 9 to 0.09, each large eigen-axis rotated 45 degrees against a small one.
    "correlated-gaussian": CorrelatedGaussianMean(n=20, dim=4, prior_std=3.0, condition=100.0, noise_std=1.0,
                                                  rotation_angle=math.pi / 4),
}


# ------------------------------------------------------------------------------------------------ the bugs

class _ScaledSimulator:
    """Every Gaussian draw of the simulator with ``factor`` times its variance (prior and noise alike).

    Geweke runs at lambda = 1 here, through ``sample_data``; ``sample_data_tempered`` is left as inherited.
    """

    def sample_prior(self, key):
        latent = super().sample_prior(key)
        if isinstance(self, LinearRegression):  # s2 is the noise variance itself; beta | s2 has sd sqrt(tau s2)
            return {"beta": latent["beta"] * math.sqrt(self.factor), "log_s2": latent["log_s2"]}
        return {"x": self.prior_mean + math.sqrt(self.factor) * (latent["x"] - self.prior_mean)}

    def sample_data(self, key, latent):
        if isinstance(self, LinearRegression):
            return super().sample_data(key, {**latent, "log_s2": latent["log_s2"] + math.log(self.factor)})
        return latent["x"] + math.sqrt(self.factor) * (super().sample_data(key, latent) - latent["x"])


@dataclasses.dataclass(frozen=True)
class ScaledLR(_ScaledSimulator, LinearRegression):
    factor: float = 1.0


@dataclasses.dataclass(frozen=True)
class ScaledCG(_ScaledSimulator, CorrelatedGaussianMean):
    factor: float = 1.0


@dataclasses.dataclass(frozen=True)
class TransposedCG(CorrelatedGaussianMean):
    """The WebPPL bug: the prior sampler uses ``V^T`` where the eigendecomposition ``S = V diag(e) V^T`` needs V."""

    def sample_prior(self, key):
        eps = jax.random.normal(key, (self.dim,))
        V = jnp.asarray(self.eigenvectors)
        return {"x": self.prior_mean + V.T @ (jnp.sqrt(jnp.asarray(self.eigenvalues)) * eps)}


@dataclasses.dataclass(frozen=True)
class WideKernelCG(CorrelatedGaussianMean):
    """Its Gibbs conditional has 1.1 times the right variance (its kernel is the bug; its density is right)."""

    def _x_conditional(self, data, lam):
        mean, precision = super()._x_conditional(data, lam)
        return mean, precision / 1.1


@dataclasses.dataclass(frozen=True)
class WideKernelLR(LinearRegression):
    """The conditional of beta given s2 has 1.1 times the right covariance."""

    def _beta_conditional(self, latent, data, lam):
        mean, chol = super()._beta_conditional(latent, data, lam)
        return mean, chol / math.sqrt(1.1)


class _OffsetLikelihood:
    def log_likelihood(self, latent, data):
        return super().log_likelihood(latent, data) + 0.5


@dataclasses.dataclass(frozen=True)
class OffsetLR(_OffsetLikelihood, LinearRegression):
    pass


@dataclasses.dataclass(frozen=True)
class OffsetCG(_OffsetLikelihood, CorrelatedGaussianMean):
    pass


@dataclasses.dataclass(frozen=True)
class NoiseLR(LinearRegression):
    """The log-likelihood scores the data with noise variance 1.1 s2; simulator and kernel use s2."""

    def log_likelihood(self, latent, data):
        return super().log_likelihood({**latent, "log_s2": latent["log_s2"] + math.log(1.1)}, data)


@dataclasses.dataclass(frozen=True)
class NoiseCG(CorrelatedGaussianMean):
    """The log-likelihood scores the data with noise variance 1.1 noise_std^2; simulator and kernel do not."""

    def log_likelihood(self, latent, data):
        z = (data - latent["x"]) / (self.noise_std * math.sqrt(1.1))
        return jnp.sum(-0.5 * z**2 - jnp.log(self.noise_std * math.sqrt(1.1)) - 0.5 * math.log(2 * math.pi), axis=-1)


BUGS = ["correct", "simulator variance x1.1", "simulator variance x4", "MVN sampler with transposed eigenvectors",
        "kernel conditional variance +10%", "log-likelihood constant +0.5 per case",
        "log-likelihood noise variance x1.1 (density only)"]
SIMULATOR_BUGS = BUGS[:4]


@functools.cache
def cell(bug: str, name: str):
    """(model under test, its kernel, the conditionals of that kernel) for one bug on one model, or None.

    Cached: a kernel holds bound methods, which compare by the identity of their model, so a fresh model
    instance per seed would recompile every run.
    """
    base = MODELS[name]
    fields = dataclasses.asdict(base)
    lr = name == "linear-regression"
    if bug == "correct":
        model = base
    elif bug.startswith("simulator variance"):
        model = (ScaledLR if lr else ScaledCG)(**fields, factor=float(bug.rsplit("x", 1)[1]))
    elif bug.startswith("MVN sampler"):
        if lr:
            return None
        model = TransposedCG(**fields)
    elif bug.startswith("kernel"):
        wide = (WideKernelLR if lr else WideKernelCG)(**fields)
        return base, wide.default_kernel(), wide.conditionals()
    elif bug.startswith("log-likelihood constant"):
        model = (OffsetLR if lr else OffsetCG)(**fields)
    else:
        model = (NoiseLR if lr else NoiseCG)(**fields)
    return model, model.default_kernel(), model.conditionals()


# ------------------------------------------------------------------------------------------ Geweke pieces

@dataclasses.dataclass(frozen=True)
class EigenMoments:
    """First and second moments of x in the prior's eigenbasis, of the data mean in it, and the log-likelihood.

    The default statistics average over coordinates, so at stationarity they see only the trace of a
    covariance, and a covariance with the right eigenvalues and the wrong eigenvectors (the transposed sampler)
    has the same trace; these see each direction on its own.
    """

    model: CorrelatedGaussianMean

    def __call__(self, latent, data):
        m = self.model
        V = jnp.asarray(m.eigenvectors)
        z = V.T @ (latent["x"] - m.prior_mean)
        zy = V.T @ (jnp.mean(data, axis=0) - m.prior_mean)
        out = {f"z{i}": z[i] for i in range(m.dim)}
        out.update({f"z{i}*z{j}": z[i] * z[j] for i in range(m.dim) for j in range(i, m.dim)})
        out.update({f"ybar z{i}*z{j}": zy[i] * zy[j] for i in range(m.dim) for j in range(i, m.dim)})
        out["log-likelihood"] = jnp.sum(m.log_likelihood(latent, data))
        return out


# ------------------------------------------------------------------------------------------------- checks

def exact_value_check(lowers, uppers, exact: float, *, alpha: float = ALPHA) -> tuple[bool, float]:
    """Pooled lower bound above the closed form, or pooled upper bound below it, each beyond ``log(2 / alpha)``.

    ``E exp(L) = p(y)`` for the pooled lower estimate and ``E exp(-U) = 1 / p(y)`` for the pooled upper one, so
    by Markov's inequality each side exceeds ``c`` nats with probability at most ``exp(-c)``.
    """
    above = log_mean_exp([e.value for e in lowers]) - exact
    below = exact - log_harmonic_mean([e.value for e in uppers])
    worst = max(above, below)
    return bool(worst > math.log(2 / alpha)), float(above if above >= below else -below)


def run_sandwich_group(bug, name, seed, args):
    model, kernel, _ = cell(bug, name)
    reference = MODELS[name]
    data, latent = bdmc.simulate(jax.random.key(seed), model)
    cmp = compare_models(jax.random.key(10_000 + seed), model, reference, data=data, exact_latent=latent,
                         steps=args.steps, num_runs=args.chains, kernel_a=kernel, num_points=16)
    own = cmp.verdict("A")
    exact = float(reference.exact_log_marginal(data))
    fired_exact, off = exact_value_check(cmp.estimates[("A", "lower")], cmp.estimates[("A", "upper")], exact)
    d = cmp.density
    return [
        ("alarm", own.fired, own.crossing, {}),
        ("exact value", fired_exact, off, {}),
        ("second implementation", cmp.fired, max(cmp.a_vs_b.crossing, cmp.b_vs_a.crossing),
         {"bounds_cross": cmp.bounds_cross, "density_fired": d.fired, "density_constant": d.constant,
          "density_offset": d.offset}),
    ]


def run_rwmh_group(bug, name, seed, args):
    model, _, _ = cell(bug, name)
    data, latent = bdmc.simulate(jax.random.key(seed), model)
    result = bdmc.sandwich(jax.random.key(20_000 + seed), model, data, latent, steps=args.steps,
                           num_runs=args.chains, kernel=RandomWalkMH(model, scale=0.1), progress=False)
    return [("alarm (random-walk MH)", result.verdict.fired, result.verdict.crossing, {})]


def run_geweke_group(bug, name, seed, args):
    model, kernel, _ = cell(bug, name)
    kw = dict(lam=1.0, num_samples=args.geweke_samples, num_steps=args.geweke_steps, sample_data=DataAtOne(model))
    key = jax.random.key(30_000 + seed)
    out = []
    default = geweke(key, model, kernel, statistics=DefaultStatistics(model), **kw)
    out.append(("Geweke (default statistics)", not default.passed, float(np.max(np.abs(default.z))),
                {"worst": default.worst[0]}))
    if isinstance(model, CorrelatedGaussianMean):
        eig = geweke(key, model, kernel, statistics=EigenMoments(MODELS[name]), **kw)
        out.append(("Geweke (eigenbasis moments)", not eig.passed, float(np.max(np.abs(eig.z))),
                    {"worst": eig.worst[0]}))
    return out


def run_consistency_group(bug, name, seed, args):
    model, _, conditionals = cell(bug, name)
    data, _ = bdmc.simulate(jax.random.key(seed), model)
    worst = 0.0
    for lam in (1.0, 0.5):
        for c in conditionals:
            worst = max(worst, conditional_consistency(jax.random.key(40_000 + seed), model, c, data, lam=lam,
                                                       num_triples=32).worst)
    return [("conditional-vs-joint", bool(worst > 1e-6), worst, {})]


GROUPS = {
    "sandwich": (run_sandwich_group, ("alarm", "exact value", "second implementation"), "seeds"),
    "rwmh": (run_rwmh_group, ("alarm (random-walk MH)",), "seeds"),
    "geweke": (run_geweke_group, ("Geweke (default statistics)",), "geweke_seeds"),
    "consistency": (run_consistency_group, ("conditional-vs-joint",), "seeds"),
}


# -------------------------------------------------------------------------------- NumPyro programs (optional)

NUMPYRO_BUGS = ["correct", "log-likelihood constant +0.5 per case", "noise variance x1.1 (whole program)",
                "numpyro.factor +0.5 per case (prior side)"]


def numpyro_program(bug: str):
    """The built-in regression written in NumPyro, with one deliberate bug."""
    import numpyro
    import numpyro.distributions as dist

    from bdmc.ppl import from_numpyro

    class OffsetNormal(dist.Normal):
        def log_prob(self, value):
            return super().log_prob(value) + 0.5

    scale = math.sqrt(1.1) if bug.startswith("noise") else 1.0
    likelihood = OffsetNormal if bug.startswith("log-likelihood constant") else dist.Normal
    per_case = 0.5 if bug.startswith("numpyro.factor") else 0.0

    def regression(x, y=None):
        s2 = numpyro.sample("s2", dist.InverseGamma(1.0, 1.0))
        beta = numpyro.sample("beta", dist.Normal(0.0, jnp.sqrt(0.1 * s2)).expand([x.shape[1]]).to_event(1))
        with numpyro.plate("cases", x.shape[0]):
            numpyro.sample("y", likelihood(x @ beta, scale * jnp.sqrt(s2)), obs=y)
        if per_case:
            numpyro.factor("constant", per_case * x.shape[0])

    return from_numpyro(regression, np.asarray(MODELS["linear-regression"].design), observed="y")


_PROGRAMS: dict = {}


def run_numpyro_group(bug, name, seed, args):
    if bug not in _PROGRAMS:  # one instance per program: NumPyro models hash by identity
        _PROGRAMS[bug] = numpyro_program(bug)
    program = _PROGRAMS[bug]
    reference = MODELS["linear-regression"]

    def to_builtin(u):
        c = program.constrain(u)
        return {"beta": c["beta"], "log_s2": jnp.log(c["s2"])}

    cmp = compare_models(jax.random.key(50_000 + seed), program, reference, to_b=to_builtin,
                         data_to_b=lambda d: d["y"], steps=args.steps, num_runs=args.chains, num_points=16)
    own = cmp.verdict("A")
    exact = float(reference.exact_log_marginal(cmp.data["y"]))
    fired_exact, off = exact_value_check(cmp.estimates[("A", "lower")], cmp.estimates[("A", "upper")], exact)
    d = cmp.density
    return [
        ("alarm", own.fired, own.crossing, {}),
        ("exact value", fired_exact, off, {}),
        ("second implementation", cmp.fired, max(cmp.a_vs_b.crossing, cmp.b_vs_a.crossing),
         {"bounds_cross": cmp.bounds_cross, "density_fired": d.fired, "density_constant": d.constant,
          "density_offset": d.offset}),
    ]


# ------------------------------------------------------------------------------------------------- driver

def plan(args):
    """(group, bug, model name, seeds) in the order they run."""
    out = []
    for name in args.models:
        for bug in BUGS:
            if cell(bug, name) is None:
                continue
            out.append(("sandwich", bug, name, args.seeds))
            out.append(("consistency", bug, name, args.seeds))
            if bug in SIMULATOR_BUGS:
                out.append(("rwmh", bug, name, args.seeds))
            out.append(("geweke", bug, name, args.geweke_seeds))
    for bug in NUMPYRO_BUGS:
        if args.numpyro_seeds:
            out.append(("numpyro", bug, "linear-regression (NumPyro program)", args.numpyro_seeds))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="linear-regression,correlated-gaussian")
    parser.add_argument("--seeds", type=int, default=20, help="data sets per cell for the sandwich-based checks")
    parser.add_argument("--geweke-seeds", type=int, default=10)
    parser.add_argument("--geweke-samples", type=int, default=10_000)
    parser.add_argument("--geweke-steps", type=int, default=10)
    parser.add_argument("--numpyro-seeds", type=int, default=3)
    parser.add_argument("--steps", default="10,100,1000")
    parser.add_argument("--chains", type=int, default=32)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/check_power"))
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("check_power")
        return
    args.models = args.models.split(",")
    args.steps = [int(s) for s in args.steps.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {"steps": args.steps, "chains": args.chains, "geweke_samples": args.geweke_samples,
                "geweke_steps": args.geweke_steps}
    settings_path = args.out / "settings.json"
    if settings_path.exists() and json.loads(settings_path.read_text()) != settings:
        raise SystemExit(f"{settings_path} holds other settings ({settings_path.read_text().strip()}); use another "
                         "--out or delete rows.jsonl and settings.json")
    write_text(settings_path, json.dumps(settings) + "\n")
    rows_path = args.out / "rows.jsonl"
    rows = read_rows(rows_path)
    done = {(r["bug"], r["model"], r["check"], r["seed"]) for r in rows}
    started = time.time()
    for group, bug, name, seeds in plan(args):
        fn = run_numpyro_group if group == "numpyro" else GROUPS[group][0]
        first_check = "alarm" if group == "numpyro" else GROUPS[group][1][0]
        for seed in range(seeds):
            if (bug, name, first_check, seed) in done:
                continue
            t0 = time.time()
            results = fn(bug, name, seed, args)
            seconds = time.time() - t0
            for check, fired, statistic, extra in results:
                row = {"bug": bug, "model": name, "check": check, "seed": seed, "fired": bool(fired),
                       "statistic": float(statistic), "seconds": round(seconds, 3), **extra}
                rows.append(row)
                append_row(rows_path, row)  # stamped with its provenance
            fired = ", ".join(f"{c}={'FIRED' if x else 'ok'}" for c, x, _, _ in results)
            print(f"[{time.time() - started:6.0f}s] {bug} | {name} | seed {seed}: {fired} ({seconds:.1f}s)", flush=True)
    write_folder("check_power", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)


def read_rows(path: Path) -> list[dict]:
    """Rows written so far; a last line cut short by an interrupted run is dropped (and recomputed): the file is
    cut back to its whole lines, so that the next row starts a line of its own."""
    text = path.read_text() if path.exists() else ""
    if text and not text.endswith("\n"):
        print(f"dropping a damaged last row of {path}")
        write_text(path, text[:text.rfind("\n") + 1])
    return load_rows(path)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial confidence interval for k successes in n trials."""
    a = 1 - level
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


CHECK_ORDER = ["alarm", "alarm (random-walk MH)", "Geweke (default statistics)", "Geweke (eigenbasis moments)",
               "conditional-vs-joint", "exact value", "second implementation"]


if __name__ == "__main__":
    main()
