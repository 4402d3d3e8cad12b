"""Ports of posteriordb's hierarchical and latent-variable posteriors (random effects, item response, capture-recapture,
occupancy, topic models); the programs are in :mod:`posteriordb_ports.hierarchical_models`."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import posteriordb_models as pm

from posteriordb_ports import hierarchical_models as hm

C = 0.5 * math.log(2 * math.pi)
LOG2, LOGPI = math.log(2.0), math.log(math.pi)


def _ints(x, shift=0):
    # JAX's default integer (int64 under x64): NumPyro's binomial sampler needs the counts in it
    return jnp.asarray(np.asarray(x, dtype=int) - shift, dtype=jnp.result_type(int))


def _lchoose(n, k):
    n, k = np.asarray(n, float), np.asarray(k, float)
    return float(sum(math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)
                     for a, b in zip(n, k, strict=True)))


def _lfact(x):
    return float(sum(math.lgamma(v + 1) for v in np.ravel(x)))


def _losscurve_args(d):
    return {"cohort": _ints(d["cohort_id"], 1), "t_idx": _ints(d["t_idx"], 1), "premium": pm.floats(d["premium"]),
            "t_value": pm.floats(d["t_value"]), "weibull": int(d["growthmodel_id"]) == 1,
            "loss": pm.floats(d["loss"])}


def _seeds_args(d):
    return {"N": _ints(d["N"]), "x1": pm.floats(d["x1"]), "x2": pm.floats(d["x2"]), "n": _ints(d["n"])}


def _election_args(d):
    out = {k: _ints(d[k], 1) for k in ("age", "edu", "age_edu", "state")}
    out.update(region=_ints(d["region_full"], 1), black=pm.floats(d["black"]), female=pm.floats(d["female"]),
               v_prev=pm.floats(d["v_prev_full"]),
               sizes=tuple(int(d[k]) for k in ("n_age", "n_edu", "n_age_edu", "n_state", "n_region_full")),
               y=_ints(d["y"]))
    return out


def _occupancy_args(d):
    X = np.zeros((int(d["S"]), int(d["J"])), int)
    X[: int(d["n"])] = np.asarray(d["X"], int)  # species n+1..S: never observed
    return {"n_species": int(d["S"]), "n_sites": int(d["J"]), "n_visits": int(d["K"]), "X": _ints(X)}


def _capture_args(d, sigma_max, behaviour):
    return {"M": int(d["M"]), "T": int(d["T"]), "sigma_max": sigma_max, "behaviour": behaviour, "y": _ints(d["y"])}


ENTRIES = [
    pm.build_entry("loss_curves-losscurve_sislob", hm.losscurve_sislob, ["loss"], _losscurve_args,
                   {"omega": (), "theta": (), "LR": (10,), "mu_LR": (), "sd_LR": (), "loss_sd": ()}),
    pm.build_entry("pilots-pilots", hm.pilots, ["y"],
                   lambda d: {"group": _ints(d["group_id"], 1), "scenario": _ints(d["scenario_id"], 1),
                              "n_groups": int(d["n_groups"]), "n_scenarios": int(d["n_scenarios"]),
                              "y": pm.floats(d["y"])},
                   {"a": (5,), "b": (8,), "mu_a": (), "mu_b": (), "sigma_a": (), "sigma_b": (), "sigma_y": ()}),
    pm.build_entry("seeds_data-seeds_centered_model", hm.seeds_centered, ["n"], _seeds_args,
                   {"alpha0": (), "alpha1": (), "alpha12": (), "alpha2": (), "c": (21,), "sigma": ()}),
    pm.build_entry("seeds_data-seeds_stanified_model", hm.seeds_stanified, ["n"], _seeds_args,
                   {"alpha0": (), "alpha1": (), "alpha12": (), "alpha2": (), "b": (21,), "sigma": ()}),
    pm.build_entry("GLMM_Poisson_data-GLMM_Poisson_model", hm.glmm_poisson, ["C"],
                   lambda d: {"year": pm.floats(d["year"]), "C": _ints(d["C"])},
                   {"alpha": (), "beta1": (), "beta2": (), "beta3": (), "eps": (40,), "sigma": ()}),
    pm.build_entry("dogs-dogs_nonhierarchical", hm.dogs_nonhierarchical, ["y"],
                   lambda d: {"n_dogs": int(d["n_dogs"]), "n_trials": int(d["n_trials"]), "y": _ints(d["y"])},
                   {"mu_logit_ab": (2,), "sigma_logit_ab": (2,), "L_logit_ab": (2, 2), "z": (30, 2)}),
    pm.build_entry("election88-election88_full", hm.election88_full, ["y"], _election_args,
                   {"a": (4,), "b": (4,), "c": (16,), "d": (51,), "e": (5,), "beta": (5,), "sigma_a": (),
                    "sigma_b": (), "sigma_c": (), "sigma_d": (), "sigma_e": ()}),
    pm.build_entry("butterfly-multi_occupancy", hm.multi_occupancy, ["X"], _occupancy_args,
                   {"alpha": (), "beta": (), "Omega": (), "rho_uv": (), "sigma_uv": (2,), "uv1": (50,),
                    "uv2": (50,)}),
    pm.build_entry("irt_2pl-irt_2pl", hm.irt_2pl, ["y"],
                   lambda d: {"n_items": int(d["I"]), "n_persons": int(d["J"]), "y": _ints(d["y"])},
                   {"sigma_theta": (), "theta": (100,), "sigma_a": (), "a": (20,), "mu_b": (), "sigma_b": (),
                    "b": (20,)}),
    pm.build_entry("Mtbh_data-Mtbh_model", hm.capture_history, ["y"], lambda d: _capture_args(d, 3.0, True),
                   {"omega": (), "mean_p": (5,), "gamma": (), "sigma": (), "eps_raw": (146,)}),
    pm.build_entry("GLMM_data-GLMM1_model", hm.glmm1, ["obs"],
                   lambda d: {"site": _ints(d["obssite"], 1), "nsite": int(d["nsite"]), "obs": _ints(d["obs"])},
                   {"alpha": (235,), "mu_alpha": (), "sd_alpha": ()}),
    pm.build_entry("Mh_data-Mh_model", hm.Mh, ["y"], lambda d: {"M": int(d["M"]), "T": int(d["T"]), "y": _ints(d["y"])},
                   {"omega": (), "mean_p": (), "sigma": (), "eps_raw": (385,)}),
    pm.build_entry("Mth_data-Mth_model", hm.capture_history, ["y"], lambda d: _capture_args(d, 5.0, False),
                   {"omega": (), "mean_p": (5,), "sigma": (), "eps_raw": (387,)}),
    pm.build_entry("three_docs1200-ldaK2", hm.lda, ["w"],
                   lambda d: {"doc": _ints(d["doc"], 1), "M": int(d["M"]), "V": int(d["V"]), "K": 2,
                              "w": _ints(d["w"], 1)},
                   {"theta": (3, 2), "phi": (2, 3)}),
    pm.build_entry("sat-hier_2pl", hm.hier_2pl, ["y"],
                   lambda d: {"item": _ints(d["ii"], 1), "person": _ints(d["jj"], 1), "n_items": int(d["I"]),
                              "n_persons": int(d["J"]), "y": _ints(d["y"])},
                   {"theta": (600,), "xi1": (32,), "xi2": (32,), "mu": (2,), "tau": (2,), "L_Omega": (2, 2)}),
]

_SEEDS_WIDE = "`~` drops normal(0, 1)'s -log sqrt(2 pi) on alpha0, alpha1, alpha2, alpha12"
_SEEDS_LIK = ("-log sqrt(2 pi) per random effect (I = 21; sigma is a parameter) and binomial_logit's log C(N, n) "
              "per plate")
_CAPTURE = ("the mixture likelihood is target += log_sum_exp(bernoulli_lpmf ...) (normalized), and omega, mean_p "
            "have implicit uniform(0, 1) priors (density 1)")

EXPECTED = {
    "loss_curves-losscurve_sislob": (
        lambda d: -C - math.log(0.5) + 3 * -math.log(0.5) - math.log(0.7) - d["n_data"] * C,
        "`~` drops normal(0, 0.5)'s -log sqrt(2 pi) - log 0.5 on mu_LR, lognormal's -log sigma on sd_LR, omega, "
        "theta (sigma 0.5) and loss_sd (0.7), and -log sqrt(2 pi) per loss (55; the scale loss_sd * premium is a "
        "parameter). Stan's lognormal_lpdf keeps its -log sqrt(2 pi) even under `~`."),
    "pilots-pilots": (
        lambda d: -3 * math.log(100.0) - (2 + d["n_groups"] + d["n_scenarios"] + d["N"]) * C,
        "sigma_a, sigma_b, sigma_y have implicit uniform(0, 100) priors (Stan adds nothing; NumPyro's Uniform "
        "-log 100 each); `~` drops -log sqrt(2 pi) on mu_a, mu_b, each a (5), b (8) and y (40)."),
    "seeds_data-seeds_centered_model": (
        lambda d: -4 * C + LOG2 - LOGPI - d["I"] * C + _lchoose(d["N"], d["n"]),
        f"{_SEEDS_WIDE}, cauchy(0, 1)'s -log pi on sigma (NumPyro's HalfCauchy adds log 2), {_SEEDS_LIK}."),
    "seeds_data-seeds_stanified_model": (
        lambda d: -4 * C + LOG2 - LOGPI - d["I"] * C + _lchoose(d["N"], d["n"]),
        f"{_SEEDS_WIDE}, cauchy(0, 1)'s -log pi on sigma (NumPyro's HalfCauchy adds log 2), {_SEEDS_LIK}."),
    "GLMM_Poisson_data-GLMM_Poisson_model": (
        lambda d: -math.log(40.0) - 3 * math.log(20.0) - math.log(5.0) - d["n"] * C - _lfact(d["C"]),
        "`~ uniform` drops -log 40 on alpha, -log 20 on beta1, beta2, beta3 and -log 5 on sigma; `~` drops "
        "-log sqrt(2 pi) per eps (40) and poisson_log's -log C! per count."),
    "dogs-dogs_nonhierarchical": (
        lambda d: 2 * (LOG2 - C) - 2 * d["n_dogs"] * C + math.log(0.75),
        "`~` drops normal(0, 1)'s -log sqrt(2 pi) on sigma_logit_ab[1..2] (NumPyro's HalfNormal adds log 2) and on "
        "each z (2 x 30), and lkj_corr_cholesky(2)'s normalizing constant: for 2 x 2 the correlation r has "
        "density (3/4)(1 - r^2) (log 3/4); logistic(0, 1) and bernoulli drop nothing."),
    "election88-election88_full": (
        lambda d: -5 * math.log(100.0) - (d["n_age"] + d["n_edu"] + d["n_age_edu"] + d["n_state"]
                                          + d["n_region_full"]) * C + 5 * (-C - math.log(100.0)),
        "sigma_a..sigma_e have implicit uniform(0, 100) priors (NumPyro's Uniform: -log 100 each); `~` drops "
        "-log sqrt(2 pi) per effect (a, b, c, d, e: 80; their scales are parameters) and normal(0, 100)'s "
        "-log sqrt(2 pi) - log 100 per beta (5); bernoulli_logit drops nothing."),
    "butterfly-multi_occupancy": (
        lambda d: 2 * (-LOGPI - math.log(2.5)) + 2 * (LOG2 - LOGPI - math.log(2.5)) + math.log(6.0) - LOG2
        + math.log(6.0),
        "`~` drops cauchy(0, 2.5)'s -log pi - log 2.5 on alpha, beta and sigma_uv[1..2] (NumPyro's HalfCauchy adds "
        "log 2 for each sigma_uv) and beta(2, 2)'s -log B(2, 2) = log 6 on Omega and on (rho_uv + 1) / 2; NumPyro's "
        "density of rho_uv itself has the affine map's -log 2. The likelihood and multi_normal are target +=."),
    "irt_2pl-irt_2pl": (
        lambda d: 3 * (LOG2 - LOGPI - LOG2) - d["J"] * C - C - math.log(5.0) - d["I"] * C,
        "`~` drops cauchy(0, 2)'s -log pi - log 2 on sigma_theta, sigma_a, sigma_b (NumPyro's HalfCauchy adds log "
        "2), -log sqrt(2 pi) per theta (100) and b (20), normal(0, 5)'s -log sqrt(2 pi) - log 5 on mu_b; Stan's "
        "lognormal_lpdf keeps its -log sqrt(2 pi) even under `~` (sigma_a is a parameter: nothing else dropped)."),
    "Mtbh_data-Mtbh_model": (
        lambda d: -math.log(3.0) - C - math.log(10.0) - d["M"] * C,
        f"sigma's implicit uniform(0, 3) prior (NumPyro's Uniform: -log 3); `~` drops normal(0, 10)'s "
        f"-log sqrt(2 pi) - log 10 on gamma and -log sqrt(2 pi) per eps_raw (146); {_CAPTURE}."),
    "GLMM_data-GLMM1_model": (
        lambda d: -d["nsite"] * C - C - math.log(10.0) - math.log(5.0) - _lfact(d["obs"]),
        "`~` drops -log sqrt(2 pi) per alpha (235; sd_alpha is a parameter), normal(0, 10)'s -log sqrt(2 pi) - "
        "log 10 on mu_alpha and poisson_log's -log obs! per count; sd_alpha's implicit uniform(0, 5) prior "
        "(NumPyro's Uniform: -log 5)."),
    "Mh_data-Mh_model": (
        lambda d: -math.log(5.0) - d["M"] * C,
        f"sigma's implicit uniform(0, 5) prior (NumPyro's Uniform: -log 5); `~` drops -log sqrt(2 pi) per eps_raw "
        f"(385); {_CAPTURE} (binomial_logit_lpmf keeps log C(T, y))."),
    "Mth_data-Mth_model": (
        lambda d: -math.log(5.0) - d["M"] * C,
        f"sigma's implicit uniform(0, 5) prior (NumPyro's Uniform: -log 5); `~` drops -log sqrt(2 pi) per eps_raw "
        f"(387); {_CAPTURE}."),
    "three_docs1200-ldaK2": (
        lambda d: 2 * math.lgamma(d["V"]) + d["M"] * math.lgamma(2),
        "`~` drops dirichlet(1)'s log Gamma(V) = log 2 on phi[1..2] (and log Gamma(K) = 0 on theta[1..3]); the "
        "likelihood is target += log_sum_exp (normalized)."),
    "sat-hier_2pl": (
        lambda d: -d["J"] * C + math.log(35 / 32) - C - C - math.log(5.0) + 2 * math.log(0.1),
        "`~` drops -log sqrt(2 pi) per theta (600), normal(0, 1)'s -log sqrt(2 pi) on mu[1] and normal(0, 5)'s "
        "-log sqrt(2 pi) - log 5 on mu[2], exponential(0.1)'s log 0.1 on tau[1..2] and lkj_corr_cholesky(4)'s "
        "normalizing constant (the 2 x 2 correlation's density (35/32)(1 - r^2)^3); the multi_normal_cholesky and "
        "bernoulli_logit terms are target += or drop nothing."),
}

N_CASES = {
    "loss_curves-losscurve_sislob": lambda d: d["n_data"],
    "seeds_data-seeds_centered_model": lambda d: d["I"],
    "seeds_data-seeds_stanified_model": lambda d: d["I"],
    "GLMM_Poisson_data-GLMM_Poisson_model": lambda d: d["n"],
    "dogs-dogs_nonhierarchical": lambda d: d["n_dogs"],
    "butterfly-multi_occupancy": lambda d: d["S"],
    "irt_2pl-irt_2pl": lambda d: d["I"],
    "Mtbh_data-Mtbh_model": lambda d: d["M"],
    "GLMM_data-GLMM1_model": lambda d: d["nobs"],
    "Mh_data-Mh_model": lambda d: d["M"],
    "Mth_data-Mth_model": lambda d: d["M"],
}

# Checked at posterior draws of the port (``posteriordb_check.py check --source posterior``): their vague or
# heavy-tailed priors put some prior draws where |log p| is 1e15-1e39, where one rounding unit of Stan's and
# NumPyro's sums exceeds the check's tolerance (1e-6 of the median |log p|).
CHECKED_AT_POSTERIOR_DRAWS = ("GLMM_Poisson_data-GLMM_Poisson_model", "irt_2pl-irt_2pl", "sat-hier_2pl")
