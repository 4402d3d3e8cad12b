"""The user's observed arrays read into the structure of the model's data (real data, where no latent is known).

A model's data set is a pytree; the arrays a user brings (an ``.npz`` file's) are matched to its leaves by name,
with their shapes and dtypes checked, so real data reach a run exactly as simulated data would.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import jax
import numpy as np

from ..errors import DataError

__all__ = ["data_array_names", "real_data_like", "real_data_record"]


def real_data_like(template, arrays: Mapping[str, np.ndarray], *, source: str = "--data", hint: str = ""):
    """The user's observed arrays in the structure of one simulated data set.

    Parameters
    ----------
    template : pytree
        One simulated data set of the model (:func:`bdmc.simulate`); its leaves give the names, shapes and
        dtypes the observed arrays must have. A leaf is named by its path (a dict key such as a PPL program's
        observed site ``y``, an attribute, an index), parts joined by ``.``. A data set that is one bare array
        takes the file's only array, whatever its name.
    arrays : mapping of str to array
        The observed arrays by name (e.g. an ``.npz`` file's); names the template lacks are ignored.
    source : str
        The arrays' origin, named in errors.
    hint : str
        Appended to a shape error, e.g. how to set the model's size.

    Returns
    -------
    pytree
        ``template``'s structure holding the observed arrays, cast to its dtypes.

    Raises
    ------
    bdmc.DataError
        Naming an array that is missing or misshaped, or non-integer values where the model's data are integers.
    """
    leaves, treedef = jax.tree.flatten(template)
    names = data_array_names(template)
    if names is None:
        if len(arrays) != 1:
            raise DataError(f"{source}: the model's data are one array of shape {tuple(np.shape(leaves[0]))}, so "
                            f"the file must hold exactly one array; it holds {sorted(arrays) or 'none'}")
        names = list(arrays)
    named = list(zip(names, leaves, strict=False))
    missing = [f"{n!r} (shape {tuple(np.shape(leaf))})" for n, leaf in named if n not in arrays]
    if missing:
        raise DataError(f"{source} holds no observed array {', '.join(missing)}; it holds {sorted(arrays) or 'none'}")
    out = []
    for name, leaf in named:
        array, want = np.asarray(arrays[name]), tuple(np.shape(leaf))
        if array.shape != want:
            raise DataError(f"{source}: observed array {name!r} has shape {array.shape}, but the model's data "
                            f"{name!r} have shape {want}{hint}")
        dtype = np.asarray(leaf).dtype
        if not (np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.bool_)):
            raise DataError(f"{source}: observed array {name!r} has dtype {array.dtype}; the model's are {dtype}")
        cast = array.astype(dtype)
        if (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.bool_)) and np.any(cast != array):
            raise DataError(f"{source}: observed array {name!r} holds values that are not {dtype} (the model's "
                            f"data {name!r} are {dtype}), e.g. {array[cast != array].flat[0].item()!r}")
        out.append(cast)
    return jax.tree_util.tree_unflatten(treedef, out)


def data_array_names(data) -> list[str] | None:
    """The names :func:`real_data_like` reads ``data``'s leaves by, in leaf order; None for one bare array."""
    paths = [path for path, _ in jax.tree_util.tree_flatten_with_path(data)[0]]
    if len(paths) == 1 and not paths[0]:
        return None
    return [".".join(_entry_name(entry) for entry in path) for path in paths]


def _entry_name(entry) -> str:
    for kind, attr in ((jax.tree_util.DictKey, "key"), (jax.tree_util.GetAttrKey, "name"),
                       (jax.tree_util.SequenceKey, "idx"), (jax.tree_util.FlattenedIndexKey, "key")):
        if isinstance(entry, kind):
            return str(getattr(entry, attr))
    return str(entry)


def real_data_record(names: list[str], data) -> dict:
    """What settings.json records of real data: the arrays read (name: shape) and a digest of their values."""
    digest = hashlib.sha256()
    arrays = {}
    for name, leaf in zip(names, jax.tree.leaves(data), strict=False):
        arrays[name] = list(np.shape(leaf))
        digest.update(name.encode() + np.ascontiguousarray(leaf).tobytes())
    return {"source": "real", "arrays": arrays, "sha256": digest.hexdigest()[:16]}
