"""Label symmetry of mixture posteriors: the symmetrized variational density ``q_sym`` and label alignment.

The posterior of a mixture whose components are exchangeable a priori (a symmetric Dirichlet on the weights,
i.i.d. priors on the component parameters) is invariant under the ``k!`` relabellings ``sigma`` of the
components. A relabelling acts on a state ``x = (z, theta_1..theta_k)`` by ``(sigma x)``: ``z_i -> sigma(z_i)``
and ``theta_{sigma(j)} <- theta_j``; ``log p(x, D)`` is invariant, ``log p(sigma x, D) = log p(x, D)``.

A product density ``q`` fitted to draws from one labelling covers one of the ``k!`` modes. Then

- ``L(q) = E_q[log p(x, D) - log q(x)] = log p(D) - KL(q || p)`` is valid but loose by about ``log k!``;
- ``U(q) = E_p[log p(x, D) - log q(x)]`` is only an upper bound when the expectation is under the whole
  (symmetric) posterior; from single-mode draws it estimates ``log p(D) - log k! + KL(p_mode || q)``, which
  can fall *below* ``log p(D)``.

The fix is the label-symmetrized density ``q_sym(x) = (1/k!) sum_sigma q(sigma x)``, a normalized density
(each ``x -> sigma x`` is a bijection). With ``f(x) = log p(x, D) - log q_sym(x)``, which is invariant under
every relabelling:

- **Upper bound.** ``U_sym = E_p[f] = log p(D) + KL(p || q_sym) >= log p(D)``. Because ``f`` is invariant,
  ``E_{p'}[f] = E_p[f]`` for any ``p'`` whose symmetrization is ``p``, e.g. draws that stay in one labelling
  of a posterior with well separated modes: single-mode MCMC output gives a valid estimate.
- **Lower bound.** ``L_sym = E_{q_sym}[f] = log p(D) - KL(q_sym || p) <= log p(D)``. A draw of ``q_sym`` is a
  draw of ``q`` followed by a uniformly random relabelling; since ``f`` is invariant, the relabelling does not
  change ``f`` and ``L_sym = E_q[f]`` (draws of ``q`` as they are). Moreover
  ``L_sym - L = E_q[log q - log q_sym] = KL(q || q_sym)`` lies in ``[0, log k!]`` (``q_sym >= q / k!``):
  symmetrizing never loosens the lower bound and gains ``log k!`` when ``q``'s relabellings do not overlap.

Computing ``log q_sym``. For a product ``q(x) = prod_i w_{i, z_i} prod_j q_j(theta_j)`` (categorical labels
and one factor per component),
``log q(sigma x) = sum_j M[j, sigma(j)]`` with ``M[j, l] = sum_{i: z_i = j} log w_{i, l} + log q_l(theta_j)``,
so ``sum_sigma q(sigma x) = perm(exp M)``, the permanent of a ``k x k`` matrix, and
``log q_sym(x) = log perm(exp M) - log k!``. :func:`log_permanent` evaluates it exactly by dynamic
programming over subsets of columns in log space (``O(2^k k)`` work per draw, vectorized).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from ..caching import cached
from ..errors import BDMCError
from .families import Categorical, Family
from .mean_field import MeanField

MAX_K = 16  # 2^16 subsets x 16 columns per draw: beyond this the exact permanent is not affordable


@cached(maxsize=MAX_K)
def _subset_tables(k: int):
    """Per level ``j`` (rows ``0..j`` assigned): the column subsets of size ``j + 1``, their predecessors
    (subset minus one column) and the removed columns, as static index arrays."""
    levels = []
    for j in range(k):
        masks, preds, cols = [], [], []
        for c in itertools.combinations(range(k), j + 1):
            m = sum(1 << l for l in c)
            masks.append(m)
            preds.append([m ^ (1 << l) for l in c])
            cols.append(list(c))
        levels.append((np.asarray(masks), np.asarray(preds), np.asarray(cols)))
    return tuple(levels)


def log_permanent(log_matrix):
    """``log perm(exp(log_matrix))`` of a (batch of) square matrices, exactly, in log space.

    ``perm(A) = sum_sigma prod_j A[j, sigma(j)]``. Ryser-free dynamic programming over column subsets:
    ``g(S) = logsumexp_{l in S} [g(S \\ {l}) + log A[|S| - 1, l]]`` with ``g({}) = 0`` and the answer
    ``g({0..k-1})``: ``sum_j C(k, j+1) (j+1) = k 2^(k-1)`` terms, every combination a ``logsumexp``, so
    entries of any dynamic range (and ``-inf``) are handled without overflow.

    Parameters
    ----------
    log_matrix : array (..., k, k)
        Log entries; ``-inf`` is a zero entry.

    Returns
    -------
    array (...)
    """
    log_matrix = jnp.asarray(log_matrix)
    if log_matrix.ndim < 2 or log_matrix.shape[-1] != log_matrix.shape[-2]:
        raise BDMCError(f"log_permanent needs square matrices (..., k, k), got shape {log_matrix.shape}")
    k = log_matrix.shape[-1]
    if k > MAX_K:
        raise BDMCError(f"log_permanent is exact over 2^k subsets; k = {k} exceeds the limit {MAX_K}")
    return _log_permanent(log_matrix)


@jax.jit
def _log_permanent(log_matrix):
    k = log_matrix.shape[-1]
    batch = log_matrix.shape[:-2]
    g = jnp.full(batch + (1 << k,), -jnp.inf, log_matrix.dtype).at[..., 0].set(0.0)
    for j, (masks, preds, cols) in enumerate(_subset_tables(k)):
        terms = g[..., preds] + log_matrix[..., j, :][..., cols]  # (..., C(k, j+1), j+1)
        g = g.at[..., masks].set(logsumexp(terms, axis=-1))
    return g[..., (1 << k) - 1]


def log_permanent_bruteforce(log_matrix) -> float:
    """``log perm(exp(log_matrix))`` of one small matrix by enumerating all permutations (for checks)."""
    a = np.asarray(log_matrix, dtype=np.float64)
    k = a.shape[0]
    vals = np.array([sum(a[j, s[j]] for j in range(k)) for s in itertools.permutations(range(k))])
    m = np.max(vals)
    if m == -np.inf:
        return -np.inf
    return float(m + np.log(np.sum(np.exp(vals - m))))


def _component_log_probs(f: Family, theta):
    """``out[j, l] = log q_l(theta_j)`` for a factor with one batch axis of length k (one per component)."""
    params = f._params()
    per_event = type(f)._log_prob_event
    return jax.vmap(lambda th: jax.vmap(lambda *p: per_event(th, *p))(*params))(theta)


@jax.tree_util.register_pytree_node_class
class LabelSymmetric:
    """The label-symmetrized density ``q_sym(x) = (1/k!) sum_sigma q(sigma x)`` of a mean-field ``q``.

    See the module docstring for why both bounds need it on mixture posteriors. It has ``log_prob`` and
    ``sample`` like :class:`~bdmc.bracketing.mean_field.MeanField`, so it can be passed wherever a fitted
    ``q`` is (:func:`~bdmc.bracketing.log_ratios`, :func:`~bdmc.bracketing.lower_bound_values`).

    Parameters
    ----------
    q : MeanField
        The product density; ``q[labels]`` is a :class:`Categorical` with ``probs`` of shape ``(n, k)``.
    labels : str
        Name of the factor holding the component labels ``z`` (shape ``(n,)``, values in ``0..k-1``).
    components : sequence of str
        Factors with one batch element per component (leading axis ``k``), e.g. ``("mu", "Sigma")``:
        relabelling permutes them together with the labels. Every other factor of ``q`` is left as it is
        and must not depend on the labelling (``log q`` adds it unchanged).
    """

    def __init__(self, q: MeanField, *, labels: str, components: Sequence[str] = ()):
        if not isinstance(q, MeanField):
            raise BDMCError(f"LabelSymmetric wraps a fitted MeanField, got {type(q).__name__}")
        if labels not in q.factors or not isinstance(q[labels], Categorical):
            raise BDMCError(f"labels={labels!r} must name a Categorical factor of q, which has {list(q.factors)}")
        probs = q[labels].probs
        if probs.ndim != 2:
            raise BDMCError(f"q[{labels!r}] must have probs of shape (n, k), got {probs.shape}")
        k = probs.shape[-1]
        if k > MAX_K:
            raise BDMCError(f"label symmetrization is exact over 2^k subsets; k = {k} exceeds {MAX_K}")
        components = tuple(components)
        for c in components:
            if c not in q.factors:
                raise BDMCError(f"components names {c!r}, which is not a factor of q ({list(q.factors)})")
            if c == labels:
                raise BDMCError(f"{c!r} is the label factor; list only per-component parameters in components")
            if q[c].batch_shape != (k,):
                raise BDMCError(f"component factor {c!r} has batch shape {q[c].batch_shape}; expected ({k},), "
                                "one element per mixture component")
        self.q, self.labels, self.components = q, labels, components

    def tree_flatten(self):
        return (self.q,), (self.labels, self.components)

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.q, (obj.labels, obj.components) = children[0], aux
        return obj

    def __repr__(self):
        return f"LabelSymmetric({self.q!r}, labels={self.labels!r}, components={self.components!r})"

    @property
    def num_components(self) -> int:
        return int(self.q[self.labels].probs.shape[-1])

    @property
    def factors(self):
        return self.q.factors

    def __getitem__(self, name):
        return self.q[name]

    def assignment_matrix(self, theta: Mapping):
        """``M[j, l] = log q(part of theta labelled j, if it were labelled l)``, shape ``(k, k)``.

        ``log q(sigma x) = sum_j M[j, sigma(j)] + (terms of factors that do not depend on labels)``.
        """
        k = self.num_components
        logw = jnp.log(self.q[self.labels].probs)  # (n, k); -inf where a label has probability 0
        M = jax.ops.segment_sum(logw, theta[self.labels], num_segments=k)
        for c in self.components:
            M = M + _component_log_probs(self.q[c], theta[c])
        return M

    def _rest_log_prob(self, theta):
        rest = [n for n in self.q.factors if n != self.labels and n not in self.components]
        return sum((self.q[n].log_prob(theta[n]) for n in rest), jnp.zeros(()))

    def log_prob(self, theta: Mapping):
        """``log q_sym(theta) = log perm(exp M) - log k!`` plus the label-free factors."""
        k = self.num_components
        return log_permanent(self.assignment_matrix(theta)) - math.lgamma(k + 1) + self._rest_log_prob(theta)

    def log_prob_unsymmetrized(self, theta: Mapping):
        """``log q(theta)`` of the wrapped product density."""
        return self.q.log_prob(theta)

    def sample(self, key):
        """A draw of ``q`` relabelled by a uniformly random permutation: a draw of ``q_sym``."""
        k_q, k_perm = jax.random.split(key)
        theta = self.q.sample(k_q)
        return relabel(theta, jax.random.permutation(k_perm, self.num_components), labels=self.labels,
                       components=self.components)


def relabel(theta: Mapping, perm, *, labels: str, components: Sequence[str] = ()):
    """Apply the relabelling ``j -> perm[j]`` to one state: ``z_i -> perm[z_i]``, ``theta_{perm[j]} <- theta_j``."""
    perm = jnp.asarray(perm)
    inv = jnp.argsort(perm)
    out = dict(theta)
    out[labels] = perm[theta[labels]].astype(jnp.asarray(theta[labels]).dtype)
    for c in components:
        out[c] = jnp.asarray(theta[c])[inv]
    return out


def align_labels(samples: Mapping, *, labels: str, components: Sequence[str] = (), reference=None,
                 passes: int = 2) -> dict:
    """Relabel every draw to agree best with a reference labelling (Hungarian assignment on co-labels).

    For draw ``s`` the permutation maximizes ``#{i: perm(z_si) = r_i}`` (``linear_sum_assignment`` on the
    ``k x k`` table of label agreements); component parameters are permuted with the labels. The reference
    is the last draw, then (``passes - 1`` times) the per-observation most frequent aligned label. Relabelling
    draws changes nothing that is invariant under relabelling (``log p(x, D)``, ``log q_sym``); it makes a
    product ``q`` fitted to the draws single-mode even when the chain switched labels.

    Parameters
    ----------
    samples : mapping of str to array
        Draws with leading axis ``num_samples``; ``samples[labels]`` is an integer array ``(num_samples, n)``.
    labels, components
        As for :class:`LabelSymmetric`.
    reference : array (n,), optional
        A fixed reference labelling (then one pass).
    passes : int
        Alignment passes when no reference is given.

    Returns
    -------
    dict
        The relabelled draws (same keys and shapes; entries not named are copied).
    """
    from scipy.optimize import linear_sum_assignment

    z = np.asarray(samples[labels])
    if z.ndim != 2 or not np.issubdtype(z.dtype, np.integer):
        raise BDMCError(
            f"samples[{labels!r}] must be integer labels of shape (num_samples, n), got {z.dtype} {z.shape}")
    comps = {c: np.asarray(samples[c]) for c in components}
    k = int(max(z.max() + 1, *(v.shape[1] for v in comps.values()))) if comps else int(z.max() + 1)
    for c, v in comps.items():
        if v.shape[:1] != z.shape[:1] or v.shape[1] != k:
            raise BDMCError(f"samples[{c!r}] has shape {v.shape}; expected (num_samples, {k}, ...)")
    fixed = reference is not None
    ref = np.asarray(reference) if fixed else z[-1]
    perms = np.tile(np.arange(k), (z.shape[0], 1))
    for _ in range(1 if fixed else max(int(passes), 1)):
        agree = np.zeros((z.shape[0], k, k))
        np.add.at(agree, (np.arange(z.shape[0])[:, None], z, ref[None, :]), 1.0)
        for s in range(z.shape[0]):
            rows, cols = linear_sum_assignment(-agree[s])
            perms[s, rows] = cols
        aligned = np.take_along_axis(perms, z, axis=1)
        counts = np.zeros((z.shape[1], k))
        np.add.at(counts, (np.broadcast_to(np.arange(z.shape[1]), z.shape), aligned), 1.0)
        ref = counts.argmax(1)
    out = {n: np.asarray(v) for n, v in samples.items()}
    out[labels] = aligned.astype(z.dtype)
    inv = np.argsort(perms, axis=1)
    for c, v in comps.items():
        out[c] = np.take_along_axis(v, inv.reshape(inv.shape + (1,) * (v.ndim - 2)), axis=1)
    return out
