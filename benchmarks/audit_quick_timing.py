"""The wall time of ``bdmc audit --quick`` on eight schools under each PPL's own sampler, as a user meets it.

Each run is the command line in a fresh interpreter (``python -m bdmc.cli``-equivalent ``bdmc`` entry), so the
time includes importing bdmc and the PPL, building the program and compiling every check: the number a user
waits for. Two modes, interleaved round by round (the PPLs' order rotating) so that load hits all alike:

- ``compile``: ``bdmc --no-compile-cache audit ...``: every JAX program compiled in the run (what a first audit of
  a program costs; a Stan program's C++ build, cached by pystan and bdmc once per program text, is not redone:
  the warm-up run below builds it);
- ``cached``: ``bdmc audit ...`` with the compilation cache a previous run filled (a user's next audit of the
  same program and sizes).

WebPPL's audit, whose every density evaluation is a run of the program in node for a batch of chains, is timed
under each of ``--webppl-samplers`` (by default ``auto``, which resolves to bdmc's HMC, and ``nuts``) in every
round and mode; each row records the sampler asked for and the one the audit ran.

The programs are eight schools (non-centred: mu ~ N(0, 5), tau ~ HalfNormal(5), z_j ~ N(0, 1),
y_j ~ N(mu + tau z_j, sigma_j)) written as a user writes them, files on disk: a NumPyro function, a PyMC builder,
a Stan program with a NumPy simulator, and a WebPPL program (tau ~ Exponential(1/5): WebPPL 0.9 has no
half-normal). Every row (one audit) is appended to ``results/audit_quick_timing/rows.jsonl`` as it finishes, with
its verdict, exit code, seconds, the commit, clean tree, date, load and machine; a rerun adds rounds.

    python benchmarks/audit_quick_timing.py --rounds 2                 # about 40 minutes on 2 cores
    python benchmarks/audit_quick_timing.py --rounds 1 --ppls webppl   # about 15 minutes
    python benchmarks/audit_quick_timing.py --render
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
from calibration_programs import STAN as STAN_PROGRAMS
from harness.pages import write_folder
from harness.store import append_row, write_text

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "audit_quick_timing"
PPLS = ("numpyro", "pymc", "stan", "webppl")
SIGMA = [15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0]

NUMPYRO = textwrap.dedent("""
    import numpyro
    import numpyro.distributions as dist


    def schools(sigma, y=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", dist.HalfNormal(5.0))
        with numpyro.plate("schools", sigma.shape[0]):
            z = numpyro.sample("z", dist.Normal(0.0, 1.0))
            numpyro.sample("y", dist.Normal(mu + tau * z, sigma), obs=y)
""")

PYMC = textwrap.dedent("""
    import numpy as np
    import pymc as pm


    def schools(sigma):
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 5.0)
            tau = pm.HalfNormal("tau", 5.0)
            z = pm.Normal("z", 0.0, 1.0, shape=len(sigma))
            pm.Normal("y", mu + tau * z, sigma, observed=np.zeros(len(sigma)))
        return model
""")

STAN = STAN_PROGRAMS["hierarchical"]  # the calibration's eight schools, as a user writes it in Stan

STAN_SIMULATOR = textwrap.dedent(f"""
    import numpy as np

    SIGMA = np.array({SIGMA})


    def simulate(rng, params=None):
        p = dict(params or {{}})
        p.setdefault("mu", float(5.0 * rng.normal()))
        p.setdefault("tau", float(abs(5.0 * rng.normal())))
        p.setdefault("z", rng.normal(size=len(SIGMA)))
        return p, {{"y": p["mu"] + p["tau"] * np.asarray(p["z"]) + SIGMA * rng.normal(size=len(SIGMA))}}
""")

WEBPPL = textwrap.dedent("""
    var model = function(data) {
      var mu = sample(Gaussian({mu: 0, sigma: 5}));
      var tau = sample(Exponential({a: 0.2}));
      var z = repeat(data.sigma.length, function() { return sample(Gaussian({mu: 0, sigma: 1})); });
      mapIndexed(function(j, s) { observe(Gaussian({mu: mu + tau * z[j], sigma: s}), data.y[j]); }, data.sigma);
    };
    model
""")


def write_programs(folder: Path) -> dict[str, list[str]]:
    """The program files, and each PPL's ``bdmc audit`` arguments naming them."""
    sigma = np.array(SIGMA)
    write_text(folder / "schools.py", NUMPYRO)
    write_text(folder / "schools_pymc.py", PYMC)
    write_text(folder / "schools.stan", STAN)
    write_text(folder / "sim.py", STAN_SIMULATOR)
    write_text(folder / "schools.wppl", WEBPPL)
    np.savez(folder / "sigma.npz", sigma=sigma)
    np.savez(folder / "stan.npz", J=len(sigma), sigma=sigma)
    np.savez(folder / "webppl.npz", sigma=sigma, y=np.zeros(len(sigma)))  # y fixes the shape (not real data)
    return {
        "numpyro": ["--numpyro", f"{folder}/schools.py:schools", "--data", f"{folder}/sigma.npz"],
        "pymc": ["--pymc", f"{folder}/schools_pymc.py:schools", "--data", f"{folder}/sigma.npz"],
        "stan": ["--stan", f"{folder}/schools.stan", "--simulator", f"{folder}/sim.py:simulate", "--data",
                 f"{folder}/stan.npz"],
        "webppl": ["--webppl", f"{folder}/schools.wppl", "--data", f"{folder}/webppl.npz"],
    }


def bdmc_command() -> list[str]:
    exe = shutil.which("bdmc")
    return [exe] if exe else [sys.executable, "-c", "from bdmc.cli import main; main()"]


def run_one(ppl: str, mode: str, args: list[str], folder: Path, round_: int, sampler: str = "auto") -> dict:
    out = folder / f"out-{ppl}-{mode}-{sampler}-{round_}"
    root = ["--no-compile-cache"] if mode == "compile" else []
    command = bdmc_command() + root + ["audit", *args, "--observed", "y", "--quick", "--seed", str(round_),
                                       "--sampler", sampler, "--out", str(out)]
    load_before = os.getloadavg()[0]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    verdict = None
    if (out / "results.json").is_file():
        verdict = json.loads((out / "results.json").read_text()).get("verdict")
    sampler_run = None
    if (out / "results.json").is_file():
        sampler_run = json.loads((out / "results.json").read_text()).get("sampler")
    row = {"ppl": ppl, "sampler": sampler, "sampler_run": sampler_run, "mode": mode, "round": round_,
           "seconds": seconds, "exit_code": done.returncode,
           "verdict": verdict, "load_before": load_before, "load_after": os.getloadavg()[0],
           "error": done.stderr.strip().splitlines()[-1][:300] if done.returncode else None}
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ppls", nargs="+", choices=PPLS, default=list(PPLS))
    parser.add_argument("--webppl-samplers", nargs="+", default=["auto", "nuts"],
                        help="the --sampler values WebPPL's audit is timed under, each in every round and mode")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    opts = parser.parse_args(argv)
    if opts.render:
        write_folder("audit_quick_timing")
        return
    rows_path = opts.out / "rows.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        programs = write_programs(folder)
        for ppl in opts.ppls:  # warm-up: builds Stan's program and fills the compilation cache
            row = run_one(ppl, "warmup", programs[ppl], folder, 0)
            append_row(rows_path, row)  # stamped with its provenance
            print(f"{ppl:8} warmup   {row['seconds']:6.1f} s  {row['verdict']}  load {row['load_before']:.2f}",
                  flush=True)
        for r in range(1, opts.rounds + 1):
            order = opts.ppls[r % len(opts.ppls):] + opts.ppls[:r % len(opts.ppls)]
            for mode in (("compile", "cached") if r % 2 else ("cached", "compile")):
                for ppl in order:
                    for sampler in opts.webppl_samplers if ppl == "webppl" else ["auto"]:
                        row = run_one(ppl, mode, programs[ppl], folder, r, sampler)
                        append_row(rows_path, row)
                        print(f"{ppl:8} {sampler:5} {mode:8} {row['seconds']:6.1f} s  {row['verdict']}  exit "
                              f"{row['exit_code']}  load {row['load_before']:.2f}"
                              + (f"  {row['error']}" if row["error"] else ""), flush=True)
    write_folder("audit_quick_timing", written_to=opts.out)  # renders table.md (a trial --out elsewhere: none)
    if (opts.out / "table.md").exists():
        print((opts.out / "table.md").read_text())


if __name__ == "__main__":
    main()
