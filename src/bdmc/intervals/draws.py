"""A user's posterior draws on the model's latent space, checked: the starts of reverse runs and of a bracket.

:func:`posterior_draws` reads draws in the forms people have them (a dict of arrays by name, an ArviZ
``InferenceData``, posteriordb's reference-posterior format), maps a PPL program's constrained values to its
latent space with the adapter's ``unconstrain``, and refuses, naming the culprit, what cannot be a draw of this
model: a missing or unknown name, a wrong shape, a NaN or inf, a value outside the support. :func:`check_draws`
asks whether they are draws of *this* posterior (a sign test on the density's rise under a reversible kernel);
:func:`nuts_draws` makes draws when the user has none.
"""

from __future__ import annotations

import math
import re
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..checks.samplers import NumPyroNUTS
from ..contracts.capabilities import InitialPoints, NamedValues, supports
from ..contracts.model import log_density, validate_data
from ..contracts.nonfinite import describe_nonfinite
from ..contracts.observed import data_array_names
from ..errors import DataError, OptionError, OptionTypeError, UserProgramError
from .draws_check import DrawsCheck, check_draws, log_density_rises

__all__ = ["DrawsCheck", "NamedValues", "PosteriorDraws", "check_draws", "log_density_rises", "nuts_draws",
           "posterior_draws", "spaced_indices"]

MIN_DRAWS = 2
# A bracketed flat name as posteriordb and Stan write them: "beta[2]", "Sigma[1,3]" (1-based indices).
_FLAT_NAME = re.compile(r"^(?P<base>[^\[\]]+)\[(?P<index>\d+(?:,\d+)*)\]$")


def spaced_indices(total: int, n: int, num_chains: int | None = None) -> np.ndarray:
    """``n`` indices of ``total`` draws (chains concatenated, ``num_chains`` of equal length) as far apart as
    possible: shared out evenly over the chains (the first chains take one more when ``n`` does not divide),
    evenly spaced inside each, centred in their intervals."""
    if not 1 <= int(n) <= int(total):
        raise OptionError(f"cannot take {n} spaced draws of {total}: n must lie in [1, {total}]")
    chains = 1 if num_chains is None else int(num_chains)
    length = int(total) // chains
    out = []
    for c in range(chains):
        m = int(n) // chains + (c < int(n) % chains)
        out.extend(c * length + ((np.arange(m) + 0.5) * length / m).astype(int) if m else [])
    return np.asarray(out, dtype=int)


@dataclass(frozen=True)
class PosteriorDraws:
    """Posterior draws on the model's latent space.

    Attributes
    ----------
    latents : pytree
        The model's latent format with a leading axis over the draws (chains concatenated, chain 0 first).
    num_chains : int or None
        Chains of equal length in ``latents``; None when the input had no chain structure.
    source : str
        Where the draws came from (the input's form, or the sampler that made them).
    diagnostics : dict
        ``rhat_max``, ``ess_bulk_min`` (ArviZ, over every coordinate given) and ``divergences`` where they can
        be computed (chains of at least 4 draws; divergences only from a sampler's own record), else empty.
    """

    latents: Any
    num_chains: int | None
    source: str
    diagnostics: dict

    @property
    def num_draws(self) -> int:
        """The number of draws (all chains)."""
        return int(jax.tree.leaves(self.latents)[0].shape[0])

    def spaced(self, n: int):
        """``n`` draws as spread out as possible (:func:`spaced_indices`): near-independent starts for reverse
        runs. Returns the latent pytree with a leading axis of ``n``; refuses ``n`` above :attr:`num_draws`."""
        index = spaced_indices(self.num_draws, n, self.num_chains)
        return jax.tree.map(lambda x: x[index], self.latents)


def posterior_draws(model, draws, *, data=None, chain_axis: bool = False,
                    transform: Callable[[dict], Mapping] | None = None) -> PosteriorDraws:
    """Posterior draws on the model's latent space, read from the form the user has them in and checked.

    Parameters
    ----------
    model
        A bdmc Model. For a PPL adapter (:class:`NamedValues`: NumPyro, Stan, PyMC, WebPPL) the draws are the
        program's values on their natural (constrained) space by name, as its own sampler reports them, and are
        mapped to the latent with ``unconstrain``; for any other model, the latent's own leaves by their path
        names (:func:`bdmc.contracts.observed.data_array_names`: ``"mu"``, ``"a.b"``), or the latent pytree
        itself, with a leading draw axis. A WebPPL program's sites have no names: give one array per site, in
        program order (a list), or a dict keyed ``"0"``, ``"1"``, ....
    draws
        A :class:`PosteriorDraws` (returned as it is), or one of: a dict ``{name: array}`` with a leading draw
        axis (or ``(chains, draws, ...)`` with ``chain_axis=True``); an ArviZ ``InferenceData`` (its
        ``posterior`` group) or that group alone; a posteriordb reference posterior, the parsed JSON (a list of
        chains, each ``{"theta[1]": [...], ...}``), or a dict of such flat names (Stan's 1-based indices) whose
        entries are gathered into arrays by name.
    data : pytree, optional
        The data set. When given, every draw must have a finite log density at ``lam = 1`` (else only the
        log prior is checked).
    chain_axis : bool
        Whether a dict's arrays lead with a chain axis.
    transform : callable, optional
        ``{name: array with a leading draw axis}`` -> the program's names, applied first: e.g. posteriordb's
        ``theta`` of a non-centred program to its ``theta_trans``.

    Returns
    -------
    PosteriorDraws

    Raises
    ------
    bdmc.DataError
        Naming the culprit: a missing name (listing the model's), an unknown one (in a dict; an
        ``InferenceData``'s or posteriordb's extra quantities, such as deterministics or transformed
        parameters, are left out and listed in ``source``), a wrong shape (got, want), a NaN or inf value, a draw
        outside the support (which draw, which name or term), fewer than 2 draws or chains of unequal length.
    """
    if isinstance(draws, PosteriorDraws) and transform is None:  # already read (nuts_draws, or an earlier call)
        return draws
    if transform is not None and not callable(transform):
        raise OptionTypeError(f"transform must be a function of a dict of arrays, got {type(transform).__name__}")
    given, chains, source, divergences, strict = _read(draws, chain_axis)
    merged = {n: v.reshape((-1,) + v.shape[2:]) if chains else v for n, v in given.items()}
    total = {v.shape[0] for v in merged.values()}
    if len(total) != 1:
        raise DataError(f"the draws' arrays disagree on the number of draws: "
                        f"{ {n: v.shape[0] for n, v in merged.items()} }")
    total = total.pop()
    if total < MIN_DRAWS:
        raise DataError(f"{source} holds {total} draw(s); at least {MIN_DRAWS} are needed")
    if transform is not None:
        try:
            merged = {str(n): np.asarray(v) for n, v in dict(transform(dict(merged))).items()}
        except Exception as err:  # noqa: BLE001  the user's function, chained
            raise UserProgramError("transform", err, hint="it gets {name: array with a leading draw axis}") from err
    target = _Target(model)
    unknown = sorted(set(merged) - set(target.names))
    missing = [n for n in target.names if n not in merged]
    if missing:
        raise DataError(f"{source} lacks {missing}; the model's names are {target.described()}, given "
                        f"{sorted(merged)}")
    if unknown and strict:
        raise DataError(f"{source} holds {unknown}, which the model does not have; its names are "
                        f"{target.described()}")
    if unknown:
        source += f" (left out: {', '.join(unknown)})"
    values = {n: _checked(n, merged[n], target.shapes[n], chains, source, total) for n in target.names}
    diagnostics = _diagnostics({n: v.reshape((chains, -1) + v.shape[1:]) for n, v in values.items()}) \
        if chains else {}
    if divergences is not None:
        diagnostics["divergences"] = divergences
    latents = target.to_latents(values, chains)
    data = None if data is None else validate_data(model, data)
    _check_support(model, latents, data, values, chains)
    return PosteriorDraws(latents=latents, num_chains=chains, source=source, diagnostics=diagnostics)


def nuts_draws(key, model, data, *, num_chains: int = 4, num_warmup: int = 500,
               num_draws: int = 500) -> PosteriorDraws:
    """Posterior draws by NumPyro's NUTS on the model's log density at ``lam = 1``, when the user has none.

    Each chain is :class:`bdmc.checks.samplers.NumPyroNUTS` (its warm-up adapts the step size and a diagonal
    mass matrix) on its own key, ``split(key, num_chains)[c]``; the chains share one compiled program.

    Parameters
    ----------
    key : jax.random.key
    model, data
        A model whose latents are continuous (NUTS moves them all) and its data set.
    num_chains, num_warmup, num_draws : int
        Chains; warm-up transitions and kept draws of each.

    Returns
    -------
    PosteriorDraws
        ``diagnostics`` holds ``rhat_max`` and ``ess_bulk_min`` over the latent's coordinates (ArviZ) and the
        chains' ``divergences`` after warm-up.
    """
    if int(num_chains) < 1 or int(num_draws) < 1 or int(num_warmup) < 0:
        raise OptionError(f"nuts_draws needs num_chains >= 1, num_draws >= 1 and num_warmup >= 0, got "
                          f"{num_chains}, {num_draws} and {num_warmup}")
    data = validate_data(model, data)
    sampler = NumPyroNUTS(model, num_warmup=int(num_warmup))
    chains, divergences = [], 0
    for k in jax.random.split(key, int(num_chains)):
        draws, info = sampler.diagnosed_draws(k, data, num_draws=int(num_draws))
        chains.append(draws)
        divergences += int(info["divergences"])
    names = data_array_names(chains[0]) or ["latent"]
    per_name = zip(names, zip(*(jax.tree.leaves(c) for c in chains), strict=True), strict=True)
    diagnostics = _diagnostics({n: np.stack([np.asarray(x) for x in xs]) for n, xs in per_name})
    diagnostics["divergences"] = divergences
    latents = jax.tree.map(lambda *xs: jnp.concatenate(xs), *chains)
    source = (f"NumPyro NUTS on the model ({num_chains} chains x {num_draws} draws after {num_warmup} warm-up "
              "transitions)")
    return PosteriorDraws(latents=latents, num_chains=int(num_chains), source=source, diagnostics=diagnostics)


# ------------------------------------------------------------------------------------------- reading


def _read(draws, chain_axis: bool):
    """``(arrays by name, chains or None, source, divergences or None, strict names)`` of any accepted form."""
    idata = _arviz_type("InferenceData")
    dataset = _xarray_dataset()
    if idata is not None and isinstance(draws, idata):
        if "posterior" not in draws.groups():
            raise DataError("the InferenceData has no posterior group")
        divergences = None
        if "sample_stats" in draws.groups() and "diverging" in draws.sample_stats:
            divergences = int(np.sum(np.asarray(draws.sample_stats["diverging"].values)))
        given, chains = _from_dataset(draws.posterior, "ArviZ InferenceData")
        return given, chains, f"ArviZ InferenceData ({chains} chains)", divergences, False
    if dataset is not None and isinstance(draws, dataset):
        given, chains = _from_dataset(draws, "the posterior Dataset")
        return given, chains, f"an ArviZ posterior Dataset ({chains} chains)", None, False
    if isinstance(draws, Sequence) and not isinstance(draws, str) and draws \
            and all(isinstance(c, Mapping) for c in draws):
        chains = [_gather_flat(c, f"posteriordb chain {i}") for i, c in enumerate(draws)]
        lengths = {n: [c[n].shape[0] for c in chains] for n in chains[0]}
        names = [set(c) for c in chains]
        if any(s != names[0] for s in names):
            raise DataError(f"posteriordb chains disagree on their names: {[sorted(s) for s in names]}")
        uneven = {n: ls for n, ls in lengths.items() if len(set(ls)) != 1}
        if uneven:
            raise DataError(f"posteriordb chains have unequal lengths: {uneven}")
        given = {n: np.stack([c[n] for c in chains]) for n in chains[0]}
        return given, len(chains), f"posteriordb reference posterior ({len(chains)} chains)", None, False
    if isinstance(draws, Mapping) and any(isinstance(k, str) and _FLAT_NAME.match(k) for k in draws):
        given = _gather_flat(draws, "draws", chain_axis)
        chains = _chain_count(given, chain_axis)
        return given, chains, f"draws= (flat names, {len(given)} arrays)", None, False
    if isinstance(draws, Sequence) and not isinstance(draws, str):  # one array per site (a WebPPL program)
        draws = {str(i): v for i, v in enumerate(draws)}
    leaves = jax.tree.leaves(draws)
    if not leaves:
        raise DataError(f"draws must be a dict of arrays, an InferenceData or a posteriordb posterior, got "
                        f"{type(draws).__name__} with no arrays")
    names = data_array_names(draws) or ["latent"]
    given = {n: np.asarray(v) for n, v in zip(names, leaves, strict=True)}
    chains = _chain_count(given, chain_axis)
    arrays = f"{len(given)} array{'' if len(given) == 1 else 's'}"
    return given, chains, f"draws= ({type(draws).__name__} of {arrays})", None, True


def _chain_count(given: dict, chain_axis: bool) -> int | None:
    if not chain_axis:
        return None
    flat = {n: v.shape for n, v in given.items() if v.ndim < 2}
    if flat:
        raise DataError(f"chain_axis=True needs arrays of shape (chains, draws, ...); got {flat}")
    counts = {v.shape[0] for v in given.values()}
    if len(counts) != 1:
        raise DataError(f"the arrays disagree on the number of chains: { {n: v.shape[0] for n, v in given.items()} }")
    return counts.pop()


def _from_dataset(dataset, what: str):
    dims = tuple(dataset.sizes)
    if "chain" not in dims or "draw" not in dims:
        raise DataError(f"{what} needs dimensions 'chain' and 'draw', has {list(dims)}")
    given = {str(n): np.asarray(dataset[n].transpose("chain", "draw", ...).values) for n in dataset.data_vars}
    return given, int(dataset.sizes["chain"])


def _gather_flat(flat: Mapping, what: str, chain_axis: bool = False) -> dict:
    """Flat names (``"theta[2]"``, 1-based) gathered into arrays by base name, draw (or chain) axes first."""
    entries: dict[str, dict] = {}
    for key, value in flat.items():
        match = _FLAT_NAME.match(str(key))
        base, index = (match["base"], tuple(int(i) - 1 for i in match["index"].split(","))) if match else (key, ())
        entries.setdefault(str(base), {})[index] = np.asarray(value, dtype=float)
    out = {}
    for base, cells in entries.items():
        if () in cells:
            if len(cells) > 1:
                raise DataError(f"{what} names {base!r} both bare and indexed")
            out[base] = cells[()]
            continue
        ranks = {len(i) for i in cells}
        if len(ranks) != 1 or min(min(i) for i in cells) < 0:
            raise DataError(f"{what}: the indices of {base!r} are inconsistent: {sorted(cells)[:4]} ...")
        shape = tuple(max(i[d] for i in cells) + 1 for d in range(ranks.pop()))
        absent = [i for i in np.ndindex(*shape) if i not in cells]
        if absent:
            raise DataError(f"{what} lacks {base}[{','.join(str(j + 1) for j in absent[0])}] (of shape {shape})")
        lead = {v.shape for v in cells.values()}
        if len(lead) != 1:
            raise DataError(f"{what}: the entries of {base!r} have different lengths {sorted(lead)}")
        array = np.empty(lead.pop() + shape)
        for index, value in cells.items():
            array[(Ellipsis,) + index] = value
        out[base] = array
    return out


def _arviz_type(name: str):
    """ArviZ's class ``name`` if ArviZ is loaded (no object of it can exist otherwise); importing costs seconds."""
    module = sys.modules.get("arviz")
    return None if module is None else getattr(module, name, None)


def _xarray_dataset():
    module = sys.modules.get("xarray")
    return None if module is None else module.Dataset


def _checked(name: str, value, want: tuple, chains: int | None, source: str, total: int) -> np.ndarray:
    value = np.asarray(value)
    if value.dtype == object or not (np.issubdtype(value.dtype, np.number) or value.dtype == bool):
        raise DataError(f"{source}: {name!r} has non-numeric dtype {value.dtype}")
    if value.ndim == 0 or value.shape[0] != total:
        raise DataError(f"{source}: {name!r} holds {value.shape[0] if value.ndim else 'no'} draws, the others {total}")
    if tuple(value.shape[1:]) != tuple(want):
        lead = "(chains x draws" if chains else "(draws"
        raise DataError(f"{source}: {name!r} has shape {tuple(value.shape[1:])} per draw, the model's has "
                        f"{tuple(want)} (arrays are {lead}, ...) with the draw axes first)")
    bad = ~np.isfinite(value) if np.issubdtype(value.dtype, np.inexact) else np.zeros(value.shape, bool)
    if np.any(bad):
        first = np.argwhere(bad)[0]
        raise DataError(f"{source}: {name!r} holds {int(bad.sum())} NaN or inf value(s), the first at "
                        f"{_where(int(first[0]), chains, value.shape[0])}"
                        f"{'' if len(first) == 1 else ', index ' + str(tuple(int(i) for i in first[1:]))}")
    return value


def _where(i: int, chains: int | None, total: int) -> str:
    if not chains:
        return f"draw {i}"
    length = total // chains
    return f"draw {i} (chain {i // length}, draw {i % length})"


def _diagnostics(values: dict) -> dict:
    """``rhat_max`` and ``ess_bulk_min`` (ArviZ, rank-normalized split R-hat and bulk ESS) over every coordinate."""
    if not values or next(iter(values.values())).shape[1] < 4:
        return {}
    import arviz

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ warns of more chains than draws and of constant coordinates
        dataset = arviz.convert_to_dataset({n: np.asarray(v, float) for n, v in values.items()})
        rhat, ess = arviz.rhat(dataset), arviz.ess(dataset, method="bulk")
    rhats = np.concatenate([np.ravel(rhat[n].values) for n in rhat.data_vars])
    esses = np.concatenate([np.ravel(ess[n].values) for n in ess.data_vars])
    return {"rhat_max": float(np.nanmax(rhats)) if np.any(np.isfinite(rhats)) else math.nan,
            "ess_bulk_min": float(np.nanmin(esses)) if np.any(np.isfinite(esses)) else math.nan}


# ------------------------------------------------------------------------------------------- the latent space


# What a host-side unconstrain (numpy on its arguments) raises under jit.
_HOST_ONLY = (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError,
              jax.errors.TracerBoolConversionError)


class _Target:
    """The names and per-draw shapes the model's draws must have, and the map to its latent."""

    def __init__(self, model):
        self.model = model
        key = jax.random.key(0)
        self.named = supports(model, NamedValues)
        if self.named:  # one latent mapped to its values: the names, shapes and an in-support value of each
            latent = model.sample_initial(key) if supports(model, InitialPoints) else model.sample_prior(key)
            example = model.constrain(latent)
            self.positional = not isinstance(example, Mapping)
            example = {str(i): v for i, v in enumerate(example)} if self.positional else dict(example)
            self.example = {str(n): np.asarray(v) for n, v in example.items()}
        else:
            template = jax.eval_shape(model.sample_prior, key)
            leaves, self.treedef = jax.tree.flatten(template)
            names = data_array_names(template) or ["latent"]
            self.example = {n: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype) for n, leaf in zip(names, leaves,
                                                                                              strict=True)}
        self.names = list(self.example)
        self.shapes = {n: tuple(np.shape(v)) for n, v in self.example.items()}

    def described(self) -> str:
        return ", ".join(f"{n} {self.shapes[n]}" for n in self.names)

    def _unconstrain(self, values: dict):
        return self.model.unconstrain([values[n] for n in self.names] if self.positional else values)

    def to_latents(self, values: dict, chains: int | None):
        if not self.named:
            for n in self.names:  # a discrete latent's draws must be whole numbers
                dtype = self.example[n].dtype
                if jnp.issubdtype(dtype, jnp.integer) and np.issubdtype(values[n].dtype, np.inexact) \
                        and np.any(values[n] != np.round(values[n])):
                    i = int(np.argmax(np.any((values[n] != np.round(values[n])).reshape(len(values[n]), -1), 1)))
                    raise DataError(f"{_where(i, chains, len(values[n]))}: {n!r} holds values that are not whole "
                                    f"numbers; the model's {n!r} is {dtype}")
            leaves = [jnp.asarray(values[n], self.example[n].dtype) for n in self.names]
            return jax.tree.unflatten(self.treedef, leaves)
        batch = {n: jnp.asarray(values[n], jnp.result_type(float)) for n in self.names}
        try:  # a traceable unconstrain (NumPyro, PyMC) maps every draw in one compiled call
            latents = jax.jit(jax.vmap(self._unconstrain))(batch)
        except _HOST_ONLY:  # a host-side one (Stan, WebPPL): draw by draw
            rows = [self._unconstrain({n: v[i] for n, v in batch.items()}) for i in range(len(batch[self.names[0]]))]
            latents = jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *rows)
        finite = np.ones(len(batch[self.names[0]]), bool)
        for leaf in jax.tree.leaves(latents):
            finite &= np.all(np.isfinite(np.asarray(leaf)).reshape(len(finite), -1), axis=1)
        if not finite.all():
            i = int(np.argmin(finite))
            row = {n: v[i] for n, v in values.items()}
            raise DataError(f"{_where(i, chains, len(finite))} lies outside the support: unconstrain gives a "
                            f"non-finite latent; the culprit is {self._culprit(row)} ({_summary(row)})")
        return latents

    def _culprit(self, row: dict) -> str:
        """The first name whose value, replaced by an in-support one, makes the latent finite."""
        for name in self.names:
            trial = {n: jnp.asarray(v, jnp.result_type(float)) for n, v in {**row, name: self.example[name]}.items()}
            try:  # compiled, as the draws were mapped (eager NumPyro may validate a distribution's arguments)
                latent = jax.jit(self._unconstrain)(trial)
            except _HOST_ONLY:
                latent = self._unconstrain(trial)
            if all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree.leaves(latent)):
                return repr(name)
        return "more than one name"


def _summary(row: dict, width: int = 160) -> str:
    text = ", ".join(f"{n} = {np.array2string(np.asarray(v), precision=3, threshold=6)}" for n, v in row.items())
    return text if len(text) <= width else text[:width - 3] + "..."


def _check_support(model, latents, data, values: dict, chains: int | None) -> None:
    """Every draw must have a finite log density at lam = 1 (the log prior when no data are given)."""
    if data is None:
        density = jax.jit(jax.vmap(model.log_prior))(latents)
    else:
        density = jax.jit(jax.vmap(lambda x: log_density(model, x, data, 1.0)))(latents)
    density = np.asarray(density, np.float64)
    bad = ~np.isfinite(density)
    if not bad.any():
        return
    i = int(np.argmax(bad))
    latent = jax.tree.map(lambda x: x[i], latents)
    if data is None:
        term = "log_prior"
    else:
        found = describe_nonfinite(model, latent, data, 1.0, zero=True)
        term = "log density" if found is None else found[0] + ("" if found[1] is None else f", data case {found[1]}")
    row = {n: v[i] for n, v in values.items()}
    raise DataError(f"{_where(i, chains, len(density))} lies outside the posterior's support: the model's "
                    f"{'log prior' if data is None else 'log density at lam = 1'} there is {density[i]} ({term}) "
                    f"[{int(bad.sum())} draw(s) so]; its values: {_summary(row)}")
