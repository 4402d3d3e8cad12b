"""Write the 532 complete cases of the Pima data bdmc ships (glucose, blood pressure, skin fold and BMI recorded:
the cases of MASS's Pima.tr and Pima.te), covariates standardized, as ``pima.npz``; and the first 400 cases as
``pima_first400.npz`` (for the refusal shown in docs/compare.md)."""

import sys
from pathlib import Path

import numpy as np

from bdmc.datasets import load_pima

out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
out.mkdir(parents=True, exist_ok=True)
pima = load_pima(standardize=False)
x, y = np.asarray(pima["x"], float), np.asarray(pima["y"])
columns = dict(zip(pima.columns, x.T, strict=True))
complete = (columns["glucose"] > 0) & (columns["pressure"] > 0) & (columns["triceps"] > 0) & (columns["mass"] > 0)
names = {"npreg": "pregnant", "glu": "glucose", "bmi": "mass", "ped": "pedigree", "age": "age"}
arrays = {}
for short, column in names.items():
    values = columns[column][complete]
    arrays[short] = (values - values.mean()) / values.std()
arrays["y"] = y[complete].astype(np.int64)
np.savez(out / "pima.npz", **arrays)
np.savez(out / "pima_first400.npz", **{k: v[:400] for k, v in arrays.items()})
print(f"{complete.sum()} complete cases, {arrays['y'].sum()} with diabetes: {out / 'pima.npz'}")
