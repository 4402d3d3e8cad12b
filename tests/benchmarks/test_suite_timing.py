"""``benchmarks/suite_timing.py`` reads pytest's last line into the counts and seconds it stores."""

import pytest
from helpers import import_benchmark

suite_timing = import_benchmark("suite_timing")


@pytest.mark.parametrize("line, want", [
    ("1634 passed, 4 skipped in 613.21s (0:10:13)", dict(passed=1634, skipped=4, failed=0, errors=0, tests=1638,
                                                         seconds=613.21)),
    ("1 failed, 1634 passed, 4 skipped, 35 deselected, 2 warnings in 620.50s (0:10:20)",
     dict(passed=1634, skipped=4, failed=1, errors=0, tests=1639, seconds=620.5)),
    ("338 passed, 22 skipped, 2 errors, 3 xfailed", dict(passed=338, skipped=22, failed=0, errors=2, tests=362,
                                                        seconds=None)),
])
def test_summary_lines(line, want):
    assert suite_timing.parse_summary(line) == want


def test_a_line_that_is_no_summary_is_refused():
    with pytest.raises(ValueError, match="not a pytest summary"):
        suite_timing.parse_summary("collected 12 items")
