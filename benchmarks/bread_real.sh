#!/usr/bin/env bash
# The real-data protocol on the BREAD paper's five models (NumPyro), the regressions in PyMC and Stan, and
# Appendix D's misspecified (uncentred) matrix factorization. Each run resumes from its directory.
set -euo pipefail
OUT=${OUT:-benchmarks/results/bread_real}
run() { name=$1; shift; bdmc bread-real "$@" --out "$OUT/$name" 2>&1 | grep -v -i warning | tee "$OUT/$name.log"; }
# Matrix factorization has 503 latents: NUTS trees of up to 1,023 leapfrog steps per AIS step cost ~100x HMC's 10.
run matrix-factorization-numpyro --model matrix-factorization --kernel hmc
run matrix-factorization-uncentred-numpyro --model matrix-factorization --uncentred --kernel hmc
run ar1-numpyro --model ar1
run mixture-numpyro --model mixture
run logistic-regression-numpyro --model logistic-regression
run linear-regression-numpyro --model linear-regression
run linear-regression-pymc --model linear-regression --ppl pymc
run logistic-regression-pymc --model logistic-regression --ppl pymc
# Stan in-process (bdmc.ppl.from_stan's default backend) at the paper's settings, as the NumPyro runs: NUTS,
# 100 chains, T = 10, 100, 1000, S = 10 ... 10,000 (matrix factorization with HMC, as in NumPyro).
run ar1-stan --model ar1 --ppl stan
run linear-regression-stan --model linear-regression --ppl stan
run logistic-regression-stan --model logistic-regression --ppl stan
run matrix-factorization-stan --model matrix-factorization --ppl stan --kernel hmc
run mixture-stan --model mixture --ppl stan
