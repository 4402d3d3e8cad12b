#!/usr/bin/env bash
# The audit of the Pima logistic regression (NumPyro's NUTS, the real Pima data) at the default budgets, written to
# examples/audit_pima/ (about 3 minutes on two cores; `bash examples/audit_pima.sh --quick` gives a first look
# in under a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c "import numpy as np; from bdmc.datasets import load_pima; d = load_pima(); np.savez('examples/audit_pima/pima.npz', x=d['x'], y=d['y'])"
bdmc audit --numpyro examples/audit_pima/pima_logistic_regression.py:logistic_regression_program --observed y \
    --data examples/audit_pima/pima.npz --hyperparameters scale_sq --seed 0 --out examples/audit_pima "$@"
