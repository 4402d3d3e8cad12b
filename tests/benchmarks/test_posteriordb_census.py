"""The census of posteriordb's 147 posteriors (``benchmarks/posteriordb_census.py``): the shipped
``census.json``, its verdicts on programs read by hand, and each rule of its Stan parser on small programs.

No network and no posteriordb checkout: the census is read from ``benchmarks/data/posteriordb/census.json``.
"""

import json

import pytest

from tests.helpers import import_benchmark

census = import_benchmark("posteriordb_census")
RECORDS = {r["posterior"]: r for r in json.loads(census.OUT.read_text())["posteriors"]}
KINDS = {"improper prior", "prior unclear", "ODE", "algebraic solver", "discrete parameter", "no data"}

# Read by hand: posterior -> (reason, why).
HAND = {
    "earnings-earn_height": ("improper prior: beta, sigma", "no statement but the likelihood `earn ~ normal(...)`"),
    "kidiq-kidscore_momhs": ("improper prior: beta", "only `sigma ~ cauchy(0, 2.5)`; beta is flat"),
    "kilpisjarvi_mod-kilpisjarvi": ("improper prior: sigma", "normal priors on alpha, beta; sigma<lower=0> flat"),
    "eight_schools-eight_schools_noncentered": (None, "theta_trans ~ normal(0, 1), theta = theta_trans*tau + mu"),
    "garch-garch11": ("improper prior: mu, alpha0", "no statements; alpha1 uniform on (0, 1) and beta1 on "
                      "(0, 1 - alpha1), a triangle of finite area; mu and alpha0 flat on unbounded supports"),
    "dogs-dogs_hierarchical": (None, "a, b in (0, 1) with no statement: uniform, proper"),
    "GLM_Poisson_Data-GLM_Poisson_model": (None, "four coefficients bounded on both sides, no statement: uniform"),
    "pilots-pilots": (None, "normal priors on a, b, mu_a, mu_b; the three scales uniform on (0, 100)"),
    "uk_drivers-state_space_stochastic_level_stochastic_seasonal": (
        "improper prior: seasonal[1:11], beta, lambda", "seasonal[t] ~ ... only for t in 12:n; beta, lambda have "
        "no statement; mu[1] has none either but mu is bounded by data"),
    "hmm_gaussian_simulated-hmm_gaussian": ("improper prior: mu, sigma", "the forward algorithm's "
                                            "log_sum_exp is a likelihood; mu and sigma have no prior"),
    "rats_data-rats_model": ("improper prior: sigma_y, sigma_alpha, sigma_beta",
                             "the program's comment: 'sigma_y, sigma_alpha, sigma_beta : flat'"),
    "mcycle_splines-accel_splines": ("improper prior: bs, bs_sigma", "brms's default flat prior on the fixed "
                                     "spline coefficients"),
    "wells_data-wells_dist": ("improper prior: beta", "a logistic regression with no prior statement"),
    "nes_logit_data-nes_logit_model": ("improper prior: alpha, beta", "bernoulli_logit_glm likelihood only"),
    "mcycle_gp-accel_gp": (None, "priors on vsdgp_1, vlscale_1[1], ...: element copies of sdgp_1, lscale_1"),
    "sat-hier_2pl": (None, "multi_normal on xi[i], whose elements are copies of xi1[i], xi2[i]"),
    "butterfly-multi_occupancy": (None, "uv copies uv1, uv2; rho_uv bounded with beta on (rho_uv + 1) / 2"),
    "hmm_example-hmm_example": (None, "simplex rows uniform; normal_lpdf(mu[1] | ...) and mu[2]"),
    "hudson_lynx_hare-lotka_volterra": ("ODE: integrate_ode_rk45", "theta[{1, 3}] and theta[{2, 4}] cover theta"),
    "one_comp_mm_elim_abs-one_comp_mm_elim_abs": ("ODE: integrate_ode_bdf", "cauchy priors on all four"),
    "prideprejudice_chapter-ldaK5": (None, "dirichlet on theta[m], phi[k] in loops over every m and k"),
    "Survey_data-Survey_model": (None, "theta in (0, 1) flat; N marginalized in a log_sum_exp"),
    "low_dim_gauss_mix-low_dim_gauss_mix": (None, "priors on ordered mu, sigma, theta; log_mix likelihood"),
    "ecdc0401-covid19imperial_v2": (None, "every positive parameter has a statement (y[m] in a loop over 1:M)"),
    # Unclear to the parser; by hand, proper:
    "traffic_accident_nyc-bym2_offset_only": (
        "prior unclear: phi: a density only on an expression of it (sum(phi))",
        "ICAR term -0.5 dot_self(phi[node1] - phi[node2]) plus sum(phi) ~ normal(0, 0.001 N): a proper Gaussian, "
        "the adjacency graph (1921 nodes, 5461 edges) being connected"),
    "fims_Aus_Jpn_irt-2pl_latent_reg_irt": (
        "prior unclear: beta_free: a density only on an expression of it (beta)",
        "beta = (beta_free, -sum(beta_free)), an injective linear map: normal(beta | 0, 3) is a proper Gaussian"),
}


def test_every_posterior_has_a_record():
    assert len(RECORDS) == 147
    assert sum(r["has_reference_draws"] for r in RECORDS.values()) == 46
    for name, r in RECORDS.items():
        assert name == f"{r['data']}-{r['model']}", name
        assert r["reason"] == ("; ".join(r["reasons"]) or None), name
        assert {census.category(x) for x in r["reasons"]} <= KINDS, name


def test_ported_flags_and_sizes_match_the_shipped_ports():
    shipped = {p.parent.name: json.loads(p.read_text()) for p in census.DATA_DIR.glob("*/info.json")}
    assert len(shipped) >= 16
    assert {n for n, r in RECORDS.items() if r["ported"]} == set(shipped)
    for name, info in shipped.items():
        if info.get("reference_source") != "none":  # elsewhere posteriordb's dimensions count derived quantities
            assert RECORDS[name]["num_parameters"] == info["n_parameters"], name
        assert census.category(RECORDS[name]["reason"] or "ODE") == "ODE", name  # proper: no other reason


@pytest.mark.parametrize("name", sorted(HAND))
def test_hand_verified(name):
    reason, why = HAND[name]
    assert RECORDS[name]["reason"] == reason, why


def test_of_the_46_with_reference_draws_31_have_an_improper_prior():
    drawn = [r for r in RECORDS.values() if r["has_reference_draws"]]
    improper = {r["posterior"] for r in drawn if any(x.startswith("improper prior") for x in r["reasons"])}
    assert len(improper) == 31
    families = {"earnings", "kidiq", "kidiq_with_mom_work", "mesquite", "kilpisjarvi_mod", "garch"}
    assert improper == {r["posterior"] for r in drawn if r["data"] in families or r["data"].startswith("nes")}
    assert not any(census.category(x) == "prior unclear" for r in drawn for x in r["reasons"])


# ------------------------------------------------------------------------------------------- the parser's rules


def reason(model: str, *, params: str, data: str = "int N; vector[N] y;", extra: str = "",
           values: dict | None = None) -> str | None:
    code = f"{extra}\ndata {{ {data} }}\nparameters {{ {params} }}\nmodel {{ {model} }}"
    return "; ".join(census.classify(code, values or {"N": 3, "y": [1.0, 2.0, 3.0]})["reasons"]) or None


def test_a_flat_unbounded_parameter_is_improper_and_a_prior_makes_it_proper():
    assert reason("y ~ normal(mu, 1);", params="real mu;") == "improper prior: mu"
    assert reason("mu ~ normal(0, 1); y ~ normal(mu, 1);", params="real mu;") is None  # negative control
    assert reason("y ~ normal(0, sigma);", params="real<lower=0> sigma;") == "improper prior: sigma"


def test_a_flat_prior_on_a_bounded_support_is_uniform():
    assert reason("y ~ normal(p, 1);", params="real<lower=0, upper=1> p;") is None
    assert reason("", params="simplex[N] w; cholesky_factor_corr[N] L;") is None


def test_a_comment_is_not_a_prior():
    assert reason("// mu ~ normal(0, 1);\n/* mu ~ normal(0, 1); */ y ~ normal(mu, 1);",
                  params="real mu;") == "improper prior: mu"


@pytest.mark.parametrize("statement", [
    "beta ~ normal(0, 1);", "target += normal_lpdf(beta | 0, 1);", "target += normal_lupdf(beta | 0, 1);",
    "to_vector(beta) ~ normal(0, 1);", "for (n in 1:N) beta[n] ~ normal(0, 1);",
    "for (n in 1:N) { target += normal_lpdf(beta[n] | 0, 1); }", "beta[1:N] ~ normal(0, 1);",
    "append_row(beta, 0) ~ normal(0, 1);"])
def test_each_form_of_density_statement_counts(statement):
    assert reason(statement, params="vector[N] beta;") is None
    assert reason(statement, params="array[N] real beta;") is None  # new array syntax
    assert reason(statement, params="real beta[N];") is None  # old array syntax


def test_a_statement_in_a_loop_covers_only_the_loop_range():
    loop = "for (t in 2:N) x[t] ~ normal(x[t - 1], 1);"
    assert reason(loop, params="vector[N] x;") == "improper prior: x[1]"
    assert reason(loop, params="vector<lower=0, upper=1>[N] x;") is None  # x[1] uniform
    assert reason(loop + " x[1] ~ normal(0, 1);", params="vector[N] x;") is None


def test_non_centered_parameterization():
    tp = "transformed parameters { vector[N] theta = mu + tau * theta_raw; }"
    params = "vector[N] theta_raw; real mu; real<lower=0> tau;"
    code = f"data {{ int N; }} parameters {{ {params} }} {tp} model {{ {{}} }}"
    model = "theta_raw ~ normal(0, 1); mu ~ normal(0, 5); tau ~ cauchy(0, 5);"
    assert census.classify(code.replace("{ {} }", "{ " + model + " }"), {"N": 3})["reasons"] == []
    # a density on the transformed parameter only: not a prior on theta_raw that the parser can vouch for
    model = "theta ~ normal(0, 1); mu ~ normal(0, 5); tau ~ cauchy(0, 5);"
    (why,) = census.classify(code.replace("{ {} }", "{ " + model + " }"), {"N": 3})["reasons"]
    assert why.startswith("prior unclear: theta_raw: a density only on an expression of it (theta)")


def test_element_copies_carry_their_density_and_other_expressions_do_not():
    tp = "transformed parameters { array[N] vector[2] uv; for (i in 1:N) { uv[i, 1] = u1[i]; uv[i, 2] = %s; } }"
    code = ("data { int N; } parameters { vector[N] u1; vector[N] u2; } " + tp +
            " model { for (i in 1:N) uv[i] ~ normal(0, 1); }")
    assert census.classify(code % "u2[i]", {"N": 3})["reasons"] == []
    # one assignment that is not a copy makes uv an expression of both
    (why,) = census.classify(code % "2 * u2[i]", {"N": 3})["reasons"]
    assert why == ("prior unclear: u1: a density only on an expression of it (uv[i]); "
                   "u2: a density only on an expression of it (uv[i])")


def test_a_density_on_an_expression_is_unclear():
    assert reason("log(sigma) ~ normal(0, 1);", params="real<lower=0> sigma;").startswith(
        "prior unclear: sigma: a density only on an expression of it (log(sigma))")


def test_hand_written_target_terms_are_unclear_but_likelihoods_are_not_priors():
    assert reason("target += -0.5 * dot_self(phi);", params="vector[N] phi;").startswith(
        "prior unclear: phi: only a hand-written target term")
    hmm = "vector[N] lp; for (n in 1:N) lp[n] = normal_lpdf(y[n] | mu, 1); target += log_sum_exp(lp);"
    assert reason(hmm, params="real mu;") == "improper prior: mu"
    assert reason(hmm + " mu ~ normal(0, 1);", params="real mu;") is None


def test_user_defined_densities_are_read():
    good = "functions { real my_lpdf(vector x, real s) { return normal_lpdf(x | 0, s); } }"
    hand = "functions { real my_lpdf(vector x, real s) { return -0.5 * dot_self(x) / s; } }"
    assert reason("target += my_lpdf(beta | 1);", params="vector[N] beta;", extra=good) is None
    assert reason("beta ~ my(1);", params="vector[N] beta;", extra=good) is None
    assert reason("beta ~ my(1);", params="vector[N] beta;", extra=hand).startswith("prior unclear: beta")
    void = "functions { void prior_lp(vector b) { b ~ normal(0, 1); } }"
    assert reason("prior_lp(beta);", params="vector[N] beta;", extra=void) is None
    assert reason("prior_lp(y);", params="vector[N] beta;", extra=void) == "improper prior: beta"


def test_bounds_that_depend_on_parameters():
    ok = "real<lower=0, upper=1> a; real<lower=0, upper=1 - a> b;"
    assert reason("", params=ok) is None
    assert reason("", params="real<lower=0, upper=1> a; real<lower=0, upper=1 / a> b;").startswith(
        "prior unclear: b: its bounds depend on a")


def test_solvers_discrete_parameters_and_missing_data():
    ode = "array[N, 2] real z = ode_rk45(f, z0, 0, ts, theta); mu ~ normal(0, 1);"
    assert reason(ode, params="real mu;") == "ODE: ode_rk45"
    assert reason("mu ~ normal(0, 1); // integrate_ode_bdf(\n", params="real mu;") is None
    assert reason("vector[2] x = solve_newton(f, g); mu ~ normal(0, 1);", params="real mu;") == "algebraic solver"
    assert reason("k ~ poisson(3);", params="int k;") == "discrete parameter"
    code = "parameters { real mu; } model { mu ~ normal(0, 1); }"
    assert census.classify(code, None)["reasons"] == ["no data"]


def test_sizes_come_from_the_data_and_transformed_data():
    code = """data { int N; array[N] int y; }
    transformed data { int K = N - 1; int m; m = max(y); int c = 0; for (n in 1:N) c = c + 1; }
    parameters { vector[K] a; simplex[N] s; cholesky_factor_corr[N] L; matrix[m, 2] b; real d[N, 2];
                 vector[c] u; }
    model { a ~ normal(0, 1); b[1] ~ normal(0, 1); to_vector(b) ~ normal(0, 1); to_array_1d(d) ~ normal(0, 1);
            u ~ normal(0, 1); }"""
    found = census.classify(code, {"N": 4, "y": [1, 5, 2, 0]})
    sizes = {p: (v["size"], v["free"]) for p, v in found["parameters"].items()}
    assert sizes == {"a": (3, 3), "s": (4, 3), "L": (16, 6), "b": (10, 10), "d": (8, 8), "u": (None, None)}
    assert found["num_parameters"] is None  # c is set in a loop: unknown
    assert found["reasons"] == []
