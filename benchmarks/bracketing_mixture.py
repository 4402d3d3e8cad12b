"""Ji, Shen & West, Sec. 4.2: bounds on log p(D) for bivariate normal mixtures (Table 2, Fig. 4).

Data: n = 600 points from an equal-weight mixture of five bivariate normals with the paper's means and
covariances. Model with k components: x_i | z_i = j ~ N(mu_j, Sigma_j), z_i ~ Mn(1, pi),
mu_j | Sigma_j ~ N(0, Sigma_j / tau), Sigma_j ~ IW(d, S), pi ~ Dir(alpha, ..., alpha). The paper does not give
tau, d, S; ``--prior`` picks one of ``PRIORS`` (all with S = scale * I):

    default       tau = 0.1,   d = 4, S = I,    alpha = 1/k   (prior mean of Sigma_j is I, the true scale)
    dir1          tau = 0.1,   d = 4, S = I,    alpha = 1     (the paper's words "uniform Dirichlet")
    diffuse-mean  tau = 0.001, d = 4, S = I,    alpha = 1/k   (prior sd of mu_j about 32 Sigma_j^(1/2))
    broad-cov     tau = 0.1,   d = 4, S = 10 I, alpha = 1/k   (prior mean of Sigma_j 10 I, ten times the truth)

The three alternatives test whether the default prior makes extra components cheap (results page, "Where the
bounds peak"). An extra component that stays empty costs only its Dirichlet-multinomial term, whatever tau, d and
S: for z using k - 1 of the k labels, log p(D, z | k) - log p(D, z | k - 1) depends on alpha alone, at least
-2.0 nats (k = 6) with alpha = 1/k and log((k - 1) / (n + k - 1)), about -4.8 nats, with alpha = 1. dir1 makes
empty components dearer and occupied ones cheaper; diffuse-mean (a larger Occam factor for each occupied
component) and broad-cov (a small group of points pays to get its own broad component) make occupied extra
components dearer.

The model is the package's ``bdmc.models.niw_mixture.NIWMixture`` with the chosen prior, and every other prior
term here (the (Sigma, mu) parts of the joints, the Gibbs conditionals, the VB updates) reads the prior from that
model: its Dirichlet-multinomial ``log_prior`` of z and its collapsed ``log_density`` (= log p(D, z) at lambda =
1) are the reduced-(pi, mu, Sigma) context's joint and enter the other two contexts' joints; the (Sigma, mu)
parts and the blocked Gibbs sampler are written here.

ONE data set; for each k, ``--reps`` independent Gibbs runs on it (pi, then (Sigma_j, mu_j) from their
normal-inverse-Wishart conditional, then z), batched with vmap: the paper's Table 2 "repeat simulations"
are repeat MCMC runs on one data set (its sd at k = 5 is 0.15).

    U3, L3  reduced-pi context, theta = (z, mu, Sigma), q = prod N(mu_j) IW(Sigma_j) prod Mn(z_i)   (Eq. 14)
    U2, L2  reduced-(pi, mu) context, theta = (z, Sigma), q = prod IW(Sigma_j) prod Mn(z_i)
    U1, L1  reduced-(pi, mu, Sigma) context, theta = z, q = prod Mn(z_i)
    L4      coordinate-ascent VB with q(pi) Dir x (14) on the full model, then Eq. (11) in the reduced-pi
            context at the VB parameters (dropping q(pi) only tightens the bound)

Every bound is reported twice: with the label-symmetrized q_sym (``bdmc.bracketing.LabelSymmetric``; U
cross-fitted on label-aligned halves with a pseudo-count of ``--pseudo-total / k`` per label, L from q fitted
to all aligned draws with no pseudo-count), valid from draws that stay in one labelling; and paper-style
(q fitted in-sample to the raw draws, unsymmetrized), which estimates about log p(D) - log k! for U.
Per-k results are appended to ``mixture_table2.partial.json`` as they finish (rerunning with the same
settings resumes). A prior other than the default writes ``mixture_table2_<prior>.{json,md,partial.json}`` and
``mixture_fig4_<prior>.png`` instead, so it never overwrites the default's files.

    python benchmarks/bracketing_mixture.py [--prior default] [--reps 20] [--ks 2,3,...,10] [--sweeps 2000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma

import bdmc

# Synchronous dispatch: with asynchronous CPU dispatch this script intermittently stalled in XLA (all
# threads waiting) on the 2-core machine it was run on.
jax.config.update("jax_cpu_enable_async_dispatch", False)
from bdmc.bracketing import (  # noqa: E402
    Categorical,
    Dirichlet,
    InverseWishart,
    LabelSymmetric,
    MeanField,
    MultivariateNormal,
    align_labels,
    batch_means_stderr,
    coordinate_ascent,
    fit_symmetric,
    log_ratios,
    lower_bound_values,
    pd_cholesky,
    pd_inverse,
    pd_logdet,
    upper_bound_values,
)
from bdmc.models.niw_mixture import NIWMixture  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import stamp, write_text  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

MEANS = np.array([[0, 0], [3, -3], [3, 3], [-3, 3], [-3, -3]], dtype=float)
COVS = np.array([[[1, 0], [0, 1]], [[1, .5], [.5, 1]], [[1, -.5], [-.5, 1]], [[1, .5], [.5, 1]], [[1, -.5], [-.5, 1]]],
                dtype=float)
N, P = 600, 2
LOG_2PI = float(np.log(2 * np.pi))
# NIWMixture's prior hyperparameters; alpha None is the Dirichlet concentration 1/k (module docstring).
PRIORS = {
    "default": {"tau": 0.1, "df": 4.0, "scale": 1.0, "alpha": None},
    "dir1": {"tau": 0.1, "df": 4.0, "scale": 1.0, "alpha": 1.0},
    "diffuse-mean": {"tau": 0.001, "df": 4.0, "scale": 1.0, "alpha": None},
    "broad-cov": {"tau": 0.1, "df": 4.0, "scale": 10.0, "alpha": None},
}


def mixture_model(k, n=N, *, prior="default"):
    """The package's collapsed NIW mixture with k components and the prior ``PRIORS[prior]``."""
    return NIWMixture(n=n, dim=P, k=k, **PRIORS[prior])


def prior_settings(prior):
    """The prior's name and values, as recorded in the results' settings."""
    values = dict(PRIORS[prior])
    values["alpha"] = "1/k" if values["alpha"] is None else values["alpha"]
    return {"prior": prior, "prior_values": values}


def output_name(base, prior):
    """File name (no suffix) of an output under ``prior``: the default prior keeps the original names."""
    return base if prior == "default" else f"{base}_{prior}"


def scale_matrix(model):
    """The inverse-Wishart scale matrix S of the model's prior."""
    return model.scale * jnp.eye(P)


def simulate(key, n=N):
    k1, k2 = jax.random.split(key)
    comp = jax.random.randint(k1, (n,), 0, 5)
    chol = pd_cholesky(jnp.asarray(COVS))
    eps = jax.random.normal(k2, (n, P))
    return jnp.asarray(MEANS)[comp] + jnp.einsum("nij,nj->ni", chol[comp], eps)


def cluster_stats(model, x, z):
    """Counts, sums and the tau-adjusted scatter S_j = sum x x^T - (sum x)(sum x)^T / (tau + N_j)."""
    counts, _, sums, second = model.stats(z, x, jnp.ones(x.shape[0], x.dtype))
    scatter = second - jnp.einsum("ja,jb->jab", sums, sums) / (model.tau + counts)[:, None, None]
    return counts, sums, scatter


def niw_conditional(model, x, z):
    """Parameters of p(pi, Sigma, mu | z, D) under the model's prior.

    pi ~ Dir(alpha + N_j), Sigma_j ~ IW(d + N_j, S + S_j), mu_j | Sigma_j ~ N(sum_j / kappa_j, Sigma_j / kappa_j)
    with kappa_j = tau + N_j. Returns ``(alpha_post, df_post, scale_post, mean, kappa)``.
    """
    counts, sums, scatter = cluster_stats(model, x, z)
    kap = model.tau + counts
    return model.concentration + counts, model.df + counts, scale_matrix(model) + scatter, sums / kap[:, None], kap


def log_iw(S, df, scale):
    return InverseWishart._log_prob_event(S, df, scale)


def log_joint_z(model, x):
    """log p(D, z): pi, mu and Sigma integrated out, the model's collapsed density at lambda = 1."""
    def f(th):
        return model.log_density({"z": th["z"]}, x, 1.0)
    return f


def log_joint_z_sigma(model, x):
    """log p(D, z, Sigma): pi and mu integrated out."""
    def f(th):
        counts, _, scatter = cluster_stats(model, x, th["z"])
        Sig = th["Sigma"]
        per = (jax.vmap(lambda s: log_iw(s, model.df, scale_matrix(model)))(Sig)
               + 0.5 * P * jnp.log(model.tau / (model.tau + counts))
               - 0.5 * counts * (P * LOG_2PI + pd_logdet(Sig))
               - 0.5 * jnp.trace(pd_inverse(Sig) @ scatter, axis1=-2, axis2=-1))
        return model.log_prior({"z": th["z"]}) + jnp.sum(per)
    return f


def log_joint_full(model, x):
    """log p(D, z, mu, Sigma): pi integrated out (the standard, reduced-pi context)."""
    def f(th):
        z, mu, Sig = th["z"], th["mu"], th["Sigma"]
        prior_mu = jax.vmap(lambda m, s: MultivariateNormal._log_prob_event(m, jnp.zeros(P), s / model.tau))(mu, Sig)
        prior_s = jax.vmap(lambda s: log_iw(s, model.df, scale_matrix(model)))(Sig)
        lik = jax.vmap(lambda xi, zi: MultivariateNormal._log_prob_event(xi, mu[zi], Sig[zi]))(x, z)
        return model.log_prior({"z": z}) + jnp.sum(prior_mu) + jnp.sum(prior_s) + jnp.sum(lik)
    return f


def gibbs(key, model, x, *, sweeps, burn):
    """Blocked Gibbs: pi | z, (Sigma_j, mu_j) | z (NIW), z | pi, mu, Sigma. Returns draws after ``burn``."""
    n, k = x.shape[0], model.k

    def sweep(z, kk):
        k1, k2, k3, k4 = jax.random.split(kk, 4)
        alpha_post, df_post, scale_post, mean, kap = niw_conditional(model, x, z)
        pi = jax.random.dirichlet(k1, alpha_post)
        Sig = jax.vmap(InverseWishart._sample_event)(jax.random.split(k2, k), df_post, scale_post)
        mu = mean + jnp.einsum("jab,jb->ja", pd_cholesky(Sig / kap[:, None, None]),
                               jax.random.normal(k3, (k, P)))
        # log N(x_i; mu_j, Sigma_j) for all (j, i): one inverse and log-determinant per component.
        r = x[None, :, :] - mu[:, None, :]
        quad = jnp.einsum("jna,jab,jnb->jn", r, pd_inverse(Sig), r)
        loglik = -0.5 * (quad + pd_logdet(Sig)[:, None] + P * LOG_2PI)
        z_new = jax.random.categorical(k4, jnp.log(pi)[:, None] + loglik, axis=0)
        return z_new, {"z": z_new, "mu": mu, "Sigma": Sig, "pi": pi}

    k0, ks = jax.random.split(key)
    z0 = jax.random.randint(k0, (n,), 0, k)
    _, draws = jax.lax.scan(sweep, z0, jax.random.split(ks, sweeps))
    # (mu, Sigma, pi) drawn in a sweep are paired with the z drawn from them: a draw of the joint posterior.
    return jax.tree.map(lambda a: a[burn:], draws)


def cavi_updates(model, x):
    """Eq. (7) for q(pi) Dir x prod_j N(mu_j) IW(Sigma_j) x prod_i Mn(z_i) on the full model, under its prior."""
    alpha, tau, df, S = model.concentration, model.tau, model.df, scale_matrix(model)

    def r_of(q):
        return q["z"].probs  # (n, k)

    def pi_update(q):
        return Dirichlet(alpha + r_of(q).sum(0))

    def mu_update(q):
        r = r_of(q)
        Nk = r.sum(0)
        Einv = q["Sigma"].expected_inverse()
        prec = (tau + Nk)[:, None, None] * Einv
        return MultivariateNormal((r.T @ x) / (tau + Nk)[:, None], pd_inverse(prec))

    def sigma_update(q):
        r = r_of(q)
        Nk = r.sum(0)
        nu, Om = q["mu"].mean, q["mu"].cov
        d = x[None, :, :] - nu[:, None, :]  # (k, n, p)
        scat = jnp.einsum("kn,kna,knb->kab", r.T, d, d) + Nk[:, None, None] * Om
        prior = tau * (jnp.einsum("ka,kb->kab", nu, nu) + Om)
        return InverseWishart(df + Nk + 1.0, S + scat + prior)

    def z_update(q):
        e_log_pi = digamma(q["pi"].alpha) - digamma(q["pi"].alpha.sum())
        Einv, Elogdet = q["Sigma"].expected_inverse(), q["Sigma"].expected_logdet()
        nu, Om = q["mu"].mean, q["mu"].cov
        d = x[None, :, :] - nu[:, None, :]
        quad = jnp.einsum("kna,kab,knb->kn", d, Einv, d) + jnp.einsum("kab,kba->k", Einv, Om)[:, None]
        logits = e_log_pi[:, None] - 0.5 * Elogdet[:, None] - 0.5 * quad
        return Categorical(jax.nn.softmax(logits.T, axis=-1))

    return {"pi": pi_update, "mu": mu_update, "Sigma": sigma_update, "z": z_update}


def vb_init(key, model, x):
    k = model.k
    r = jax.random.dirichlet(key, jnp.ones(k), (x.shape[0],))
    return MeanField({
        "pi": Dirichlet(jnp.ones(k)), "mu": MultivariateNormal(jnp.zeros((k, P)), jnp.tile(jnp.eye(P), (k, 1, 1))),
        "Sigma": InverseWishart(jnp.full((k,), model.df), jnp.tile(scale_matrix(model), (k, 1, 1))),
        "z": Categorical(r)})


def gibbs_chains(key, model, x, *, reps, sweeps, burn):
    """``reps`` independent Gibbs chains on the same data, batched with vmap."""
    return jax.vmap(lambda kk: gibbs(kk, model, x, sweeps=sweeps, burn=burn))(jax.random.split(key, reps))


def contexts(model, x):
    zc = ("categorical", model.k)
    return {
        "1": ({"z": zc}, log_joint_z(model, x), ()),
        "2": ({"z": zc, "Sigma": "inverse_wishart"}, log_joint_z_sigma(model, x), ("Sigma",)),
        "3": ({"z": zc, "mu": "normal", "Sigma": "inverse_wishart"}, log_joint_full(model, x), ("mu", "Sigma")),
    }


def _mean_se(v):
    v = np.asarray(v, dtype=np.float64)
    return float(np.mean(v)), float(np.std(v, ddof=1) / np.sqrt(v.size))


def one_rep(key, model, x, post, *, num_draws, pseudo_count, ctx, vb_run):
    """All bounds from one chain's draws ``post`` (dict of (num_kept, ...) arrays).

    Symmetrized (valid with single-mode draws): U_sym cross-fitted (each half aligned to its own consensus
    labelling, q with ``pseudo_count`` per label), L_sym from q fitted to all aligned draws with no
    pseudo-count. Paper-style: q fitted in-sample to the raw draws with no pseudo-count, U and L unsymmetrized.
    """
    kl = jax.random.split(key, 8)
    post = {n: np.asarray(v) for n, v in post.items() if n in ("z", "mu", "Sigma")}
    m = post["z"].shape[0]
    h = m // 2
    comps = ("mu", "Sigma")
    aligned_all = align_labels(post, labels="z", components=comps)
    halves = [{n: v[:h] for n, v in post.items()}, {n: v[h:2 * h] for n, v in post.items()}]
    aligned_halves = [align_labels(hv, labels="z", components=comps) for hv in halves]
    out = {}
    J = lambda d, fam: {n: jnp.asarray(d[n]) for n in fam}  # noqa: E731
    for i, name in enumerate("123"):
        fam, lj, cmp = ctx[name]
        # symmetrized
        qa = fit_symmetric(J(aligned_halves[0], fam), fam, labels="z", components=cmp, pseudo_count=pseudo_count,
                           align=False)
        qb = fit_symmetric(J(aligned_halves[1], fam), fam, labels="z", components=cmp, pseudo_count=pseudo_count,
                           align=False)
        u = np.concatenate([np.asarray(log_ratios(lj, qa, J(halves[1], fam))),
                            np.asarray(log_ratios(lj, qb, J(halves[0], fam)))])
        q0 = fit_symmetric(J(aligned_all, fam), fam, labels="z", components=cmp, pseudo_count=0.0, align=False)
        lo = np.asarray(lower_bound_values(kl[i], q0, lj, num_draws=num_draws))
        out["U" + name + "_sym"], out["U" + name + "_sym_se"] = _mean_se(u)
        out["U" + name + "_sym_se"] = batch_means_stderr(u, num_blocks=2)
        out["L" + name + "_sym"], out["L" + name + "_sym_se"] = _mean_se(lo)
        # paper-style: in-sample, unsymmetrized, raw draws
        u_p, q_p = upper_bound_values(J(post, fam), lj, fam, fit="same", pseudo_count=0.0)
        lo_p = np.asarray(lower_bound_values(kl[3 + i], q_p, lj, num_draws=num_draws))
        out["U" + name + "_paper"] = _mean_se(u_p)[0]
        out["U" + name + "_paper_se"] = batch_means_stderr(np.asarray(u_p))
        out["L" + name + "_paper"], out["L" + name + "_paper_se"] = _mean_se(lo_p)
    q_vb, changes = vb_run(kl[6])
    q4 = MeanField({n: q_vb[n] for n in ("z", "mu", "Sigma")})
    lo4 = lower_bound_values(kl[7], q4, ctx["3"][1], num_draws=num_draws)
    out["L4_paper"], out["L4_paper_se"] = _mean_se(lo4)
    lo4s = lower_bound_values(kl[7], LabelSymmetric(q4, labels="z", components=comps), ctx["3"][1],
                              num_draws=num_draws)
    out["L4_sym"], out["L4_sym_se"] = _mean_se(lo4s)
    out["vb_last_change"] = float(changes[-1])
    # Identity check of the log joints: log p(D, z) = log p(D, z, Sigma) - log p(Sigma | z, D).
    th = {n: jnp.asarray(v[-1]) for n, v in post.items()}
    _, df_post, scale_post, _, _ = niw_conditional(model, x, th["z"])
    cond = jnp.sum(jax.vmap(log_iw)(th["Sigma"], df_post, scale_post))
    out["identity_error"] = float(ctx["2"][1](th) - cond - ctx["1"][1](th))
    # Fraction of labels that alignment to the run's consensus labelling changes (0: no label switching).
    out["switch_fraction"] = float(np.mean(post["z"] != aligned_all["z"]))
    return out


NAMES = ["U3", "U2", "U1", "L1", "L2", "L3", "L4"]


def write_outputs(out: Path, rows, settings, seconds):
    rows = sorted(rows, key=lambda r: r["k"])
    stem = output_name("mixture_table2", settings["prior"])
    write_text(out / f"{stem}.json", json.dumps({"settings": settings, "seconds": seconds, "rows": rows}, indent=1))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = [r["k"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    for n, style in [("U1_sym", "r-"), ("L1_sym", "b-"), ("L4_sym", "k-"),
                     ("U1_paper", "r:"), ("L1_paper", "b:"), ("L4_paper", "k:")]:
        ax.errorbar(ks, [r[n] for r in rows], yerr=[r[n + "_sd"] for r in rows], fmt=style, marker="o", ms=3,
                    capsize=2, label=n.replace("_sym", " (sym)").replace("_paper", " (paper)"))
    ax.set_xlabel("number of components k")
    ax.set_ylabel("log marginal likelihood bound")
    ax.set_title(f"prior: {settings['prior']}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / f"{output_name('mixture_fig4', settings['prior'])}.png", dpi=120)


def parse_args(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--prior", choices=list(PRIORS), default="default",
                    help="hyperparameters tau, d, S, alpha of the model (module docstring); a prior other than the "
                         "default writes its own files")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--ks", default="2,3,4,5,6,7,8,9,10")
    ap.add_argument("--sweeps", type=int, default=1500)
    ap.add_argument("--burn", type=int, default=500)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--vb-iterations", type=int, default=300)
    ap.add_argument("--pseudo-total", type=float, default=0.5,
                    help="pseudo-count per observation for the cross-fitted U, spread evenly over the k labels")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/bracketing")
    ap.add_argument("--fresh", action="store_true", help="ignore per-k results already written")
    ap.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    return ap.parse_args(argv)


def run_settings(args):
    """What a resumed run must share with the partial results it resumes, the prior's values included."""
    settings = {n: v for n, v in vars(args).items() if n not in ("out", "fresh", "ks", "prior")}
    return {**settings, **prior_settings(args.prior)}


def main():
    args = parse_args()
    if args.render:
        write_folder("bracketing")
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = run_settings(args)
    partial = out / f"{output_name('mixture_table2', args.prior)}.partial.json"
    rows = []
    if partial.exists() and not args.fresh:
        saved = json.loads(partial.read_text())
        if saved.get("settings") == settings:
            rows = saved["rows"]
            print(f"resuming: k = {[r['k'] for r in rows]} already done", flush=True)
    key = jax.random.key(args.seed)
    k_data, k_runs = jax.random.split(key)
    x = simulate(k_data)  # ONE data set; replicates are independent Gibbs runs on it (as the paper's Table 2)
    t0 = time.perf_counter()
    for k in [int(v) for v in args.ks.split(",")]:
        if any(r["k"] == k for r in rows):
            continue
        tk = time.perf_counter()
        kk = jax.random.fold_in(k_runs, k)
        k_chain, k_bounds = jax.random.split(kk)
        model = mixture_model(k, n=x.shape[0], prior=args.prior)
        post = jax.jit(lambda kc, model=model: gibbs_chains(kc, model, x, reps=args.reps, sweeps=args.sweeps,
                                                            burn=args.burn))(k_chain)
        post = jax.tree.map(np.asarray, post)
        t_gibbs = time.perf_counter() - tk
        # Built once per k: the compiled bound evaluations are cached on these function objects.
        ctx = contexts(model, x)
        vb_run = jax.jit(lambda kv, model=model: coordinate_ascent(vb_init(kv, model, x), cavi_updates(model, x),
                                                                   num_iterations=args.vb_iterations))
        reps = [one_rep(kb, model, x, {n: v[r] for n, v in post.items()}, num_draws=args.draws,
                        pseudo_count=args.pseudo_total / k, ctx=ctx, vb_run=vb_run)
                for r, kb in enumerate(jax.random.split(k_bounds, args.reps))]
        res = {n: np.asarray([r[n] for r in reps]) for n in reps[0]}
        row = {"k": k, "reps": args.reps, "seconds": time.perf_counter() - tk, "gibbs_seconds": t_gibbs,
               "max_identity_error": float(np.max(np.abs(res["identity_error"]))),
               "max_vb_last_change": float(np.max(res["vb_last_change"])),
               "switch_fraction": float(np.mean(res["switch_fraction"]))}
        for n in NAMES:
            for v in ("sym", "paper"):
                c = f"{n}_{v}"
                row[c], row[c + "_sd"] = float(np.mean(res[c])), float(np.std(res[c], ddof=1))
                row[c + "_mean_se"] = float(np.mean(res[c + "_se"]))
                row[c + "_values"] = [float(a) for a in res[c]]
        row["per_rep_U1_paper<L1_sym"] = int(np.sum(res["U1_paper"] < res["L1_sym"]))
        row["per_rep_U1_sym>=L1_sym"] = int(np.sum(res["U1_sym"] >= res["L1_sym"]))
        row["per_rep_order_sym_U3>=U2>=U1>=L1>=L2>=L3"] = int(np.sum(
            (res["U3_sym"] >= res["U2_sym"]) & (res["U2_sym"] >= res["U1_sym"]) & (res["U1_sym"] >= res["L1_sym"])
            & (res["L1_sym"] >= res["L2_sym"]) & (res["L2_sym"] >= res["L3_sym"])))
        row.update(stamp())
        rows.append(row)
        print(json.dumps({c: v for c, v in row.items() if not c.endswith("_values")}), flush=True)
        write_text(partial, json.dumps({"settings": settings, "rows": rows}, indent=1))
        write_outputs(out, rows, settings, time.perf_counter() - t0)
    write_folder("bracketing", written_to=out)


if __name__ == "__main__":
    main()
