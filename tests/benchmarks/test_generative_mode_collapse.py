"""The statistics and the nearest-neighbour labelling of benchmarks/generative_mode_collapse.py, on inputs
whose answers are known exactly."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import generative_mode_collapse as gmc  # noqa: E402


def test_uniform_split_has_entropy_log_10_and_covers_every_class():
    labels = np.repeat(np.arange(10), 100)
    stats = gmc.label_statistics(labels, np.arange(1000))
    assert stats["entropy_nats"] == pytest.approx(math.log(10), abs=1e-12)
    assert stats["max_entropy_nats"] == pytest.approx(math.log(10))
    assert stats["counts"] == [100] * 10
    assert stats["fractions"] == pytest.approx([0.1] * 10)
    assert stats["classes_min_share"] == 10 and stats["classes_present"] == 10
    assert stats["distinct_nearest"] == 1000
    assert stats["top_class"] == 0 and stats["top_count"] == 100  # a tie goes to the lowest label
    assert stats["min_fraction_covered"] == pytest.approx(0.1) and stats["max_fraction"] == pytest.approx(0.1)


def test_single_class_has_entropy_zero():
    stats = gmc.label_statistics(np.full(1000, 1), np.full(1000, 42))
    assert stats["entropy_nats"] == 0.0
    assert stats["classes_min_share"] == 1 and stats["classes_present"] == 1
    assert stats["top_class"] == 1 and stats["top_count"] == 1000 and stats["top_fraction"] == 1.0
    assert stats["distinct_nearest"] == 1
    assert stats["counts"] == [0, 1000] + [0] * 8


def test_two_classes_entropy():
    stats = gmc.label_statistics([3] * 750 + [7] * 250, np.arange(1000))
    assert stats["entropy_nats"] == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)), abs=1e-12)
    assert stats["top_class"] == 3 and stats["top_count"] == 750


@pytest.mark.parametrize("count, covered", [(20, True), (19, False), (21, True)])
def test_two_percent_rule_at_its_boundary(count, covered):
    # 1,000 samples: class 5 holds `count`, class 0 the rest; 20 of 1,000 is exactly 2%.
    labels = np.array([5] * count + [0] * (1000 - count))
    stats = gmc.label_statistics(labels, np.arange(1000))
    assert stats["classes_min_share"] == (2 if covered else 1)
    assert stats["classes_present"] == 2
    assert stats["min_fraction_covered"] == pytest.approx(count / 1000 if covered else (1000 - count) / 1000)


def test_two_percent_rule_is_exact_for_awkward_sizes():
    # 2% of 150 is 3: 3 samples count, 2 do not (no floating-point rounding at the boundary).
    stats = gmc.label_statistics([9] * 3 + [8] * 2 + [0] * 145, np.zeros(150, int))
    assert stats["classes_min_share"] == 2
    assert stats["distinct_nearest"] == 1


def test_distinct_count_ignores_labels():
    stats = gmc.label_statistics([1, 1, 2, 2, 2], [4, 4, 9, 9, 0])
    assert stats["distinct_nearest"] == 3
    assert stats["counts"][1:3] == [2, 3]


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError):
        gmc.label_statistics([1, 2], [1])
    with pytest.raises(ValueError):
        gmc.label_statistics([10], [0])
    with pytest.raises(ValueError):
        gmc.label_statistics([], [])


def test_nearest_neighbour_labelling_by_hand():
    references = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0], [10.0, 10.0]])
    labels = np.array([0, 1, 2, 1])
    queries = np.array([[1.0, 1.0], [9.0, 0.5], [0.2, 8.0], [11.0, 12.0], [6.0, 9.0]])
    for chunk in (1, 2, 256):
        indices, distances = gmc.nearest_neighbours(queries, references, chunk_size=chunk)
        assert indices.tolist() == [0, 1, 2, 3, 3]
        assert labels[indices].tolist() == [0, 1, 2, 1, 1]
        assert distances == pytest.approx([math.sqrt(2), math.sqrt(1.25), math.sqrt(4.04), math.sqrt(5),
                                           math.sqrt(17)])
    stats = gmc.label_statistics(labels[indices], indices, num_classes=3)
    assert stats["counts"] == [1, 3, 1] and stats["distinct_nearest"] == 4


def test_chunked_matches_brute_force():
    rng = np.random.default_rng(3)
    references = rng.uniform(size=(97, 784))
    queries = rng.uniform(size=(41, 784))
    brute = np.linalg.norm(queries[:, None, :] - references[None, :, :], axis=2)
    for chunk in (1, 7, 41, 1000):
        indices, distances = gmc.nearest_neighbours(queries, references, chunk_size=chunk)
        np.testing.assert_array_equal(indices, np.argmin(brute, axis=1))
        np.testing.assert_allclose(distances, brute.min(axis=1), rtol=1e-10)
