#!/usr/bin/env bash
# The audit of a Poisson regression of the coal-mining disasters (NumPyro's NUTS, the 112 yearly counts of
# 1851-1962), and of the same program with a simulator that draws at a rate 10% too high (the negative control:
# it must fail). Pass --quick for a first look. Writes to $OUT (default out/audit_coal): correct/ and wrong_rate/.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-out/audit_coal}"
mkdir -p "$OUT"
python3 -c "import sys, numpy as np; from bdmc.datasets import load_coal; d = load_coal(); np.savez(sys.argv[1], t=d['t'], y=d['y'])" "$OUT/coal.npz"
PROGRAM=examples/audit_coal/coal_poisson_regression.py
bdmc audit --numpyro "$PROGRAM:trend" --observed y --data "$OUT/coal.npz" --real-data --seed 0 \
    --out "$OUT/correct" "$@"
bdmc audit --numpyro "$PROGRAM:trend_wrong_rate" --observed y --data "$OUT/coal.npz" --real-data --seed 0 \
    --out "$OUT/wrong_rate" "$@"
# The correct program must pass and the wrong simulator must fail.
python3 - "$OUT" <<'PY'
import json, sys
verdicts = {name: json.load(open(f"{sys.argv[1]}/{name}/results.json"))["verdict"] for name in ("correct", "wrong_rate")}
print(f"correct program: {verdicts['correct']}; simulator drawing at a 10% higher rate: {verdicts['wrong_rate']}")
sys.exit(0 if verdicts == {"correct": "pass", "wrong_rate": "fail"} else 1)
PY
