"""The false-alarm rate of ``bdmc.checks.simulator_density`` on discrete data, per family and PPL, and its power
against a simulator whose rate is wrong.

What. Five discrete families written as users write them, in NumPyro (``bdmc.ppl.from_numpyro``), in PyMC
(``bdmc.ppl.from_pymc``) and in Stan (``bdmc.ppl.from_stan``, programs and NumPy simulators in
``discrete_families_stan.py``; Stan reports one likelihood term, checked by substituting cases):

- Poisson regression: the coal-mining disasters model's form, log rate ``a + b * year`` over the 112 years
  1851-1962 standardized, ``a ~ N(0, 2)``, ``b ~ N(0, 1)``;
- binomial: logit regression with 10 trials per case, ``a ~ N(0, 1.5)``, ``b ~ N(0, 1)``, 40 cases;
- negative binomial (NB2): mean ``exp(a)``, ``a ~ N(1, 1)``, concentration ``phi ~ Gamma(2, rate 0.5)``, 40 cases;
- categorical: 4 categories, probabilities ``~ Dirichlet(1, 1, 1, 1)``, 40 cases;
- zero-inflated Poisson: zero-inflation probability ``~ Beta(1, 1)``, rate ``~ Gamma(2, rate 0.5)``, 40 cases.

Each is run in two variants. "correct": the program as written, so any "inconsistent" verdict is a false alarm,
whose probability the check's level (0.01, Holm over all its tests) bounds. "wrong rate" (a negative control):
the density is the program as written but the simulator is the same program with its rate, mean or probability
off (``WRONG`` below: Poisson rate x1.1, binomial logit +0.2, NB mean x1.1, categorical probabilities tilted by
``exp(0.2 k)``, ZIP zero-inflation probability raised by 0.1 of the remainder), so "inconsistent" is a catch.

How. One ``simulator_density(jax.random.key(seed), model, level=0.01)`` call per (PPL, family, variant, seed) at
the check's default sizes unless ``SIZES`` says otherwise (the table's headline states them), float64, one
stamped JSON line each in ``rows.jsonl`` (resumable: done rows are skipped). The table gives per (PPL, family)
the false alarms over the correct seeds with their Clopper-Pearson 95% interval, the catches over the control
seeds, the tests that fired, and the median seconds per call; ``README.md`` in the same folder is rendered from
the rows too. A family an adapter refuses, or whose likelihood the check leaves unchecked, is a row saying so.

    python benchmarks/simulator_density_discrete.py --quick            # 3 correct seeds, 2 controls per cell
    python benchmarks/simulator_density_discrete.py                    # 200 correct seeds, 50 controls per cell
    python benchmarks/simulator_density_discrete.py --render
    python benchmarks/simulator_density_discrete.py --ppls numpyro --families poisson-regression,binomial

The builders (``build``, ``numpyro_model``, ``pymc_model``, ``WrongSimulator``) are imported by
``tests/checks/test_simulator_density_families.py``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "simulator_density_discrete"
LEVEL = 0.01
FAMILIES = ("poisson-regression", "binomial", "negative-binomial", "categorical", "zero-inflated-poisson")
PPLS = ("numpyro", "pymc", "stan")
VARIANTS = ("correct", "wrong rate", "wrong rate / 10")
YEARS = np.arange(1851, 1963, dtype=np.float64)  # the years of the coal-mining disasters (bdmc.datasets.load_coal)
N_CASES = 40  # cases of the families without a covariate of their own
TRIALS = 10  # binomial trials per case
K = 4  # categories
# The simulator's error in the "wrong rate" variant: (keyword of the program, its value, what it means); the
# "wrong rate / 10" variant makes a tenth of that error (``wrong_value``).
WRONG = {"poisson-regression": ("rate_factor", 1.1, "simulated rate x{}"),
         "binomial": ("logit_shift", 0.2, "simulated logit +{}"),
         "negative-binomial": ("mean_factor", 1.1, "simulated mean x{}"),
         "categorical": ("tilt", 0.2, "simulated probabilities tilted by exp({} k)"),
         "zero-inflated-poisson": ("gate_shift", 0.1, "simulated zero-inflation g + {} (1 - g)")}
TENTH = "wrong rate / 10"


def wrong_value(family: str, variant: str) -> float:
    """The value of the family's ``WRONG`` keyword in a wrong variant: the error, or a tenth of it."""
    keyword, value, _ = WRONG[family]
    if variant == TENTH:
        value = 1 + (value - 1) / 10 if keyword.endswith("factor") else value / 10
    return round(value, 6)


def wrong_text(family: str, variant: str) -> str:
    return WRONG[family][2].format(f"{wrong_value(family, variant):g}")


# Sizes per family: the check's defaults unless a call took over ~2 s there (then 32 latents and 32 data sets).
DEFAULT_SIZES = dict(num_latents=64, num_data=64)
SIZES: dict[str, dict] = {}
# Stan's one likelihood term is checked by substituting every seen value of every case into a whole data set
# (num_data x cases evaluations of all cases per latent: 6 s a call on the 112-year regression at the defaults).
PPL_SIZES: dict[str, dict] = {"stan": dict(num_latents=32, num_data=32)}


def standardized_years():
    return (YEARS - YEARS.mean()) / YEARS.std()


# ------------------------------------------------------------------------------------------------ NumPyro

def numpyro_program(family: str):
    """The NumPyro program of ``family``; its keyword (``WRONG``) defaults to the correct value."""
    import numpyro
    import numpyro.distributions as dist

    def poisson_regression(x, rate_factor=1.0, y=None):
        a = numpyro.sample("a", dist.Normal(0.0, 2.0))
        b = numpyro.sample("b", dist.Normal(0.0, 1.0))
        with numpyro.plate("years", x.shape[0]):
            numpyro.sample("y", dist.Poisson(rate_factor * jnp.exp(a + b * x)), obs=y)

    def binomial(x, logit_shift=0.0, y=None):
        a = numpyro.sample("a", dist.Normal(0.0, 1.5))
        b = numpyro.sample("b", dist.Normal(0.0, 1.0))
        with numpyro.plate("cases", x.shape[0]):
            numpyro.sample("y", dist.Binomial(TRIALS, logits=a + b * x + logit_shift), obs=y)

    def negative_binomial(n, mean_factor=1.0, y=None):
        a = numpyro.sample("a", dist.Normal(1.0, 1.0))
        phi = numpyro.sample("phi", dist.Gamma(2.0, 0.5))
        with numpyro.plate("cases", n):
            numpyro.sample("y", dist.NegativeBinomial2(mean_factor * jnp.exp(a), phi), obs=y)

    def categorical(n, tilt=0.0, y=None):
        p = numpyro.sample("p", dist.Dirichlet(jnp.ones(K)))
        q = p * jnp.exp(tilt * jnp.arange(K))
        with numpyro.plate("cases", n):
            numpyro.sample("y", dist.Categorical(probs=q / jnp.sum(q)), obs=y)

    def zero_inflated_poisson(n, gate_shift=0.0, y=None):
        gate = numpyro.sample("gate", dist.Beta(1.0, 1.0))
        rate = numpyro.sample("rate", dist.Gamma(2.0, 0.5))
        with numpyro.plate("cases", n):
            numpyro.sample("y", dist.ZeroInflatedPoisson(gate + gate_shift * (1 - gate), rate), obs=y)

    return {"poisson-regression": poisson_regression, "binomial": binomial,
            "negative-binomial": negative_binomial, "categorical": categorical,
            "zero-inflated-poisson": zero_inflated_poisson}[family]


def numpyro_model(family: str, wrong: float | None = None):
    """``from_numpyro`` of the family's program; ``wrong`` sets its ``WRONG`` keyword (None: as written)."""
    import bdmc

    arg = standardized_years() if family == "poisson-regression" else \
        np.linspace(-1.5, 1.5, N_CASES) if family == "binomial" else N_CASES
    kwargs = {} if wrong is None else {WRONG[family][0]: wrong}
    return bdmc.ppl.from_numpyro(numpyro_program(family), arg, observed="y", **kwargs)


# ------------------------------------------------------------------------------------------------ PyMC

def pymc_model(family: str, wrong: float | None = None):
    """``from_pymc`` of the family's PyMC model; ``wrong`` sets its ``WRONG`` keyword (None: as written)."""
    import pymc as pm

    import bdmc

    w = {} if wrong is None else {WRONG[family][0]: wrong}
    with pm.Model(name="") as model:
        if family == "poisson-regression":
            x = standardized_years()
            a, b = pm.Normal("a", 0.0, 2.0), pm.Normal("b", 0.0, 1.0)
            pm.Poisson("y", mu=w.get("rate_factor", 1.0) * pm.math.exp(a + b * x), observed=np.zeros(x.size, int))
        elif family == "binomial":
            x = np.linspace(-1.5, 1.5, N_CASES)
            a, b = pm.Normal("a", 0.0, 1.5), pm.Normal("b", 0.0, 1.0)
            pm.Binomial("y", n=TRIALS, logit_p=a + b * x + w.get("logit_shift", 0.0),
                        observed=np.zeros(N_CASES, int))
        elif family == "negative-binomial":
            a, phi = pm.Normal("a", 1.0, 1.0), pm.Gamma("phi", alpha=2.0, beta=0.5)
            pm.NegativeBinomial("y", mu=w.get("mean_factor", 1.0) * pm.math.exp(a), alpha=phi,
                                observed=np.zeros(N_CASES, int))
        elif family == "categorical":
            p = pm.Dirichlet("p", a=np.ones(K))
            q = p * np.exp(w.get("tilt", 0.0) * np.arange(K))
            pm.Categorical("y", p=q / q.sum(), observed=np.zeros(N_CASES, int))
        elif family == "zero-inflated-poisson":
            gate, rate = pm.Beta("gate", 1.0, 1.0), pm.Gamma("rate", alpha=2.0, beta=0.5)
            shift = w.get("gate_shift", 0.0)
            # PyMC's psi is the probability of the Poisson component: 1 - the zero-inflation probability.
            pm.ZeroInflatedPoisson("y", psi=1 - (gate + shift * (1 - gate)), mu=rate,
                                   observed=np.zeros(N_CASES, int))
        else:
            raise ValueError(family)
    return bdmc.ppl.from_pymc(model)


# ------------------------------------------------------------------------------------------------ models

@dataclass(frozen=True)
class WrongSimulator:
    """A model whose density is ``scored``'s and whose data simulator is ``simulated``'s (same latent sites).

    Hashable (a frozen dataclass; the adapters' models hash by identity), so it is a static argument of the
    check's compiled program like any model."""

    scored: Any
    simulated: Any

    def sample_prior(self, key):
        return self.scored.sample_prior(key)

    def sample_data(self, key, latent):
        return self.simulated.sample_data(key, latent)

    def log_prior(self, latent):
        return self.scored.log_prior(latent)

    def log_likelihood(self, latent, data):
        return self.scored.log_likelihood(latent, data)

    def check_data(self, data):
        return self.scored.check_data(data)


def build(ppl: str, family: str, variant: str = "correct"):
    """The model of one cell: the program as written, or (``"wrong rate"``) its density with a wrong simulator."""
    if ppl == "stan":  # the program is the density; a wrong variant's error lives in its NumPy simulator
        from discrete_families_stan import stan_model

        return stan_model(family, None if variant == "correct" else wrong_value(family, variant))
    make = {"numpyro": numpyro_model, "pymc": pymc_model}[ppl]
    if variant == "correct":
        return make(family)
    return WrongSimulator(scored=make(family), simulated=make(family, wrong_value(family, variant)))


def sizes(family: str, ppl: str | None = None) -> dict:
    return {**DEFAULT_SIZES, **SIZES.get(family, {}), **PPL_SIZES.get(ppl, {})}


# ------------------------------------------------------------------------------------------------ running

def check_files_state() -> bool:
    """Whether the check's and the adapters' sources match the commit (another change may be in progress)."""
    paths = ["src/bdmc/checks", "src/bdmc/ppl", "src/bdmc/contracts"]
    out = subprocess.run(["git", "-C", str(HERE.parent), "status", "--porcelain", "--", *paths],
                         capture_output=True, text=True).stdout.strip()
    return not out


def one_call(model, seed: int, family: str, ppl: str | None = None):
    from bdmc.checks.simulator_density import simulator_density

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return simulator_density(jax.random.key(seed), model, level=LEVEL, **sizes(family, ppl))


def summarize(result) -> dict:
    t = result.table
    smallest = t.loc[t["p_value"].idxmin()] if len(t) else None
    fired = result.fired
    return {"verdict": result.verdict, "num_tests": int(len(t)),
            "min_p": None if smallest is None else float(smallest["p_value"]),
            "min_p_test": None if smallest is None else f"{smallest['part']}: {smallest['test']} ({smallest['where']})",
            "fired": [f"{r.part}: {r.test} ({r.where})" for r in fired.itertuples()][:10],
            "num_fired": int(len(fired)),
            "not_checked": [f"{what}: {why}" for what, why in result.not_checked],
            "likelihood_tests": int((t["part"] == "likelihood").sum())}


def run(path: Path, ppls, families, seeds: int, controls: int) -> None:
    sys.path.insert(0, str(HERE))
    from harness.store import append_row, load_rows, tree_state

    commit, clean = tree_state()
    check_clean = check_files_state()
    done = {(r["ppl"], r["family"], r["variant"], r["seed"]) for r in load_rows(path)}
    for ppl in ppls:
        for family in families:
            for variant, count in zip(VARIANTS, (seeds, controls, controls), strict=False):
                todo = [s for s in range(count) if (ppl, family, variant, s) not in done]
                if not todo:
                    continue
                base = {"ppl": ppl, "family": family, "variant": variant, "level": LEVEL, **sizes(family, ppl),
                        "wrong": None if variant == "correct" else wrong_text(family, variant), "commit": commit,
                        "clean_tree": clean, "check_files_clean": check_clean}
                began = time.perf_counter()
                try:
                    model = build(ppl, family, variant)
                except Exception as err:  # noqa: BLE001  a refusal is a result: recorded, not hidden
                    append_row(path, {**base, "seed": todo[0], "verdict": "refused",
                                      "error": f"{type(err).__name__}: {err}"[:2000],
                                      "seconds": time.perf_counter() - began, "time": time.time(),
                                      "load": os.getloadavg()[0]})
                    print(f"{ppl:8s} {family:22s} {variant:10s}: refused: {err}", flush=True)
                    continue
                build_seconds = time.perf_counter() - began
                for seed in todo:
                    load, began = os.getloadavg(), time.perf_counter()
                    try:
                        row = summarize(one_call(model, seed, family, ppl))
                    except Exception as err:  # noqa: BLE001
                        row = {"verdict": "error", "error": f"{type(err).__name__}: {err}"[:2000],
                               "traceback": traceback.format_exc()[-3000:]}
                    row = {**base, "seed": seed, **row, "seconds": time.perf_counter() - began,
                           "build_seconds": build_seconds, "time": time.time(), "load": list(load)}
                    append_row(path, row)
                    print(f"{ppl:8s} {family:22s} {variant:10s} seed {seed:3d}: {row['verdict']:12s} "
                          f"min p {_fmt(row.get('min_p'))} ({row.get('min_p_test')})  "
                          f"{row['seconds']:.2f}s", flush=True)


def _fmt(p) -> str:
    return "-" if p is None else f"{p:.2g}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=200, help="seeds of each correct program")
    parser.add_argument("--controls", type=int, default=50, help="seeds of each wrong simulator")
    parser.add_argument("--quick", action="store_true", help="3 correct seeds and 2 controls per cell")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--families", default=",".join(FAMILIES), help=f"comma-separated, of {', '.join(FAMILIES)}")
    parser.add_argument("--ppls", default=",".join(PPLS), help="comma-separated, of numpyro, pymc, stan")
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    from harness.pages import write_folder

    if args.render:
        write_folder("simulator_density_discrete")
        return
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    ppls = [p.strip() for p in args.ppls.split(",") if p.strip()]
    for name, given, known in (("family", families, FAMILIES), ("PPL", ppls, PPLS)):
        unknown = sorted(set(given) - set(known))
        if unknown:
            parser.error(f"unknown {name} {unknown}; choose from {', '.join(known)}")
    seeds, controls = (3, 2) if args.quick else (args.seeds, args.controls)
    sys.path.insert(0, str(HERE))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "rows.jsonl"
    import bdmc

    bdmc.enable_x64()
    run(path, ppls, families, seeds, controls)
    write_folder("simulator_density_discrete", written_to=args.out)  # renders the pages (a trial --out: none)
    if (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


if __name__ == "__main__":
    main()
