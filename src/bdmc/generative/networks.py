"""Multilayer perceptrons as pure functions over parameter pytrees: decoders, encoders, discriminators.

A network's parameters are a list of layers, each ``{"w": (n_in, n_out), "b": (n_out,)}``. Every function
works on one input (a latent ``(k,)`` or an image ``(D,)``) and equally on a batch ``(..., k)``, since the
layers act on the last axis; the AIS evaluator vmaps ``decode(params, z)`` over single latents.

The decoders are Wu et al.'s (2017): tanh hidden layers and a sigmoid output, latent first and pixels last.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import DataError

ARCHITECTURES = {
    "paper10": (10, 64, 256, 256, 1024, 784),   # Wu et al. (2017), the 10-dimensional decoder
    "paper50": (50, 1024, 1024, 1024, 784),     # Wu et al. (2017), the 50-dimensional decoder
    "small10": (10, 64, 256, 784),              # this project's CPU default for MNIST
    "small50": (50, 256, 784),
    "digits2": (2, 32, 64),                     # 8 x 8 digits, a 2-dimensional latent (quadrature-sized)
    "digits10": (10, 64, 64),                   # 8 x 8 digits
}


def resolve_architecture(architecture: str | Sequence[int], *, data_dim: int | None = None) -> tuple[int, ...]:
    """Layer sizes (latent first, pixels last) from a name in :data:`ARCHITECTURES` or a sequence of sizes.

    Raises
    ------
    bdmc.DataError
        For an unknown name, fewer than two sizes, a size below 1, or (given ``data_dim``) a last size that
        differs from the number of pixels.
    """
    if isinstance(architecture, str):
        if architecture not in ARCHITECTURES:
            raise DataError(f"unknown architecture {architecture!r}; known: {sorted(ARCHITECTURES)}, or pass the "
                            "layer sizes as a tuple (latent first, pixels last)")
        sizes = ARCHITECTURES[architecture]
    else:
        sizes = tuple(int(s) for s in architecture)
    if len(sizes) < 2 or min(sizes) < 1:
        raise DataError(f"an architecture needs at least two positive layer sizes, got {sizes}")
    if data_dim is not None and sizes[-1] != data_dim:
        raise DataError(f"architecture {architecture!r} ends in {sizes[-1]} outputs but the images have "
                        f"{data_dim} pixels")
    return tuple(sizes)


def encoder_sizes(sizes: Sequence[int], *, outputs: int) -> tuple[int, ...]:
    """The decoder's layers mirrored (pixels first), ending in ``outputs`` units."""
    return (sizes[-1], *reversed(tuple(sizes[1:-1])), outputs)


def init_mlp(key, sizes: Sequence[int], *, dtype=None) -> list[dict]:
    """Glorot-uniform weights and zero biases for an MLP with the given layer sizes.

    Parameters
    ----------
    key : jax.random key
    sizes : sequence of int
        Input size first, output size last.
    dtype : optional
        Float dtype of the parameters; JAX's default float (float64 under ``bdmc.enable_x64()``) if None.

    Returns
    -------
    list of dict
        One ``{"w", "b"}`` per layer.
    """
    dtype = jnp.zeros(()).dtype if dtype is None else jnp.dtype(dtype)
    layers = []
    for k, (n_in, n_out) in zip(jax.random.split(key, len(sizes) - 1), itertools.pairwise(sizes), strict=True):
        limit = np.sqrt(6.0 / (n_in + n_out))
        layers.append({"w": jax.random.uniform(k, (n_in, n_out), dtype, -limit, limit),
                       "b": jnp.zeros((n_out,), dtype)})
    return layers


def mlp(params: Sequence[dict], x, *, hidden=jnp.tanh):
    """The network's output before any output nonlinearity (``hidden`` between layers)."""
    for layer in params[:-1]:
        x = hidden(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def decode(params: Sequence[dict], z):
    """Mean image ``f(z)`` in (0, 1): tanh hidden layers, sigmoid output. ``z`` is ``(k,)`` or ``(..., k)``."""
    return jax.nn.sigmoid(mlp(params, z))


def decode_logits(params: Sequence[dict], z):
    """The decoder's output before the sigmoid (for a numerically stable log of the mean image)."""
    return mlp(params, z)


def encode(params: Sequence[dict], x):
    """Diagonal Gaussian ``q(z | x)``: returns ``(mean, log_std)``, each of the latent size."""
    out = mlp(params, x)
    half = out.shape[-1] // 2
    return out[..., :half], out[..., half:]


def discriminate(params: Sequence[dict], x):
    """The GAN discriminator's logit of "x is a data image" (a scalar per image)."""
    return mlp(params, x, hidden=jax.nn.leaky_relu)[..., 0]


def num_params(params) -> int:
    """Number of scalars in a parameter pytree."""
    return int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(params)))
