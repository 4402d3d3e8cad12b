import numpy as np
import pytest

from bdmc import ScheduleError, schedules


@pytest.mark.parametrize("make", [schedules.linear, schedules.sigmoidal, schedules.geometric])
@pytest.mark.parametrize("T", [2, 3, 17, 1000])
def test_schedules_are_valid_paths(make, T):
    path = make(T)
    assert path.shape == (T,)
    assert path[0] == 0.0 and path[-1] == 1.0
    assert np.all(np.diff(path) > 0)
    schedules.validate(path)


def test_sigmoidal_matches_paper_formula():
    T, delta = 50, 4.0
    t = np.arange(1, T + 1)
    tilde = 1 / (1 + np.exp(-delta * (2 * t / T - 1)))
    expected = (tilde - tilde[0]) / (tilde[-1] - tilde[0])
    np.testing.assert_allclose(schedules.sigmoidal(T), expected, atol=1e-15)
    # Denser near both ends than in the middle.
    d = np.diff(schedules.sigmoidal(T))
    assert d[0] < d[T // 2] and d[-1] < d[T // 2]


def test_data_path_switches_cases_on_in_order():
    path = schedules.data_path(3, order=[2, 0, 1])
    np.testing.assert_array_equal(path, [[0, 0, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1]])
    fine = schedules.data_path(2, steps_per_case=4)
    assert fine.shape == (9, 2)
    np.testing.assert_allclose(fine[:5, 0], [0, 0.25, 0.5, 0.75, 1.0])
    assert np.all(fine[:5, 1] == 0)
    schedules.validate(fine, num_cases=2)


@pytest.mark.parametrize(
    "path, match",
    [
        ([0.0, 0.6, 0.4, 1.0], "decreases between step 1 and 2"),
        ([0.0], "at least 2 points"),
        ([0.1, 1.0], "start at 0"),
        ([0.0, 0.9], "end at 1"),
        ([0.0, np.nan, 1.0], "NaN"),
        ([0.0, 1.5, 1.0], r"lie in \[0, 1\]"),
        (np.zeros((2, 2, 2)), "shape"),
    ],
)
def test_bad_paths_are_named(path, match):
    with pytest.raises(ScheduleError, match=match):
        schedules.validate(path)


def test_bad_counts_and_widths():
    with pytest.raises(ScheduleError, match="at least 2"):
        schedules.sigmoidal(1)
    with pytest.raises(ScheduleError, match="delta"):
        schedules.sigmoidal(10, delta=0)
    with pytest.raises(ScheduleError, match="3 columns but the data has 4"):
        schedules.validate(schedules.data_path(3), num_cases=4)
    with pytest.raises(ScheduleError, match="permutation"):
        schedules.data_path(3, order=[0, 0, 1])
