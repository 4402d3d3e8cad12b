"""Simulator against density for a model without conditionals: forward simulation only, no kernel.

The conditional-vs-joint check needs a model's conditionals and Geweke needs a kernel; a program in a PPL has
neither. What every model has is a simulator (``sample_prior``, ``sample_data``) and a log density
(``log_prior``, ``log_likelihood``), and both must describe one distribution. Latents ``x`` are drawn from
the prior simulator, data sets from ``sample_data(x)``, and three families of identities are tested:

- **normalization** of each likelihood term: ``int p(y_i | x) dy_i = 1``, by importance sampling from a
  Student-t fitted to the simulated ``y_i`` (continuous data), or as the pmf summed over the values seen in
  simulation, whose shortfall must match the share of fresh draws outside them (discrete data; for a likelihood
  reported as one term, Stan's, the mass on all cases' seen values at once). It sees a wrong constant.
- **score (Stein) identities** under the simulator, for continuous data: ``E[d/dy log p(y|x)] = 0`` and
  ``E[(y_j - m_j) d/dy_k log p(y|x)] = -delta_jk`` (gradients by ``jax.grad`` with respect to the data; on
  data that are all positive, or all in (0, 1), with a weight vanishing at the boundary). They see a
  simulator and a density that disagree in location, scale or correlation. For discrete data the fresh draws
  that land on the seen values are compared with the first and second moments of the pmf renormalized on them,
  which they follow exactly (the seen values being drawn independently of them). A likelihood reported as one
  term for all cases is evaluated with each seen value of each case substituted into a simulated data set: the
  change is that case's log pmf up to a constant.
- the same for the **prior**: its score identities on the floating-point latents, and its normalization when
  the latent dimension is small.

Each test is a t-test over independent cells (one latent, one case), pooled and per case or coordinate;
"spread" tests average an unbiased estimate of each cell's squared mean, so disagreements whose sign varies
from cell to cell (a wrong sign in a regression) do not cancel. The verdict is Holm's procedure at ``level``
over every test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy import stats

from ..contracts.model import n_cases
from ..errors import BDMCError
from .simulator_density_cells import MAX_CROSS, CaseLayout, LatentLayout, Sizes, cells

LEVEL = 0.01
COLUMNS = ["part", "test", "where", "estimate", "stderr", "statistic", "p_value", "cells", "fired"]


@dataclass(frozen=True)
class SimulatorDensityResult:
    """Every test of :func:`simulator_density`, its p-value and whether Holm's procedure rejects it.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per test: ``part`` (likelihood or prior), ``test``, ``where`` (all cases, a case, a
        coordinate), ``estimate`` (the mean of the identity's terms; for normalization the log of the
        estimated integral), ``stderr``, ``statistic`` (t), ``p_value``, ``cells`` and ``fired``.
    level : float
        Family-wise false-alarm rate of the verdict.
    not_checked : tuple of (what, why)
    settings : dict
    """

    table: pd.DataFrame = field(repr=False)
    level: float
    not_checked: tuple
    settings: dict = field(repr=False)

    @property
    def verdict(self) -> str:
        """``"inconsistent"`` when any test is rejected, else ``"consistent"``."""
        return "inconsistent" if bool(self.table["fired"].any()) else "consistent"

    @property
    def p_values(self) -> pd.Series:
        """Each test's p-value, indexed ``"part: test (where)"``."""
        t = self.table
        return pd.Series(t["p_value"].to_numpy(), index=t["part"] + ": " + t["test"] + " (" + t["where"] + ")")

    @property
    def fired(self) -> pd.DataFrame:
        """The rejected tests, smallest p-value first."""
        return self.table[self.table["fired"]].sort_values("p_value")

    def message(self) -> str:
        lines = [f"simulator vs density: {self.verdict} at level {self.level:g} (Holm over {len(self.table)} tests)"]
        for row in self.fired.head(8).itertuples():
            lines.append(f"  {row.part}: {row.test} ({row.where}): estimate {row.estimate:+.4g} "
                         f"+- {row.stderr:.2g}, p = {row.p_value:.2g}")
        for what, why in self.not_checked:
            lines.append(f"  not checked: {what}: {why}")
        return "\n".join(lines)


def simulator_density(
    key,
    model,
    *,
    num_latents: int = 64,
    num_data: int = 64,
    num_proposals: int = 64,
    num_prior: int = 4000,
    max_prior_dim: int = 10,
    level: float = LEVEL,
) -> SimulatorDensityResult:
    """Test a model's simulator against its log density, without conditionals or a kernel.

    Parameters
    ----------
    key : PRNG key
    model : Model
        Needs only ``sample_prior``, ``sample_data``, ``log_prior`` and ``log_likelihood`` (one term per
        case, the case being the leading axis of every data leaf, and term ``i`` depending on case ``i``
        only: checked by mixing simulated data sets case by case). A likelihood of one term for all cases (Stan)
        is checked on discrete data, as a sum of case terms (checked too).
    num_latents : int
        Prior draws ``x`` at which the likelihood is tested (the cells of the per-case tests).
    num_data : int
        Data sets simulated per latent for the identities; as many again shape the proposals and scales
        (continuous) or form the seen support (discrete).
    num_proposals : int
        Importance draws per latent for the normalization of continuous likelihood terms.
    num_prior : int
        Prior draws for the prior's identities, and importance draws for its normalization.
    max_prior_dim : int
        Largest latent dimension whose prior normalization is estimated.
    level : float
        Family-wise false-alarm rate (Holm over every test).

    Returns
    -------
    SimulatorDensityResult
    """
    for name, value, least in (("num_latents", num_latents, 2), ("num_data", num_data, 8),
                               ("num_proposals", num_proposals, 2), ("num_prior", num_prior, 8)):
        if int(value) < least:
            raise BDMCError(f"simulator_density needs {name} >= {least}, got {value}")
    if not 0 < level < 1:
        raise BDMCError(f"level must lie in (0, 1), got {level}")
    dtype_eps = float(jnp.finfo(jnp.result_type(float)).eps)
    not_checked: list[tuple[str, str]] = []
    cases = _case_layout(model, not_checked)
    latent = _latent_layout(model, not_checked)
    prior_norm = latent is not None and _prior_normalizable(latent, max_prior_dim, not_checked)
    sizes = Sizes(num_latents=int(num_latents), num_fit=int(num_data), num_data=int(num_data),
                  num_proposals=int(num_proposals), num_prior=int(num_prior), prior_fit=max(int(num_prior) // 4, 64),
                  prior_normalization=bool(prior_norm), batch=_batch(cases, num_latents, num_data, num_proposals))
    out = jax.tree.map(np.asarray, cells(key, model=model, cases=cases, latent=latent, sizes=sizes))
    rows: list[dict] = []
    if cases is not None:
        # A single term is checked as a sum of N differences of whole-data evaluations, each of which can cancel
        # (a Poisson log pmf's terms are far larger than their sum): its tolerance is N sqrt(eps), not N eps
        # (1.7e-12 relative was met on a correct 112-case Stan Poisson regression in float64).
        single_tol = cases.n * float(np.sqrt(dtype_eps))
        if float(np.max(out["coupling"])) > (single_tol if cases.single_term else 64 * dtype_eps):
            not_checked.append(("likelihood", "the log likelihood is not a sum of one term per data case (the "
                                              "single term of all cases does not add up case by case)"
                                if cases.single_term else
                                "term i changes with data cases other than case i, so the "
                                "per-case normalization and identities do not apply"))
        elif all(cases.discrete):
            rows += _discrete_rows(out, _coordinate_names(model, cases),
                                   single_tol if cases.single_term else 256 * dtype_eps, sizes.num_data,
                                   jointly=cases.single_term)
            if cases.single_term:
                not_checked.append(("likelihood normalization per case", "one log-likelihood term for all cases "
                                    "gives each case's pmf up to a constant: their mass is tested jointly"))
        else:
            scores = _data_gradient_agrees(jax.random.fold_in(key, 7), model)
            if not scores:
                not_checked.append(("likelihood score identities", "the log likelihood's autodiff gradient in the "
                                    "data disagrees with a finite difference (a PPL evaluated outside JAX gives "
                                    "none); the normalization tests remain"))
            rows += _continuous_rows(out, _coordinate_names(model, cases), not_checked, scores=scores)
    if latent is not None:
        rows += _prior_rows(out, _latent_names(latent, model), sizes, not_checked)
    table = pd.DataFrame(rows, columns=COLUMNS[:-1])
    table["fired"] = holm(table["p_value"].to_numpy(), level)
    settings = dict(num_latents=sizes.num_latents, num_data=sizes.num_data, num_proposals=sizes.num_proposals,
                    num_prior=sizes.num_prior, prior_fit=sizes.prior_fit, max_prior_dim=int(max_prior_dim),
                    level=float(level))
    return SimulatorDensityResult(table=table, level=float(level), not_checked=tuple(not_checked), settings=settings)


# ------------------------------------------------------------------------------------------ statistics

def holm(p_values, level: float) -> np.ndarray:
    """Holm's step-down rejections at family-wise level ``level`` (NaN p-values count as 0)."""
    p = np.nan_to_num(np.asarray(p_values, np.float64), nan=0.0)
    order = np.argsort(p)
    thresholds = level / (len(p) - np.arange(len(p)))
    passed = p[order] <= thresholds
    k = len(p) if passed.all() else int(np.argmin(passed))
    fired = np.zeros(len(p), bool)
    fired[order[:k]] = True
    return fired


def _t_test(values, *, one_sided: bool = False, centre: float = 0.0):
    """(mean, stderr, t, p) of H0: E[values] = centre over independent cells (non-finite cells: p = 0)."""
    v = np.asarray(values, np.float64).ravel()
    n = v.size
    if not np.all(np.isfinite(v)):
        return float(np.nanmean(v)), float("nan"), float("nan"), 0.0, n
    mean = float(v.mean())
    se = float(v.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    if se == 0.0:
        off = abs(mean - centre) > 1e-12 * (1 + abs(centre))
        return mean, se, float("inf") if off else 0.0, (0.0 if off and (mean > centre or not one_sided) else 1.0), n
    t = (mean - centre) / se
    p = stats.t.sf(t, n - 1) if one_sided else 2 * stats.t.sf(abs(t), n - 1)
    return mean, se, t, float(p), n


def _z_test(sums, variances):
    """(mean residual, stderr, z, p) of H0: the summed residuals have mean 0, with their variance known from the
    pmf; cells with no spread are left out (their residuals are 0)."""
    s, v = np.asarray(sums, np.float64).ravel(), np.asarray(variances, np.float64).ravel()
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(v))):
        return float("nan"), float("nan"), float("nan"), 0.0, s.size
    total, var = float(s.sum()), float(v.sum())
    if var <= 0.0:
        return 0.0, 0.0, 0.0, float(total == 0.0), s.size
    z = total / np.sqrt(var)
    return total / s.size, float(np.sqrt(var)) / s.size, float(z), float(2 * stats.norm.sf(abs(z))), s.size


def _row(part, test, where, result, *, estimate=None):
    mean, se, t, p, n = result
    return dict(part=part, test=test, where=where, estimate=mean if estimate is None else estimate, stderr=se,
                statistic=t, p_value=p, cells=n)


def _support_row(part, bad):
    bad = int(np.sum(bad))
    return dict(part=part, test="support", where="simulated draws", estimate=float(bad), stderr=0.0,
                statistic=float(bad), p_value=0.0 if bad else 1.0, cells=1)


def _normalization_row(part, where, w_mean, *, one_sided=False):
    r = _t_test(w_mean, centre=1.0, one_sided=one_sided)
    mean, se = r[0], r[1]
    log_z = float(np.log(mean)) if mean > 0 else -np.inf
    return dict(part=part, test="normalization", where=where, estimate=log_z,
                stderr=se / mean if mean > 0 else float("nan"), statistic=r[2], p_value=r[3], cells=r[4])


def _data_gradient_agrees(key, model, *, tries: int = 3) -> bool:
    """Whether ``jax.grad`` of the log likelihood in the data matches a central finite difference along a random
    direction, at one of ``tries`` simulated data sets (an adapter that calls a PPL outside JAX returns a zero data
    gradient everywhere; a steep likelihood may defeat the finite difference at one point, rarely at all)."""
    for k in jax.random.split(key, tries):
        k1, k2, k3 = jax.random.split(k, 3)
        latent = model.sample_prior(k1)
        data = model.sample_data(k2, latent)
        leaves, treedef = jax.tree.flatten(data)
        noise = zip(jax.random.split(k3, len(leaves)), leaves, strict=False)
        direction = jax.tree.unflatten(treedef, [jax.random.normal(kk, x.shape, x.dtype) for kk, x in noise])

        def total(d, latent=latent):
            return jnp.sum(model.log_likelihood(latent, d))

        scale = 1.0 + max(float(jnp.max(jnp.abs(x))) for x in leaves)
        eps = scale * float(jnp.finfo(leaves[0].dtype).eps) ** (1 / 3)
        ends = [float(total(jax.tree.map(lambda x, v, sign=sign, eps=eps: x + sign * eps * v, data, direction)))
                for sign in (1.0, -1.0)]
        finite = (ends[0] - ends[1]) / (2 * eps)
        grad = jax.grad(total)(data)
        auto = float(sum(jnp.sum(g * v)
                         for g, v in zip(jax.tree.leaves(grad), jax.tree.leaves(direction), strict=False)))
        if np.isfinite(finite) and np.isfinite(auto) and \
                abs(auto - finite) <= 0.05 * max(abs(auto), abs(finite)) + 1e-6 * scale:
            return True
    return False


def _continuous_rows(out, names, not_checked, *, scores: bool = True):
    d = len(names)
    t1m, t1u, gm, gu, w = out["t1_mean"], out["t1_u"], out["g_mean"], out["g_u"], out["w_mean"]
    cross = gm.ndim == 4
    gd = np.diagonal(gm, axis1=-2, axis2=-1) if cross else gm  # (L, N, d)
    part = "likelihood"
    rows = [_support_row(part, out["bad"]), _normalization_row(part, "all cases", w)]
    if not scores:
        return rows + [_normalization_row(part, f"case {i}", w[:, i]) for i in range(w.shape[1])]
    rows += [_row(part, "score mean", "all cases", _t_test(t1m)),
             _row(part, "score mean spread", "all cases", _t_test(t1u, one_sided=True)),
             _row(part, "score scale", "all cases", _t_test(gd)),
             _row(part, "score scale spread", "all cases", _t_test(gu, one_sided=True))]
    if d > 1:
        for j, name in enumerate(names):
            rows += [_row(part, "score mean", name, _t_test(t1m[..., j])),
                     _row(part, "score mean spread", name, _t_test(t1u[..., j], one_sided=True)),
                     _row(part, "score scale", name, _t_test(gd[..., j]))]
        if cross:
            rows += [_row(part, "score cross", f"{names[j]}, {names[k]}", _t_test(gm[..., j, k]))
                     for j in range(d) for k in range(d) if j != k]
        else:
            not_checked.append(("likelihood score cross terms", f"a case has {d} > {MAX_CROSS} coordinates"))
    for i in range(w.shape[1]):
        rows += [_normalization_row(part, f"case {i}", w[:, i]),
                 _row(part, "score mean spread", f"case {i}", _t_test(t1u[:, i], one_sided=True)),
                 _row(part, "score scale", f"case {i}", _t_test(gd[:, i]))]
    return rows


def _discrete_rows(out, names, tol, num_data, *, jointly=False):
    mass, outside = out["mass"], out["outside"]  # (L, N), or (L, 1) for all cases jointly
    binary = bool(np.all(out["binary"]))
    part = "likelihood"

    def normalization(where, m, x):
        # Fresh draws outside the seen values: Poisson-binomial with mean num_data * sum(1 - mass) when the
        # pmf is right; a Poisson tail of that mean (its variance is no smaller), two-sided.
        lam, x = float(num_data * np.sum(np.clip(1 - m, 0, None))), int(np.sum(x))
        if np.any(m > 1 + tol) or not np.all(np.isfinite(m)):  # more probability than there is on seen values
            p = 0.0
        elif lam == 0:
            p = 0.0 if x else 1.0
        else:
            p = min(1.0, 2 * min(stats.poisson.cdf(x, lam), stats.poisson.sf(x - 1, lam)))
        z = float(np.mean(m)) + x / (num_data * m.size)
        test = "normalization (seen supports, all cases jointly)" if jointly else "normalization (seen support)"
        return dict(part=part, test=test, where=where,
                    estimate=float(np.log(z)) if z > 0 else -np.inf,
                    stderr=float(np.sqrt(max(lam, x, 1)) / (num_data * m.size)),
                    statistic=float(x - lam), p_value=float(p), cells=int(m.size))

    moments = [("mean", "m1")] + ([] if binary else [("second moment", "m2")])
    rows = [_support_row(part, out["bad"]), normalization("all cases", mass, outside)]
    for label, k in moments:
        rows += [_row(part, label, "all cases", _z_test(out[f"{k}_sum"], out[f"{k}_var"])),
                 _row(part, f"{label} spread", "all cases", _t_test(out[f"{k}_u"], one_sided=True))]
        if len(names) > 1:
            rows += [_row(part, f"{label} spread", name, _t_test(out[f"{k}_u"][..., j], one_sided=True))
                     for j, name in enumerate(names)]
    for i in range(out["m1_u"].shape[1]):
        if not jointly:
            rows.append(normalization(f"case {i}", mass[:, i], outside[:, i]))
        rows += [_row(part, f"{label} spread", f"case {i}", _t_test(out[f"{k}_u"][:, i], one_sided=True))
                 for label, k in moments]
    return rows


def _prior_rows(out, names, sizes, not_checked):
    fit = out.get("prior_fit")
    if fit is not None and fit.shape[1] > 1 and not np.linalg.eigvalsh(np.corrcoef(fit, rowvar=False))[0] > 1e-8:
        not_checked.append(("prior", "its draws lie on a lower-dimensional set (e.g. a simplex): the prior has "
                                     "no density on the latent coordinates"))
        return []
    n, part = sizes.num_prior, "prior"

    def summary(mean, sd):
        se = sd / np.sqrt(n)
        if not (np.isfinite(mean) and np.isfinite(se)):
            return float(mean), float(se), float("nan"), 0.0, n
        if se == 0:
            return float(mean), 0.0, 0.0, float(mean == 0), n
        t = mean / se
        return float(mean), float(se), float(t), float(2 * stats.t.sf(abs(t), n - 1)), n

    rows = [_support_row(part, out["prior_bad"])]
    gm, gs = out["prior_g_mean"], out["prior_g_sd"]
    cross = gm.ndim == 2
    for j, name in enumerate(names):
        rows.append(_row(part, "score mean", name, summary(out["prior_t1_mean"][j], out["prior_t1_sd"][j])))
        jj = (j, j) if cross else (j,)
        rows.append(_row(part, "score scale", name, summary(gm[jj], gs[jj])))
    if cross:
        rows += [_row(part, "score cross", f"{names[j]}, {names[k]}", summary(gm[j, k], gs[j, k]))
                 for j in range(len(names)) for k in range(len(names)) if j != k]
    elif names:
        not_checked.append(("prior score cross terms", f"latent dimension {len(names)} > {MAX_CROSS}"))
    if "prior_w" in out:
        k_hat = _pareto_k(out["prior_w"])
        if k_hat > PARETO_K_MAX:
            not_checked.append(("prior normalization", f"the importance weights' Pareto k-hat is {k_hat:.2f} > "
                                f"{PARETO_K_MAX}: their mean and its standard error are unreliable (the fitted "
                                "proposal misses the prior's tails); raise num_prior or lower max_prior_dim"))
        else:
            # One-sided: in several dimensions a proposal fitted to prior draws can miss part of a heavy-tailed
            # prior's mass without its weights looking heavy-tailed (Pima's inverse-gamma scale: log Z -0.6 to
            # -0.7 on 2 of 30 correct seeds at 1,000 draws), so only mass above one is evidence of a bug.
            rows.append(_normalization_row(part, "all latents (mass above 1)", out["prior_w"], one_sided=True))
            not_checked.append(("prior normalization below 1", "importance sampling cannot tell missing prior "
                                "mass from a proposal that misses the prior's tails"))
    return rows


PARETO_K_MAX = 0.7  # Vehtari et al., Pareto smoothed importance sampling: above it the weights' mean is unreliable


def _pareto_k(weights) -> float:
    """PSIS's k-hat of importance weights (ArviZ); +inf when there are too few positive weights to fit a tail."""
    import arviz as az

    w = np.asarray(weights, np.float64).ravel()
    if np.sum(w > 0) < 20:
        return float("inf")
    with np.errstate(divide="ignore"):
        _, k = az.psislw(np.log(w))
    return float(k)


# ---------------------------------------------------------------------------------------------- layouts

def _case_layout(model, not_checked):
    latent = jax.eval_shape(model.sample_prior, jax.random.key(0))
    data = jax.eval_shape(model.sample_data, jax.random.key(0), latent)
    n = n_cases(model, data)
    leaves, treedef = jax.tree.flatten(data)
    shapes = tuple(tuple(x.shape) for x in leaves)
    dtypes = tuple(np.dtype(x.dtype) for x in leaves)
    leading = {s[0] if s else None for s in shapes}
    # One term for all cases (Stan reports no per-case terms): discrete cases are checked by substitution.
    single = n == 1 and len(leading) == 1 and None not in leading and leading != {1}
    if single and all(not jnp.issubdtype(t, jnp.floating) for t in dtypes):
        return CaseLayout(treedef, shapes, dtypes, shapes[0][0], single_term=True)
    if any(len(s) == 0 or s[0] != n for s in shapes):
        why = (" (one log-likelihood term for all cases: only discrete data are checked through it)" if single
               else "")
        not_checked.append(("likelihood", f"data leaves of shapes {list(shapes)} do not all have the {n} cases "
                                          f"of log_likelihood on their leading axis{why}"))
        return None
    layout = CaseLayout(treedef, shapes, dtypes, n)
    if any(layout.discrete) and not all(layout.discrete):
        not_checked.append(("likelihood", "data mix discrete and continuous leaves"))
        return None
    return layout


def _latent_layout(model, not_checked):
    latent = jax.eval_shape(model.sample_prior, jax.random.key(0))
    leaves, treedef = jax.tree.flatten(latent)
    floating = tuple(bool(jnp.issubdtype(x.dtype, jnp.floating)) for x in leaves)
    if not any(floating):
        not_checked.append(("prior", "no floating-point latent variables"))
        return None
    return LatentLayout(treedef, tuple(tuple(x.shape) for x in leaves), floating)


def _prior_normalizable(latent, max_dim, not_checked) -> bool:
    if not all(latent.floating):
        not_checked.append(("prior normalization", "the latent has discrete variables"))
        return False
    if latent.d > max_dim:
        not_checked.append(("prior normalization", f"latent dimension {latent.d} > max_prior_dim = {max_dim}"))
        return False
    return True


def _batch(cases, num_latents, num_data, num_proposals):
    """Latents per step: all at once unless one latent's arrays times the latents exceed about 2^23 numbers."""
    if cases is None:
        return None
    per_latent = (2 * num_data + num_proposals) * cases.n * cases.d * (cases.d if cases.d <= MAX_CROSS else 1)
    if all(cases.discrete):
        per_latent = max(per_latent, 2 * num_data * num_data * cases.n)
        if cases.single_term:  # every seen value of every case substituted into a whole data set
            per_latent = max(per_latent, num_data * cases.n * cases.n * cases.d)
    if per_latent * num_latents <= 2**23:
        return None
    return max(1, min(int(num_latents), 2**23 // per_latent))


def _element_names(base: str, shape: tuple) -> list[str]:
    if not shape or int(np.prod(shape)) == 1:
        return [base]
    return [f"{base}[{', '.join(map(str, idx))}]" for idx in np.ndindex(*shape)]


def _coordinate_names(model, cases: CaseLayout) -> list[str]:
    latent = jax.eval_shape(model.sample_prior, jax.random.key(0))
    data = jax.eval_shape(model.sample_data, jax.random.key(0), latent)
    paths = [jax.tree_util.keystr(p) or "y" for p, _ in jax.tree_util.tree_flatten_with_path(data)[0]]
    return [n for p, s in zip(paths, cases.shapes, strict=False) for n in _element_names(p, s[1:])]


def _latent_names(latent: LatentLayout, model) -> list[str]:
    tree = jax.eval_shape(model.sample_prior, jax.random.key(0))
    paths = [jax.tree_util.keystr(p) or "x" for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
    return [n for p, s, f in zip(paths, latent.shapes, latent.floating, strict=False) if f
            for n in _element_names(p, s)]
