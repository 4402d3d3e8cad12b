#!/usr/bin/env bash
# The audit of the Pima logistic regression (NumPyro's NUTS, the real Pima data) at the default budgets (about
# 3 minutes on two cores; `bash examples/audit_pima.sh --quick` gives a first look in about a minute).
# Writes to $OUT (default out/audit_pima), never over the shipped report in examples/audit_pima/, which was made
# with OUT=examples/audit_pima bash examples/audit_pima.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-out/audit_pima}"
mkdir -p "$OUT"
python3 -c "import sys, numpy as np; from bdmc.datasets import load_pima; d = load_pima(); np.savez(sys.argv[1], x=d['x'], y=d['y'])" "$OUT/pima.npz"
bdmc audit --numpyro examples/audit_pima/pima_logistic_regression.py:logistic_regression_program --observed y \
    --data "$OUT/pima.npz" --real-data --hyperparameters scale_sq --seed 0 --out "$OUT" "$@"
