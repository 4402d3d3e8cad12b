"""Mean-field products of variational families, keyed by parameter name, and their moment-matching fit (Eq. 5)."""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError
from .families import Categorical, Family, resolve


@jax.tree_util.register_pytree_node_class
class MeanField:
    """A product ``q(theta) = prod_name q_name(theta[name])`` of families keyed by parameter name."""

    def __init__(self, factors: Mapping[str, Family]):
        if not factors:
            raise BDMCError("a MeanField needs at least one factor")
        for name, f in factors.items():
            if not isinstance(f, Family):
                raise BDMCError(f"MeanField factor {name!r} is not a fitted Family: {f!r}")
        self.factors = dict(factors)

    def tree_flatten(self):
        names = tuple(self.factors)
        return tuple(self.factors[n] for n in names), names

    @classmethod
    def tree_unflatten(cls, names, children):
        obj = object.__new__(cls)
        obj.factors = dict(zip(names, children, strict=False))
        return obj

    def __getitem__(self, name):
        return self.factors[name]

    def __repr__(self):
        inner = ", ".join(f"{n}: {type(f).__name__}{f.batch_shape}" for n, f in self.factors.items())
        return f"MeanField({inner})"

    def log_prob(self, theta: Mapping):
        """``log q(theta)`` for one draw (a dict with one entry per factor)."""
        return sum(f.log_prob(theta[n]) for n, f in self.factors.items())

    def sample(self, key):
        """One draw: a dict with one entry per factor."""
        keys = jax.random.split(key, len(self.factors))
        return {n: f.sample(k) for (n, f), k in zip(self.factors.items(), keys, strict=False)}

    def natural(self):
        return {n: f.natural() for n, f in self.factors.items()}

    def from_natural(self, eta: Mapping):
        """A MeanField of the same families with natural parameters ``eta``."""
        return MeanField({n: type(f).from_natural(eta[n]) for n, f in self.factors.items()})

    def valid(self):
        return jnp.all(jnp.stack([f.valid() for f in self.factors.values()]))

    def replace(self, **factors):
        return MeanField({**self.factors, **factors})


def fit_mean_field(samples: Mapping, family: Mapping, *, pseudo_count: float = 0.0) -> MeanField:
    """Moment-match one family per named parameter (Eq. 5).

    Parameters
    ----------
    samples : mapping of str to array
        Posterior draws, each ``(num_samples, ...)``.
    family : mapping of str to family
        A name (``"normal"``, ``"inverse_gamma"``, ``"inverse_wishart"``, ``"dirichlet"``, ``"categorical"``),
        a :class:`Family` subclass, or an already fitted :class:`Family` (used as it is). For a categorical
        the number of classes is read from ``num_classes[name]`` when the spec is ``("categorical", k)``,
        else taken as one more than the largest label seen.
    pseudo_count : float
        Added to every categorical count (see :meth:`Categorical.fit`).

    Returns
    -------
    MeanField
    """
    factors = {}
    for name, spec in family.items():
        if isinstance(spec, Family):
            factors[name] = spec
            continue
        if name not in samples:
            raise BDMCError(f"family names parameter {name!r}, but the samples only have {sorted(samples)}")
        num_classes = None
        if isinstance(spec, tuple):
            spec, num_classes = spec
        cls = resolve(spec)
        x = samples[name]
        if cls is Categorical:
            k = int(num_classes) if num_classes is not None else int(np.max(np.asarray(x))) + 1
            factors[name] = Categorical.fit(x, num_classes=k, pseudo_count=pseudo_count)
        else:
            factors[name] = cls.fit(x)
    return MeanField(factors)
