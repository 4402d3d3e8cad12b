"""Numbers quoted by README.md, recomputed from the run directories' rows.jsonl, table2.csv and comparisons.csv
(tests/test_results_pages.py checks them).

Models are named by where their rows are: ``vae`` (VAE-10, ``run/``), ``gmmn`` (GMMN-10, ``run/``), ``old`` (the
collapsed GAN-10, ``run/``), ``gan`` (the retrained GAN-10, ``run-gan/``), ``eng`` (the retrained GAN-10 rerun on the
annealing engine, ``run-gan-engine/``), ``vae50`` (VAE-50, ``run-vae50/``), ``gan50`` and ``gmmn50`` (GAN-50 and
GMMN-50, ``run-50/``). ``<model>_<column>`` is a cell of the
run's table2.csv; paired differences are over the same 20 images (per_image lists in rows.jsonl).
"""

import csv
import json
import math
import statistics
from pathlib import Path

MODELS = {"vae": ("run", "vae"), "gmmn": ("run", "gmmn"), "old": ("run", "gan"), "gan": ("run-gan", "gan"),
          "eng": ("run-gan-engine", "gan"), "vae50": ("run-vae50", "vae"), "gan50": ("run-50", "gan"),
          "gmmn50": ("run-50", "gmmn")}
TABLE = ("sigma", "ais_train", "ais_train_se", "ais_test", "ais_test_se", "kde_train", "kde_train_se", "kde_test",
         "kde_test_se", "iwae_train", "iwae_train_se", "iwae_test", "iwae_test_se", "bdmc_gap", "bdmc_gap_se",
         "bandwidth", "seconds")


def _jsonl(path: Path) -> list[dict]:
    """The rows of a JSON-lines file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _rows(folder: Path, model: str):
    run, name = MODELS[model]
    return [r for r in _jsonl(folder / run / "rows.jsonl") if r["model"] == name]


def _row(folder, model, estimator, split, budget=None):
    return next(r for r in _rows(folder, model) if r["estimator"] == estimator and r["split"] == split
                and (budget is None or r["budget"] == budget))


def _ais(folder, model, split, t=1000, init="ais"):
    return _row(folder, model, init, split, t)


def _per(folder, model, split, estimator="ais", t=1000):
    return _row(folder, model, estimator, split, t if estimator in ("ais", "ais-encoder") else None)["per_image"]


def _table(folder, model):
    run, name = MODELS[model]
    with open(folder / run / "table2.csv") as f:
        return next(r for r in csv.DictReader(f) if r["model"] == name)


def _comparison(folder, model, comparison, split):
    run, name = MODELS[model]
    with open(folder / run / "comparisons.csv") as f:
        return next(r for r in csv.DictReader(f) if r["model"] == name and r["comparison"] == comparison
                    and r["split"] == split)


def _paired(a, b):
    """Mean and standard error of the per-image differences a - b, and how many are positive."""
    d = [x - y for x, y in zip(a, b, strict=False)]
    return statistics.mean(d), statistics.stdev(d) / math.sqrt(len(d)), sum(x > 0 for x in d)


_made = {}


def _add(name, doc, fn):
    fn.__doc__ = doc
    _made[name] = fn


for _m in MODELS:
    for _c in TABLE:
        _add(f"{_m}_{_c}", f"{_m}: table2.csv's {_c}.", lambda f, m=_m, c=_c: float(_table(f, m)[c]))
    for _s in ("train", "test"):
        for _t in (10, 100):
            _add(f"{_m}_ais_{_s}_T{_t}", f"{_m}: AIS mean on {_s} images at T = {_t}.",
                 lambda f, m=_m, s=_s, t=_t: _ais(f, m, s, t)["mean"])
        _add(f"{_m}_rise_{_s}", f"{_m}: how far the {_s} AIS mean rises from T = 100 to 1000.",
             lambda f, m=_m, s=_s: _ais(f, m, s, 1000)["mean"] - _ais(f, m, s, 100)["mean"])
        _add(f"{_m}_acc_{_s}", f"{_m}: mean acceptance at T = 1000 on {_s} images.",
             lambda f, m=_m, s=_s: _ais(f, m, s)["acceptance"])
        for _cmp in ("kde - ais", "iwae - ais"):
            _k = _cmp.split()[0]
            _add(f"{_m}_{_k}_ais_{_s}", f"{_m}: comparisons.csv, {_cmp} on {_s} images (paired mean).",
                 lambda f, m=_m, c=_cmp, s=_s: float(_comparison(f, m, c, s)["difference"]))
            _add(f"{_m}_{_k}_ais_{_s}_se", f"{_m}: its standard error.",
                 lambda f, m=_m, c=_cmp, s=_s: float(_comparison(f, m, c, s)["stderr"]))
    _add(f"{_m}_bdmc_max", f"{_m}: the largest single-image BDMC gap.",
         lambda f, m=_m: max(_row(f, m, "bdmc", "simulated")["per_image"]))
    _add(f"{_m}_bdmc_min", f"{_m}: the smallest single-image BDMC gap.",
         lambda f, m=_m: min(_row(f, m, "bdmc", "simulated")["per_image"]))
    _add(f"{_m}_train_test", f"{_m}: AIS train minus test mean (unpaired).",
         lambda f, m=_m: _ais(f, m, "train")["mean"] - _ais(f, m, "test")["mean"])
    _add(f"{_m}_train_test_se", f"{_m}: its standard error (the two in quadrature).",
         lambda f, m=_m: math.hypot(_ais(f, m, "train")["stderr"], _ais(f, m, "test")["stderr"]))
    _add(f"{_m}_train_s", f"{_m}: training seconds.", lambda f, m=_m: _row(f, m, "train", "train")["seconds"])
globals().update(_made)

_TEN = ("vae", "gan", "gmmn")  # the 10-dimensional models of the main table


def _pair_quote(name, doc, a, b, which):
    _add(name, doc, lambda f: _paired(a(f), b(f))[which])


# Engine rerun against run-gan/, per image (second minus first).
for _u, _s, _t, _e in (("train1000", "train", 1000, "ais"), ("test1000", "test", 1000, "ais"),
                       ("test100", "test", 100, "ais"), ("test10", "test", 10, "ais")):
    _pair_quote(f"eng_d_{_u}", f"Engine minus run-gan AIS, {_s}, T = {_t}: paired mean.",
                lambda f, s=_s, t=_t: _per(f, "eng", s, "ais", t), lambda f, s=_s, t=_t: _per(f, "gan", s, "ais", t), 0)
    _pair_quote(f"eng_d_{_u}_se", "... its standard error.",
                lambda f, s=_s, t=_t: _per(f, "eng", s, "ais", t), lambda f, s=_s, t=_t: _per(f, "gan", s, "ais", t), 1)
    for _m in ("gan", "eng"):
        _add(f"{_m}_ais_{_u}", f"{_m}: AIS mean, {_s}, T = {_t}.", lambda f, m=_m, s=_s, t=_t: _ais(f, m, s, t)["mean"])
_pair_quote("eng_d_bdmc", "Engine minus run-gan BDMC gap per simulated image: paired mean.",
            lambda f: _row(f, "eng", "bdmc", "simulated")["per_image"],
            lambda f: _row(f, "gan", "bdmc", "simulated")["per_image"], 0)
_pair_quote("eng_d_bdmc_se", "... its standard error.",
            lambda f: _row(f, "eng", "bdmc", "simulated")["per_image"],
            lambda f: _row(f, "gan", "bdmc", "simulated")["per_image"], 1)

# Paired model comparisons on the same images.
for _a, _b in (("vae", "gan"), ("gmmn", "gan"), ("vae", "gmmn"), ("gan", "old")):
    for _s in ("train", "test"):
        for _i, _w in enumerate(("", "_se", "_n")):
            _pair_quote(f"{_a}_minus_{_b}_{_s}{_w}", f"{_a} minus {_b}, AIS T = 1000, {_s}: paired "
                        + ("mean." if _i == 0 else "standard error." if _i == 1 else "images where positive."),
                        lambda f, a=_a, s=_s: _per(f, a, s), lambda f, b=_b, s=_s: _per(f, b, s), _i)
globals().update(_made)


def eng_z_max(folder):
    """The largest |paired difference| / standard error of the engine's AIS units (T = 10, 100, 1000, both splits)."""
    return max(abs(d / se) for s in ("train", "test") for t in (10, 100, 1000)
               for d, se, _ in [_paired(_per(folder, "eng", s, "ais", t), _per(folder, "gan", s, "ais", t))])


def eng_bdmc_z(folder):
    """The engine's BDMC gap change over its standard error."""
    d, se, _ = _paired(_row(folder, "eng", "bdmc", "simulated")["per_image"],
                       _row(folder, "gan", "bdmc", "simulated")["per_image"])
    return d / se


def eng_kde_max_diff(folder):
    """The largest |engine - run-gan| KDE difference over both splits' images."""
    return max(abs(a - b) for s in ("train", "test")
               for a, b in zip(_per(folder, "eng", s, "kde"), _per(folder, "gan", s, "kde"), strict=False))


def alarms(folder):
    """BDMC rows whose alarm fired, over every run directory."""
    return sum(bool(_row(folder, m, "bdmc", "simulated")["alarm"]) for m in MODELS)


def bdmc_images_ten(folder):
    """Simulated images of the three 10-dimensional models' BDMC rows."""
    return sum(_row(folder, m, "bdmc", "simulated")["images"] for m in _TEN)


def bdmc_gap_lo(folder):
    """The least mean BDMC gap of the 10-dimensional models."""
    return min(_row(folder, m, "bdmc", "simulated")["mean"] for m in _TEN)


def bdmc_gap_hi(folder):
    """The largest."""
    return max(_row(folder, m, "bdmc", "simulated")["mean"] for m in _TEN)


def bdmc_max_ten(folder):
    """The largest single-image BDMC gap of the 10-dimensional models."""
    return max(max(_row(folder, m, "bdmc", "simulated")["per_image"]) for m in _TEN)


def rise_lo(folder):
    """The least rise from T = 100 to 1000 of the 10-dimensional models (either split)."""
    return min(_made[f"{m}_rise_{s}"](folder) for m in _TEN for s in ("train", "test"))


def rise_hi(folder):
    """The largest."""
    return max(_made[f"{m}_rise_{s}"](folder) for m in _TEN for s in ("train", "test"))


def rise10_lo(folder):
    """The least rise from T = 10 to 100 of the 10-dimensional models."""
    return min(_ais(folder, m, s, 100)["mean"] - _ais(folder, m, s, 10)["mean"]
               for m in _TEN for s in ("train", "test"))


def rise10_hi(folder):
    """The largest."""
    return max(_ais(folder, m, s, 100)["mean"] - _ais(folder, m, s, 10)["mean"]
               for m in _TEN for s in ("train", "test"))


def _enc(folder, model):
    return _paired(_per(folder, model, "test", "ais-encoder"), _per(folder, model, "test"))


def vae_enc(folder):
    """VAE-10: AIS from the encoder, mean over test images."""
    return _row(folder, "vae", "ais-encoder", "test")["mean"]


def vae_enc_se(folder):
    """... its standard error."""
    return _row(folder, "vae", "ais-encoder", "test")["stderr"]


def vae_prior_se(folder):
    """VAE-10: AIS from the prior, its standard error at T = 1000 (test)."""
    return _ais(folder, "vae", "test")["stderr"]


def vae_enc_d(folder):
    """VAE-10: encoder minus prior, paired mean."""
    return _enc(folder, "vae")[0]


def vae_enc_d_se(folder):
    """... its standard error."""
    return _enc(folder, "vae")[1]


def vae_enc_absmax(folder):
    """VAE-10: the largest |encoder - prior| on one image."""
    return max(abs(a - b) for a, b in zip(_per(folder, "vae", "test", "ais-encoder"), _per(folder, "vae", "test"),
                                          strict=False))


def vae50_enc_d(folder):
    """VAE-50: encoder minus prior, paired mean."""
    return _enc(folder, "vae50")[0]


def vae50_enc_d_se(folder):
    """... its standard error."""
    return _enc(folder, "vae50")[1]


def vae50_enc_min(folder):
    """VAE-50: the least encoder minus prior on one image."""
    return min(a - b for a, b in zip(_per(folder, "vae50", "test", "ais-encoder"), _per(folder, "vae50", "test"),
                                     strict=False))


def vae50_enc_max(folder):
    """... the largest."""
    return max(a - b for a, b in zip(_per(folder, "vae50", "test", "ais-encoder"), _per(folder, "vae50", "test"),
                                     strict=False))


def _above(folder, model, other="kde"):
    """(AIS, other - AIS) of the images where `other` exceeds AIS at T = 1000, both splits."""
    return [(a, o - a) for s in ("train", "test") for a, o in zip(_per(folder, model, s), _per(folder, model, s, other),
                                                                  strict=False)
            if o > a]


def kde_below_ten(folder):
    """(model, split, image) triples of the 10-dimensional models where KDE is below AIS."""
    return sum(len(_per(folder, m, s)) for m in _TEN for s in ("train", "test")) - sum(
        len(_above(folder, m)) for m in _TEN)


def kde_triples_ten(folder):
    """All such triples."""
    return sum(len(_per(folder, m, s)) for m in _TEN for s in ("train", "test"))


def kde_below_vae50(folder):
    """VAE-50's images (both splits) where KDE is below AIS."""
    return sum(len(_per(folder, "vae50", s)) for s in ("train", "test")) - len(_above(folder, "vae50"))


def kde_above_vae_n(folder):
    """VAE-10 images where KDE is above AIS."""
    return len(_above(folder, "vae"))


def kde_above_gan_n(folder):
    """Retrained-GAN images where KDE is above AIS."""
    return len(_above(folder, "gan"))


for _i in range(3):
    _add(f"kde_above_vae_ais{_i}", f"VAE-10: AIS of the {_i + 1}th image (train then test) where KDE is above it.",
         lambda f, i=_i: _above(f, "vae")[i][0])
    _add(f"kde_above_vae_by{_i}", "... and by how much KDE is above.", lambda f, i=_i: _above(f, "vae")[i][1])
for _i in range(2):
    _add(f"kde_above_gan_by{_i}", f"GAN-10: by how much KDE is above AIS on its {_i + 1}th such image.",
         lambda f, i=_i: _above(f, "gan")[i][1])
globals().update(_made)


def iwae_above_n(folder):
    """VAE-10 training images where IWAE exceeds AIS."""
    return len([1 for s in ("train", "test") for a, i in zip(_per(folder, "vae", s), _per(folder, "vae", s, "iwae"),
                                                             strict=False)
                if i > a])


def iwae_above_by(folder):
    """... by how much (the largest)."""
    return max(i - a for s in ("train", "test") for a, i in zip(_per(folder, "vae", s), _per(folder, "vae", s, "iwae"),
                                                                strict=False))


def iwae_above_vae50_n(folder):
    """VAE-50 images where IWAE exceeds AIS."""
    return len([1 for s in ("train", "test") for a, i in zip(_per(folder, "vae50", s), _per(folder, "vae50", s, "iwae"),
                                                             strict=False)
                if i > a])


def vae50_minus_vae_test(folder):
    """VAE-50 AIS test mean less VAE-10's."""
    return _ais(folder, "vae50", "test")["mean"] - _ais(folder, "vae", "test")["mean"]


def kde_gmmn_over_gan(folder):
    """Test images where KDE scores GMMN above the retrained GAN."""
    return sum(a > b for a, b in zip(_per(folder, "gmmn", "test", "kde"), _per(folder, "gan", "test", "kde"),
                                     strict=False))


def vae_test_min(folder):
    """VAE-10: the lowest test-image AIS."""
    return min(_per(folder, "vae", "test"))


def vae_test_max(folder):
    """... the highest."""
    return max(_per(folder, "vae", "test"))


def se_lo(folder):
    """The least standard error across images in the two tables (AIS, KDE, IWAE; five rows)."""
    cols = [c for c in TABLE if c.endswith("_se") and c != "bdmc_gap_se"]
    return min(float(_table(folder, m)[c]) for m in ("vae", "gan", "old", "gmmn", "vae50") for c in cols
               if _table(folder, m)[c])


def se_hi(folder):
    """... the largest."""
    cols = [c for c in TABLE if c.endswith("_se") and c != "bdmc_gap_se"]
    return max(float(_table(folder, m)[c]) for m in ("vae", "gan", "old", "gmmn", "vae50") for c in cols
               if _table(folder, m)[c])


def spread_lo(folder):
    """The least sd across images of AIS at T = 1000 (10-dimensional models, either split)."""
    return min(statistics.stdev(_per(folder, m, s)) for m in _TEN for s in ("train", "test"))


def spread_hi(folder):
    """... the largest."""
    return max(statistics.stdev(_per(folder, m, s)) for m in _TEN for s in ("train", "test"))


def kde_ais_gmmn_lo(folder):
    """GMMN: the smaller |KDE - AIS| of the two splits."""
    return min(-_made[f"gmmn_kde_ais_{s}"](folder) for s in ("train", "test"))


def kde_ais_gmmn_hi(folder):
    """... the larger."""
    return max(-_made[f"gmmn_kde_ais_{s}"](folder) for s in ("train", "test"))


def _top4(folder, split):
    old = _per(folder, "old", split)
    return sorted(range(len(old)), key=lambda i: -old[i])[:4]


def old_top4_lo(folder):
    """Collapsed GAN, test: the lowest of its four best-scored test images."""
    return min(_per(folder, "old", "test")[i] for i in _top4(folder, "test"))


def old_top4_hi(folder):
    """... the highest."""
    return max(_per(folder, "old", "test")[i] for i in _top4(folder, "test"))


def old_rest(folder):
    """Collapsed GAN, test: the mean of the other 16 images."""
    top = _top4(folder, "test")
    return statistics.mean(x for i, x in enumerate(_per(folder, "old", "test")) if i not in top)


def gan_on_top4_lo(folder):
    """Retrained GAN on the collapsed GAN's four best test images: the lowest."""
    return min(_per(folder, "gan", "test")[i] for i in _top4(folder, "test"))


def gan_on_top4_hi(folder):
    """... the highest."""
    return max(_per(folder, "gan", "test")[i] for i in _top4(folder, "test"))


def gan_rest(folder):
    """Retrained GAN: mean over the other 16 test images."""
    top = _top4(folder, "test")
    return statistics.mean(x for i, x in enumerate(_per(folder, "gan", "test")) if i not in top)


def old_d_real(folder):
    """Collapsed GAN: the training objective's d_real (mean D(x) on data, the last recorded value)."""
    return _row(folder, "old", "train", "train")["objective"]["d_real"]


def _sweep(sigma):
    def quote(folder):
        row = _row(folder, "gan", "sigma", "valid")
        return row["means"][row["sigmas"].index(sigma)]
    quote.__doc__ = f"Retrained GAN: the sigma sweep's mean AIS (T = 100, validation images) at sigma = {sigma}."
    return quote


sweep_gan_020, sweep_gan_030, sweep_gan_045 = _sweep(0.2), _sweep(0.3), _sweep(0.45)


def ais1000_s_lo(folder):
    """The fastest AIS run at T = 1000 from the prior (20 images x 16 chains), over models and splits."""
    return min(_ais(folder, m, s)["seconds"] for m in ("vae", "gmmn", "old", "gan", "vae50") for s in ("train", "test"))


def ais1000_s_hi(folder):
    """... the slowest."""
    return max(_ais(folder, m, s)["seconds"] for m in ("vae", "gmmn", "old", "gan", "vae50") for s in ("train", "test"))


def enc_s_lo(folder):
    """The faster AIS-from-the-encoder run (VAE-10, VAE-50)."""
    return min(_row(folder, m, "ais-encoder", "test")["seconds"] for m in ("vae", "vae50"))


def enc_s_hi(folder):
    """... the slower."""
    return max(_row(folder, m, "ais-encoder", "test")["seconds"] for m in ("vae", "vae50"))


def acc_lo(folder):
    """The least mean acceptance at T = 1000 (current models, both splits, prior and encoder)."""
    return min(r["acceptance"] for m in ("vae", "gmmn", "gan", "vae50") for r in _rows(folder, m)
               if r["estimator"] in ("ais", "ais-encoder") and r["budget"] == 1000)


def acc_hi(folder):
    """... the largest."""
    return max(r["acceptance"] for m in ("vae", "gmmn", "gan", "vae50") for r in _rows(folder, m)
               if r["estimator"] in ("ais", "ais-encoder") and r["budget"] == 1000)


def vae_sigma_learned(folder):
    """VAE-10: the sigma it learned in training."""
    return _row(folder, "vae", "train", "train")["vae_sigma"]


def vae50_sigma_learned(folder):
    """VAE-50: the sigma it learned in training."""
    return _row(folder, "vae50", "train", "train")["vae_sigma"]


def vae50_rise_lo(folder):
    """VAE-50: the smaller rise from T = 100 to 1000 of its two splits."""
    return min(_made[f"vae50_rise_{s}"](folder) for s in ("train", "test"))


def vae50_rise_hi(folder):
    """... the larger."""
    return max(_made[f"vae50_rise_{s}"](folder) for s in ("train", "test"))


globals().update(_made)


def gan_d_real(folder):
    """Retrained GAN: the training objective's d_real."""
    return _row(folder, "gan", "train", "train")["objective"]["d_real"]



def _collapse(folder, variant):
    """The row of ``variant`` in mode_collapse/rows.jsonl (benchmarks/generative_mode_collapse.py)."""
    rows = _jsonl(folder / "mode_collapse" / "rows.jsonl")
    return next(r for r in rows if r["variant"] == variant)


def _collapse_quote(name, variant, field, doc):
    def fn(folder):
        return _collapse(folder, variant)[field]
    fn.__doc__ = doc
    globals()[name] = fn


for _v, _short in (("gan-plain", "plain"), ("gan", "stab"), ("vae", "vaec"), ("gmmn", "gmmnc"),
                   ("gan-smooth-noise", "smooth")):
    _collapse_quote(f"{_short}_top_count", _v, "top_count", f"{_v}: samples in the most common class")
    _collapse_quote(f"{_short}_classes", _v, "classes_min_share", f"{_v}: classes with at least 2% of samples")
    _collapse_quote(f"{_short}_entropy", _v, "entropy_nats", f"{_v}: entropy of the class shares (nats)")
    _collapse_quote(f"{_short}_distinct", _v, "distinct_nearest", f"{_v}: distinct nearest training digits")


def stab_share_lo(folder):
    """Retrained GAN: the smallest class share (%)."""
    return 100 * _collapse(folder, "gan")["min_fraction_covered"]


def stab_share_hi(folder):
    """Retrained GAN: the largest class share (%)."""
    return 100 * _collapse(folder, "gan")["max_fraction"]


CURVES = {"vae": ("gap-curve", "vae"), "gan": ("gap-curve", "gan"), "gmmn": ("gap-curve", "gmmn"),
          "vae50": ("gap-curve-vae50", "vae")}


def _curve_row(folder, model, steps):
    """The gap curve's row of ``model`` at T = ``steps`` (benchmarks/generative_gap_curve.sh)."""
    run, name = CURVES[model]
    rows = _jsonl(folder / run / "rows.jsonl")
    return next(r for r in rows if r["model"] == name and r["estimator"] == "bdmc-curve" and r["budget"] == steps)


def _curve_quotes(model, steps):
    def gap(folder):
        return _curve_row(folder, model, steps)["mean"]

    def gap_se(folder):
        return _curve_row(folder, model, steps)["stderr"]

    def gap_max(folder):
        return max(_curve_row(folder, model, steps)["per_image"])

    for fn, suffix, what in ((gap, "", "mean gap"), (gap_se, "_se", "its standard error"),
                             (gap_max, "_max", "the largest image's gap")):
        fn.__doc__ = f"Gap curve, {model} at T = {steps}: {what} (nats)."
        globals()[f"curve_{model}_{steps}{suffix}"] = fn


for _m in CURVES:
    for _t in (10, 100, 1000, 3000, 10000):
        _curve_quotes(_m, _t)


def curve_images(folder):
    """Simulated images per model on the gap curve."""
    return _curve_row(folder, "vae", 10000)["images"]


def curve_chains(folder):
    """AIS chains per image on the gap curve."""
    return _curve_row(folder, "vae", 10000)["chains"]


ABLATION_CELLS = ("vae-base", "vae-train-1000", "vae-train-2000", "vae-epochs-25", "vae-epochs-400", "vae-epochs-1000",
                  "vae-sigma-1000", "vae-sigma-learned", "vae-paper10", "vae-paper10-sigma-learned",
                  "vae-paper10-epochs-400", "gan-base", "gan-epochs-400",
                  "gan-epochs-1000", "gan-train-1000", "gan-paper10", "gmmn-base", "vae50-base", "vae-paper50")


def _ablation(folder, cell, steps):
    """The ablation table's line of ``cell`` at T = ``steps`` (benchmarks/generative_ablation.py)."""
    with open(folder / "ablation" / "table.csv") as f:
        return next(r for r in csv.DictReader(f) if r["cell"] == cell and int(r["steps"]) == steps)


def _ablation_quotes(cell, steps):
    short = f"abl_{cell.replace('-', '_')}_{steps}"
    fields = (("", "mean", "AIS test mean (nats)"), ("_se", "stderr", "its standard error across images"),
              ("_d", "diff", "paired difference from its baseline"), ("_d_se", "diff_se", "its standard error"),
              ("_wins", "wins", "images where the cell is higher than its baseline"),
              ("_sigma", "sigma", "the sigma it used"), ("_train_s", "train_seconds", "training seconds"),
              ("_s", "ais_seconds", "the AIS run's seconds"))
    for suffix, column, what in fields:
        def fn(folder, column=column):
            return float(_ablation(folder, cell, steps)[column])
        fn.__doc__ = f"Ablation, {cell} at T = {steps}: {what}."
        globals()[short + suffix] = fn


    def lower(folder):
        line = _ablation(folder, cell, steps)
        return int(line["images"]) - int(float(line["wins"]))
    lower.__doc__ = f"Ablation, {cell} at T = {steps}: images where the cell is not higher than its baseline."
    globals()[short + "_wins_lo"] = lower


for _c in ABLATION_CELLS:
    for _t in (1000, 10000):
        _ablation_quotes(_c, _t)


def _ablation_elbo(cell):
    def fn(folder):
        rows = _jsonl(folder / "ablation" / "rows.jsonl")
        return [r for r in rows if r["cell"] == cell and r["unit"] == "train"][-1]["objective"]["elbo"]
    fn.__doc__ = f"Ablation, {cell}: the last epoch's mean training ELBO (nats per image)."
    globals()[f"abl_{cell.replace('-', '_')}_elbo"] = fn


for _c in ("vae-base", "vae-epochs-400", "vae-epochs-1000", "vae-paper10", "vae-paper10-epochs-400"):
    _ablation_elbo(_c)


def vae_to_paper(folder):
    """The paper's VAE-10 (705.4) minus the ablation's VAE-10 baseline at T = 1,000."""
    return 705.4 - float(_ablation(folder, "vae-base", 1000)["mean"])


def _ablation_ais(folder, cell, steps):
    """The ablation's latest AIS row of ``cell`` at T = ``steps`` (rows.jsonl, per-image values)."""
    rows = _jsonl(folder / "ablation" / "rows.jsonl")
    return [r for r in rows if r["cell"] == cell and r["unit"] == "ais" and r["steps"] == steps][-1]


def _longer_run_quotes(cell):
    def gain(folder):
        return _paired(_ablation_ais(folder, cell, 10000)["per_image"], _ablation_ais(folder, cell, 1000)["per_image"])

    short = f"abl_{cell.replace('-', '_')}_gain"
    for index, suffix, what in ((0, "", "mean"), (1, "_se", "its standard error"), (2, "_n", "images higher")):
        def fn(folder, index=index):
            return gain(folder)[index]
        fn.__doc__ = f"Ablation, {cell}: AIS at T = 10,000 (4 chains) minus T = 1,000 (16 chains), paired: {what}."
        globals()[short + suffix] = fn


for _c in ("vae-base", "gan-base", "gmmn-base", "vae50-base"):
    _longer_run_quotes(_c)


def _train_test(folder, model):
    """The train/test table's line of ``model`` (benchmarks/generative_train_test.py)."""
    with open(folder / "train_test" / "table.csv") as f:
        return next(r for r in csv.DictReader(f) if r["model"] == model)


def _train_test_quotes(model):
    fields = (("train", "AIS train mean"), ("train_se", "its standard error"), ("test", "AIS test mean"),
              ("test_se", "its standard error"), ("train_minus_test", "train minus test"),
              ("train_minus_test_se", "its Welch standard error"), ("z", "train minus test over its se"),
              ("vs_table_train", "minus Table 2's AIS on its 20 training images"),
              ("vs_table_train_se", "its standard error"), ("vs_table_test", "minus Table 2's on its 20 test images"),
              ("vs_table_test_se", "its standard error"), ("images", "images per split"), ("chains", "chains"),
              ("seconds", "seconds of both runs"))
    for column, what in fields:
        def fn(folder, column=column):
            return float(_train_test(folder, model)[column])
        fn.__doc__ = f"Train/test, {model}: {what}."
        globals()[f"tt_{model}_{column}"] = fn


for _m in ("vae10", "gan10", "gmmn10", "vae50", "gan50", "gmmn50"):
    _train_test_quotes(_m)


def tt_stored_max_ten(folder):
    """Train/test: the largest stored-samples difference of the three 10-dimensional models' retrained decoders."""
    return max(float(_train_test(folder, m)["stored_diff"]) for m in ("vae10", "gan10", "gmmn10"))


def tt_gan10_two_se(folder):
    """Train/test: two standard errors of GAN-10's train minus test."""
    return 2 * float(_train_test(folder, "gan10")["train_minus_test_se"])


def tt_vae50_stored(folder):
    """Train/test: VAE-50's retrained decoder against its run's stored samples (largest pixel difference)."""
    return float(_train_test(folder, "vae50")["stored_diff"])


def _tt_vs_table(folder):
    models = ("vae10", "gan10", "gmmn10", "vae50", "gan50", "gmmn50")
    return [float(_train_test(folder, m)[f"vs_table_{s}"]) for m in models for s in ("train", "test")]


def tt_vs_table_lo(folder):
    """Train/test: the lowest paired difference from Table 2's 16-chain rows (20 images, any model and split)."""
    return min(_tt_vs_table(folder))


def tt_vs_table_hi(folder):
    """... the highest."""
    return max(_tt_vs_table(folder))


def _tt_test(folder, model):
    rows = _jsonl(folder / "train_test" / "rows.jsonl")
    return [r for r in rows if r["model"] == model and r["split"] == "test"][-1]["per_image"]


def tt_gmmn50_minus_gan50(folder):
    """Train/test: GMMN-50 minus GAN-50 on the same 100 test images (paired mean)."""
    return _paired(_tt_test(folder, "gmmn50"), _tt_test(folder, "gan50"))[0]


def tt_gmmn50_minus_gan50_se(folder):
    """... its standard error."""
    return _paired(_tt_test(folder, "gmmn50"), _tt_test(folder, "gan50"))[1]


RATE_DISTORTION = {"vae": ("rate-distortion", "vae"), "gan": ("rate-distortion", "gan"),
                   "gmmn": ("rate-distortion", "gmmn"), "vae50": ("rate-distortion-vae50", "vae")}


def _rd_row(folder, model):
    """The rate-distortion row of ``model`` (benchmarks/generative_rate_distortion.sh)."""
    run, name = RATE_DISTORTION[model]
    rows = _jsonl(folder / run / "rows.jsonl")
    return [r for r in rows if r["model"] == name and r["estimator"] == "rate-distortion"][-1]


def _rd_quotes(model):
    def at_one(column):
        def fn(folder):
            return _rd_row(folder, model)[column][-1]
        fn.__doc__ = f"Rate-distortion, {model}: the {column} at the last beta (1, the posterior), mean over images."
        return fn

    def at_tenth(column):
        def fn(folder):
            row = _rd_row(folder, model)
            i = min(range(len(row["beta"])), key=lambda k: abs(row["beta"][k] - 0.1))
            return row[column][i]
        fn.__doc__ = f"Rate-distortion, {model}: the {column} at the beta nearest 0.1."
        return fn

    for column in ("rate", "distortion", "mse"):
        globals()[f"rd_{model}_{column}"] = at_one(column)
        globals()[f"rd_{model}_{column}_tenth"] = at_tenth(column)

    def closes(folder):
        row = _rd_row(folder, model)
        return abs(row["rate"][-1] + row["distortion"][-1] + row["mean"])
    closes.__doc__ = f"Rate-distortion, {model}: |rate + distortion + the run's mean log-likelihood| at beta = 1."
    globals()[f"rd_{model}_closure"] = closes

    def points(folder):
        return len(_rd_row(folder, model)["beta"])
    points.__doc__ = f"Rate-distortion, {model}: points on the curve."
    globals()[f"rd_{model}_points"] = points


for _m in RATE_DISTORTION:
    _rd_quotes(_m)


def rd_vae_matches_ablation(folder):
    """|VAE-10's rate-distortion run's mean minus the ablation's vae-base test AIS at T = 1,000| (same key)."""
    return abs(_rd_row(folder, "vae")["mean"] - float(_ablation(folder, "vae-base", 1000)["mean"]))


# Every quote the page uses, in page order (a name here that the page stops using fails the stale-quote check).
QUOTES = (
    "gan50_bdmc_gap", "gan50_bdmc_gap_se", "gmmn50_bdmc_gap", "gmmn50_bdmc_gap_se", "bdmc_gap_lo", "bdmc_gap_hi",
    "bdmc_max_ten", "vae50_bdmc_gap", "rise_lo", "rise_hi", "abl_vae_train_2000_1000_d", "abl_vae_train_1000_1000_d",
    "abl_vae_paper10_1000_d", "abl_vae_paper10_1000_d_se", "abl_vae50_base_gain", "tt_vae10_train_minus_test",
    "tt_vae50_train_minus_test", "tt_gan10_train_minus_test", "tt_gmmn50_train_minus_test", "vae_seconds",
    "gan_seconds", "gmmn_seconds", "vae50_seconds", "vae_train_s", "gan_train_s", "gmmn_train_s", "vae50_train_s",
    "ais1000_s_lo", "ais1000_s_hi", "enc_s_lo", "enc_s_hi", "sweep_gan_020", "sweep_gan_030", "sweep_gan_045",
    "eng_kde_max_diff", "gan_ais_train1000", "eng_ais_train1000", "eng_d_train1000", "eng_d_train1000_se",
    "gan_ais_test1000", "eng_ais_test1000", "eng_d_test1000", "eng_d_test1000_se", "gan_ais_test100",
    "eng_ais_test100", "eng_d_test100", "eng_d_test100_se", "gan_ais_test10", "eng_ais_test10", "eng_d_test10",
    "eng_d_test10_se", "gan_bdmc_gap", "gan_bdmc_gap_se", "eng_bdmc_gap", "eng_bdmc_gap_se", "eng_d_bdmc",
    "eng_d_bdmc_se", "gan_kde_test", "eng_kde_test", "eng_z_max", "eng_bdmc_z", "alarms", "vae50_ais_test",
    "vae50_ais_test_se", "vae50_ais_train", "vae50_ais_train_se", "vae50_sigma", "gan50_ais_test",
    "gan50_ais_test_se", "gan50_ais_train", "gan50_ais_train_se", "gan50_sigma", "gmmn50_ais_test",
    "gmmn50_ais_test_se", "gmmn50_ais_train", "gmmn50_ais_train_se", "gmmn50_sigma", "vae_ais_test",
    "vae_ais_test_se", "vae_ais_train", "vae_ais_train_se", "vae_sigma", "gan_ais_test", "gan_ais_test_se",
    "gan_ais_train", "gan_ais_train_se", "gan_sigma", "old_ais_test", "old_ais_test_se", "old_ais_train",
    "old_ais_train_se", "old_sigma", "gmmn_ais_test", "gmmn_ais_test_se", "gmmn_ais_train", "gmmn_ais_train_se",
    "gmmn_sigma", "vae_kde_train", "vae_kde_train_se", "vae_kde_test", "vae_kde_test_se", "vae_iwae_train",
    "vae_iwae_train_se", "vae_iwae_test", "vae_iwae_test_se", "vae_bdmc_gap", "vae_bdmc_gap_se", "vae_bandwidth",
    "gan_kde_train", "gan_kde_train_se", "gan_kde_test_se", "gan_bandwidth", "old_kde_train", "old_kde_train_se",
    "old_kde_test", "old_kde_test_se", "old_bdmc_gap", "old_bdmc_gap_se", "old_bandwidth", "old_seconds",
    "gmmn_kde_train", "gmmn_kde_train_se", "gmmn_kde_test", "gmmn_kde_test_se", "gmmn_bdmc_gap", "gmmn_bdmc_gap_se",
    "gmmn_bandwidth", "vae50_kde_train", "vae50_kde_train_se", "vae50_kde_test", "vae50_kde_test_se",
    "vae50_iwae_train", "vae50_iwae_train_se", "vae50_iwae_test", "vae50_iwae_test_se", "vae50_bdmc_gap_se",
    "vae50_bandwidth", "vae50_bdmc_min", "vae50_bdmc_max", "vae50_rise_test", "vae50_rise_train", "vae50_enc_min",
    "vae50_enc_max", "vae50_enc_d", "vae50_enc_d_se", "se_lo", "se_hi", "vae_test_min", "vae_test_max",
    "vae_rise_test", "vae_rise_train", "gan_rise_test", "gan_rise_train", "gmmn_rise_test", "gmmn_rise_train",
    "rise10_lo", "rise10_hi", "vae_bdmc_max", "gan_bdmc_max", "bdmc_images_ten", "vae_enc", "vae_enc_se",
    "vae_prior_se", "vae_enc_d", "vae_enc_d_se", "vae_enc_absmax", "curve_images", "curve_chains", "curve_vae_10",
    "curve_vae_10_se", "curve_gan_10", "curve_gan_10_se", "curve_gmmn_10", "curve_gmmn_10_se", "curve_vae50_10",
    "curve_vae50_10_se", "curve_vae_100", "curve_vae_100_se", "curve_gan_100", "curve_gan_100_se", "curve_gmmn_100",
    "curve_gmmn_100_se", "curve_vae50_100", "curve_vae50_100_se", "curve_vae_1000", "curve_vae_1000_se",
    "curve_gan_1000", "curve_gan_1000_se", "curve_gmmn_1000", "curve_gmmn_1000_se", "curve_vae50_1000",
    "curve_vae50_1000_se", "curve_vae_3000", "curve_vae_3000_se", "curve_gan_3000", "curve_gan_3000_se",
    "curve_gmmn_3000", "curve_gmmn_3000_se", "curve_vae50_3000", "curve_vae50_3000_se", "curve_vae_10000",
    "curve_vae_10000_se", "curve_gan_10000", "curve_gan_10000_se", "curve_gmmn_10000", "curve_gmmn_10000_se",
    "curve_vae50_10000", "curve_vae50_10000_se", "curve_vae_1000_max", "curve_gan_1000_max", "curve_gmmn_1000_max",
    "curve_vae_10000_max", "curve_gan_10000_max", "curve_gmmn_10000_max", "vae50_kde_ais_train",
    "vae50_kde_ais_train_se", "vae50_kde_ais_test", "vae50_kde_ais_test_se", "vae50_minus_vae_test",
    "vae_kde_ais_train", "vae_kde_ais_train_se", "vae_kde_ais_test", "vae_kde_ais_test_se", "gan_kde_ais_train",
    "gan_kde_ais_train_se", "gan_kde_ais_test", "gan_kde_ais_test_se", "old_kde_ais_train", "old_kde_ais_train_se",
    "old_kde_ais_test", "old_kde_ais_test_se", "gmmn_kde_ais_train", "gmmn_kde_ais_train_se", "gmmn_kde_ais_test",
    "gmmn_kde_ais_test_se", "kde_ais_gmmn_lo", "kde_ais_gmmn_hi", "kde_below_ten", "kde_triples_ten",
    "kde_below_vae50", "kde_above_vae_n", "kde_above_vae_ais0", "kde_above_vae_ais1", "kde_above_vae_ais2",
    "kde_above_vae_by0", "kde_above_vae_by1", "kde_above_vae_by2", "kde_above_gan_n", "kde_above_gan_by0",
    "kde_above_gan_by1", "kde_gmmn_over_gan", "gmmn_minus_gan_test_n", "vae_iwae_ais_train", "vae_iwae_ais_train_se",
    "vae_iwae_ais_test", "vae_iwae_ais_test_se", "iwae_above_n", "iwae_above_by", "vae50_iwae_ais_train",
    "vae50_iwae_ais_train_se", "vae50_iwae_ais_test", "vae50_iwae_ais_test_se", "iwae_above_vae50_n",
    "tt_vae10_images", "vae_train_test", "vae_train_test_se", "gan_train_test", "gan_train_test_se",
    "gmmn_train_test", "gmmn_train_test_se", "vae50_train_test", "vae50_train_test_se", "spread_lo", "spread_hi",
    "tt_stored_max_ten", "tt_vae50_stored", "tt_vae10_chains", "tt_vs_table_lo", "tt_vs_table_hi", "tt_vae10_train",
    "tt_vae10_train_se", "tt_vae10_test", "tt_vae10_test_se", "tt_vae10_train_minus_test_se", "tt_vae10_z",
    "tt_gan10_train", "tt_gan10_train_se", "tt_gan10_test", "tt_gan10_test_se", "tt_gan10_train_minus_test_se",
    "tt_gan10_z", "tt_gmmn10_train", "tt_gmmn10_train_se", "tt_gmmn10_test", "tt_gmmn10_test_se",
    "tt_gmmn10_train_minus_test", "tt_gmmn10_train_minus_test_se", "tt_gmmn10_z", "tt_vae50_train",
    "tt_vae50_train_se", "tt_vae50_test", "tt_vae50_test_se", "tt_vae50_train_minus_test_se", "tt_vae50_z",
    "tt_gan50_train", "tt_gan50_train_se", "tt_gan50_test", "tt_gan50_test_se", "tt_gan50_train_minus_test",
    "tt_gan50_train_minus_test_se", "tt_gan50_z", "tt_gmmn50_train", "tt_gmmn50_train_se", "tt_gmmn50_test",
    "tt_gmmn50_test_se", "tt_gmmn50_train_minus_test_se", "tt_gmmn50_z", "tt_gan10_two_se", "tt_gmmn50_minus_gan50",
    "tt_gmmn50_minus_gan50_se", "vae_minus_gan_test", "vae_minus_gan_test_se", "vae_minus_gan_train",
    "vae_minus_gan_train_se", "vae_minus_gan_test_n", "vae_minus_gan_train_n", "vae_minus_gmmn_test_n",
    "gmmn_minus_gan_test", "gmmn_minus_gan_test_se", "rd_vae_points", "rd_vae_closure", "rd_vae_matches_ablation",
    "rd_vae_rate", "rd_vae_mse", "rd_vae_rate_tenth", "rd_vae_mse_tenth", "rd_gan_rate", "rd_gan_mse",
    "rd_gan_rate_tenth", "rd_gan_mse_tenth", "rd_gmmn_rate", "rd_gmmn_mse", "rd_gmmn_rate_tenth",
    "rd_gmmn_mse_tenth", "rd_vae50_rate", "rd_vae50_mse", "rd_vae50_rate_tenth", "rd_vae50_mse_tenth",
    "abl_vae_base_1000_sigma", "abl_vae_base_1000", "abl_vae_base_1000_se", "abl_vae_base_10000",
    "abl_vae_base_10000_se", "abl_vae_train_1000_1000_sigma", "abl_vae_train_1000_1000",
    "abl_vae_train_1000_1000_se", "abl_vae_train_1000_1000_d_se", "abl_vae_train_1000_1000_wins",
    "abl_vae_train_1000_10000", "abl_vae_train_1000_10000_se", "abl_vae_train_1000_10000_d",
    "abl_vae_train_1000_10000_d_se", "abl_vae_train_2000_1000_sigma", "abl_vae_train_2000_1000",
    "abl_vae_train_2000_1000_se", "abl_vae_train_2000_1000_d_se", "abl_vae_train_2000_1000_wins",
    "abl_vae_train_2000_10000", "abl_vae_train_2000_10000_se", "abl_vae_train_2000_10000_d",
    "abl_vae_train_2000_10000_d_se", "abl_vae_epochs_25_1000_sigma", "abl_vae_epochs_25_1000",
    "abl_vae_epochs_25_1000_se", "abl_vae_epochs_25_1000_d", "abl_vae_epochs_25_1000_d_se",
    "abl_vae_epochs_25_1000_wins", "abl_vae_epochs_25_10000", "abl_vae_epochs_25_10000_se",
    "abl_vae_epochs_25_10000_d", "abl_vae_epochs_25_10000_d_se", "abl_vae_epochs_400_1000_sigma",
    "abl_vae_epochs_400_1000", "abl_vae_epochs_400_1000_se", "abl_vae_epochs_400_1000_d",
    "abl_vae_epochs_400_1000_d_se", "abl_vae_epochs_400_1000_wins", "abl_vae_epochs_400_10000",
    "abl_vae_epochs_400_10000_se", "abl_vae_epochs_400_10000_d", "abl_vae_epochs_400_10000_d_se",
    "abl_vae_epochs_1000_1000_sigma", "abl_vae_epochs_1000_1000", "abl_vae_epochs_1000_1000_se",
    "abl_vae_epochs_1000_1000_d", "abl_vae_epochs_1000_1000_d_se", "abl_vae_epochs_1000_1000_wins",
    "abl_vae_epochs_1000_10000", "abl_vae_epochs_1000_10000_se", "abl_vae_epochs_1000_10000_d",
    "abl_vae_epochs_1000_10000_d_se", "abl_vae_sigma_1000_1000_sigma", "abl_vae_sigma_1000_1000",
    "abl_vae_sigma_1000_1000_se", "abl_vae_sigma_1000_1000_d", "abl_vae_sigma_1000_1000_d_se",
    "abl_vae_sigma_1000_1000_wins", "abl_vae_sigma_1000_10000", "abl_vae_sigma_1000_10000_se",
    "abl_vae_sigma_1000_10000_d", "abl_vae_sigma_1000_10000_d_se", "abl_vae_sigma_learned_1000_sigma",
    "abl_vae_sigma_learned_1000", "abl_vae_sigma_learned_1000_se", "abl_vae_sigma_learned_1000_d",
    "abl_vae_sigma_learned_1000_d_se", "abl_vae_sigma_learned_1000_wins", "abl_vae_sigma_learned_10000",
    "abl_vae_sigma_learned_10000_se", "abl_vae_sigma_learned_10000_d", "abl_vae_sigma_learned_10000_d_se",
    "abl_vae_paper10_1000_sigma", "abl_vae_paper10_1000", "abl_vae_paper10_1000_se", "abl_vae_paper10_1000_wins",
    "abl_vae_paper10_sigma_learned_1000_sigma", "abl_vae_paper10_sigma_learned_1000",
    "abl_vae_paper10_sigma_learned_1000_se", "abl_vae_paper10_sigma_learned_1000_d",
    "abl_vae_paper10_sigma_learned_1000_d_se", "abl_vae_paper10_sigma_learned_1000_wins",
    "abl_vae_paper10_epochs_400_1000_sigma", "abl_vae_paper10_epochs_400_1000", "abl_vae_paper10_epochs_400_1000_se",
    "abl_vae_paper10_epochs_400_1000_d", "abl_vae_paper10_epochs_400_1000_d_se",
    "abl_vae_paper10_epochs_400_1000_wins", "abl_gan_base_1000_sigma", "abl_gan_base_1000", "abl_gan_base_1000_se",
    "abl_gan_base_10000", "abl_gan_base_10000_se", "abl_gan_train_1000_1000_sigma", "abl_gan_train_1000_1000",
    "abl_gan_train_1000_1000_se", "abl_gan_train_1000_1000_d", "abl_gan_train_1000_1000_d_se",
    "abl_gan_train_1000_1000_wins", "abl_gan_train_1000_10000", "abl_gan_train_1000_10000_se",
    "abl_gan_train_1000_10000_d", "abl_gan_train_1000_10000_d_se", "abl_gan_epochs_400_1000_sigma",
    "abl_gan_epochs_400_1000", "abl_gan_epochs_400_1000_se", "abl_gan_epochs_400_1000_d",
    "abl_gan_epochs_400_1000_d_se", "abl_gan_epochs_400_1000_wins", "abl_gan_epochs_400_10000",
    "abl_gan_epochs_400_10000_se", "abl_gan_epochs_400_10000_d", "abl_gan_epochs_400_10000_d_se",
    "abl_gan_epochs_1000_1000_sigma", "abl_gan_epochs_1000_1000", "abl_gan_epochs_1000_1000_se",
    "abl_gan_epochs_1000_1000_d", "abl_gan_epochs_1000_1000_d_se", "abl_gan_epochs_1000_1000_wins",
    "abl_gan_epochs_1000_10000", "abl_gan_epochs_1000_10000_se", "abl_gan_epochs_1000_10000_d",
    "abl_gan_epochs_1000_10000_d_se", "abl_gan_paper10_1000_sigma", "abl_gan_paper10_1000",
    "abl_gan_paper10_1000_se", "abl_gan_paper10_1000_d", "abl_gan_paper10_1000_d_se", "abl_gan_paper10_1000_wins",
    "abl_gmmn_base_1000_sigma", "abl_gmmn_base_1000", "abl_gmmn_base_1000_se", "abl_gmmn_base_10000",
    "abl_gmmn_base_10000_se", "abl_vae50_base_1000_sigma", "abl_vae50_base_1000", "abl_vae50_base_1000_se",
    "abl_vae50_base_10000", "abl_vae50_base_10000_se", "abl_vae_paper50_1000_sigma", "abl_vae_paper50_1000",
    "abl_vae_paper50_1000_se", "abl_vae_paper50_1000_d", "abl_vae_paper50_1000_d_se", "abl_vae_paper50_1000_wins",
    "abl_vae_train_2000_1000_wins_lo", "abl_vae_train_1000_1000_wins_lo", "vae_to_paper", "abl_vae_base_elbo",
    "abl_vae_epochs_400_elbo", "abl_vae_epochs_1000_elbo", "abl_vae_paper10_elbo", "abl_vae_paper10_epochs_400_elbo",
    "abl_vae_base_gain", "abl_vae_base_gain_se", "abl_gan_base_gain", "abl_gan_base_gain_se", "abl_gmmn_base_gain",
    "abl_gmmn_base_gain_se", "abl_vae50_base_gain_se", "abl_vae50_base_gain_n", "old_d_real", "gan_d_real",
    "plain_top_count", "plain_classes", "plain_entropy", "plain_distinct", "smooth_top_count", "smooth_classes",
    "stab_classes", "stab_share_lo", "stab_share_hi", "stab_entropy", "vaec_entropy", "gmmnc_entropy",
    "stab_distinct", "vaec_distinct", "gmmnc_distinct", "gan_minus_old_test", "gan_minus_old_test_se",
    "gan_minus_old_test_n", "gan_minus_old_train", "gan_minus_old_train_se", "old_top4_lo", "old_top4_hi",
    "old_rest", "gan_on_top4_lo", "gan_on_top4_hi", "gan_rest", "vae50_rise_lo", "vae50_rise_hi",
    "vae_sigma_learned", "vae50_sigma_learned", "acc_lo", "old_acc_train", "acc_hi",
)


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/generative`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
