"""How forward AIS scales: seconds per chain-step and peak memory as the data and the latent dimension grow.

Two models, each with its default kernel (``bdmc.forward_ais(..., kernel=None)``):

* ``linear-regression`` -- ``bdmc.models.LinearRegression(n=N)`` (cubic design, 5 latents); its default kernel
  is the exact two-block Gibbs sweep, whose cost per step is O(N p^2 + p^3).
* ``logistic`` -- a Bayesian logistic regression defined here: ``beta ~ N(0, I_D)``,
  ``y_i ~ Bernoulli(sigmoid(x_i . beta))`` with a fixed Gaussian design ``x_i ~ N(0, I_D / D)``; it ships no
  kernel, so the default is HMC (BlackJAX, its default step size and leapfrog steps), O(N D) per gradient.

The data sweep runs both models at N = 10^2 .. 10^5 (logistic at D = ``--logistic-dim``); the dimension
sweep runs the logistic model at D = 10, 100, 1000 with N = ``--dim-n``. Every configuration runs in a fresh
subprocess (this script with ``--one``): one cold call (compilation timed by the engine), then ``--repeats``
warm calls with new keys, and the process's peak resident memory (``ru_maxrss``) at the end. The memory
reported is that peak minus the peak of a baseline process that imported jax and bdmc, switched on float64
and ran one array operation (so the XLA runtime's own footprint is not counted). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import bdmc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import stamp, write_text  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms (also in every subprocess)

RESULTS = Path(__file__).resolve().parent / "results" / "scale"
MODELS = ("linear-regression", "logistic")


# ----------------------------------------------------------------------------------------------- model
@functools.lru_cache(maxsize=4)
def logistic_design(n: int, dim: int, seed: int) -> np.ndarray:
    """The fixed design of :class:`LogisticRegression`: rows ``N(0, I / dim)``, so logits are O(|beta|)."""
    return np.random.default_rng(seed).normal(scale=dim ** -0.5, size=(n, dim))


@dataclass(frozen=True)
class LogisticRegression:
    """Bayesian logistic regression with a standard normal prior on the ``dim`` coefficients.

    The design is a function of ``(n, dim, seed)``, so the model compares by value and bdmc's compile cache
    treats two equal instances as one.
    """

    n: int = 1000
    dim: int = 10
    seed: int = 0

    @property
    def design(self):
        return jnp.asarray(logistic_design(self.n, self.dim, self.seed))

    def sample_prior(self, key):
        return {"beta": jax.random.normal(key, (self.dim,))}

    def sample_data(self, key, latent):
        p = jax.nn.sigmoid(self.design @ latent["beta"])
        return jax.random.bernoulli(key, p).astype(p.dtype)

    def log_prior(self, latent):
        beta = latent["beta"]
        return -0.5 * beta @ beta - 0.5 * self.dim * jnp.log(2 * jnp.pi)

    def log_likelihood(self, latent, data):
        z = self.design @ latent["beta"]
        return data * jax.nn.log_sigmoid(z) + (1.0 - data) * jax.nn.log_sigmoid(-z)


def build(model: str, n: int, dim: int):
    """The model of one configuration."""
    if model == "linear-regression":
        return bdmc.models.LinearRegression(n=n)
    return LogisticRegression(n=n, dim=dim)


# ----------------------------------------------------------------------------------------- one process
def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (Linux reports ``ru_maxrss`` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def baseline() -> dict:
    """What a process that imported jax and bdmc and ran one array operation holds at its peak."""
    jax.block_until_ready(jnp.zeros(8) + 1.0)
    return {"peak_rss_mib": peak_rss_mib()}


def measure(cfg: dict) -> dict:
    """Time one configuration (cold call, then warm repeats) and report this process's peak memory."""
    model = build(cfg["model"], cfg["n"], cfg["dim"])
    data = jax.block_until_ready(bdmc.simulate(jax.random.key(0), model).data)
    before_ais = peak_rss_mib()  # model, data and the simulator's compilation, before any AIS
    # tune="off": the per-step cost of the engine, without the pilot a default HMC run would add (its
    # cost grows with N like a run's; benchmarks/fixed_cost.py and peers.py time it).
    call = lambda seed: bdmc.forward_ais(jax.random.key(seed), model, data, num_steps=cfg["steps"],  # noqa: E731
                                         num_runs=cfg["chains"], tune="off", progress=False)
    start = time.perf_counter()
    cold = jax.block_until_ready(call(1))
    cold_wall = time.perf_counter() - start
    warm = [jax.block_until_ready(call(2 + i)) for i in range(cfg["repeats"])]
    acceptance = np.asarray(cold.details.info.acceptance)
    transitions = int(acceptance.shape[0])  # T distributions, T - 1 transitions
    chain_steps = cfg["chains"] * transitions
    seconds = [float(e.seconds) for e in warm]
    return {**cfg, "kernel": cold.settings["kernel"],
            "latent_dim": int(sum(np.size(x) for x in jax.tree.leaves(model.sample_prior(jax.random.key(0))))),
            "transitions": transitions, "chain_steps": chain_steps,
            "compile_seconds": float(cold.compile_seconds), "cold_wall_seconds": cold_wall,
            "cold_run_seconds": float(cold.seconds), "warm_seconds_all": seconds,
            "warm_compiled": [bool(e.compiled) for e in warm], "warm_seconds": statistics.median(seconds),
            "seconds_per_chain_step": statistics.median(seconds) / chain_steps,
            "evals": int(cold.n_evals), "evals_per_chain_step": cold.n_evals / chain_steps,
            "acceptance_mean": float(acceptance.mean()), "log_z": float(cold.value),
            "data_mib": sum(np.asarray(x).nbytes for x in jax.tree.leaves(data)) / 2**20,
            "peak_rss_before_ais_mib": before_ais, "peak_rss_mib": peak_rss_mib()}


def in_subprocess(arg: str) -> dict:
    """Run this script with ``--one ARG`` (or ``--baseline``) in a fresh interpreter; its JSON reply."""
    argv = [sys.executable, __file__] + (["--baseline"] if arg == "baseline" else ["--one", arg])
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"configuration {arg} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------------------------- sweep
def configurations(args) -> list[dict]:
    """Data sweep for both models, then the dimension sweep of the logistic model (no repeated cell)."""
    common = {"steps": args.steps, "chains": args.chains, "repeats": args.repeats}
    cells = [{"sweep": "N", "model": m, "n": n, "dim": args.logistic_dim if m == "logistic" else 4}
             for m in MODELS for n in args.ns]
    cells += [{"sweep": "D", "model": "logistic", "n": args.dim_n, "dim": d} for d in args.dims]
    return [{**c, **common} for c in cells]


def loglog_slope(x, y) -> float | None:
    """Least-squares slope of log y on log x (None with fewer than two points)."""
    if len(x) < 2:
        return None
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def slopes(rows: list[dict]) -> dict:
    """Slopes of log(seconds per chain-step) and log(memory) against log N (per model) and log D."""
    out = {}
    for model in MODELS:
        sweep = sorted((r for r in rows if r["sweep"] == "N" and r["model"] == model), key=lambda r: r["n"])
        n = [r["n"] for r in sweep]
        sec = [r["seconds_per_chain_step"] for r in sweep]
        out[f"{model} vs N"] = {"all": loglog_slope(n, sec), "largest 3": loglog_slope(n[-3:], sec[-3:]),
                                "largest 2": loglog_slope(n[-2:], sec[-2:]), "range": [min(n), max(n)] if n else None}
    dims = sorted((r for r in rows if r["sweep"] == "D"), key=lambda r: r["dim"])
    d, sec = [r["dim"] for r in dims], [r["seconds_per_chain_step"] for r in dims]
    out["logistic vs D"] = {"all": loglog_slope(d, sec), "largest 2": loglog_slope(d[-2:], sec[-2:]),
                            "range": [min(d), max(d)] if d else None}
    return out


def source_info() -> dict:
    """Which bdmc ran: its path, the commit of its checkout and whether its src/ had uncommitted edits."""
    root = Path(bdmc.__file__).resolve().parents[2]
    git = lambda *a: subprocess.run(["git", "-C", str(root), *a], capture_output=True, text=True).stdout.strip()  # noqa: E731
    return {"bdmc_path": str(Path(bdmc.__file__).parent), "commit": git("rev-parse", "--short", "HEAD"),
            "modified_in_src": git("status", "--porcelain", "--", "src").splitlines()}


def machine_info() -> dict:
    import blackjax

    return {"cpu_count": os.cpu_count(), "cpu_affinity": len(os.sched_getaffinity(0)),
            "processor": platform.processor() or platform.machine(), "platform": platform.platform(),
            "python": platform.python_version(), "jax": jax.__version__, "blackjax": blackjax.__version__,
            "numpy": np.__version__, "bdmc": bdmc.__version__, "devices": str(jax.devices())}


def plot(path: Path, rows: list[dict]) -> None:
    """Seconds per chain-step against N and against D (log-log), and memory against both."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    for model, marker in zip(MODELS, "os", strict=False):
        sweep = sorted((r for r in rows if r["sweep"] == "N" and r["model"] == model), key=lambda r: r["n"])
        if not sweep:
            continue
        n = np.array([r["n"] for r in sweep], float)
        sec = np.array([r["seconds_per_chain_step"] for r in sweep])
        label = f"{model} ({sweep[0]['kernel']}, D={sweep[0]['latent_dim']})"
        axes[0].loglog(n, sec, marker=marker, label=label)
        axes[2].semilogx(n, [r["memory_mib"] for r in sweep], marker=marker, label=f"{model} vs N")
    n = np.array(sorted({r["n"] for r in rows if r["sweep"] == "N"}), float)
    if n.size:  # a line of slope 1 through the most expensive point at the largest N
        top = max(r["seconds_per_chain_step"] for r in rows if r["sweep"] == "N" and r["n"] == n.max())
        axes[0].loglog(n, top * n / n.max(), "k:", label="slope 1 (linear)")
    dims = sorted((r for r in rows if r["sweep"] == "D"), key=lambda r: r["dim"])
    if dims:
        d = np.array([r["dim"] for r in dims], float)
        axes[1].loglog(d, [r["seconds_per_chain_step"] for r in dims], marker="o",
                       label=f"logistic, N={dims[0]['n']:,}")
        axes[1].loglog(d, dims[-1]["seconds_per_chain_step"] * d / d.max(), "k:", label="slope 1 (linear)")
        axes[2].semilogx(d, [r["memory_mib"] for r in dims], marker="^", label="logistic vs D")
    axes[0].set(xlabel="data cases N", ylabel="seconds per chain-step (warm)", title="cost vs N")
    axes[1].set(xlabel="latent dimension D", ylabel="seconds per chain-step (warm)", title="cost vs D")
    axes[2].set(xlabel="N or D", ylabel="peak memory above baseline (MiB)", title="memory")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def parse_ints(text: str) -> list[int]:
    return [int(float(v)) for v in text.split(",") if v.strip()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns", type=parse_ints, default=[100, 1000, 10000, 100000], help="data sizes N")
    ap.add_argument("--dims", type=parse_ints, default=[10, 100, 1000], help="latent dimensions D (logistic)")
    ap.add_argument("--dim-n", type=int, default=500, help="N of the dimension sweep (default 500)")
    ap.add_argument("--logistic-dim", type=int, default=10, help="D of the logistic data sweep (default 10)")
    ap.add_argument("--chains", type=int, default=16, help="forward AIS chains, num_runs (default 16)")
    ap.add_argument("--steps", type=int, default=50, help="distributions T on the path (default 50)")
    ap.add_argument("--repeats", type=int, default=2, help="warm calls per configuration (default 2)")
    ap.add_argument("--quick", action="store_true", help="smoke run: N up to 10^3, D up to 100, T = 20")
    ap.add_argument("--out", type=Path, default=RESULTS,
                    help="directory for scale.{json,png} (scale.md is rendered in benchmarks/results/scale only)")
    ap.add_argument("--render", "--report", dest="report", action="store_true",
                    help="only re-render the page (benchmarks/results/scale) and the figure from the JSON in --out")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a configuration as JSON: run it here, print JSON
    ap.add_argument("--baseline", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.baseline or args.one:
        print(json.dumps(baseline() if args.baseline else measure(json.loads(args.one))))
        return
    stem = args.out / ("scale_quick" if args.quick else "scale")  # smoke runs never overwrite
    if args.report:
        write_outputs(stem, json.loads(stem.with_suffix(".json").read_text()))
        return
    if args.quick:
        args.ns, args.dims, args.dim_n, args.steps, args.repeats = [100, 1000], [10, 100], 200, 20, 1
    run_sweep(args, stem)


def write_outputs(stem: Path, out: dict) -> None:
    """JSON and figure of one sweep, and the folder's pages rendered from the JSON."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    write_text(stem.with_suffix(".json"), json.dumps(out, indent=2))
    plot(stem.with_suffix(".png"), out["results"])
    if stem.name == "scale":  # a smoke run's scale_quick.json has no page
        write_folder("scale", written_to=stem.parent)


def run_sweep(args, stem: Path) -> None:
    from rich.console import Console

    console, start = Console(width=None if sys.stdout.isatty() else 200), time.perf_counter()
    load_start = os.getloadavg()
    base = [in_subprocess("baseline")["peak_rss_mib"] for _ in range(2)]
    base_mib = min(base)
    console.print(f"baseline process peak: {base_mib:.1f} MiB (of {', '.join(f'{b:.1f}' for b in base)})")
    rows = []
    for cfg in configurations(args):
        load = os.getloadavg()
        with console.status(f"{cfg['model']} N={cfg['n']:,} D={cfg['dim']} ..."):
            row = in_subprocess(json.dumps(cfg))
        row.update(load_before=list(load), load_after=list(os.getloadavg()),
                   memory_mib=row["peak_rss_mib"] - base_mib, memory_ais_mib=row["peak_rss_mib"] - row[
                       "peak_rss_before_ais_mib"])
        rows.append(row)
        console.print(f"{cfg['model']} N={cfg['n']:,} D={cfg['dim']}: {row['seconds_per_chain_step']:.3g} s per "
                      f"chain-step, {row['compile_seconds']:.2f} s compile, {row['memory_mib']:.1f} MiB")
    out = {"settings": {k: v for k, v in vars(args).items() if k not in ("out", "one", "baseline", "report")},
           "baseline_mib": base_mib, "baseline_all_mib": base, "results": rows, "slopes": slopes(rows),
           "load_start": list(load_start), "load_end": list(os.getloadavg()),
           "wall_seconds": time.perf_counter() - start, "machine": machine_info(), "source": source_info(),
           "provenance": stamp()}
    write_outputs(stem, out)
    console.print(f"wrote {stem.with_suffix('.json')} and {stem.with_suffix('.png')} (page: scale.md)")


if __name__ == "__main__":
    main()
