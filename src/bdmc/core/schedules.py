"""Annealing paths: schedules of likelihood weights lambda, scalar or one weight per data case.

A path is a float64 NumPy array of shape ``(T,)`` (geometric annealing: every data case shares lambda) or
``(T, N)`` (one weight per data case, e.g. the SMC data path). It starts at all-zeros (the prior), ends at
all-ones (the posterior) and never decreases.
"""

from __future__ import annotations

import numpy as np

from ..errors import ScheduleError


def linear(num_steps: int) -> np.ndarray:
    """``num_steps`` equally spaced weights from 0 to 1."""
    _check_count(num_steps)
    return np.linspace(0.0, 1.0, int(num_steps))


def sigmoidal(num_steps: int, *, delta: float = 4.0) -> np.ndarray:
    """The sigmoidal schedule of the BDMC paper (Sec. 6.2), denser near both ends.

    ``b_t = sigmoid(delta (2t/T - 1))`` rescaled so the path runs exactly from 0 to 1.
    """
    _check_count(num_steps)
    if not delta > 0:
        raise ScheduleError(f"sigmoidal schedule needs delta > 0, got {delta}")
    t = np.arange(1, int(num_steps) + 1)
    b = 1.0 / (1.0 + np.exp(-delta * (2.0 * t / num_steps - 1.0)))
    b = (b - b[0]) / (b[-1] - b[0])
    b[0], b[-1] = 0.0, 1.0
    return b


def geometric(num_steps: int, *, start: float = 1e-4) -> np.ndarray:
    """0 followed by ``num_steps - 1`` geometrically spaced weights from ``start`` to 1."""
    _check_count(num_steps)
    if not 0 < start < 1:
        raise ScheduleError(f"geometric schedule needs 0 < start < 1, got {start}")
    rest = np.geomspace(start, 1.0, int(num_steps) - 1)
    rest[-1] = 1.0  # with one point geomspace returns ``start``
    return np.concatenate([[0.0], rest])


def data_path(num_cases: int, *, steps_per_case=1, order=None) -> np.ndarray:
    """Per-data-case path that switches data cases on one at a time (the SMC data path, Sec. 3.4.1).

    Parameters
    ----------
    num_cases : int
        Number of data cases N.
    steps_per_case : int or sequence of int
        Each case's weight rises from 0 to 1 linearly over this many steps (1 = switched on at once); a
        sequence gives one count per case (indexed by case, not by its place in ``order``).
    order : sequence of int, optional
        The order in which cases are added (default 0, 1, ..., N-1).

    Returns
    -------
    Array of shape ``(sum of the steps + 1, num_cases)``.
    """
    if int(num_cases) < 1:
        raise ScheduleError(f"data path needs at least one data case, got {num_cases}")
    n = int(num_cases)
    steps = np.broadcast_to(np.asarray(steps_per_case), (n,)) if np.ndim(steps_per_case) == 0 \
        else np.asarray(steps_per_case)
    if steps.shape != (n,) or np.any(steps != np.round(steps)) or np.any(steps < 1):
        raise ScheduleError(f"steps_per_case must be a positive integer or {n} positive integers, got "
                            f"{np.asarray(steps_per_case).tolist()}")
    steps = steps.astype(int)
    order = np.arange(n) if order is None else np.asarray(order)
    if sorted(order.tolist()) != list(range(n)):
        raise ScheduleError(f"order must be a permutation of 0..{n - 1}")
    path = np.zeros((int(steps.sum()) + 1, n))
    row = 0
    for case in order:
        s = steps[case]
        path[row + 1 : row + s + 1, case] = np.arange(1, s + 1) / s
        path[row + s + 1 :, case] = 1.0
        row += s
    return path


def validate(path, *, num_cases: int | None = None) -> np.ndarray:
    """Check that ``path`` is a usable forward path and return it as float64.

    Raises
    ------
    ScheduleError
        If it has fewer than 2 points, is not 1-D or 2-D, has NaNs, does not start at 0 or end at 1, leaves
        [0, 1], decreases anywhere, or has a per-case width different from ``num_cases``.
    """
    arr = np.asarray(path, dtype=np.float64)
    if arr.ndim not in (1, 2):
        raise ScheduleError(f"a path must have shape (T,) or (T, N), got {arr.shape}")
    if arr.shape[0] < 2:
        raise ScheduleError(f"a path needs at least 2 points, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ScheduleError("path contains NaN or inf")
    if arr.ndim == 2 and num_cases is not None and arr.shape[1] != num_cases:
        raise ScheduleError(f"per-case path has {arr.shape[1]} columns but the data has {num_cases} cases")
    if np.any(arr[0] != 0.0):
        raise ScheduleError(f"path must start at 0 (the prior), starts at {arr[0]}")
    if np.any(arr[-1] != 1.0):
        raise ScheduleError(f"path must end at 1 (the posterior), ends at {arr[-1]}")
    if np.any(arr < 0) or np.any(arr > 1):
        raise ScheduleError("path values must lie in [0, 1]")
    steps = np.diff(arr, axis=0)
    if np.any(steps < 0):
        t = int(np.argwhere(steps < 0)[0][0])
        raise ScheduleError(f"path must be non-decreasing; it decreases between step {t} and {t + 1}")
    return arr


def _check_count(num_steps) -> None:
    if int(num_steps) != num_steps or int(num_steps) < 2:
        raise ScheduleError(f"a schedule needs an integer number of at least 2 points, got {num_steps}")
