"""The audit's one key stream and its refusal of a wrong sampler before any check runs (fast: nothing compiles)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bdmc.auditing import audit
from bdmc.auditing.run import AUDIT_STREAMS, AuditKeys
from bdmc.errors import OptionError, OptionTypeError
from bdmc.models import GaussianMean


def test_each_check_has_its_own_fixed_stream():
    """The numbers every stored audit was run with: changing one changes that check's results."""
    assert AUDIT_STREAMS == {"simulator": 1, "sbc": 2, "geweke": 3, "bdmc": 4, "real_data": 5, "evidence_draws": 6,
                             "evidence": 7, "prior": 8, "evidence_data": 9, "sampler": 100, "labels": 101}
    key = jax.random.key(7)
    keys = AuditKeys.of(key)
    assert keys._fields == tuple(AUDIT_STREAMS)
    for name, n in AUDIT_STREAMS.items():
        np.testing.assert_array_equal(jax.random.key_data(getattr(keys, name)),
                                      jax.random.key_data(jax.random.fold_in(key, n)))


@pytest.mark.parametrize(("sampler", "error", "message"), [
    ("stan-nuts", OptionError, "needs a Stan program"),
    ("slice", OptionError, "unknown sampler 'slice'"),
    (3, OptionTypeError, "sampler must be a name"),
])
def test_a_wrong_sampler_is_refused_before_the_report_is_started(tmp_path, sampler, error, message):
    with pytest.raises(error, match=message):
        audit(jax.random.key(0), GaussianMean(n=3, dim=1), sampler=sampler, report_dir=tmp_path / "report")
    assert not (tmp_path / "report").exists()
