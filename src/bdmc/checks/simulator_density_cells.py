"""The compiled part of :func:`bdmc.checks.simulator_density`: statistics per (latent, case) cell.

Everything here runs as one ``jax.jit`` program per (model, sizes): prior draws, data simulated from each
latent, importance weights for the normalization of each likelihood term, score (Stein) identities under the
simulator, the seen-support sums of a discrete likelihood, and the prior's own identities. The host side
(:mod:`bdmc.checks.simulator_density`) turns the returned cells into tests.

Data cases are the leading axis of every data leaf; a case is flattened to a vector of ``d`` coordinates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import RUN_COMPILE, jit_static

REAL, POSITIVE, UNIT = 0, 1, 2  # support of a data coordinate, judged from simulated values
PROPOSAL_INFLATION = 1.5  # proposal scale over the simulated spread, so the weights p/q stay bounded
MAX_CROSS = 10  # largest case (or latent) dimension for which the off-diagonal identities are formed


@dataclass(frozen=True)
class Sizes:
    """How many draws of each kind (static: they fix the compiled program's shapes)."""

    num_latents: int
    num_fit: int
    num_data: int
    num_proposals: int
    num_prior: int
    prior_fit: int
    prior_normalization: bool
    batch: int | None  # latents per step of a sequential map; None: all at once


@dataclass(frozen=True)
class CaseLayout:
    """How a data set's leaves map to an (N, d) array of cases (static, hashable)."""

    treedef: object
    shapes: tuple  # per-leaf shapes, leading axis N
    dtypes: tuple
    n: int
    single_term: bool = False  # log_likelihood returns one term for all N cases (Stan): cases are substituted

    @property
    def widths(self) -> tuple:
        return tuple(int(np.prod(s[1:], dtype=int)) for s in self.shapes)

    @property
    def d(self) -> int:
        return sum(self.widths)

    @property
    def discrete(self) -> tuple:
        return tuple(not jnp.issubdtype(t, jnp.floating) for t in self.dtypes)

    def flatten(self, data, dtype):
        leaves = jax.tree.leaves(data)
        return jnp.concatenate([jnp.reshape(x, (self.n, -1)).astype(dtype) for x in leaves], axis=1)

    def unflatten(self, flat):
        cuts = np.cumsum((0,) + self.widths)
        leaves = [jnp.reshape(flat[:, a:b], s).astype(t)
                  for a, b, s, t in zip(cuts[:-1], cuts[1:], self.shapes, self.dtypes, strict=False)]
        return jax.tree.unflatten(self.treedef, leaves)


@dataclass(frozen=True)
class LatentLayout:
    """The floating-point leaves of a latent as one vector (integer leaves are held fixed)."""

    treedef: object
    shapes: tuple
    floating: tuple  # per leaf

    @property
    def d(self) -> int:
        return sum(int(np.prod(s, dtype=int)) for s, f in zip(self.shapes, self.floating, strict=False) if f)

    def split(self, latent):
        leaves = jax.tree.leaves(latent)
        flat = [jnp.ravel(x) for x, f in zip(leaves, self.floating, strict=False) if f]
        return jnp.concatenate(flat) if flat else jnp.zeros((0,)), leaves

    def merge(self, flat, leaves):
        out, at = [], 0
        for x, s, f in zip(leaves, self.shapes, self.floating, strict=False):
            if f:
                size = int(np.prod(s, dtype=int))
                out.append(jnp.reshape(flat[at:at + size], s).astype(x.dtype))
                at += size
            else:
                out.append(x)
        return jax.tree.unflatten(self.treedef, out)


# ------------------------------------------------------------------------------------------------ pieces

def _support(values, axis):
    """REAL, POSITIVE or UNIT per coordinate: the smallest set holding every simulated value."""
    positive = jnp.all(values > 0, axis=axis)
    unit = positive & jnp.all(values < 1, axis=axis)
    return jnp.where(unit, UNIT, jnp.where(positive, POSITIVE, REAL))


def _to_u(y, support):
    """The coordinate on which the proposal is a Student-t: y, log y or logit y."""
    safe_pos = jnp.where(support == REAL, 1.0, y)
    safe_unit = jnp.where(support == UNIT, y, 0.5)
    return jnp.where(support == REAL, y, jnp.where(support == POSITIVE, jnp.log(safe_pos),
                                                   jnp.log(safe_unit) - jnp.log1p(-safe_unit)))


def _from_u(u, support):
    """Inverse of :func:`_to_u` and ``log |du/dy|`` at the result."""
    y = jnp.where(support == REAL, u, jnp.where(support == POSITIVE, jnp.exp(u), jax.nn.sigmoid(u)))
    log_jac = jnp.where(support == REAL, 0.0, jnp.where(support == POSITIVE, -u,
                                                        jax.nn.softplus(u) + jax.nn.softplus(-u)))
    return y, log_jac


def _weights_h(y, support):
    """Stein weight ``h(y)`` vanishing at the support's boundaries, and ``h'(y)`` (1 and 0 on the real line)."""
    one = jnp.ones_like(y)
    h = jnp.where(support == REAL, one, jnp.where(support == POSITIVE, y**2, y**2 * (1 - y) ** 2))
    dh = jnp.where(support == REAL, 0 * y, jnp.where(support == POSITIVE, 2 * y, 2 * y * (1 - y) * (1 - 2 * y)))
    return h, dh


def _stein(y, score, m, support, cross):
    """Per draw: ``T1 = h' + h s`` (mean 0) and ``G_jk = (y_j - m_j) T1_k + delta_jk h_k`` (mean 0).

    ``y``, ``score`` (..., d); ``m`` (d,); returns T1 (..., d) and G (..., d, d), or its diagonal when not
    ``cross``. Both are integration by parts of ``d/dy_k [phi(y) h_k(y_k) p(y)]`` over ``y_k``.
    """
    h, dh = _weights_h(y, support)
    t1 = dh + h * score
    c = y - m
    if cross:
        g = c[..., :, None] * t1[..., None, :] + h[..., None, :] * jnp.eye(y.shape[-1], dtype=y.dtype)
    else:
        g = c * t1 + h
    return t1, g


def _cell(t, axis=0):
    """Mean over draws and the unbiased estimate of its square, ``((sum t)^2 - sum t^2) / (M (M - 1))``."""
    m = t.shape[axis]
    total = jnp.sum(t, axis=axis)
    return total / m, (total**2 - jnp.sum(t**2, axis=axis)) / (m * (m - 1))


def _sd(t, axis=0):
    sd = jnp.std(t, axis=axis, ddof=1)
    return jnp.where(sd > 0, sd, 1.0)


def _proposal(key, fit, support, num):
    """``num`` draws from a product of Student-t(2) fitted to ``fit`` (axis 0) on the u scale, and log q.

    Location: the median; scale: 1.5 times the interquartile range over 1.349 (robust to heavy tails). t(2)
    is a normal over the root of an Exp(1), so no gamma sampler is compiled. Also returns ``m``, the median
    in the data's own coordinates (the centre of the score identities).
    """
    u = _to_u(fit, support)
    q25, loc, q75 = jnp.quantile(u, jnp.asarray([0.25, 0.5, 0.75], u.dtype), axis=0)
    floor = jnp.sqrt(jnp.finfo(u.dtype).eps) * (1 + jnp.abs(loc))
    scale = jnp.maximum(PROPOSAL_INFLATION * (q75 - q25) / 1.349, floor)
    k1, k2 = jax.random.split(key)
    shape = (num,) + fit.shape[1:]
    t = jax.random.normal(k1, shape, u.dtype) / jnp.sqrt(jax.random.exponential(k2, shape, u.dtype))
    y, log_jac = _from_u(loc + scale * t, support)
    log_t2 = -1.5 * jnp.log1p(t**2 / 2) - math.log(2 * math.sqrt(2))
    log_q = jnp.sum(log_t2 - jnp.log(scale) + log_jac, axis=-1)
    return y, log_q, _from_u(loc, support)[0]


def _importance(log_p, y, log_q):
    """``p / q`` per draw, 0 where the proposal left the floating-point range."""
    return jnp.exp(jnp.where(jnp.all(jnp.isfinite(y), axis=-1), log_p - log_q, -jnp.inf))


def _mixed(y):
    """Two data sets mixed case by case from ``y[0:2]`` and ``y[2:4]``, and the masks (True: from the first).

    The first mix alternates cases, the second follows the order of two other simulated values, so a term
    that reads a neighbouring case, or any other, sees a changed input.
    """
    masks = jnp.stack([jnp.arange(y.shape[1]) % 2 == 0, y[4, :, 0] > y[5, :, 0]])
    return jnp.where(masks[..., None], y[:2], y[2:4]), masks


# ---------------------------------------------------------------------------------------- the program

# Compiled with a run's options (LLVM at level 1): XLA's default level took 17.1 s to compile a negative binomial
# program's cells at the default sizes, level 1 12.7 s, and both run it in 0.43 s (level 0: 4.4 s, but 2.4 s a run).
@jit_static(static=("model", "cases", "latent", "sizes"), options=RUN_COMPILE)
def cells(key, *, model, cases, latent, sizes):
    """All cell statistics of one call; ``cases`` (``latent``) is None when the likelihood (prior) is not
    checked. One set of prior draws serves both: the first ``num_latents`` condition the likelihood."""
    k_draw, k_like, k_prior = jax.random.split(key, 3)
    total = sizes.num_latents + sizes.prior_fit + sizes.num_prior
    draws = jax.vmap(model.sample_prior)(jax.random.split(k_draw, total))
    out = {}
    if latent is not None:
        out.update(_prior(k_prior, model, latent, sizes, jax.tree.map(lambda v: v[sizes.num_latents:], draws)))
    if cases is not None:
        latents = jax.tree.map(lambda v: v[:sizes.num_latents], draws)
        out.update(_likelihood(k_like, model, cases, sizes, latents))
    return out


def _likelihood(key, model, cases, sizes, latents):
    k_fit, k_rest = jax.random.split(key)
    # Discrete values travel as floats of the active dtype: equality stays exact and moments do not overflow.
    discrete = all(cases.discrete)
    dtype = jnp.result_type(float) if discrete else jnp.result_type(*cases.dtypes)
    keys = jax.random.split(k_rest, sizes.num_latents)

    def simulate(ks, x):
        return jax.vmap(lambda kk: cases.flatten(model.sample_data(kk, x), dtype))(ks)

    # Each latent's data sets: ``num_fit`` from its key of ``k_fit`` (they shape the proposal, or form the seen
    # support) and ``num_data`` fresh ones from its cell's key (a continuous cell splits off its proposal's key
    # first). Drawn in one batched call where all latents fit in memory at once, so the program holds the
    # simulator once, not twice (a negative binomial's cells compiled in 2.2 s rather than 3.4 s at level 0).
    fit_keys = jax.vmap(lambda k: jax.random.split(k, sizes.num_fit))(jax.random.split(k_fit, sizes.num_latents))
    if sizes.batch is None:
        data_keys = keys if discrete else jax.vmap(lambda k: jax.random.split(k)[0])(keys)
        fresh_keys = jax.vmap(lambda k: jax.random.split(k, sizes.num_data))(data_keys)
        drawn = jax.vmap(simulate)(jnp.concatenate([fit_keys, fresh_keys], axis=1), latents)
        fit, fresh = drawn[:, :sizes.num_fit], drawn[:, sizes.num_fit:]
    else:  # large data sets: each cell draws its fresh data sets inside the sequential map
        fit, fresh = jax.vmap(simulate)(fit_keys, latents), None
    if discrete:
        cell = _discrete_latent_substituted if cases.single_term else _discrete_latent
        one = partial(cell, model=model, cases=cases, sizes=sizes, simulate=simulate)
        out = _map(one, (keys, latents, fit, fresh), sizes.batch)
        out["binary"] = jnp.all((fit == 0) | (fit == 1), axis=(0, 1))
        return out
    support = _support(fit, axis=(0, 1))  # over every latent and draw, so one proposal family per coordinate
    one = partial(_continuous_latent, model=model, cases=cases, sizes=sizes, support=support, simulate=simulate)
    out = _map(one, (keys, latents, fit, fresh), sizes.batch)
    out["support_kind"] = support
    return out


def _map(fn, xs, batch):
    """``vmap`` over latents, or ``lax.map`` in batches when the arrays would be large (it compiles slower)."""
    return jax.vmap(fn)(xs) if batch is None else jax.lax.map(fn, xs, batch_size=batch)


def _fresh(drawn, simulate, key, x, num):
    """A cell's ``num`` fresh data sets: those drawn with every latent's (their keys split from ``key``), or,
    when the map runs in batches, drawn here."""
    return simulate(jax.random.split(key, num), x) if drawn is None else drawn


def _coupling(terms, mixed, masks):
    """Largest relative change of a term between a data set and a case-wise mix of two: 0 when term ``i``
    reads only case ``i``."""
    expected = jnp.where(masks, terms[:2], terms[2:4])
    diff = jnp.where(mixed == expected, 0.0, jnp.abs(mixed - expected) / (1 + jnp.abs(expected)))
    return jnp.max(jnp.where(jnp.isnan(diff), 0.0, diff))


def _continuous_latent(args, *, model, cases, sizes, support, simulate):
    key, x, fit, y = args  # fit: (F, N, d) simulated cases, used only to shape the proposal and the scales
    k_data, k_prop = jax.random.split(key)
    f, m, k = sizes.num_fit, sizes.num_data, sizes.num_proposals
    cross = cases.d <= MAX_CROSS
    y = _fresh(y, simulate, k_data, x, m)
    yp, log_q, centre = _proposal(k_prop, fit, support, k)
    mixed, masks = _mixed(y)
    batch = jnp.concatenate([fit, y, jnp.where(jnp.isfinite(yp), yp, 0.0), mixed])

    def summed(flat):
        terms = model.log_likelihood(x, cases.unflatten(flat))
        return jnp.sum(terms), terms

    # One traced gradient for every data set of this latent (the proposals' gradients go unused).
    (_, terms), scores = jax.vmap(jax.value_and_grad(summed, has_aux=True))(batch)
    t1_fit, g_fit = _stein(fit, scores[:f], centre, support, cross)
    t1, g = _stein(y, scores[f:f + m], centre, support, cross)
    t1, g = t1 / _sd(t1_fit), g / _sd(g_fit)  # each cell standardized by draws independent of its own
    own = terms[:f + m]
    out = {"bad": jnp.sum(~(own > -jnp.inf)) + jnp.sum(~jnp.isfinite(scores[:f + m])),
           "coupling": _coupling(terms[f:f + 4], terms[f + m + k:], masks)}
    out["t1_mean"], out["t1_u"] = _cell(t1)
    out["g_mean"] = jnp.mean(g, axis=0)
    _, out["g_u"] = _cell(jnp.diagonal(g, axis1=-2, axis2=-1) if cross else g)
    out["w_mean"] = jnp.mean(_importance(terms[f + m:f + m + k], yp, log_q), axis=0)  # (N,)
    return out


def _discrete_latent(args, *, model, cases, sizes, simulate):
    key, x, seen, y = args  # seen: (F, N, d) simulated cases whose distinct values form the seen support
    f, m = sizes.num_fit, sizes.num_data
    y = _fresh(y, simulate, key, x, m)  # (M, N, d)
    mixed, masks = _mixed(y)
    terms = jax.vmap(lambda flat: model.log_likelihood(x, cases.unflatten(flat)))(
        jnp.concatenate([seen, y, mixed]))
    p = jnp.exp(terms[:f]) / _multiplicity(seen)  # each distinct value counted once
    inside = _inside(y, seen)
    own = terms[:f + m]
    out = {"bad": jnp.sum(~(own > -jnp.inf)), "mass": jnp.sum(p, axis=0), "outside": jnp.sum(~inside, axis=0),
           "coupling": _coupling(terms[f:f + 4], terms[f + m:], masks)}
    return out | _seen_moments(p, seen, y, inside)


def _discrete_latent_substituted(args, *, model, cases, sizes, simulate):
    """:func:`_discrete_latent` for a likelihood reported as one term for all cases (Stan). Case ``i`` of a
    simulated data set ``y0`` is replaced by each seen value ``v`` in turn: when the term is a sum over cases,
    ``L(y0 with y_i = v) - L(y0) = log p(v | x) - log p(y0_i | x)``, the pmf on the seen support up to a constant
    per case, which is all the moment tests need. The constants multiply to ``exp(L(y0))``, so the pmf's mass on
    the seen supports of all cases together is known: the share of fresh data sets whose every case lies in its
    seen support (normalization, one cell per latent). That the term is such a sum is checked on a data set
    mixed case by case from two others (``coupling``)."""
    key, x, seen, y = args
    m, n = sizes.num_data, cases.n
    y = _fresh(y, simulate, key, x, m)
    base = seen[0]

    def total(flat):
        return model.log_likelihood(x, cases.unflatten(flat))[0]

    def substituted(value, i, into):
        return total(into.at[i].set(value))

    cases_i = jnp.arange(n)
    # (F, N): every seen value of every case put into the base data set.
    log_ratio = jax.vmap(jax.vmap(substituted, in_axes=(0, 0, None)), in_axes=(0, None, None))(
        seen, cases_i, base)
    mixed, masks = _mixed(y)
    own = jax.vmap(total)(jnp.concatenate([seen[:1], y, mixed]))  # base, fresh data sets, the two mixes
    log_ratio = log_ratio - own[0]
    # Separability: L(mix) - L(A) against the sum of single substitutions of B's cases into A, for both mixes
    # (the first alternates cases, so only the second puts neighbouring cases of B side by side).
    swaps = jax.vmap(jax.vmap(substituted, in_axes=(0, 0, None)), in_axes=(0, None, 0))(
        y[2:4], cases_i, y[:2]) - own[1:3, None]
    predicted = own[1:3] + jnp.sum(jnp.where(masks, 0.0, swaps), axis=1)
    coupling = jnp.max(jnp.abs(own[-2:] - predicted) / (1 + jnp.abs(own[-2:])))
    count = _multiplicity(seen)
    top = jnp.max(log_ratio, axis=0)
    p = jnp.exp(log_ratio - top) / count  # the pmf on each case's seen support, up to a factor per case
    log_mass = own[0] + jnp.sum(top + jnp.log(jnp.sum(p, axis=0)))  # sum_i log(pmf mass on case i's support)
    inside = _inside(y, seen)
    # A seen value of zero density (or NaN) is the simulator's value the density rules out.
    out = {"bad": jnp.sum(~(own[:m + 1] > -jnp.inf)) + jnp.sum(~(log_ratio > -jnp.inf)),
           "mass": jnp.exp(log_mass)[None], "outside": jnp.sum(~jnp.all(inside, axis=1))[None],
           "coupling": jnp.where(jnp.isfinite(coupling), coupling, jnp.inf)}
    return out | _seen_moments(p, seen, y, inside)


def _multiplicity(seen):
    """(F, N): how many of the F seen draws of each case share each one's value."""
    return jnp.sum(jnp.all(seen[:, None] == seen[None, :], axis=-1), axis=1)


def _inside(y, seen):
    """(M, N): whether each fresh draw of each case equals one of that case's seen draws."""
    return jnp.any(jnp.all(y[:, None] == seen[None, :], axis=-1), axis=1)


def _seen_moments(p, seen, y, inside):
    """Residual sums of the fresh draws' first and second moments against the pmf renormalized on the seen
    support, with their variances.

    ``p`` (F, N) is the pmf (or a positive multiple of it per case) at each seen draw, each distinct value counted
    once. The fresh draws that fall in the seen support, which was drawn independently of them, follow exactly
    the pmf renormalized on it: residuals ``y - mean`` inside, 0 outside, sum to mean 0 with variance (draws
    inside) x var. Draws outside feed the normalization test. (Counting them against the renormalized moments
    biased every count model: the tails a seen support misses are not symmetric, and a correct Poisson model
    failed its mean test at p = 2e-37.) Residuals stay on the data's own scale, summed over their known variance:
    standardized by the pmf's sd they are extremely skewed where one value is nearly certain (a rare draw far out,
    many tiny ones the other way), which broke a t-test over cells; bounded residuals summed over their variance
    are normal.
    """
    mass = jnp.sum(p, axis=0)
    norm = jnp.where(mass > 0, mass, 1.0)[:, None]
    mean, second = (jnp.sum(p[..., None] * seen**j, axis=0) / norm for j in (1, 2))
    # Central moments summed directly: second - mean^2 cancels catastrophically when one value holds nearly
    # all the mass (a logistic regression's extreme logits).
    var1 = jnp.sum(p[..., None] * (seen - mean) ** 2, axis=0) / norm
    var2 = jnp.sum(p[..., None] * (seen**2 - second) ** 2, axis=0) / norm
    sd1, sd2 = jnp.sqrt(var1), jnp.sqrt(var2)
    counted = jnp.sum(inside, axis=0)[:, None]  # (N, 1)
    r1 = jnp.where(inside[..., None] & (sd1 > 0), y - mean, 0.0)
    r2 = jnp.where(inside[..., None] & (sd2 > 0), y**2 - second, 0.0)
    return {"m1_sum": jnp.sum(r1, axis=0), "m1_var": counted * jnp.where(sd1 > 0, var1, 0.0),
            "m2_sum": jnp.sum(r2, axis=0), "m2_var": counted * jnp.where(sd2 > 0, var2, 0.0),
            "m1_u": _cell(r1)[1], "m2_u": _cell(r2)[1]}


def _prior(key, model, latent, sizes, draws):
    """The prior's score identities over its floating-point coordinates and, when asked, its normalization."""
    flat, leaves = jax.vmap(latent.split)(draws)
    fit = flat[:sizes.prior_fit]
    support = _support(fit, axis=0) if sizes.prior_normalization else jnp.full(flat.shape[-1], REAL)
    xp, log_q, centre = _proposal(key, fit, support, sizes.num_prior)
    if sizes.prior_normalization:  # every leaf is floating point: nothing is held
        flat = jnp.concatenate([flat, jnp.where(jnp.isfinite(xp), xp, 0.0)])
        leaves = jax.tree.map(lambda v: jnp.concatenate([v, v[:sizes.num_prior]]), leaves)

    def log_prior(v, held):
        return model.log_prior(latent.merge(v, held))

    lp, s = jax.vmap(jax.value_and_grad(log_prior))(flat, leaves)
    n0, n1 = sizes.prior_fit, sizes.prior_fit + sizes.num_prior
    t1, g = _stein(flat[n0:n1], s[n0:n1], centre, jnp.full(flat.shape[-1], REAL), latent.d <= MAX_CROSS)
    out = {"prior_bad": jnp.sum(~(lp[:n1] > -jnp.inf)) + jnp.sum(~jnp.isfinite(s[:n1])),
           "prior_t1_mean": jnp.mean(t1, 0), "prior_t1_sd": jnp.std(t1, 0, ddof=1),
           "prior_g_mean": jnp.mean(g, 0), "prior_g_sd": jnp.std(g, 0, ddof=1)}
    if latent.d <= MAX_CROSS:
        out["prior_fit"] = fit  # the host looks for a degenerate (e.g. simplex) prior
    if sizes.prior_normalization:
        out["prior_w"] = _importance(lp[n1:], xp, log_q)
    return out
