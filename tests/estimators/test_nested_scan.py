"""Constrained Gibbs as one scan over sites (models with indexed conditionals) against the unrolled loop.

The scan visits the same sites in the same order with the same keys, so it must give the same numbers bit for
bit; what changes is the compiled program, whose size no longer grows with the number of sites.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_same_but_rounding

import bdmc
from bdmc.contracts import IndexedConditionals, supports
from bdmc.estimators.nested import ConstrainedGibbs, _log_l, default_nested_kernel, nested_sampling
from bdmc.models import BinaryAttributes, BinaryAttributesHyper

SMALL = (BinaryAttributes(n=4, dim=3, k=2), BinaryAttributesHyper(n=3, dim=3, k=2))


def _data(model):
    return bdmc.simulate(jax.random.key(3), model)[0]


def test_one_move_of_the_scan_equals_the_unrolled_loop(key):
    model = SMALL[0]
    data = _data(model)
    start = model.sample_prior(jax.random.key(5))
    log_c = _log_l(model, start, data) - 3.0  # a constraint that rejects some proposals
    scanned = jax.jit(ConstrainedGibbs(model))(key, start, data, log_c)
    unrolled = jax.jit(ConstrainedGibbs(model, scan=False))(key, start, data, log_c)
    assert_same_but_rounding(scanned, unrolled)  # two compiled programs: equal but the last bits
    assert not np.array_equal(scanned["Z"], start["Z"])  # the move did something


@pytest.mark.slow  # the unrolled loop compiles slowly; one move's identity above runs by default
@pytest.mark.parametrize("model", SMALL, ids=lambda m: type(m).__name__)
def test_nested_sampling_with_the_scan_equals_the_unrolled_loop(model):
    data = _data(model)
    assert supports(model, IndexedConditionals) and isinstance(default_nested_kernel(model), ConstrainedGibbs)
    common = dict(num_moves=2, num_runs=3)
    scanned = nested_sampling(jax.random.key(4), model, data, **common)
    unrolled = nested_sampling(jax.random.key(4), model, data, kernel=ConstrainedGibbs(model, scan=False), **common)
    assert_same_but_rounding(scanned.runs, unrolled.runs)  # two compiled programs: equal but the last bits
    assert scanned.n_evals == unrolled.n_evals


def test_the_scanned_move_does_not_grow_with_the_number_of_sites(key):
    """One site update is traced whatever n * k is (the unrolled loop traced one per bit)."""

    def equations(model, scan):
        data = jnp.zeros((model.n, model.dim))
        latent = model.sample_prior(key)
        return len(jax.make_jaxpr(ConstrainedGibbs(model, scan=scan))(key, latent, data, 0.0).jaxpr.eqns)

    small, large = BinaryAttributes(n=3, dim=4, k=2), BinaryAttributes(n=12, dim=4, k=5)
    assert equations(small, True) == equations(large, True)
    assert equations(large, False) > 5 * equations(small, False)


def test_nested_sampling_on_the_default_binary_model_compiles(record_property):
    """The compile time is recorded (``compile_seconds`` in the test report), not asserted: it depends on the
    machine. With 1 move per step it was 1,493 s unrolled and 24 s with the scan, both on a 2-core machine at
    a load average of about 9 (same key, identical estimates)."""
    model = BinaryAttributes()
    data = bdmc.simulate(jax.random.key(0), model)[0]
    bdmc.clear_caches()
    est = nested_sampling(jax.random.key(1), model, data, num_moves=1, num_runs=1, max_steps=3)
    record_property("compile_seconds", est.compile_seconds)
    print(f"nested sampling on BinaryAttributes() compiled in {est.compile_seconds:.1f} s")
    assert est.compiled and np.isfinite(est.value)
