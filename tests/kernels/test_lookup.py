"""Reading a pilot's tables: the comparison-and-sum lookups give exactly what ``jnp.searchsorted`` and ``jnp.interp``
give (they replace them to spare a first call their tracing and lowering), on grids like a pilot's and at every
edge: a grid point, between points, outside the grid, equal points, NaN."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bdmc.kernels.lookup import count_at_most, count_below, interp


def grids():
    rng = np.random.default_rng(3)
    pilot = np.concatenate([[0.0], np.geomspace(1e-4, 1.0, 20), [1.5, 2.0]])  # padded past 1, as a pilot pads
    return [pilot, np.sort(rng.normal(size=7)), np.array([0.25]), np.array([0.0, 0.5, 0.5, 1.0])]


def points(grid):
    mid = (grid[:-1] + grid[1:]) / 2 if grid.size > 1 else grid
    return np.concatenate([grid, mid, [grid[0] - 1.0, grid[-1] + 1.0, np.nan, -np.inf, np.inf]])


@pytest.mark.parametrize("grid", grids(), ids=["pilot", "normal", "one", "equal"])
def test_the_counts_are_searchsorted(grid):
    xs = jnp.asarray(points(grid))
    at_most = jax.vmap(lambda x: count_at_most(jnp.asarray(grid), x))(xs)
    below = jax.vmap(lambda x: count_below(jnp.asarray(grid), x))(xs)
    np.testing.assert_array_equal(at_most, jnp.searchsorted(jnp.asarray(grid), xs, side="right"))
    np.testing.assert_array_equal(below, jnp.searchsorted(jnp.asarray(grid), xs, side="left"))


@pytest.mark.parametrize("grid", [g for g in grids() if g.size > 1], ids=["pilot", "normal", "equal"])
def test_interp_is_jnp_interp_to_the_bit(grid):
    values = jnp.asarray(np.log(np.random.default_rng(4).uniform(0.01, 1.0, grid.size)))
    xs = jnp.asarray(points(grid))
    ours = jax.jit(jax.vmap(lambda x: interp(x, jnp.asarray(grid), values)))(xs)
    theirs = jax.jit(jax.vmap(lambda x: jnp.interp(x, jnp.asarray(grid), values)))(xs)
    np.testing.assert_array_equal(ours, theirs)
    # Not vacuous: between two points the value is strictly between theirs (the formula is exercised).
    inner = np.flatnonzero(np.diff(grid) > 0)[0]
    x = (grid[inner] + grid[inner + 1]) / 2
    lo, hi = sorted((float(values[inner]), float(values[inner + 1])))
    assert lo < float(interp(jnp.asarray(x), jnp.asarray(grid), values)) < hi or lo == hi
