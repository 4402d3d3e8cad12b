"""Every built-in model through the same checks (DESIGN.md, "How we know it is right"), driven by the table in
conformance_cases.py:

1. simulation and the core methods: shapes and dtypes, one finite log-likelihood term per case, f(x; 0) = p(x);
2. capabilities: what each model declares matches the table, and every declared method runs with the right shapes;
3. each Gibbs conditional against the joint, p(x|u)/p(x'|u) = f(x,u)/f(x',u), at lam = 0, 0.3, 1 and per case;
4. the Geweke test of the default kernel at several lam, and negative controls that must fail it
   (test_conformance_geweke.py);
5. exact_log_marginal against an independent closed form, enumeration, quadrature or Monte Carlo estimate.

Tolerances: identities and exact values allow the rounding of a few dozen operations on terms of their magnitude
(``helpers.dtype_tol`` without its float64 floor: 64 eps times the magnitude), plus the numerical error a quadrature
reference or a quadrature in the model estimates for itself; statistical checks use about 4 standard errors (the
Geweke test's Bonferroni threshold at family-wise level 1e-3, Monte Carlo references at 4 standard errors).

Compilation dominates the cost, so each model's conditionals and kernels are built once at import and lams share
compiled programs (lam is traced: the conditional checks pass every lam as one weight per case, and the Geweke
tests' scalar lams share one program), and shape checks use ``jax.eval_shape`` (tracing, no compilation).
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance_cases import CASES, lam_value, per_case_lam
from helpers import assert_same_but_rounding, dtype_tol, simulate_float64

from bdmc.checks import conditional_consistency
from bdmc.contracts import CAPABILITIES, KernelInfo, Simulated, capabilities, log_density, n_cases
from bdmc.errors import DataError
from bdmc.kernels import Conditional
from bdmc.models import REGISTRY, NIWMixture


def _rounding(*values):
    """Rounding allowance of an identity between sums of terms of these magnitudes."""
    return dtype_tol(sum(abs(float(v)) for v in values), floor=0.0)


@functools.cache
def _simulated(name):
    """One simulated data set per case, drawn once (eagerly: cheaper than compiling each model's simulator), the
    same numbers in float32 and float64."""
    return simulate_float64(jax.random.key(1), CASES[name].model)


def test_every_built_in_model_has_a_row():
    assert {type(c.model) for c in CASES.values()} == set(REGISTRY.values()) | {NIWMixture}
    assert all(type(CASES[name].model) is cls for name, cls in REGISTRY.items())


# ----- 1. simulation and the core methods -----------------------------------------------------------------------


def _same_shapes(got, want):
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=False):
        assert (g.shape, g.dtype) == (w.shape, w.dtype)


@pytest.mark.parametrize("name", list(CASES))
def test_simulate_and_the_core_methods(name):
    case = CASES[name]
    model = case.model
    copy = dataclasses.replace(model)  # models are static arguments of compiled functions: equal by value
    assert copy == model and hash(copy) == hash(model)
    sim = _simulated(name)
    assert isinstance(sim, Simulated)
    data, latent = sim
    assert data is sim.data and latent is sim.exact_latent
    want_latent = jax.eval_shape(model.sample_prior, jax.random.key(0))
    _same_shapes(latent, want_latent)
    _same_shapes(data, jax.eval_shape(model.sample_data, jax.random.key(0), want_latent))
    for leaf in jax.tree.leaves(latent) + jax.tree.leaves(data):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert leaf.dtype == jnp.result_type(float)  # the enabled precision, not a hard-coded one
            assert np.all(np.isfinite(leaf))

    loglik = model.log_likelihood(latent, data)
    assert loglik.shape == (case.n_cases,) and n_cases(model, data) == case.n_cases
    assert np.all(np.isfinite(loglik))
    log_prior = model.log_prior(latent)
    assert log_prior.shape == () and np.isfinite(log_prior)
    # f(x; 0) is the normalized prior (nothing of the data enters) and f(x; 1) the joint; per-case weights of
    # all ones are the joint too.
    f0, f1 = log_density(model, latent, data, 0.0), log_density(model, latent, data, 1.0)
    joint = log_prior + jnp.sum(loglik)
    assert abs(float(f0 - log_prior)) <= _rounding(log_prior)
    assert abs(float(f1 - joint)) <= _rounding(log_prior, *loglik)
    ones = log_density(model, latent, data, jnp.ones(case.n_cases))
    assert abs(float(ones - joint)) <= _rounding(log_prior, *loglik)


# ----- 2. capabilities ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_capabilities_match_the_table(name):
    declared = {cap for cap, has in capabilities(CASES[name].model).items() if has}
    assert declared == set(CASES[name].capabilities), (
        f"{name}: declares {sorted(declared - CASES[name].capabilities)} beyond the table, lacks "
        f"{sorted(CASES[name].capabilities - declared)}")


def _check_conditionals(model, latent, data, key):
    conds = model.conditionals()
    assert len(conds) > 0
    for cond in conds:
        assert isinstance(cond, Conditional) and isinstance(cond.name, str)
        _same_shapes(jax.eval_shape(cond.update, key, latent, data, 0.3), latent)
        _same_shapes(jax.eval_shape(cond.update, key, latent, data, per_case_lam(len(data))), latent)
        assert jax.eval_shape(cond.log_prob, latent, data, 0.3).shape == ()


def _check_kernel(model, latent, data, key):
    kernel = model.default_kernel()
    hash(kernel)  # a static argument of compiled runs
    assert kernel == model.default_kernel()  # so a second call reuses the compiled programs
    for lam in (0.3, per_case_lam(len(data))):
        new, info = jax.eval_shape(kernel, key, latent, data, lam)
        _same_shapes(new, latent)
        assert isinstance(info, KernelInfo) and info.acceptance.shape == ()


def _check_case_proposal(model, latent, data, key):
    lam = per_case_lam(len(data))
    i = 1
    assert jax.eval_shape(model.log_predictive, latent, data, lam, i).shape == ()
    assert np.isfinite(model.log_predictive(latent, data, lam, i))
    new = model.sample_case(key, latent, data, lam, i)
    _same_shapes(new, latent)
    # Only case i's latents move: leaves indexed by case keep every other row, the others stay put.
    n = len(data)
    for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(latent), strict=False):
        if a.ndim and a.shape[0] == n:
            np.testing.assert_array_equal(np.delete(np.asarray(a), i, 0), np.delete(np.asarray(b), i, 0))
        else:
            np.testing.assert_array_equal(a, b)


def _check_vb(model, latent, data, key):
    params = jax.eval_shape(model.vb_init, key, data)
    _same_shapes(jax.eval_shape(model.vb_update, params, data), params)
    assert jax.eval_shape(model.vb_bound, params, data).shape == ()


def _check_symmetry(model, latent, data, key):
    value = model.vb_log_symmetries
    assert isinstance(value, float) and value >= 0.0


def _check_bic(model, latent, data, key):
    params = jax.eval_shape(model.bic_sample_params, key)
    assert jax.eval_shape(model.bic_log_likelihood, params, data).shape == ()


def _check_blocks(model, latent, data, key):
    blocks = model.gaussian_prior_blocks()
    assert len(blocks) > 0
    for name, axis, std in blocks:
        assert name in latent and 0 <= axis < latent[name].ndim and std > 0


def _check_constrained(model, latent, data, key):
    kernel = model.constrained_kernel()
    hash(kernel)
    assert kernel.evals_per_move > 0
    log_c = jnp.sum(model.log_likelihood(latent, data)) - 1.0
    _same_shapes(jax.eval_shape(kernel, key, latent, data, log_c), latent)


def _check_indexed(model, latent, data, key):
    conds = model.conditionals()
    assert model.num_sites() == len(conds)
    site = jax.jit(model.update_site)  # the index traced, as in a scan over sites
    for j in range(len(conds)):
        for lam in (0.3, per_case_lam(len(data))):
            expected = conds[j].update(jax.random.fold_in(key, j), latent, data, lam)
            got = site(jax.random.fold_in(key, j), j, latent, data, lam)
            assert_same_but_rounding(got, expected)  # jitted with j traced, and eager: equal but the last bits


def _check_data_check(model, latent, data, key):
    assert model.check_data(data) is None
    with pytest.raises(DataError):
        model.check_data(jnp.zeros(data.shape[:-1] + (data.shape[-1] + 1,)) if data.ndim > 1
                         else jnp.zeros(data.shape[0] + 1))


def _check_tempered(model, latent, data, key):
    for lam in (0.3, per_case_lam(len(data))):
        _same_shapes(jax.eval_shape(model.sample_data_tempered, key, latent, lam), data)


def _check_collapsed(model, latent, data, key):
    assert jax.eval_shape(model.log_density, latent, data, per_case_lam(len(data))).shape == ()
    assert np.isfinite(model.log_density(latent, data, 0.3))


def _check_exact(model, latent, data, key):
    pass  # its value is test_exact_log_marginal_against_an_independent_reference's business


CAPABILITY_CHECKS = {
    "Gibbs conditionals": _check_conditionals, "own kernel": _check_kernel, "case proposal": _check_case_proposal,
    "VB family": _check_vb, "label symmetry": _check_symmetry, "BIC": _check_bic,
    "Gaussian prior blocks": _check_blocks, "constrained moves": _check_constrained, "data check": _check_data_check,
    "tempered data": _check_tempered, "collapsed density": _check_collapsed, "exact evidence": _check_exact,
    "indexed conditionals": _check_indexed,
}


def test_every_capability_has_a_check():
    declared = set().union(*(c.capabilities for c in CASES.values()))
    assert declared <= set(CAPABILITY_CHECKS) <= {c.name for c in CAPABILITIES}


@pytest.mark.parametrize("name", list(CASES))
def test_declared_capabilities_run_with_the_right_shapes(name, key):
    model = CASES[name].model
    data, latent = _simulated(name)
    for cap, has in capabilities(model).items():
        if has:
            CAPABILITY_CHECKS[cap](model, latent, data, key)


# ----- 3. conditionals against the joint ------------------------------------------------------------------------

GIBBS_CASES = [name for name, case in CASES.items() if "Gibbs conditionals" in case.capabilities]
# Built once: the check compiles once per conditional object and lam shape, so the scalar lams share programs.
CONDITIONALS = {name: tuple(CASES[name].model.conditionals()) for name in GIBBS_CASES}


def _sites(name):
    sites = CASES[name].conditional_sites
    return CONDITIONALS[name] if sites is None else tuple(CONDITIONALS[name][i] for i in sites)


# The weights, each one per data case so that they share one compiled check per conditional (lam is traced, its
# shape is not): the geometric path's 0, 0.3 and 1, and a data-path mix of exact zeros, fractions and ones. Scalar
# lams reach the same conditionals through the default kernel in the Geweke tests below.
CONSISTENCY_LAMS = ("0", "0.3", "1", "per-case")


@functools.cache
def _tolerance(name):
    """Rounding allowance at the magnitude of log f: the sum of |log prior| and the |log-likelihood| terms."""
    data, latent = _simulated(name)
    model = CASES[name].model
    return _rounding(model.log_prior(latent), *model.log_likelihood(latent, data))


def _consistency(key, name, cond, lam):
    case = CASES[name]
    data, _ = _simulated(name)
    lam = jnp.broadcast_to(jnp.asarray(lam_value(lam, case.n_cases), data.dtype), (case.n_cases,))
    return conditional_consistency(key, case.model, cond, data, lam=lam, num_triples=32,
                                   sample_latent=case.any_latent, tol=_tolerance(name))


@pytest.mark.parametrize("name", GIBBS_CASES)
def test_conditionals_match_the_joint(name, key):
    for i, cond in enumerate(_sites(name)):
        for lam in CONSISTENCY_LAMS:
            res = _consistency(jax.random.fold_in(key, i), name, cond, lam)
            assert res.passed, (lam, res.name, res.worst, res.tol)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in GIBBS_CASES if CASES[n].conditional_sites is not None])
def test_every_conditional_matches_the_joint(name, key):
    # The default test checks a few of the per-site conditionals, which share their code; this checks them all.
    for i, cond in enumerate(CONDITIONALS[name]):
        for lam in CONSISTENCY_LAMS:
            res = _consistency(jax.random.fold_in(key, i), name, cond, lam)
            assert res.passed, (lam, res.name, res.worst, res.tol)


@dataclasses.dataclass(frozen=True)
class Sharpened:
    """Negative control: the conditional's log density times 1.1 (for a Gaussian, the variance 10% too small)."""

    cond: Conditional

    def __call__(self, latent, data, lam):
        return 1.1 * self.cond.log_prob(latent, data, lam)


# Representatives (each costs a compilation): a Gaussian block, an inverse-gamma block, a collapsed discrete site
# and a collapsed binary site with latent variances.
SHARPENED = ("gaussian-mean", "linear-regression", "clustering", "binary-hyper")


@pytest.mark.parametrize("name", SHARPENED)
def test_a_conditional_ten_percent_too_sharp_fails(name, key):
    # The tempered density p^1.1 is, for a Gaussian conditional, the right mean with 1/1.1 of the variance; the
    # check must see it on the tiny instance and triples the positive check uses (so those are not degenerate).
    cond = _sites(name)[-1]
    broken = Conditional(cond.name + " (x1.1)", cond.update, Sharpened(cond))
    res = _consistency(key, name, broken, "per-case")
    assert not res.passed and res.worst > 1e3 * res.tol, (res.worst, res.tol)


# ----- 4. Geweke: test_conformance_geweke.py (its own file, so that the two halves run on two workers) --------


# ----- 5. exact log marginal likelihoods ------------------------------------------------------------------------

EXACT_CASES = [name for name, case in CASES.items() if case.exact is not None]


def test_every_exact_evidence_has_a_reference():
    assert set(EXACT_CASES) == {name for name, case in CASES.items() if "exact evidence" in case.capabilities}


@pytest.mark.parametrize("name", EXACT_CASES)
def test_exact_log_marginal_against_an_independent_reference(name):
    model, reference, *refine = CASES[name].exact
    data, _ = simulate_float64(jax.random.key(2), model)
    want, error = reference(model, np.asarray(data, np.float64))
    got = float(model.exact_log_marginal(data))
    assert np.isfinite(got)
    if refine:  # the model's own quadrature error: the change when its resolution doubles
        error += abs(got - float(model.exact_log_marginal(data, **refine[0])))
    assert abs(got - want) <= error + _rounding(want), (got, want, error)
