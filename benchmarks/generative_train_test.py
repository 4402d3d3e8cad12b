"""Train against test log-likelihood of generative.sh's six decoders, on 100 images per split (Wu et al. 2017, Table 2).

What it measures. Table 2 of ``benchmarks/results/generative/README.md`` evaluates 20 training and 20 test images
per model, too few to resolve a train-test difference (the images' log-likelihoods spread over hundreds of nats).
Here each of generative.sh's models (VAE-, GAN- and GMMN-10 on the ``small10`` decoder, the same on ``small50``;
generative.sh's training keys and budgets, so the same networks) is evaluated by forward AIS from the prior on
the first ``--images`` training images (of the 4,000 it was trained on) and the first ``--images`` test images,
at the sigma its generative.sh run chose (read from that run's ``rows.jsonl``), with the AIS key of that run's
unit (``unit_key(0, kind, split, "ais", T)``). One JSON row per (model, split, T, chains, images) is appended to
``benchmarks/results/generative/train_test/rows.jsonl`` as it finishes (atomic, stamped with the commit,
clean-tree flag, date, load and machine); a rerun skips the finished ones. ``table.md``, ``table.csv`` and
``figures/train_test.png`` are rebuilt from the rows: per model, train minus test (two independent samples of
images: Welch's standard error) and, on the first 20 images of each split, the paired difference from Table 2's
own AIS row (16 chains), which shows what the chain count here changes.

Networks are trained once (:func:`bdmc.generative.store.load_or_train`), shared with the ablation's directory
(``ablation/models/``, git-ignored; the same names for the same trainings).

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" taskset -c 1 \\
        python benchmarks/generative_train_test.py                     # all six, 100 images, T = 1000, 4 chains
    python benchmarks/generative_train_test.py --models vae10,gan10 --chains 16
    python benchmarks/generative_train_test.py --table-only

Computes in float64, as ``bdmc generative`` does by default.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generative_ablation import PAPER, RESULTS, SEED, ais_row, make_cell, train_model  # noqa: E402

OUT = RESULTS / "train_test"
MODELS_DIR = RESULTS / "ablation" / "models"
# name -> (kind, architecture, the generative.sh run holding its sigma and Table 2 rows)
MODELS = {"vae10": ("vae", "small10", "run"), "gan10": ("gan", "small10", "run-gan"),
          "gmmn10": ("gmmn", "small10", "run"), "vae50": ("vae", "small50", "run-vae50"),
          "gan50": ("gan", "small50", "run-50"), "gmmn50": ("gmmn", "small50", "run-50")}
TABLE_IMAGES = 20
MAX_STORED_DIFF = 0.01  # largest |pixel difference| from the run's stored samples accepted as the same training


def run_rows(run: str) -> list[dict]:
    """The rows of one generative.sh run directory."""
    from harness.store import load_rows

    return load_rows(RESULTS / run / "rows.jsonl")


def stored_sigma(kind: str, run: str) -> float:
    """The sigma the run chose for ``kind`` (its ``sigma`` row's best)."""
    found = [r for r in run_rows(run) if r["model"] == kind and r["estimator"] == "sigma"]
    if not found:
        raise LookupError(f"{run}/rows.jsonl has no sigma row for {kind}")
    return float(found[-1]["best"])


def table_row(kind: str, run: str, split: str, steps: int) -> dict | None:
    """Table 2's AIS row of ``kind`` on ``split`` at T = ``steps`` in the run, if stored."""
    found = [r for r in run_rows(run) if r["model"] == kind and r["estimator"] == "ais" and r["split"] == split
             and r["budget"] == steps]
    return found[-1] if found else None


def run_model(name: str, splits, rows_path: Path, *, images: int, steps: int, chains: int, log=print) -> None:
    """Evaluate one model on both splits, appending each row as it finishes."""
    from harness.store import append_row, load_rows

    from bdmc.experiments.generative import unit_key

    kind, architecture, run = MODELS[name]
    done = {(r["model"], r["split"], r["steps"], r["chains"], r["images"]) for r in load_rows(rows_path)}
    if all((name, split, steps, chains, images) in done for split in ("train", "test")):
        return
    trained, train = train_model(make_cell("baseline", name, kind, architecture=architecture), splits,
                                 models_dir=MODELS_DIR, log=log)
    stored = train["stored_samples"]
    # Retraining from the same key, data and settings reproduces GAN and GMMN decoders to ~1e-12 and VAE-10's to
    # ~2e-5; VAE-50's drifts by ~3e-3 per pixel over 100 epochs (the sampled ELBO amplifies rounding differences
    # of another XLA thread setting). Beyond MAX_STORED_DIFF the network is refused as not the run's.
    if stored is None or stored["max_abs_diff"] > MAX_STORED_DIFF:
        raise RuntimeError(f"{name}: the retrained network does not draw {run}'s stored samples ({stored}); "
                           "its rows would not be generative.sh's model")
    sigma = stored_sigma(kind, run)
    chosen = {"train": splits.train[:4000][:images], "test": splits.test[:images]}
    for split in ("train", "test"):
        if (name, split, steps, chains, images) in done:
            continue
        log(f"{name}: AIS on {images} {split} images, T = {steps}, {chains} chains, sigma {sigma}")
        row = ais_row(unit_key(SEED, kind, split, "ais", steps), trained, chosen[split], sigma=sigma, steps=steps,
                      chains=chains)
        append_row(rows_path, {"model": name, "kind": kind, "architecture": architecture, "run": run,
                               "split": split, "stored_samples": stored, **row})
        log(f"{name} {split}: {row['mean']:.1f} +- {row['stderr']:.1f} nats ({row['seconds']:.0f} s)")


# ------------------------------------------------------------------------------------------ table
def welch(a, b) -> tuple[float, float]:
    """Difference of means ``a - b`` of two independent samples and its (Welch) standard error."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(a.mean() - b.mean()), float(np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size))


def summary(rows: list[dict]) -> list[dict]:
    """One line per (model, T, chains, images) with both splits: means, train minus test, the check on Table 2."""
    found = {}
    for row in rows:
        found[row["model"], row["split"], row["steps"], row["chains"], row["images"]] = row
    lines = []
    order = list(MODELS)
    for (name, split, steps, chains, images), test in sorted(found.items(),
                                                             key=lambda kv: (order.index(kv[0][0]), kv[0][2:])):
        train = found.get((name, "train", steps, chains, images))
        if split != "test" or train is None:
            continue
        kind, architecture, run = MODELS[name]
        diff, se = welch(train["per_image"], test["per_image"])
        line = {"model": name, "kind": kind, "architecture": architecture, "run": run, "sigma": test["sigma"],
                "steps": steps, "chains": chains, "images": images,
                "train": train["mean"], "train_se": train["stderr"], "test": test["mean"], "test_se": test["stderr"],
                "train_minus_test": diff, "train_minus_test_se": se, "z": diff / se,
                "paper_test": PAPER[kind, 10 if architecture.endswith("10") else 50],
                "seconds": train["seconds"] + test["seconds"],
                "stored_diff": (test.get("stored_samples") or {}).get("max_abs_diff"),
                "commit": f"{test.get('commit', '?')}{'' if test.get('clean_tree') else ' (dirty)'}",
                "load": test.get("load"), "date": test.get("date")}
        for s, row in (("train", train), ("test", test)):
            stored = table_row(kind, run, s, steps)
            if stored is not None and images >= TABLE_IMAGES:
                d = np.asarray(row["per_image"][:TABLE_IMAGES]) - np.asarray(stored["per_image"][:TABLE_IMAGES])
                line[f"vs_table_{s}"] = float(d.mean())
                line[f"vs_table_{s}_se"] = float(d.std(ddof=1) / np.sqrt(d.size))
                line["table_chains"] = stored.get("chains")
        lines.append(line)
    return lines


def write_outputs(rows: list[dict], out: Path) -> list[dict]:
    """Rebuild ``table.csv`` and ``figures/train_test.png`` from the rows (``table.md`` is rendered from them)."""
    import pandas as pd
    from harness.store import write_text

    lines = summary(rows)
    write_text(out / "table.csv", pd.DataFrame(lines).to_csv(index=False))
    plot(rows, out / "figures" / "train_test.png")
    return lines


def plot(rows: list[dict], path: Path) -> None:
    """Per model, each image's AIS log-likelihood on the training and the test split (a strip per split)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in MODELS if any(r["model"] == n for r in rows)]
    if not names:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(1.6 * len(names) + 2, 4.5))
    rng = np.random.default_rng(0)
    for i, name in enumerate(names):
        for offset, split, color in ((-0.18, "train", "tab:blue"), (0.18, "test", "tab:orange")):
            found = [r for r in rows if r["model"] == name and r["split"] == split]
            if not found:
                continue
            values = np.asarray(found[-1]["per_image"])
            ax.scatter(i + offset + rng.uniform(-0.08, 0.08, values.size), values, s=6, color=color, alpha=0.6,
                       label=split if i == 0 else None)
            ax.errorbar(i + offset, values.mean(), yerr=2 * values.std(ddof=1) / np.sqrt(values.size), fmt="_",
                        color="black", capsize=4, markersize=14)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("AIS log-likelihood per image (nats)")
    ax.set_title("Training against test images (mean +- 2 se in black)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------------------ main
def parse(argv=None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, among: {', '.join(MODELS)}")
    parser.add_argument("--images", type=int, default=100, help="images per split (the first of each; 100)")
    parser.add_argument("--steps", type=int, default=1000, help="AIS length T (1000, Table 2's)")
    parser.add_argument("--chains", type=int, default=4, help="AIS chains per image (4)")
    parser.add_argument("--out", type=Path, default=OUT, help="results directory (benchmarks/results/generative/"
                        "train_test)")
    parser.add_argument("--table-only", action="store_true", help="rebuild the table and figure and stop")
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in args.models if m not in MODELS]
    if unknown or not args.models:
        parser.error(f"unknown model(s) {unknown or '(none)'}; choose among: {', '.join(MODELS)}")
    if args.images < 2 or args.steps < 2 or args.chains < 1:
        parser.error("--images and --steps must be at least 2, --chains at least 1")
    return args


def main(argv=None) -> None:
    """Evaluate (or resume) the chosen models, rebuilding the table after each."""
    args = parse(argv)
    from harness.pages import write_folder

    if args.render:
        write_folder("generative")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "rows.jsonl"
    from harness.store import load_rows

    import bdmc

    bdmc.enable_x64()  # float64, as bdmc generative

    if not args.table_only:
        from bdmc.generative.data import load_mnist

        splits = load_mnist(seed=SEED)
        for name in args.models:
            run_model(name, splits, rows_path, images=args.images, steps=args.steps, chains=args.chains,
                      log=lambda message: print(message, flush=True))
            write_outputs(load_rows(rows_path), args.out)
    write_outputs(load_rows(rows_path), args.out)
    if args.out.resolve() == OUT.resolve():  # the folder's pages include this table.md (a trial --out: none)
        write_folder("generative")
        print(f"rendered {args.out / 'table.md'}")


if __name__ == "__main__":
    main()
