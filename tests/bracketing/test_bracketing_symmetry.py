"""Label symmetry in bracketing: the exact log-permanent, the symmetrized q and its bounds, the collapsed NIW
mixture."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as st

import bdmc
from bdmc.bracketing import (
    Categorical,
    InverseWishart,
    LabelSymmetric,
    MeanField,
    MultivariateNormal,
    align_labels,
    log_permanent,
    log_permanent_bruteforce,
    relabel,
)
from bdmc.models.niw_mixture import NIWMixture

# ------------------------------------------------------------------------------------------ log-permanent


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_log_permanent_equals_enumeration_over_permutations(k):
    rng = np.random.default_rng(k)
    mats = [rng.normal(size=(k, k)), 300.0 * rng.normal(size=(k, k)),  # huge dynamic range: exp overflows
            rng.normal(size=(k, k)) - 800.0]  # every entry underflows to 0 in linear space
    m = rng.normal(size=(k, k))
    m[rng.random((k, k)) < 0.4] = -np.inf  # zero entries (may make the permanent 0)
    mats.append(m)
    got = np.asarray(log_permanent(jnp.asarray(np.stack(mats))))  # batched
    for a, g in zip(mats, got, strict=False):
        want = log_permanent_bruteforce(a)
        if want == -np.inf:
            assert g == -np.inf
        else:
            assert abs(g - want) <= 1e-10 * max(1.0, abs(want))


def test_log_permanent_known_values():
    # perm(J_k) = k! for the all-ones matrix; perm(I) = 1; permanent of a 2x2 is ad + bc.
    for k in (1, 2, 5, 8):
        assert abs(float(log_permanent(jnp.zeros((k, k)))) - math.lgamma(k + 1)) < 1e-11
        assert abs(float(log_permanent(jnp.log(jnp.eye(k))))) < 1e-12
    a = np.array([[2.0, 3.0], [5.0, 7.0]])
    assert abs(float(log_permanent(jnp.log(a))) - math.log(2 * 7 + 3 * 5)) < 1e-12


# --------------------------------------------------------------------------------------- q_sym itself


def _random_label_q(key, n, k):
    probs = jax.random.dirichlet(key, 0.7 * jnp.ones(k), (n,))
    return MeanField({"z": Categorical(probs)})


def test_symmetrized_categorical_q_is_normalized_by_enumeration(key):
    n, k = 5, 3
    q = LabelSymmetric(_random_label_q(key, n, k), labels="z")
    configs = jnp.array(list(itertools.product(range(k), repeat=n)))
    logq = jax.vmap(lambda z: q.log_prob({"z": z}))(configs)
    assert abs(float(jax.nn.logsumexp(logq))) < 1e-12
    # and equals the definition (1/k!) sum_sigma q(sigma z), enumerated directly
    base = jax.vmap(lambda z: q.q.log_prob({"z": z}))
    perms = list(itertools.permutations(range(k)))
    direct = jax.nn.logsumexp(jnp.stack([base(jnp.asarray(p)[configs]) for p in perms]), axis=0) - math.log(len(perms))
    np.testing.assert_allclose(np.asarray(logq), np.asarray(direct), atol=1e-11)
    # negative control: the unsymmetrized q is normalized too, but differs from q_sym
    assert abs(float(jax.nn.logsumexp(base(configs)))) < 1e-12
    assert float(jnp.max(jnp.abs(base(configs) - logq))) > 0.1


@pytest.mark.slow
def test_symmetrized_q_with_component_factors_is_invariant_and_matches_definition(key):
    n, k, p = 6, 3, 2
    k1, k2, k3, k4 = jax.random.split(key, 4)
    scale = jnp.array([[[1.0, 0.2], [0.2, 0.8]], [[2.0, -0.3], [-0.3, 1.0]], [[0.5, 0.0], [0.0, 0.5]]])
    q = MeanField({"z": Categorical(jax.random.dirichlet(k1, jnp.ones(k), (n,))),
                   "mu": MultivariateNormal(jax.random.normal(k2, (k, p)) * 3, jnp.tile(0.5 * jnp.eye(p), (k, 1, 1))),
                   "Sigma": InverseWishart(jnp.array([6.0, 9.0, 7.0]), scale)})
    qs = LabelSymmetric(q, labels="z", components=("mu", "Sigma"))
    theta = q.sample(k3)
    rel = jax.jit(lambda th, s: relabel(th, s, labels="z", components=("mu", "Sigma")))
    logq, logqs = jax.jit(q.log_prob), jax.jit(qs.log_prob)
    perms = list(itertools.permutations(range(k)))
    direct = jax.nn.logsumexp(jnp.stack([logq(rel(theta, jnp.asarray(s))) for s in perms]))
    assert abs(float(logqs(theta)) - float(direct - math.log(len(perms)))) < 1e-10
    for s in perms:  # log q_sym(sigma x) = log q_sym(x) exactly
        assert abs(float(logqs(rel(theta, jnp.asarray(s))) - logqs(theta))) < 1e-10
    # q_sym >= q / k!, so log q - log q_sym <= log k!
    assert float(logq(theta) - logqs(theta)) <= math.lgamma(k + 1) + 1e-12
    # a draw of q_sym is a relabelled draw of q
    # a draw of q_sym is a draw of q relabelled by a uniformly random permutation
    d = qs.sample(k4)
    kq, kp = jax.random.split(k4)
    want = relabel(q.sample(kq), jax.random.permutation(kp, k), labels="z", components=("mu", "Sigma"))
    for name in ("z", "mu", "Sigma"):
        np.testing.assert_allclose(np.asarray(d[name]), np.asarray(want[name]), atol=1e-12)
    perm = np.asarray(jax.random.permutation(kp, k))
    assert np.all(np.asarray(d["z"]) == perm[np.asarray(q.sample(kq)["z"])])


def test_align_labels_undoes_random_relabellings(key):
    n, k, m = 12, 4, 50
    truth = jax.random.randint(key, (n,), 0, k)
    mus = jnp.arange(k * 2.0).reshape(k, 2)
    perms = jax.vmap(lambda kk: jax.random.permutation(kk, k))(jax.random.split(jax.random.fold_in(key, 1), m))
    moved = jax.vmap(lambda s: relabel({"z": truth, "mu": mus}, s, labels="z", components=("mu",)))(perms)
    aligned = align_labels({"z": np.asarray(moved["z"]), "mu": np.asarray(moved["mu"])}, labels="z",
                           components=("mu",))
    # all draws now share one labelling, and the component parameters moved with their labels
    assert np.all(aligned["z"] == aligned["z"][0])
    for s in range(m):
        np.testing.assert_allclose(aligned["mu"][s][aligned["z"][s]], np.asarray(mus)[np.asarray(truth)])
    assert not np.all(np.asarray(moved["z"]) == np.asarray(moved["z"][0]))  # they did differ before


# ----------------------------------------------------------------------- bounds on an enumerable mixture


@pytest.fixture(scope="module")
def tiny_mixture():
    """n = 7 bivariate points in three well separated groups, k = 3; log p(D) by enumerating 3^7 labellings."""
    model = NIWMixture(n=7, dim=2, k=3)
    x = jnp.array([[0.0, 0.1], [0.3, -0.2], [-0.2, 0.0], [6.0, 0.2], [6.3, -0.1], [0.1, 6.0], [-0.2, 6.4]])
    configs = jnp.array(list(itertools.product(range(3), repeat=7)), dtype=jnp.int32)
    log_joint = lambda th: model.log_density(th, x, 1.0)  # noqa: E731
    lj = jax.vmap(lambda z: log_joint({"z": z}))(configs)
    ml = float(jax.nn.logsumexp(lj))
    return model, x, configs, lj, ml, log_joint


def _single_mode(configs, weights, reference):
    """The posterior folded onto one labelling: every configuration aligned to ``reference``."""
    al = align_labels({"z": np.asarray(configs)}, labels="z", reference=reference)["z"]
    return al, weights


def test_symmetrized_bounds_bracket_enumerated_log_marginal_from_single_mode_draws(tiny_mixture):
    model, x, configs, lj, ml, log_joint = tiny_mixture
    k = 3
    post = np.exp(np.asarray(lj) - ml)
    ref = np.array([0, 0, 0, 1, 1, 2, 2])
    folded, w = _single_mode(configs, post, ref)  # draws of p' (one mode); sym(p') = p
    # moment matching to p' exactly (infinitely many single-mode draws): w_il = P'(z_i = l)
    probs = np.zeros((7, k))
    for i in range(7):
        np.add.at(probs[i], folded[:, i], w)
    q = MeanField({"z": Categorical(jnp.asarray(probs))})
    qs = LabelSymmetric(q, labels="z")
    log_q = np.asarray(jax.vmap(lambda z: q.log_prob({"z": z}))(jnp.asarray(folded)))
    log_qs = np.asarray(jax.vmap(lambda z: qs.log_prob({"z": z}))(jnp.asarray(folded)))
    U_sym = float(np.sum(w * (np.asarray(lj) - log_qs)))  # lj is invariant, so lj(folded) = lj(original)
    U_unsym = float(np.sum(w * (np.asarray(lj) - log_q)))
    # exact lower bounds: expectations under q and q_sym by enumeration over all labellings
    lq_all = np.asarray(jax.vmap(lambda z: q.log_prob({"z": z}))(configs))
    lqs_all = np.asarray(jax.vmap(lambda z: qs.log_prob({"z": z}))(configs))
    L_unsym = float(np.sum(np.exp(lq_all) * (np.asarray(lj) - lq_all)))
    L_sym = float(np.sum(np.exp(lqs_all) * (np.asarray(lj) - lqs_all)))
    assert U_sym >= ml >= L_sym
    assert U_unsym < ml - 1.0  # negative control: single-mode U without symmetrization is not an upper bound
    assert 0.0 <= L_sym - L_unsym <= math.lgamma(k + 1) + 1e-12  # KL(q || q_sym) in [0, log k!]
    assert L_sym - L_unsym > 0.9 * math.lgamma(k + 1)  # the modes are separated: nearly the full log k!
    # U_sym is the same as the expectation under the exact symmetric posterior (invariance of lj - log q_sym)
    lqs_orig = np.asarray(jax.vmap(lambda z: qs.log_prob({"z": z}))(configs))
    assert abs(U_sym - float(np.sum(post * (np.asarray(lj) - lqs_orig)))) < 1e-9


def test_bracket_with_labels_from_single_mode_mcmc_like_draws(tiny_mixture, key):
    model, x, configs, lj, ml, log_joint = tiny_mixture
    ref = np.array([0, 0, 0, 1, 1, 2, 2])
    k1, k2 = jax.random.split(key)
    idx = np.asarray(jax.random.categorical(k1, lj, shape=(4000,)))
    draws = {"z": align_labels({"z": np.asarray(configs)[idx]}, labels="z", reference=ref)["z"]}
    sym = bdmc.bracket(draws, log_joint, family={"z": ("categorical", 3)}, key=k2, num_draws=4000, labels="z")
    plain = bdmc.bracket(draws, log_joint, family={"z": ("categorical", 3)}, key=k2, num_draws=4000)
    assert sym.upper.value - ml > -4 * sym.upper.stderr
    assert ml - sym.lower.value > -4 * sym.lower.stderr
    assert isinstance(sym.q_upper, LabelSymmetric)
    # negative control: the paper-style (unsymmetrized) upper bound from single-mode draws falls below log p(D)
    assert ml - plain.upper.value > 1.0 and ml - plain.upper.value > 4 * plain.upper.stderr
    assert sym.lower.value - plain.lower.value > 1.0


def test_lower_bound_needs_no_relabelling_of_draws(tiny_mixture, key):
    """L_sym = E_q[f] = E_{q_sym}[f]: f = log p - log q_sym is invariant, so permuting q's draws changes no term."""
    model, x, configs, lj, ml, log_joint = tiny_mixture
    q = LabelSymmetric(_random_label_q(key, 7, 3), labels="z")
    draws = jax.vmap(q.q.sample)(jax.random.split(key, 50))
    f = jax.jit(jax.vmap(lambda z: log_joint({"z": z}) - q.log_prob({"z": z})))
    perms = jax.vmap(lambda kk: jax.random.permutation(kk, 3))(jax.random.split(jax.random.fold_in(key, 2), 50))
    moved = jax.vmap(lambda z, s: s[z])(draws["z"], perms)
    np.testing.assert_allclose(np.asarray(f(draws["z"])), np.asarray(f(moved)), atol=1e-9)


# ------------------------------------------------------------------------------ the collapsed NIW mixture


def test_niw_cluster_term_is_the_multivariate_t_predictive():
    m = NIWMixture(n=3, dim=2, k=2, tau=0.3, df=5.0, scale=1.5)
    x = jnp.array([0.7, -1.2])
    got = float(m.cluster_term(jnp.array(1.0), x, jnp.outer(x, x)))
    dof = m.df - m.dim + 1
    shape = m.scale * np.eye(2) * (m.tau + 1) / (m.tau * dof)
    want = st.multivariate_t(loc=np.zeros(2), shape=shape, df=dof).logpdf(np.asarray(x))
    assert abs(got - want) < 1e-10
    assert float(m.cluster_term(jnp.array(0.0), jnp.zeros(2), jnp.zeros((2, 2)))) == 0.0  # normalized at lam = 0


@pytest.mark.slow
def test_niw_mixture_identities(key):
    m = NIWMixture(n=6, dim=2, k=3)
    data, latent = jax.jit(lambda kk: bdmc.simulate(kk, m))(key)
    # chain-rule terms add up to the collapsed likelihood
    ll = m.log_likelihood(latent, data)
    assert abs(float(jnp.sum(ll) - (m.log_density(latent, data, 1.0) - m.log_prior(latent)))) < 1e-9
    # the Dirichlet-multinomial prior is normalized
    configs = jnp.array(list(itertools.product(range(3), repeat=6)), dtype=jnp.int32)
    assert abs(float(jax.nn.logsumexp(jax.jit(jax.vmap(lambda z: m.log_prior({"z": z})))(configs)))) < 1e-12
    # normalized at lam = 0
    assert float(m.log_density(latent, data, 0.0) - m.log_prior(latent)) == 0.0


@pytest.mark.slow
def test_niw_collapsed_term_matches_monte_carlo_over_the_prior(key):
    """log p(x_1, x_2 | same cluster) = log E_{mu, Sigma ~ NIW}[N(x_1) N(x_2)], by 400k prior draws."""
    m = NIWMixture(n=2, dim=2, k=1, tau=0.5, df=5.0)
    x = jnp.array([[0.4, -0.3], [1.1, 0.2]])
    exact = float(m.cluster_term(jnp.array(2.0), x.sum(0), x.T @ x))

    def one(kk):
        mu, Sig = m.sample_components(kk)
        r = x - mu[0]
        P = jnp.linalg.inv(Sig[0])
        return jnp.sum(-0.5 * jnp.einsum("na,ab,nb->n", r, P, r) - 0.5 * jnp.linalg.slogdet(Sig[0])[1]
                       - jnp.log(2 * jnp.pi))

    lw = np.asarray(jax.jit(jax.vmap(one))(jax.random.split(key, 400_000)))
    w = np.exp(lw - lw.max())
    est = float(lw.max() + np.log(w.mean()))
    se = float(w.std() / np.sqrt(w.size) / w.mean())  # delta method for the log of the mean
    assert abs(est - exact) < 4 * se + 1e-3
    # negative control: a wrong tau shifts the closed form well beyond the Monte Carlo error
    wrong = float(NIWMixture(n=2, dim=2, k=1, tau=0.25, df=5.0).cluster_term(jnp.array(2.0), x.sum(0), x.T @ x))
    assert abs(est - wrong) > 10 * se


@pytest.mark.slow
def test_niw_collapsed_gibbs_sweep_leaves_the_tempered_posterior_invariant(key):
    """Exact draws of f(z; lam) pushed through one sweep stay f-distributed (chi-square); wrong lam is rejected."""
    m = NIWMixture(n=4, dim=2, k=2)
    data, _ = jax.jit(lambda kk: bdmc.simulate(kk, m))(key)
    lam = jnp.array([0.5, 1.0, 0.0, 0.3])
    configs = jnp.array(list(itertools.product(range(2), repeat=4)), dtype=jnp.int32)
    logf = jax.jit(jax.vmap(lambda z: m.log_density({"z": z}, data, lam)))(configs)
    probs = np.asarray(jax.nn.softmax(logf))
    num = 20000
    k1, k2 = jax.random.split(jax.random.fold_in(key, 1))
    start = configs[jax.random.categorical(k1, logf, shape=(num,))]
    push = jax.jit(jax.vmap(lambda kk, z, lm: m.sweep(kk, {"z": z}, data, lm)["z"], in_axes=(0, 0, None)))
    out = push(jax.random.split(k2, num), start, lam)
    codes = np.asarray(out) @ (2 ** np.arange(3, -1, -1))
    counts = np.bincount(codes, minlength=16)
    assert st.chisquare(counts, num * probs).pvalue > 1e-3
    # negative control: a sweep at the wrong lam does not leave f(.; lam) invariant
    wrong = push(jax.random.split(k2, num), start, jnp.ones(4))
    counts_w = np.bincount(np.asarray(wrong) @ (2 ** np.arange(3, -1, -1)), minlength=16)
    assert st.chisquare(counts_w, num * probs).pvalue < 1e-6
