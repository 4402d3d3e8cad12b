"""How much posterior mass the corpus's mixture (its correct twin) puts where the components' labels are swapped.

The model: ``w ~ Beta(2, 2)``, ``mu1 ~ N(-2, 1)``, ``mu2 ~ N(2, 1)``, 30 cases from
``w N(mu1, 1) + (1 - w) N(mu2, 1)``. For 40 data sets simulated from it, the exact posterior on a grid
(60 x 141 x 141 over w, mu1, mu2) gives the mass where ``mu1 > mu2``. Few data sets put more than 1% there: the
posterior is nearly unimodal, so a sampler that starts in the swapped region and stays (a chain trapped in a
minor mode) draws far from the truth there. NumPy and SciPy only; a few seconds.

With ``--stan``, Stan's NUTS as the audit runs it (one chain, 150 warm-up iterations, thin 2, 50 draws, Stan's
random initialization) on one data set simulated from the correct Stan program, eight times: the share of each
chain's draws with ``mu1 > mu2`` says whether it sits in the swapped mode (about a minute, Stan build cached).

    python benchmarks/bug_corpus/mixture_modes.py
    python benchmarks/bug_corpus/mixture_modes.py --stan
"""

import sys

import numpy as np
from scipy import stats
from scipy.special import logsumexp


def main(seed: int = 1, data_sets: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = np.linspace(0.005, 0.995, 60)[:, None, None]
    grid = np.linspace(-7, 7, 141)
    m1, m2 = grid[None, :, None], grid[None, None, :]
    log_prior = stats.beta.logpdf(w, 2, 2) + stats.norm.logpdf(m1, -2, 1) + stats.norm.logpdf(m2, 2, 1)
    swapped = np.broadcast_to(m1 > m2, np.broadcast_shapes(w.shape, m1.shape, m2.shape))
    masses = []
    for _ in range(data_sets):
        weight, mu1, mu2 = rng.beta(2, 2), -2 + rng.normal(), 2 + rng.normal()
        y = np.where(rng.uniform(size=30) < weight, mu1, mu2) + rng.normal(size=30)
        log_post = log_prior + sum(np.logaddexp(np.log(w) + stats.norm.logpdf(yi, m1, 1),
                                                np.log1p(-w) + stats.norm.logpdf(yi, m2, 1)) for yi in y)
        masses.append(float(np.exp(log_post - logsumexp(log_post))[swapped].sum()))
    masses = np.array(masses)
    print("posterior mass with mu1 > mu2, per data set:", np.round(np.sort(masses), 3))
    print(f"data sets with more than 1% of it there: {int(np.sum(masses > 0.01))} of {data_sets}")
    return masses


def stan_chains(chains: int = 8) -> list[float]:
    import warnings
    from pathlib import Path

    import jax

    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
    import stan_programs

    import bdmc
    from bdmc.ppl.samplers import StanNUTS

    bdmc.enable_x64()
    model, _ = stan_programs.mixture(False)
    params, observed = stan_programs.simulate_mixture(np.random.default_rng(3))
    print("truth:", {k: round(float(v), 2) for k, v in params.items()})
    shares = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(chains):
            draws = StanNUTS(model, num_warmup=150, thin=2).draws(jax.random.key(seed), {"y": observed["y"]},
                                                                  num_draws=50)
            values = [model.constrain(x) for x in np.asarray(draws)]
            mu1, mu2 = (np.array([float(v[n]) for v in values]) for n in ("mu1", "mu2"))
            shares.append(float(np.mean(mu1 > mu2)))
            print(f"chain {seed}: mean mu1 {mu1.mean():+.2f}, mu2 {mu2.mean():+.2f}; draws with mu1 > mu2: "
                  f"{shares[-1]:.2f}")
    return shares


if __name__ == "__main__":
    stan_chains() if "--stan" in sys.argv else main()
