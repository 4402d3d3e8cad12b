"""Simulation-based calibration (SBC) of a posterior sampler (Talts et al. 2018; Modrak et al. 2023).

For each replication: draw latents from the prior and data given them, run the sampler on ``p(x | y)`` and
record the rank of each true scalar among its draws. If the sampler draws from the posterior, every rank is
uniform on ``0..num_draws``. Each scalar of the latent pytree is a quantity, plus the log-likelihood of the
data at the latent (a joint test quantity: Modrak et al. show it sees errors that no single coordinate
shows, e.g. a posterior that is too wide in every direction).

Uniformity is tested per quantity with the simultaneous ECDF band of Sailynoja et al. (2022), as ArviZ
computes it (``arviz.stats.ecdf_utils.ecdf_confidence_band``, method "optimized"), at level
``level / num_quantities`` each (Bonferroni), so the verdict has family-wise false-alarm rate at most
``level``. The band is exact for ranks: the ECDF is evaluated at the points ``i / (num_draws + 1)`` where the
uniform rank CDF is known exactly.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax.flatten_util import ravel_pytree
from scipy import stats as st

from ..caching import RUN_COMPILE, cached, jit_static
from ..contracts.capabilities import NamedCoordinates, supports
from ..contracts.kernel import join_kernel, split_kernel
from ..contracts.sampler import replication_batch
from ..errors import BDMCError
from .labels import Exchangeable, canonical_quantities, labellings
from .samplers import Sampler

NULL_SIMULATIONS = 4000  # uniform-rank data sets behind the (informational) p-values
LOG_LIKELIHOOD = "log-likelihood"


@dataclass(frozen=True)
class SBCResult:
    """Ranks of the true values among a sampler's draws, and their uniformity test.

    Attributes
    ----------
    names : tuple of str
        The quantities: every latent scalar (``"beta[2]"``, ``"x[0]"``, ``"s2"``), then ``"log-likelihood"``.
    ranks : ndarray of int, (num_replications, num_quantities)
        Rank of the true value among ``num_draws`` draws (ties broken at random), in ``0..num_draws``.
    num_draws : int
    level : float
        Family-wise false-alarm level of ``verdict``; each quantity is tested at ``level / num_quantities``.
    statistic : ndarray, (num_quantities,)
        Sailynoja's gamma: twice the smallest binomial tail probability of the rank ECDF over the evaluation
        points (small when the ECDF strays from the uniform CDF).
    p_values : ndarray, (num_quantities,)
        Probability of a gamma this small under uniform ranks, from ``NULL_SIMULATIONS`` simulated uniform-rank
        sets (for information; resolution ``1 / (NULL_SIMULATIONS + 1)``). The verdict uses the band.
    outside : ndarray of bool, (num_quantities,)
        Whether the quantity's rank ECDF leaves its simultaneous band anywhere.
    band : (ndarray, ndarray)
        Lower and upper edges of the simultaneous ECDF band at ``eval_points``, shared by every quantity.
    ess : ndarray, (num_replications, num_quantities)
        Effective sample size of each replication's draws of each quantity (BlackJAX's, Geyer's initial
        monotone sequence on one chain): near ``num_draws``
        when the draws are near independent. Autocorrelated draws make ranks look miscalibrated (too few
        extreme ranks) even for a correct sampler: raise the sampler's ``thin`` until it is.
    settings : dict
        The options of the run and of the sampler.
    diagnostics : dict, optional
        ArviZ's chain diagnostics of the first data sets (:func:`chain_diagnostics`).
    labelling : dict, optional
        With exchangeable components (``sbc(..., exchangeable=...)``): the quantities above are label-invariant
        (components in canonical order), and this holds what the sampler's own labels show: ``components``,
        ``raw_names``, ``raw_miscalibrated`` (quantities in the sampler's labels whose ranks fail, reported, not
        tested), ``one_labelling`` (data sets on which every draw had the same ordering of the components) and
        ``matched`` (data sets on which the draws' most common ordering was the true latent's).
    """

    names: tuple
    ranks: np.ndarray
    num_draws: int
    level: float
    statistic: np.ndarray
    p_values: np.ndarray
    outside: np.ndarray
    band: tuple
    ess: np.ndarray
    settings: dict = field(default_factory=dict)
    diagnostics: dict | None = None
    labelling: dict | None = None

    @property
    def num_replications(self) -> int:
        return int(self.ranks.shape[0])

    @property
    def eval_points(self) -> np.ndarray:
        """The fractional ranks ``i / (num_draws + 1)``, i = 1..num_draws, where the ECDF is tested."""
        return np.arange(1, self.num_draws + 1) / (self.num_draws + 1)

    @property
    def verdict(self) -> str:
        """``"miscalibrated"`` when any quantity's ECDF leaves its band, else ``"consistent"``."""
        return "miscalibrated" if bool(np.any(self.outside)) else "consistent"

    @property
    def miscalibrated(self) -> tuple:
        """Names of the quantities whose ranks fail the uniformity test."""
        return tuple(n for n, o in zip(self.names, self.outside, strict=False) if o)

    @property
    def worst(self) -> tuple[str, float]:
        """The quantity with the smallest gamma, and that gamma."""
        j = int(np.argmin(self.statistic))
        return self.names[j], float(self.statistic[j])

    def most_extreme(self, num: int) -> list:
        """Indices of up to ``num`` quantities to show: the log-likelihood, then the smallest gamma first."""
        order = [int(j) for j in np.argsort(self.statistic, kind="stable")]
        joint = [j for j, n in enumerate(self.names) if n == LOG_LIKELIHOOD]
        return (joint + [j for j in order if j not in joint])[:max(int(num), 1)]

    def ecdf(self) -> np.ndarray:
        """The rank ECDF of every quantity at :attr:`eval_points`: (num_draws, num_quantities)."""
        return _ecdf(self.ranks, self.num_draws)

    def ecdf_difference(self):
        """``(eval_points, ecdf - uniform, band_lower - uniform, band_upper - uniform)``: the ECDF difference plot."""
        z = self.eval_points
        return z, self.ecdf() - z[:, None], self.band[0] - z, self.band[1] - z

    def histogram(self, num_bins: int | None = None, *, prob: float = 0.99):
        """Rank counts in ``num_bins`` equal bins and the pointwise binomial band of a uniform rank.

        Returns ``(edges, counts (num_bins, num_quantities), lower, upper)``; ``lower``/``upper`` hold, per
        bin, the central ``prob`` interval of its count under uniform ranks (bins of unequal width when
        ``num_draws + 1`` is not a multiple of ``num_bins`` get their own).
        """
        values = self.num_draws + 1
        if num_bins is None:
            num_bins = _default_bins(values, self.num_replications)
        num_bins = int(min(max(num_bins, 1), values))
        edges = np.round(np.linspace(0, values, num_bins + 1)).astype(int)
        which = np.searchsorted(edges, self.ranks, side="right") - 1
        counts = np.stack([np.bincount(which[:, j], minlength=num_bins) for j in range(self.ranks.shape[1])], 1)
        p = np.diff(edges) / values
        lower, upper = st.binom.interval(prob, self.num_replications, p)
        return edges, counts, lower, upper

    def message(self) -> str:
        """One line: the verdict, the worst quantity and the test."""
        name, gamma = self.worst
        head = (f"SBC {self.verdict}: {len(self.miscalibrated)} of {len(self.names)} quantities leave their "
                f"simultaneous ECDF band" if self.outside.any() else
                f"SBC consistent: every rank ECDF of {len(self.names)} quantities stays in its band")
        return (f"{head} ({self.num_replications} replications x {self.num_draws} draws; family-wise level "
                f"{self.level:g}, Bonferroni); worst {name}: gamma {gamma:.3g}; median ESS "
                f"{float(np.median(self.ess)):.0f} of {self.num_draws}")

    def to_frame(self) -> pd.DataFrame:
        """One row per quantity: its name, gamma, p-value, whether it left the band, ESS and rank summaries, and
        ArviZ's split R-hat and bulk / tail ESS (medians over data sets; the largest R-hat)."""
        frame = pd.DataFrame({
            "quantity": list(self.names), "gamma": self.statistic, "p_value": self.p_values,
            "outside_band": self.outside.astype(bool), "level_each": self.level / len(self.names),
            "mean_rank": self.ranks.mean(0), "expected_mean_rank": self.num_draws / 2,
            "ess_median": np.median(self.ess, 0), "ess_min": self.ess.min(0),
            "num_replications": self.num_replications, "num_draws": self.num_draws,
        })
        if self.diagnostics:
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns (a quantity that never moved)
                frame["rhat_median"] = np.nanmedian(self.diagnostics["rhat"], 0)
                frame["rhat_max"] = np.nanmax(self.diagnostics["rhat"], 0)
                frame["ess_bulk_median"] = np.nanmedian(self.diagnostics["ess_bulk"], 0)
                frame["ess_tail_median"] = np.nanmedian(self.diagnostics["ess_tail"], 0)
        return frame

    def to_dict(self) -> dict:
        """JSON-ready summary (no ranks)."""
        return {"verdict": self.verdict, "level": self.level, "num_replications": self.num_replications,
                "num_draws": self.num_draws, "miscalibrated": list(self.miscalibrated),
                "quantities": self.to_frame().to_dict("records"), "settings": self.settings,
                "labelling": self.labelling}


def sbc(
    key,
    model,
    sampler: Sampler,
    *,
    num_replications: int = 100,
    num_draws: int = 99,
    level: float = 0.01,
    batch_size: int | None = None,
    chain_diagnostics_of: int = 0,
    on_progress: Callable[[int, int], None] | None = None,
    exchangeable: Exchangeable | None = None,
) -> SBCResult:
    """Simulation-based calibration of ``sampler`` on ``model``.

    Signature (kept stable for :mod:`bdmc.auditing`)::

        sbc(key, model, sampler, *, num_replications=100, num_draws=99, level=0.01, batch_size=None)
            -> SBCResult

    Parameters
    ----------
    key : PRNG key
        Simulates every replication's latent and data, drives the sampler and breaks ties in ranks.
    model : Model
        ``sample_prior``, ``sample_data`` and ``log_likelihood`` are used.
    sampler : Sampler
        ``sampler.draws(key, data, *, num_draws)``, e.g. :class:`bdmc.checks.samplers.KernelSampler` or
        :class:`bdmc.checks.samplers.NumPyroNUTS`. A ``traceable`` sampler runs all replications as one
        compiled, vmapped program; any other is called once per replication.
    num_replications : int
        Simulated data sets.
    num_draws : int
        Draws per data set (ranks take ``num_draws + 1`` values; 99 gives 100).
    level : float
        Family-wise false-alarm level of the verdict, split equally over the quantities.
    batch_size : int, optional
        Replications per compiled call (all of them by default); smaller batches bound memory and reuse
        one compiled program.
    chain_diagnostics_of : int
        ArviZ's split R-hat and bulk / tail ESS (:func:`chain_diagnostics`) of the first this many data sets'
        chains, in ``SBCResult.diagnostics`` (0, the default: none; ArviZ takes about 5 ms a chain and quantity).
    on_progress : callable, optional
        Called as ``on_progress(done, num_replications)`` after each compiled batch or replication.
    exchangeable : Exchangeable, optional
        Exchangeable components of the latent (:func:`bdmc.checks.labels.find_exchangeable`). The tested
        quantities are then label-invariant: every site on its natural space with the components in canonical
        order, and the log-likelihood; a correct sampler that stays in one labelling passes, one that is wrong
        in any label-invariant way still fails. What the sampler's own labels show is in ``labelling``.

    Returns
    -------
    SBCResult
    """
    num_replications, num_draws = int(num_replications), int(num_draws)
    if num_replications < 2 or num_draws < 1:
        raise BDMCError(f"sbc needs num_replications >= 2 and num_draws >= 1, got {num_replications} and "
                        f"{num_draws}")
    if not 0 < level < 1:
        raise BDMCError(f"sbc: level must be in (0, 1), got {level}")
    batch = num_replications if batch_size is None else max(1, min(int(batch_size), num_replications))
    keys = jax.random.split(key, num_replications)
    ranks, values, truths = [], [], []
    if sampler.traceable:
        for start in range(0, num_replications, batch):
            chunk = keys[start:start + batch]
            if chunk.shape[0] < batch:  # pad, so every chunk reuses the one compiled program
                pad = jnp.broadcast_to(chunk[:1], (batch - chunk.shape[0],) + chunk.shape[1:])
                chunk = jnp.concatenate([chunk, pad])
            r, v, t = _replications(chunk, model=model, sampler=sampler, num_draws=num_draws)
            ranks.append(np.asarray(r)), values.append(np.asarray(v)), truths.append(np.asarray(t))
            if on_progress is not None:
                on_progress(min(start + batch, num_replications), num_replications)
    else:
        for k in keys:
            k_sim, k_draw, k_tie = jax.random.split(k, 3)
            latent, data = _simulate(k_sim, model=model)
            draws = sampler.draws(k_draw, data, num_draws=num_draws)
            r, v, t = _ranks(k_tie, latent, data, draws, model=model)
            ranks.append(np.asarray(r)[None]), values.append(np.asarray(v)[None]), truths.append(np.asarray(t)[None])
            if on_progress is not None:
                on_progress(len(ranks), num_replications)
    ranks = np.concatenate(ranks)[:num_replications]
    values = np.concatenate(values)[:num_replications]
    truths = np.concatenate(truths)[:num_replications]
    names = quantity_names(model.sample_prior(jax.random.key(0)))
    own = model.coordinate_names if supports(model, NamedCoordinates) else None  # a flat latent's (Stan)
    if own is not None and len(own) == len(names) - 1:
        names = tuple(own) + (LOG_LIKELIHOOD,)
    labelling = None
    if exchangeable is not None:
        raw = uniformity_test(ranks, num_draws, level=level)
        labelling = _labelling(model, exchangeable, values, truths, names, raw)
        names, ranks, values = _label_invariant(key, model, exchangeable, values, truths, ranks)

    test = uniformity_test(ranks, num_draws, level=level)
    ess = _ess(values)
    diagnostics = chain_diagnostics(values[:chain_diagnostics_of]) if chain_diagnostics_of > 0 else None
    settings = {"num_replications": num_replications, "num_draws": num_draws, "level": level,
                "test": "simultaneous ECDF band (Sailynoja et al. 2022, ArviZ), Bonferroni over quantities",
                "sampler": sampler.settings(), "model": repr(model),
                "exchangeable": None if exchangeable is None else exchangeable.describe()}
    return SBCResult(names=names, ranks=ranks, num_draws=num_draws, level=float(level), ess=ess,
                     settings=settings, diagnostics=diagnostics, labelling=labelling, **test)


def _label_invariant(key, model, spec: Exchangeable, values, truths, ranks):
    """Names, ranks and draws' values of the label-invariant quantities: the canonical natural-space values of
    every site, and the log-likelihood (invariant already: its ranks are kept)."""
    R, D, Q = values.shape
    unravel = ravel_pytree(model.sample_prior(jax.random.key(0)))[1]
    drawn, names = canonical_quantities(model, spec, values[..., :-1].reshape(R * D, Q - 1), unravel)
    true, _ = canonical_quantities(model, spec, truths[:, :-1], unravel)
    drawn = drawn.reshape(R, D, -1)
    less = np.sum(drawn < true[:, None], axis=1)
    ties = np.sum(drawn == true[:, None], axis=1)
    u = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel()).uniform(size=less.shape)
    invariant = less + np.floor(u * (ties + 1)).astype(less.dtype)
    return (names + (LOG_LIKELIHOOD,), np.concatenate([invariant, ranks[:, -1:]], axis=1),
            np.concatenate([drawn, values[..., -1:]], axis=2))


def _labelling(model, spec: Exchangeable, values, truths, names, raw: dict) -> dict:
    """What the sampler's own labels show (``SBCResult.labelling``)."""
    R, D, Q = values.shape
    unravel = ravel_pytree(model.sample_prior(jax.random.key(0)))[1]
    drawn = labellings(spec, model, values[..., :-1].reshape(R * D, Q - 1), unravel).reshape(R, D)
    true = labellings(spec, model, truths[:, :-1], unravel)
    common = np.asarray([np.bincount(row).argmax() for row in drawn])
    return {"components": spec.describe(), "sites": list(spec.sites), "by": spec.by,
            "num_components": spec.num_components, "raw_names": list(names),
            "raw_miscalibrated": [n for n, o in zip(names, raw["outside"], strict=False) if o],
            "one_labelling": int(np.sum(np.all(drawn == drawn[:, :1], axis=1))),
            "matched": int(np.sum(common == true)), "num_replications": int(R)}


def chain_diagnostics(values) -> dict | None:
    """ArviZ's split R-hat, bulk and tail ESS of each data set's chain and quantity: ``{"rhat", "ess_bulk",
    "ess_tail"}``, arrays ``(num_replications, num_quantities)`` (None with fewer than 8 draws). One chain per
    data set, split in halves: R-hat compares the halves, as ArviZ does for a chain it splits."""
    import arviz as az

    values = np.asarray(values, np.float64)
    half = values.shape[1] // 2
    if half < 4 or values.shape[0] == 0:
        return None
    split = np.stack([values[:, :half], values[:, half:2 * half]])  # (2, R, half, Q)
    data = az.convert_to_dataset({"v": split.transpose(0, 2, 1, 3)})  # chain, draw, data set, quantity
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"rhat": np.asarray(az.rhat(data)["v"]), "ess_bulk": np.asarray(az.ess(data, method="bulk")["v"]),
                "ess_tail": np.asarray(az.ess(data, method="tail")["v"])}


def quantity_names(latent) -> tuple:
    """Readable names of every scalar of a latent pytree, in ``ravel_pytree`` order, then the log-likelihood.

    ``{"beta": (3,), "s2": ()}`` gives ``("beta[0]", "beta[1]", "beta[2]", "s2", "log-likelihood")``.
    """
    names = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(latent):
        base = ".".join(_part(p) for p in path) or "x"
        shape = np.shape(leaf)
        if shape == ():
            names.append(base)
        else:
            names += [f"{base}[{', '.join(map(str, idx))}]" for idx in np.ndindex(*shape)]
    return tuple(names) + (LOG_LIKELIHOOD,)


def uniformity_test(ranks: np.ndarray, num_draws: int, *, level: float) -> dict:
    """Test each column of ``ranks`` (in ``0..num_draws``) for uniformity with a simultaneous ECDF band.

    Returns a dict with ``statistic`` (gamma), ``p_values``, ``outside`` and ``band`` (see :class:`SBCResult`).
    """
    ranks = np.asarray(ranks)
    R, K = ranks.shape
    z = np.arange(1, num_draws + 1) / (num_draws + 1)
    lower, upper = _band(R, num_draws, 1.0 - level / K)
    ecdf = _ecdf(ranks, num_draws)
    slack = 0.5 / R  # the band's edges are counts / R: compare on the count grid
    outside = np.any((ecdf < lower[:, None] - slack) | (ecdf > upper[:, None] + slack), axis=0)
    gamma = _gamma(np.rint(ecdf * R).astype(int), R, z)
    p_values = (1 + np.sum(_null_gamma(R, num_draws)[:, None] <= gamma[None, :], axis=0)) / (1 + NULL_SIMULATIONS)
    return {"statistic": gamma, "p_values": p_values, "outside": outside, "band": (lower, upper)}


@cached(maxsize=32)
def _band(R: int, num_draws: int, prob: float):
    """ArviZ's simultaneous band at the rank points (depends only on the sizes and level, so cached)."""
    from arviz.stats.ecdf_utils import ecdf_confidence_band

    z = np.arange(1, num_draws + 1) / (num_draws + 1)
    lower, upper = ecdf_confidence_band(R, z, z, prob=prob, method="optimized")
    lower.setflags(write=False), upper.setflags(write=False)
    return lower, upper


@cached(maxsize=32)
def _null_gamma(R: int, num_draws: int):
    """Gamma of ``NULL_SIMULATIONS`` sets of R uniform ranks (fixed seed): the null distribution of gamma."""
    z = np.arange(1, num_draws + 1) / (num_draws + 1)
    counts = np.cumsum(np.random.default_rng(0).multinomial(R, np.full(num_draws + 1, 1 / (num_draws + 1)),
                                                            size=NULL_SIMULATIONS), axis=1)[:, :-1]
    out = _gamma(counts.T, R, z)
    out.setflags(write=False)
    return out


# ---------------------------------------------------------------------------------------------- internals

def _part(p) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(p, attr):
            return str(getattr(p, attr))
    return str(p)


def _default_bins(values: int, replications: int) -> int:
    """About R / 10 rank bins (at least 10 expected per bin), dividing the number of rank values when possible."""
    target = max(1, min(values, replications // 10, 50))
    divisors = [b for b in range(1, values + 1) if values % b == 0 and b <= target]
    return max(divisors) if divisors and max(divisors) >= target // 2 else target


def _ecdf(ranks, num_draws):
    """Fraction of ranks below i, i = 1..num_draws: (num_draws, num_quantities)."""
    ranks = np.asarray(ranks)
    return np.stack([np.mean(ranks < i, axis=0) for i in range(1, num_draws + 1)])


def _gamma(counts, R, z):
    """Sailynoja's gamma of ECDF counts (num_points, columns) under Binomial(R, z) at each point."""
    cdf = st.binom.cdf(counts, R, z[:, None])
    sf = st.binom.sf(counts - 1, R, z[:, None])
    return 2 * np.min(np.minimum(cdf, sf), axis=0)


def _ess(values):
    """Effective sample size of each (replication, quantity) chain of draws; values is (R, num_draws, K)."""
    R, L, K = values.shape
    if L < 4:
        return np.full((R, K), float(L))
    flat = np.moveaxis(values, 1, 0).reshape(1, L, R * K)
    ess = np.asarray(_ess_compiled(jnp.asarray(flat)), float)
    return np.nan_to_num(ess, nan=0.0).reshape(R, K)  # a chain that never moved has no information


@jax.jit
def _ess_compiled(flat):
    from blackjax.diagnostics import effective_sample_size

    return effective_sample_size(flat, chain_axis=0, sample_axis=1)


def _simulate(key, *, model):
    k1, k2 = jax.random.split(key)
    latent = model.sample_prior(k1)
    return latent, model.sample_data(k2, latent)


def _quantities(model, latent, data):
    flat = ravel_pytree(latent)[0]
    ll = jnp.sum(model.log_likelihood(latent, data))
    return jnp.concatenate([flat, ll[None].astype(flat.dtype)])


@jit_static(static=("model",))
def _ranks(key, latent, data, draws, *, model):
    truth = _quantities(model, latent, data)
    values = jax.vmap(lambda d: _quantities(model, d, data))(draws)
    less = jnp.sum(values < truth, axis=0)
    ties = jnp.sum(values == truth, axis=0)
    # Ties (discrete quantities, a sampler that never moved) are broken uniformly at random.
    u = jax.random.uniform(key, truth.shape)
    return less + jnp.floor(u * (ties + 1)).astype(less.dtype), values, truth


def _replications(keys, *, model, sampler, num_draws):
    """Every replication's ranks and quantities, one compiled program per (model, sampler's structure, sizes): a
    sampler registered as a pytree of numbers (a kernel with a pilot's step-size table) passes them as arguments,
    so the next audit's new table reuses the program."""
    sampler_def, params = split_kernel(sampler)
    return _compiled_replications(keys, params, model=model, sampler_def=sampler_def, num_draws=num_draws)


@jit_static(static=("model", "sampler_def", "num_draws"), options=RUN_COMPILE)
def _compiled_replications(keys, params, *, model, sampler_def, num_draws):
    sampler = join_kernel(sampler_def, params)

    def one(k):
        k_sim, k_draw, k_tie = jax.random.split(k, 3)
        latent, data = _simulate(k_sim, model=model)
        draws = sampler.draws(k_draw, data, num_draws=num_draws)
        return _ranks(k_tie, latent, data, draws, model=model)

    # A sampler whose cost varies by data set (NUTS's tree depth) is mapped: a vmapped batch would run every
    # replication for as long as the slowest one.
    return jax.lax.map(one, keys) if replication_batch(sampler) == "map" else jax.vmap(one)(keys)
