"""Ports of further posteriordb posteriors: latent Dirichlet allocation on the ``three_men`` corpora.

The LDA posteriors run the program of ``three_docs1200-ldaK2`` (:mod:`posteriordb_ports.hierarchical`) on other
data: 249 words, 6 / 14 / 9 documents, two topics.
"""

from __future__ import annotations

import math

import posteriordb_models as pm

from posteriordb_ports import hierarchical

_LDA = next(e for e in hierarchical.ENTRIES if e.name == "three_docs1200-ldaK2")
_LDA_SIZES = {"three_men1": 6, "three_men2": 14, "three_men3": 9}  # M documents; V = 249 words in each

ENTRIES = [
    pm.build_entry(f"{data}-ldaK2", _LDA.model, ["w"], _LDA.args, {"theta": (m, 2), "phi": (2, 249)})
    for data, m in _LDA_SIZES.items()
]

_LDA_WHY = ("`~` drops dirichlet(1)'s normalizer log Gamma(V) = log 248! on phi[1..2] (and log Gamma(K) = 0 on each "
            "theta[m]); the likelihood is target += log_sum_exp (normalized).")

EXPECTED = {
    f"{data}-ldaK2": (lambda d: 2 * math.lgamma(d["V"]) + d["M"] * math.lgamma(2), _LDA_WHY) for data in _LDA_SIZES
}

N_CASES: dict = {}  # the likelihood has one term per word: data["N"]
