"""The figures of an evaluation directory written by :func:`bdmc.experiments.generative.run_generative`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..plotting.generative import (
    plot_ais_curve,
    plot_gap_curve,
    plot_image_grid,
    plot_posterior_samples,
    plot_rate_distortion,
    plot_sigma_sweep,
)
from .generative import gap_curve_table, rate_distortion_table
from .generative_store import curve_table, load_rows


def sigma_table(rows) -> pd.DataFrame:
    """The sigma sweeps of the rows: one line per model and sigma."""
    lines = [{"model": r["model"], "sigma": s, "mean": m, "stderr": e}
             for r in rows if r["estimator"] == "sigma"
             for s, m, e in zip(r["sigmas"], r["means"], r["stderrs"], strict=False)]
    return pd.DataFrame(lines, columns=["model", "sigma", "mean", "stderr"])


def write_figures(out, *, dpi: int = 110) -> list[Path]:
    """Draw every figure the rows and saved arrays of ``out`` allow, into ``out/figures``; return the files.

    ``ais_curve.png`` (log-likelihood against T), ``sigma_sweep.png``, ``samples_<model>.png`` (16 decoder
    means), ``rate_distortion_<model>.png`` (when the curves were estimated), ``bdmc_gap_curve.png`` (when the gap
    curve was run) and ``posterior_<model>.png`` (test
    images beside f(z) at the final z of a few AIS chains, at the largest T evaluated).
    """
    out = Path(out)
    settings, rows = load_rows(out)
    shape = settings["image_shape"]
    folder = out / "figures"
    folder.mkdir(exist_ok=True)
    written = []

    def save(fig, name):
        path = folder / name
        fig.savefig(path, dpi=dpi)
        written.append(path)

    curve = curve_table(rows)
    if len(curve):
        save(plot_ais_curve(curve, title=f"{settings['data']}, {settings['architecture']}: forward AIS against T"),
             "ais_curve.png")
    gaps = gap_curve_table(rows)
    if len(gaps):
        images, chains = int(gaps["images"].max()), int(gaps["chains"].max())
        save(plot_gap_curve(gaps, title=f"{settings['data']}, {settings['architecture']}: BDMC on {images} simulated "
                                        f"images per model, {chains} chains each"), "bdmc_gap_curve.png")
    sweep = sigma_table(rows)
    if len(sweep):
        save(plot_sigma_sweep(sweep), "sigma_sweep.png")
    curves = rate_distortion_table(rows)
    for model, lines in curves.groupby("model", sort=False):
        title = f"{model.upper()}: rate-distortion from one AIS run (T={int(lines['steps'].iloc[0])}, test images)"
        save(plot_rate_distortion(lines, title=title), f"rate_distortion_{model}.png")
    arrays = out / "arrays"
    for model in dict.fromkeys(r["model"] for r in rows):
        samples = arrays / f"samples_{model}.npz"
        if samples.exists():
            with np.load(samples) as z:
                title = f"{model.upper()}: decoder means f(z), z ~ N(0, I)"
                save(plot_image_grid(z["samples"], shape=shape, title=title), f"samples_{model}.png")
        done = sorted((r["budget"] for r in rows if r["model"] == model and r["estimator"] == "ais"
                       and r["split"] == "test"), reverse=True)
        posterior = arrays / f"posterior_{model}_test_{done[0]}.npz" if done else None
        if posterior is not None and posterior.exists():
            with np.load(posterior) as z:
                save(plot_posterior_samples(z["images"], z["decoded"], shape=shape,
                                            title=f"{model.upper()}: AIS posterior samples (T={done[0]})"),
                     f"posterior_{model}.png")
    return written
