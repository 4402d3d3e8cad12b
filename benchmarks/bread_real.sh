#!/usr/bin/env bash
# The real-data protocol on the BREAD paper's five models (NumPyro), the regressions in PyMC and Stan, and
# Appendix D's misspecified (uncentred) matrix factorization. Each run resumes from its directory.
set -euo pipefail
OUT=${OUT:-benchmarks/results/bread_real}
STEPS=${STEPS:-10,30,100,300,1000}  # five chain lengths; a directory with fewer is extended (resumed)
HERE=$(dirname "$0")
# Each directory's provenance.jsonl gets a stamped line (commit, clean tree, date, load) when a run ends, with
# the estimates runs.csv then holds: successive lines say which rows each run added.
run() {
  name=$1; shift
  bdmc bread-real "$@" --steps "$STEPS" --out "$OUT/$name" 2>&1 | grep -v -i warning | tee "$OUT/$name.log"
  python3 "$HERE/provenance.py" "$OUT/$name/provenance.jsonl" run="$name" steps="$STEPS" --rows "$OUT/$name/runs.csv"
}
# Cheapest first, so a run cut short has the most models at every chain length.
# Matrix factorization has 503 latents: NUTS trees of up to 1,023 leapfrog steps per AIS step cost ~100x HMC's 10;
# it runs with HMC (the fit's step size and mass, 10 leapfrog steps), in Stan as in NumPyro.
# Stan runs in-process (bdmc.ppl.from_stan's default backend) at the NumPyro runs' settings: 100 chains,
# T = 10, 30, 100, 300, 1000, S = 10 ... 10,000.
run ar1-numpyro --model ar1
run ar1-stan --model ar1 --ppl stan
run linear-regression-numpyro --model linear-regression
run logistic-regression-numpyro --model logistic-regression
run linear-regression-pymc --model linear-regression --ppl pymc
run logistic-regression-pymc --model logistic-regression --ppl pymc
run logistic-regression-stan --model logistic-regression --ppl stan
run linear-regression-stan --model linear-regression --ppl stan
run matrix-factorization-uncentred-numpyro --model matrix-factorization --uncentred --kernel hmc
run matrix-factorization-stan --model matrix-factorization --ppl stan --kernel hmc
run matrix-factorization-numpyro --model matrix-factorization --kernel hmc
run mixture-stan --model mixture --ppl stan
run mixture-numpyro --model mixture
python3 "$HERE/harness/render.py" bread_real  # its pages, re-rendered from the rows now stored
