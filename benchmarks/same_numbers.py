"""Fingerprint of the numbers bdmc computes: every estimator on every built-in model, the sandwich and the bench.

Runs each registered estimator (the paper's eleven) on a small instance of every built-in model that supports
it, a sandwich and a bread table, and a two-estimator benchmark sweep, all with fixed keys, and writes every
resulting number as an exact hexadecimal float. Run it on two checkouts to show a refactoring changed no
number: the same key must give bit-identical results.

    python3 benchmarks/same_numbers.py --out /tmp/after.json
    git worktree add /tmp/before <commit>
    PYTHONPATH=/tmp/before/src python3 benchmarks/same_numbers.py --out /tmp/before.json
    python3 benchmarks/same_numbers.py --compare /tmp/before.json /tmp/after.json

The script adapts to the older call shape (``exact_latent`` positional, ``num_chains``) so that it can run on
a checkout from before the estimator protocol, or from before ``sandwich`` and ``bread`` took ``num_runs``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import tempfile
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)  # before bdmc: older checkouts did this at import

import bdmc  # noqa: E402
from bdmc import estimators as est  # noqa: E402
from bdmc.models import (  # noqa: E402
    BinaryAttributes,
    BinaryAttributesHyper,
    Clustering,
    ClusteringHyper,
    CorrelatedGaussianMean,
    FiniteMixture,
    GaussianMean,
    LinearRegression,
    LowRank,
    LowRankHyper,
)

MODELS = {
    "gaussian-mean": GaussianMean(n=6, dim=2),
    "correlated-gaussian": CorrelatedGaussianMean(),
    "linear-regression": LinearRegression(),
    "finite-mixture": FiniteMixture(),
    "clustering": Clustering(n=8, dim=3, k=3),
    "clustering-hyper": ClusteringHyper(n=8, dim=3, k=3),
    "low-rank": LowRank(n=8, d=5, k=2),
    "low-rank-hyper": LowRankHyper(n=8, d=5, k=2),
    "binary": BinaryAttributes(n=8, dim=5, k=3),
    "binary-hyper": BinaryAttributesHyper(n=8, dim=5, k=3),
}
# name -> (function, knob, knob value, needs the exact sample, what the model must have)
ESTIMATORS = {
    "ais": (est.ais, "num_steps", 20, False, ()),
    "rev-ais": (est.reverse_ais, "num_steps", 20, True, ()),
    "smc": (est.smc, "num_moves", 2, False, ()),
    "shme": (est.shme, "num_moves", 2, True, ()),
    "lw": (est.likelihood_weighting, "num_proposals", 50, False, ()),
    "hme": (est.harmonic_mean, "num_samples", 50, True, ()),
    "ns": (est.nested_sampling, "num_moves", 2, False, ()),
    "bic": (est.bic, "num_restarts", 2, False, ("bic_sample_params",)),
    "vb": (est.variational_bayes, "num_restarts", 2, False, ("vb_init",)),
    "cms": (est.chib_murray_salakhutdinov, "num_steps", 20, True, ("log_transition",)),
}
RUNS = 4


def _hex(values) -> list[str]:
    return [float(v).hex() for v in np.ravel(np.asarray(values, dtype=np.float64))]


def _call(fn, key, model, data, latent, knob, value, needs_exact):
    params = inspect.signature(fn).parameters
    kwargs = {knob: value}
    kwargs["num_runs" if "num_runs" in params else "num_chains"] = RUNS
    if "progress" in params:
        kwargs["progress"] = False
    if needs_exact:
        if "exact_latent" in params and params["exact_latent"].kind is inspect.Parameter.KEYWORD_ONLY:
            return fn(key, model, data, exact_latent=latent, **kwargs)
        return fn(key, model, data, latent, **kwargs)
    return fn(key, model, data, **kwargs)


def _supports(name, model) -> bool:
    needs = ESTIMATORS[name][4]
    if "log_transition" in needs:
        kernel = model.default_kernel() if hasattr(model, "default_kernel") else None
        return kernel is not None and hasattr(kernel, "log_transition") and hasattr(kernel, "reversed")
    return all(hasattr(model, n) for n in needs)


def fingerprint() -> dict:
    out = {}
    for mname, model in MODELS.items():
        data, latent = bdmc.simulate(jax.random.key(7), model)
        out[f"{mname}/data"] = _hex(jax.tree.leaves(data)[0])
        for ename, (fn, knob, value, needs_exact, _) in ESTIMATORS.items():
            if not _supports(ename, model):
                continue
            try:
                e = _call(fn, jax.random.key(11), model, data, latent, knob, value, needs_exact)
            except bdmc.BDMCError:  # e.g. a default kernel whose transition density is refused
                out[f"{mname}/{ename}"] = {"refused": True}
                continue
            out[f"{mname}/{ename}"] = {"value": _hex(e.value), "runs": _hex(e.runs), "n_evals": int(e.n_evals)}
    model = MODELS["linear-regression"]
    data, latent = bdmc.simulate(jax.random.key(3), model)
    runs = {"num_runs" if "num_runs" in inspect.signature(bdmc.sandwich).parameters else "num_chains": 8}
    res = bdmc.sandwich(jax.random.key(5), model, data, latent, steps=[10, 40], progress=False, **runs)
    out["sandwich"] = {c: _hex(res.table[c]) for c in ("value", "stderr", "mean_single", "gap_single")}
    br = bdmc.bread(jax.random.key(6), model, data, latent, steps=[10, 40], progress=False, **runs)
    out["bread"] = {c: _hex(br.table[c]) for c in br.table.columns
                    if np.issubdtype(br.table[c].dtype, np.floating) and "seconds" not in c}
    from bdmc.experiments import run_bench
    with tempfile.TemporaryDirectory() as tmp:
        table = run_bench(jax.random.key(9), MODELS["gaussian-mean"], out=tmp, estimators=["ais", "lw"],
                             knobs={"ais": [5, 10], "lw": [10]}, trials=3, truth_steps=200, truth_runs=4)
        out["bench"] = {c: _hex(table[c]) for c in ("mean", "rmse", "combined", "truth")}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the fingerprint here (JSON)")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two fingerprints")
    args = parser.parse_args()
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        print(f"{len(set(a) & set(b))} entries in both, {len(differ)} differ" + (f": {differ}" if differ else ""))
        sys.exit(1 if differ else 0)
    fp = fingerprint()
    with open(args.out, "w") as f:  # not harness.store: see tests/test_benchmark_provenance.py's ALLOWED
        json.dump(fp, f, indent=1, sort_keys=True)
    print(f"{len(fp)} entries written to {args.out}")


if __name__ == "__main__":
    main()
