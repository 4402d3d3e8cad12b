"""Conformance, part 4 (the rest is test_conformance.py): the Geweke test of every built-in model's default kernel
at several lam, and negative controls (broken kernels) that must fail it, driven by the table in
conformance_cases.py. Statistical checks use the Geweke test's Bonferroni threshold at family-wise level 1e-3.

Compilation dominates the cost (one program per model, kernel and lam shape; the scalar lams share one), so this
half has its own file: the two halves run on the two workers of the default suite.
"""

import jax
import numpy as np
import pytest
from conformance_cases import CASES, CONTROLS, lam_value

from bdmc.checks import geweke

# ----- 4. Geweke ------------------------------------------------------------------------------------------------

KERNELS = {name: case.geweke.model.default_kernel() for name, case in CASES.items()}  # one instance each
# Whose chains (site sweeps of a collapsed sampler) run for seconds: compiled at bdmc's level, not the suite's 0
# (conftest's optimized_runs; clustering at lam = 1, 12 s at level 0 and 5 s at bdmc's; binary, 8 s and 6 s).
# Not clustering-hyper nor niw-mixture: their programs compile for longer at bdmc's level than they save (9 s and
# 10 s at level 0, 13 s and 14 s at bdmc's, side by side).
LONG_CHAINS = frozenset({"clustering", "binary"})


def _marks(name, slow):
    return ([pytest.mark.slow] if slow else []) + ([pytest.mark.optimized_runs] if name in LONG_CHAINS else [])


def _geweke(key, name, kernel, lam):
    spec = CASES[name].geweke
    return geweke(key, spec.forward(lam), kernel, lam=lam, num_samples=spec.num_samples, num_steps=spec.num_steps,
                  statistics=spec.statistics)


def _geweke_params():
    for name, case in CASES.items():
        for lam in case.geweke.lams:
            yield pytest.param(name, lam, marks=_marks(name, lam in case.geweke.slow_lams), id=f"{name}-{lam}")


@pytest.mark.parametrize("name, lam", list(_geweke_params()))
def test_default_kernel_passes_geweke(name, lam):
    spec = CASES[name].geweke
    res = _geweke(jax.random.key(11), name, KERNELS[name], lam_value(lam, spec.model.n))
    assert res.passed, (res.worst, res.threshold)


@pytest.mark.parametrize("control", [pytest.param(c, marks=_marks(CONTROLS[c].case, CONTROLS[c].slow), id=c)
                                     for c in CONTROLS])
def test_geweke_catches_a_broken_kernel(control):
    c = CONTROLS[control]
    spec = CASES[c.case].geweke
    lam = lam_value(c.lam, spec.model.n)
    kernel = KERNELS[c.case] if c.kernel is None else c.kernel()
    forward = spec.model if c.untilted else spec.forward(lam)
    res = geweke(jax.random.key(11), forward, kernel, lam=lam, num_samples=spec.num_samples,
                 num_steps=spec.num_steps, statistics=spec.statistics)
    assert not res.passed, (c.family, c.bug, dict(zip(res.names, np.round(res.z, 1), strict=False)))
    if c.shows_in:
        assert res.worst[0] in c.shows_in, dict(zip(res.names, np.round(res.z, 1), strict=False))
