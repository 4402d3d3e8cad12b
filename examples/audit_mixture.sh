#!/usr/bin/env bash
# The audit of a two-component Gaussian mixture with exchangeable components, under NumPyro's NUTS and Stan's NUTS,
# and of the same programs with a density that mixes the components' log densities linearly (the negative control:
# it must fail). NUTS keeps one labelling: the audit finds the components' symmetry by permuting them and tests
# label-invariant quantities, so the correct programs pass with that finding. Pass --quick for a first look.
# Writes to $OUT (default out/audit_mixture): numpyro/, numpyro_linear/, stan/, stan_linear/.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-out/audit_mixture}"
HERE=examples/audit_mixture
mkdir -p "$OUT"
python3 -c "import sys, numpy as np; np.savez(sys.argv[1], n=40, y=np.zeros(40))" "$OUT/stan_data.npz"
bdmc audit --numpyro "$HERE/mixture.py:mixture" --observed y --seed 0 --out "$OUT/numpyro" "$@"
bdmc audit --numpyro "$HERE/mixture.py:mixture_linear" --observed y --seed 0 --out "$OUT/numpyro_linear" "$@"
for program in mixture mixture_linear; do
    bdmc audit --stan "$HERE/$program.stan" --simulator "$HERE/simulate.py:simulate" --observed y \
        --data "$OUT/stan_data.npz" --seed 0 --out "$OUT/stan${program#mixture}" "$@"
done
# The correct programs must pass, having kept one labelling, and the linear mixtures must fail.
python3 - "$OUT" <<'PY'
import json, sys
runs = {name: json.load(open(f"{sys.argv[1]}/{name}/results.json"))
        for name in ("numpyro", "numpyro_linear", "stan", "stan_linear")}
verdicts = {name: r["verdict"] for name, r in runs.items()}
sbc = {name: next(c for c in r["checks"] if c["name"] == "sbc")["summary"] for name, r in runs.items()}
for name in runs:
    print(f"{name}: {verdicts[name]}; SBC: {sbc[name]}")
kept = all("exchangeable components" in sbc[name] for name in ("numpyro", "stan"))
sys.exit(0 if kept and verdicts == {"numpyro": "pass", "numpyro_linear": "fail", "stan": "pass",
                                    "stan_linear": "fail"} else 1)
PY
