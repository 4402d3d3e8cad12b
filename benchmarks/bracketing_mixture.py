"""Ji, Shen & West, Sec. 4.2: bounds on log p(D) for bivariate normal mixtures (Table 2, Fig. 4).

Data: n = 600 points from an equal-weight mixture of five bivariate normals with the paper's means and
covariances. Model with k components: x_i | z_i = j ~ N(mu_j, Sigma_j), z_i ~ Mn(1, pi),
mu_j | Sigma_j ~ N(0, Sigma_j / tau), Sigma_j ~ IW(d, S), pi ~ Dir(1/k, ..., 1/k). The paper does not give
tau, d, S; we use tau = 0.1, d = 4, S = I (prior mean of Sigma_j is I).

Posterior draws come from a Gibbs sampler (pi, then (Sigma_j, mu_j) from their normal-inverse-Wishart
conditional, then z), one compiled scan per chain, chains (replicate data sets) batched with vmap.

    U3, L3  reduced-pi context, theta = (z, mu, Sigma), q = prod N(mu_j) IW(Sigma_j) prod Mn(z_i)   (Eq. 14)
    U2, L2  reduced-(pi, mu) context, theta = (z, Sigma), q = prod IW(Sigma_j) prod Mn(z_i)
    U1, L1  reduced-(pi, mu, Sigma) context, theta = z, q = prod Mn(z_i)
    L4      coordinate-ascent VB with q(pi) Dir x (14) on the full model, then Eq. (11) in the reduced-pi
            context at the VB parameters (dropping q(pi) only tightens the bound)

    python benchmarks/bracketing_mixture.py [--reps 20] [--ks 2,3,...,10] [--sweeps 2500] [--burn 500]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma, gammaln, multigammaln

import bdmc  # noqa: F401  (float64)

# Synchronous dispatch: with asynchronous CPU dispatch this script intermittently stalled in XLA (all
# threads waiting) on the 2-core machine it was run on.
jax.config.update("jax_cpu_enable_async_dispatch", False)
from bdmc.bracketing import (
    Categorical,
    Dirichlet,
    InverseWishart,
    MeanField,
    MultivariateNormal,
    coordinate_ascent,
    pd_cholesky,
    pd_inverse,
    pd_logdet,
    lower_bound_values,
    upper_bound_values,
)

MEANS = np.array([[0, 0], [3, -3], [3, 3], [-3, 3], [-3, -3]], dtype=float)
COVS = np.array([[[1, 0], [0, 1]], [[1, .5], [.5, 1]], [[1, -.5], [-.5, 1]], [[1, .5], [.5, 1]], [[1, -.5], [-.5, 1]]],
                dtype=float)
N, P = 600, 2
TAU, DF0 = 0.1, 4.0
S0 = np.eye(P)
LOG_2PI = float(np.log(2 * np.pi))


def simulate(key, n=N):
    k1, k2 = jax.random.split(key)
    comp = jax.random.randint(k1, (n,), 0, 5)
    chol = pd_cholesky(jnp.asarray(COVS))
    eps = jax.random.normal(k2, (n, P))
    return jnp.asarray(MEANS)[comp] + jnp.einsum("nij,nj->ni", chol[comp], eps)


def _logdet(m):
    return pd_logdet(m)


def cluster_stats(x, z, k):
    """Counts, sums and the tau-adjusted scatter S_j = sum x x^T - (sum x)(sum x)^T / (tau + N_j)."""
    oh = jax.nn.one_hot(z, k, dtype=x.dtype)
    counts = oh.sum(0)
    sums = oh.T @ x
    second = jnp.einsum("nj,na,nb->jab", oh, x, x)
    scatter = second - jnp.einsum("ja,jb->jab", sums, sums) / (TAU + counts)[:, None, None]
    return counts, sums, scatter


def log_dirmult(counts, k):
    a = 1.0 / k
    return gammaln(k * a) - gammaln(counts.sum() + k * a) + jnp.sum(gammaln(counts + a) - gammaln(a))


def log_iw(S, df, scale):
    return InverseWishart._log_prob_event(S, df, scale)


def log_joint_z(x, k):
    """log p(D, z): pi, mu and Sigma integrated out (normal-inverse-Wishart marginals per cluster)."""
    def f(th):
        counts, _, scatter = cluster_stats(x, th["z"], k)
        per = (-0.5 * counts * P * jnp.log(jnp.pi) + 0.5 * P * jnp.log(TAU / (TAU + counts))
               + 0.5 * DF0 * _logdet(jnp.asarray(S0)) - 0.5 * (DF0 + counts) * _logdet(S0 + scatter)
               + multigammaln(0.5 * (DF0 + counts), P) - multigammaln(0.5 * DF0, P))
        return log_dirmult(counts, k) + jnp.sum(per)
    return f


def log_joint_z_sigma(x, k):
    """log p(D, z, Sigma): pi and mu integrated out."""
    def f(th):
        counts, _, scatter = cluster_stats(x, th["z"], k)
        Sig = th["Sigma"]
        per = (jax.vmap(lambda s: log_iw(s, DF0, jnp.asarray(S0)))(Sig) + 0.5 * P * jnp.log(TAU / (TAU + counts))
               - 0.5 * counts * (P * LOG_2PI + _logdet(Sig))
               - 0.5 * jnp.trace(pd_inverse(Sig) @ scatter, axis1=-2, axis2=-1))
        return log_dirmult(counts, k) + jnp.sum(per)
    return f


def log_joint_full(x, k):
    """log p(D, z, mu, Sigma): pi integrated out (the standard, reduced-pi context)."""
    def f(th):
        z, mu, Sig = th["z"], th["mu"], th["Sigma"]
        counts = jnp.bincount(z, length=k)
        prior_mu = jax.vmap(lambda m, s: MultivariateNormal._log_prob_event(m, jnp.zeros(P), s / TAU))(mu, Sig)
        prior_s = jax.vmap(lambda s: log_iw(s, DF0, jnp.asarray(S0)))(Sig)
        lik = jax.vmap(lambda xi, zi: MultivariateNormal._log_prob_event(xi, mu[zi], Sig[zi]))(x, z)
        return log_dirmult(counts.astype(x.dtype), k) + jnp.sum(prior_mu) + jnp.sum(prior_s) + jnp.sum(lik)
    return f


def gibbs(key, x, k, *, sweeps, burn):
    """Blocked Gibbs: pi | z, (Sigma_j, mu_j) | z (NIW), z | pi, mu, Sigma. Returns draws after ``burn``."""
    n = x.shape[0]

    def sweep(z, kk):
        k1, k2, k3, k4 = jax.random.split(kk, 4)
        counts, sums, scatter = cluster_stats(x, z, k)
        pi = jax.random.dirichlet(k1, 1.0 / k + counts)
        Sig = jax.vmap(InverseWishart._sample_event)(jax.random.split(k2, k), DF0 + counts, S0 + scatter)
        kap = TAU + counts
        mean = sums / kap[:, None]
        mu = mean + jnp.einsum("jab,jb->ja", pd_cholesky(Sig / kap[:, None, None]),
                               jax.random.normal(k3, (k, P)))
        loglik = jax.vmap(lambda m, s: jax.vmap(lambda xi: MultivariateNormal._log_prob_event(xi, m, s))(x))(mu, Sig)
        z_new = jax.random.categorical(k4, jnp.log(pi)[:, None] + loglik, axis=0)
        return z_new, {"z": z_new, "mu": mu, "Sigma": Sig, "pi": pi}

    k0, ks = jax.random.split(key)
    z0 = jax.random.randint(k0, (n,), 0, k)
    _, draws = jax.lax.scan(sweep, z0, jax.random.split(ks, sweeps))
    # (mu, Sigma, pi) drawn in a sweep are paired with the z drawn from them: a draw of the joint posterior.
    return jax.tree.map(lambda a: a[burn:], draws)


def cavi_updates(x, k):
    """Eq. (7) for q(pi) Dir x prod_j N(mu_j) IW(Sigma_j) x prod_i Mn(z_i) on the full model."""

    def r_of(q):
        return q["z"].probs  # (n, k)

    def pi_update(q):
        return Dirichlet(1.0 / k + r_of(q).sum(0))

    def mu_update(q):
        r = r_of(q)
        Nk = r.sum(0)
        Einv = q["Sigma"].expected_inverse()
        prec = (TAU + Nk)[:, None, None] * Einv
        return MultivariateNormal((r.T @ x) / (TAU + Nk)[:, None], pd_inverse(prec))

    def sigma_update(q):
        r = r_of(q)
        Nk = r.sum(0)
        nu, Om = q["mu"].mean, q["mu"].cov
        d = x[None, :, :] - nu[:, None, :]  # (k, n, p)
        scat = jnp.einsum("kn,kna,knb->kab", r.T, d, d) + Nk[:, None, None] * Om
        prior = TAU * (jnp.einsum("ka,kb->kab", nu, nu) + Om)
        return InverseWishart(DF0 + Nk + 1.0, S0 + scat + prior)

    def z_update(q):
        e_log_pi = digamma(q["pi"].alpha) - digamma(q["pi"].alpha.sum())
        Einv, Elogdet = q["Sigma"].expected_inverse(), q["Sigma"].expected_logdet()
        nu, Om = q["mu"].mean, q["mu"].cov
        d = x[None, :, :] - nu[:, None, :]
        quad = jnp.einsum("kna,kab,knb->kn", d, Einv, d) + jnp.einsum("kab,kba->k", Einv, Om)[:, None]
        logits = e_log_pi[:, None] - 0.5 * Elogdet[:, None] - 0.5 * quad
        return Categorical(jax.nn.softmax(logits.T, axis=-1))

    return {"pi": pi_update, "mu": mu_update, "Sigma": sigma_update, "z": z_update}


def vb_init(key, x, k):
    r = jax.random.dirichlet(key, jnp.ones(k), (x.shape[0],))
    return MeanField({
        "pi": Dirichlet(jnp.ones(k)), "mu": MultivariateNormal(jnp.zeros((k, P)), jnp.tile(jnp.eye(P), (k, 1, 1))),
        "Sigma": InverseWishart(jnp.full((k,), DF0), jnp.tile(jnp.asarray(S0), (k, 1, 1))), "z": Categorical(r)})


def one_rep(key, k, *, sweeps, burn, num_draws, vb_iterations):
    kd, kg, kl1, kl2, kl3, kv, kl4 = jax.random.split(key, 7)
    x = simulate(kd)
    post = gibbs(kg, x, k, sweeps=sweeps, burn=burn)
    zc = ("categorical", k)
    ctx = {
        "1": ({"z": zc}, log_joint_z(x, k)),
        "2": ({"z": zc, "Sigma": "inverse_wishart"}, log_joint_z_sigma(x, k)),
        "3": ({"z": zc, "mu": "normal", "Sigma": "inverse_wishart"}, log_joint_full(x, k)),
    }
    out = {}
    for name, kl in zip("123", (kl1, kl2, kl3)):
        fam, lj = ctx[name]
        sub = {n: post[n] for n in fam}
        u, q = upper_bound_values(sub, lj, fam)
        lo = lower_bound_values(kl, q, lj, num_draws=num_draws)
        out["U" + name], out["L" + name] = jnp.mean(u), jnp.mean(lo)
        out["U" + name + "_se"] = jnp.std(u, ddof=1) / jnp.sqrt(u.shape[0])  # iid approximation (see README)
        out["L" + name + "_se"] = jnp.std(lo, ddof=1) / jnp.sqrt(lo.shape[0])
    q_vb, changes = coordinate_ascent(vb_init(kv, x, k), cavi_updates(x, k), num_iterations=vb_iterations)
    q4 = MeanField({n: q_vb[n] for n in ("z", "mu", "Sigma")})
    lo4 = lower_bound_values(kl4, q4, ctx["3"][1], num_draws=num_draws)
    out["L4"], out["L4_se"] = jnp.mean(lo4), jnp.std(lo4, ddof=1) / jnp.sqrt(lo4.shape[0])
    out["vb_last_change"] = changes[-1]
    # Identity check of the three log joints: log p(D, z) = log p(D, z, Sigma) - log p(Sigma | z, D).
    th = jax.tree.map(lambda a: a[-1], post)
    counts, _, scatter = cluster_stats(x, th["z"], k)
    cond = jnp.sum(jax.vmap(log_iw)(th["Sigma"], DF0 + counts, S0 + scatter))
    out["identity_error"] = ctx["2"][1](th) - cond - ctx["1"][1](th)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--ks", default="2,3,4,5,6,7,8,9,10")
    ap.add_argument("--sweeps", type=int, default=2500)
    ap.add_argument("--burn", type=int, default=500)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--vb-iterations", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/bracketing")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    key = jax.random.key(args.seed)
    names = ["U3", "U2", "U1", "L1", "L2", "L3", "L4"]
    rows, t0 = [], time.perf_counter()
    for k in [int(v) for v in args.ks.split(",")]:
        tk = time.perf_counter()
        fn = lambda kk, k=k: one_rep(kk, k, sweeps=args.sweeps, burn=args.burn, num_draws=args.draws,  # noqa: E731
                                     vb_iterations=args.vb_iterations)
        # Replicates in sequence, one compiled function per k: vmapping 20 chains' z-draws would not fit
        # comfortably in memory.
        run = jax.jit(fn)
        reps = [jax.tree.map(np.asarray, run(kk)) for kk in jax.random.split(key, args.reps)]
        res = {n: np.stack([r[n] for r in reps]) for n in reps[0]}
        row = {"k": k, "seconds": time.perf_counter() - tk,
               "max_identity_error": float(np.max(np.abs(res["identity_error"]))),
               "max_vb_last_change": float(np.max(res["vb_last_change"]))}
        for n in names:
            row[n], row[n + "_sd"] = float(np.mean(res[n])), float(np.std(res[n], ddof=1))
            row[n + "_mean_se"] = float(np.mean(res[n + "_se"]))
        row["per_rep_order_U3>=U2>=U1>=L1>=L2>=L3"] = int(np.sum(
            (res["U3"] >= res["U2"]) & (res["U2"] >= res["U1"]) & (res["U1"] >= res["L1"]) & (res["L1"] >= res["L2"])
            & (res["L2"] >= res["L3"])))
        row["per_rep_U1>=L1"] = int(np.sum(res["U1"] >= res["L1"]))
        row["per_rep_L1>=L4"] = int(np.sum(res["L1"] >= res["L4"]))
        rows.append(row)
        print(json.dumps(row), flush=True)
        (out / "mixture_table2.json").write_text(json.dumps({"settings": vars(args), "rows": rows}, indent=1))
    seconds = time.perf_counter() - t0
    lines = ["| k | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for r in rows:
        lines.append(f"| {r['k']} | " + " | ".join(f"{r[n]:.1f} ± {r[n + '_sd']:.2f}" for n in names) + " |")
    (out / "mixture_table2.md").write_text("\n".join(lines) + f"\n\nTotal {seconds:.0f} s, {args.reps} replicates.\n")
    (out / "mixture_table2.json").write_text(json.dumps({"settings": vars(args), "seconds": seconds, "rows": rows},
                                                        indent=1))
    print("\n".join(lines))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = [r["k"] for r in rows]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for n, style in [("U1", "r--"), ("L1", "b-"), ("L4", "k:")]:
        ax.plot(ks, [r[n] for r in rows], style, marker="o", ms=3, label=n)
    ax.set_xlabel("number of components k")
    ax.set_ylabel("log marginal likelihood bound")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "mixture_fig4.png", dpi=120)


if __name__ == "__main__":
    main()
