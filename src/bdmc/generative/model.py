"""Decoder-based generative models ``x = f(z) + sigma * eps``, ``z ~ N(0, I_k)``, as Models of one image.

Where the decoder's parameters and sigma live
---------------------------------------------
The project's models are static (hashable) arguments of compiled programs: whatever a model holds is baked
into the program as a constant. A decoder's parameters (3 million numbers for the paper's 50-d decoders)
baked as HLO constants compile slowly, and a sigma sweep would compile once per sigma. So a
:class:`DecoderModel` holds only structure (the decoder function, compared by identity, and the latent and
image sizes) and **the data of one case is** :class:`DecoderData` ``(image, params, log_sigma)``: the image
together with the parameters and observation noise it is conditioned on. Every compiled program (the
engine's, the pilot's, the per-image runs of :mod:`bdmc.generative.ais`) takes the data as an argument, so new
parameters or a new sigma reuse the program. Holding the parameters in the model by identity would have kept
the data a plain image, but every new parameter set would then be a new model, hence a new compilation with
the parameters as constants.

The price is simulation: :meth:`DecoderModel.sample_data` needs parameters. :meth:`DecoderModel.simulating`
returns a copy that holds them (by identity) for ``sample_data`` only; the data it draws records the
parameters and sigma it was drawn with, and the densities only ever read the data's.

AIS from an encoder (the paper's "AIS from the encoder") anneals from ``q(z | x)`` to ``p(z) p(x | z)``
along ``q^(1 - beta) (p(z) p(x | z))^beta``. :class:`EncoderStartModel` writes that path in whitened
coordinates ``u``, ``z = m + s * u`` with ``(m, log s)`` the encoder's output: there ``q`` becomes N(0, I) (a
prior free of the data, as the Model contract wants) and the path's density is
``N(u; 0, I) * exp(beta * [log p(z) + log p(x | z) - log q(z | x)])`` (the Jacobian ``prod s`` of the change
of variables cancels the one inside ``q``). So the weight increments carry ``log p(z) - log q(z | x)``
exactly, the engine's linear-in-beta machinery (cached terms, frozen step sizes) applies unchanged, and the
evidence (the path's end normalizer over ``u``) is still ``p(x)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import CompiledCache
from ..contracts.model import check_array_shape
from ..errors import BDMCError, DataError

PyTree = Any
LOG_2PI = math.log(2.0 * math.pi)


class DecoderData(NamedTuple):
    """One data case of a :class:`DecoderModel`: an image and what it is conditioned on.

    ``image`` has shape (D,); ``params`` is the decoder's parameter pytree; ``log_sigma`` the log of the
    observation noise's standard deviation (a scalar).
    """

    image: jax.Array
    params: PyTree
    log_sigma: jax.Array


class EncoderData(NamedTuple):
    """One data case of an :class:`EncoderStartModel`: the decoder case and the encoder's ``q(z | x)``,
    a diagonal Gaussian with ``mean`` and ``log_std`` of shape (k,)."""

    case: DecoderData
    mean: jax.Array
    log_std: jax.Array


class Held:
    """A value compared and hashed by identity, so a frozen model holding it stays hashable."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return "Held(...)"


def gaussian_log_likelihood(image, mean, log_sigma) -> jax.Array:
    """``log N(image; mean, sigma^2 I)`` summed over the D pixels."""
    dim = image.shape[-1]
    resid = (image - mean) * jnp.exp(-log_sigma)
    return -0.5 * jnp.sum(resid**2, axis=-1) - dim * (log_sigma + 0.5 * LOG_2PI)


def standard_normal_log_density(z) -> jax.Array:
    """``log N(z; 0, I)`` over the last axis."""
    return -0.5 * jnp.sum(z**2, axis=-1) - 0.5 * z.shape[-1] * LOG_2PI


@dataclass(frozen=True)
class DecoderModel:
    """``x = decoder(params, z) + sigma * eps`` with ``z ~ N(0, I_k)``, ``eps ~ N(0, I_D)``: one image per case.

    Obeys the Model contract for ONE image (its ``log_likelihood`` has one term), so ``bdmc.forward_ais``,
    ``bdmc.reverse_ais`` and ``bdmc.sandwich`` work on it with ``data = model.case(image, params, sigma=...)``.
    Many images are evaluated, one weight per image and chain, by
    :func:`bdmc.generative.ais_log_likelihood`.

    Parameters
    ----------
    decoder : callable
        ``decoder(params, z) -> mean image`` of shape (D,), a pure JAX function (compared by identity).
    latent_dim : int
        k, the size of z.
    dim : int
        D, the number of pixels.
    simulation : Held or None
        Parameters and log sigma that :meth:`sample_data` draws with (see :meth:`simulating`); never read
        by the densities.
    """

    decoder: Callable
    latent_dim: int
    dim: int
    simulation: Held | None = field(default=None, repr=False)

    def __post_init__(self):
        if int(self.latent_dim) < 1 or int(self.dim) < 1:
            raise BDMCError(f"DecoderModel needs latent_dim >= 1 and dim >= 1, got {self.latent_dim} and {self.dim}")
        if not callable(self.decoder):
            raise BDMCError(f"decoder must be a function decoder(params, z) -> mean image, got {self.decoder!r}")

    def case(self, image, params, *, sigma) -> DecoderData:
        """The data of one image: ``DecoderData(image, params, log(sigma))`` (log sigma in the image's dtype)."""
        image = jnp.asarray(image)
        return DecoderData(image, params, jnp.log(jnp.asarray(positive_sigma(sigma), image.dtype)))

    def simulating(self, params, *, sigma) -> DecoderModel:
        """A copy whose :meth:`sample_data` draws images with ``params`` and ``sigma`` (held by identity)."""
        return DecoderModel(self.decoder, self.latent_dim, self.dim,
                            Held((params, float(np.log(positive_sigma(sigma))))))

    # -- the Model contract --------------------------------------------------------------------------------
    def sample_prior(self, key) -> jax.Array:
        return jax.random.normal(key, (int(self.latent_dim),), jnp.result_type(float))

    def sample_data(self, key, latent) -> DecoderData:
        if self.simulation is None:
            raise BDMCError("DecoderModel.sample_data needs the parameters and sigma to draw with: use "
                            "model.simulating(params, sigma=...), or bdmc.generative.simulate_images")
        params, log_sigma = self.simulation.value
        mean = self.decoder(params, latent)
        log_sigma = jnp.asarray(log_sigma, mean.dtype)
        image = mean + jnp.exp(log_sigma) * jax.random.normal(key, mean.shape, mean.dtype)
        return DecoderData(image, params, log_sigma)

    def log_prior(self, latent) -> jax.Array:
        return standard_normal_log_density(latent)

    def log_likelihood(self, latent, data: DecoderData) -> jax.Array:
        mean = self.decoder(data.params, latent)
        return jnp.reshape(gaussian_log_likelihood(data.image, mean, data.log_sigma), (1,))

    def check_data(self, data) -> None:
        """Raise a DataError unless ``data`` is a DecoderData whose image has shape (D,)."""
        if not isinstance(data, DecoderData):
            raise DataError(f"a DecoderModel's data is DecoderData(image, params, log_sigma) (model.case(...)), "
                            f"got {type(data).__name__}")
        check_array_shape("DecoderModel image", data.image, (int(self.dim),))
        check_array_shape("DecoderModel log_sigma", data.log_sigma, ())


@dataclass(frozen=True)
class EncoderStartModel:
    """AIS from an encoder: the path from ``q(z | x)`` to ``p(z) p(x | z)`` in whitened coordinates.

    The latent is ``u`` with ``z = mean + exp(log_std) * u`` (see the module docstring): ``log_prior`` is
    ``N(u; 0, I)`` and the one likelihood term is ``log p(z) + log p(x | z) - log q(z | x)``, so the
    annealing path is the geometric one between ``q`` and the posterior and its evidence is ``p(x)``.
    Its ``sample_data`` is refused: the start depends on the image, so there is nothing to simulate from.
    """

    decoder: Callable
    latent_dim: int
    dim: int

    def to_z(self, latent, data: EncoderData) -> jax.Array:
        """``z = mean + exp(log_std) * u``."""
        return data.mean + jnp.exp(data.log_std) * latent

    def to_u(self, z, data: EncoderData) -> jax.Array:
        """``u = (z - mean) / exp(log_std)``."""
        return (z - data.mean) * jnp.exp(-data.log_std)

    def sample_prior(self, key) -> jax.Array:
        return jax.random.normal(key, (int(self.latent_dim),), jnp.result_type(float))

    def sample_data(self, key, latent):
        raise BDMCError("EncoderStartModel evaluates given images; simulate images with DecoderModel")

    def log_prior(self, latent) -> jax.Array:
        return standard_normal_log_density(latent)

    def log_likelihood(self, latent, data: EncoderData) -> jax.Array:
        z = self.to_z(latent, data)
        mean = self.decoder(data.case.params, z)
        log_q = standard_normal_log_density(latent) - jnp.sum(data.log_std)
        value = standard_normal_log_density(z) + gaussian_log_likelihood(data.case.image, mean,
                                                                         data.case.log_sigma) - log_q
        return jnp.reshape(value, (1,))

    def check_data(self, data) -> None:
        """Raise a DataError unless ``data`` is an EncoderData of the right shapes."""
        if not isinstance(data, EncoderData):
            raise DataError(f"an EncoderStartModel's data is EncoderData(case, mean, log_std), got "
                            f"{type(data).__name__}")
        check_array_shape("EncoderStartModel image", data.case.image, (int(self.dim),))
        check_array_shape("encoder mean", data.mean, (int(self.latent_dim),))
        check_array_shape("encoder log_std", data.log_std, (int(self.latent_dim),))


def positive_sigma(sigma) -> float:
    """``sigma`` as a float, refused unless positive and finite."""
    value = float(sigma)
    if not (math.isfinite(value) and value > 0):
        raise BDMCError(f"sigma must be positive and finite, got {sigma!r}")
    return value


def check_decoder(decoder, params, latent_dim: int, dim: int | None = None) -> int:
    """The decoder's output size D, checked to be a vector (and to equal ``dim`` when given)."""
    z = jax.ShapeDtypeStruct((int(latent_dim),), jnp.result_type(float))
    try:
        out = jax.eval_shape(decoder, params, z)
    except Exception as err:  # the user's function: say which call failed
        raise BDMCError(f"decoder(params, z) failed for z of shape ({latent_dim},): {err}") from err
    if not hasattr(out, "shape") or len(out.shape) != 1:
        raise BDMCError(f"decoder(params, z) must return a mean image of shape (D,), got "
                        f"{getattr(out, 'shape', type(out).__name__)}")
    if dim is not None and out.shape[0] != dim:
        raise DataError(f"the images have {dim} pixels but decoder(params, z) returns {out.shape[0]}")
    return int(out.shape[0])


_SIMULATE = CompiledCache("generative simulate", maxsize=16)


def simulate_images(key, decoder, params, *, sigma, latent_dim: int, num_images: int):
    """Draw ``num_images`` images from the decoder model: ``z ~ N(0, I)``, ``x = decoder(params, z) + sigma eps``.

    Returns ``(images, latents)`` of shapes (n, D) and (n, k); each latent is an exact posterior sample given
    its image (what reverse AIS starts from). ``params`` and ``sigma`` are arguments of the compiled draw.
    """
    check_decoder(decoder, params, latent_dim)
    if int(num_images) < 1:
        raise BDMCError(f"num_images must be at least 1, got {num_images}")
    n, k = int(num_images), int(latent_dim)

    def draw(key, params, log_sigma):
        kz, kx = jax.random.split(key)
        z = jax.random.normal(kz, (n, k), jnp.result_type(float))
        mean = jax.vmap(lambda zi: decoder(params, zi))(z)
        return mean + jnp.exp(log_sigma).astype(mean.dtype) * jax.random.normal(kx, mean.shape, mean.dtype), z

    fn, _ = _SIMULATE.get_or_build((decoder, n, k), lambda: jax.jit(draw))
    return fn(key, params, jnp.log(jnp.asarray(positive_sigma(sigma), jnp.result_type(float))))


# -- the linear-Gaussian decoder (probabilistic PCA): closed forms for tests --------------------------------
def linear_decoder(params, z) -> jax.Array:
    """``W z + b`` with ``params = {"weight": W (D, k), "bias": b (D,)}``."""
    return params["weight"] @ z + params["bias"]


def linear_gaussian(weight, bias):
    """The pPCA decoder ``x = W z + b + sigma eps``: returns ``(linear_decoder, params)``."""
    weight, bias = jnp.asarray(weight), jnp.asarray(bias)
    if weight.ndim != 2 or bias.shape != (weight.shape[0],):
        raise BDMCError(f"linear_gaussian needs W of shape (D, k) and b of shape (D,), got {weight.shape} and "
                        f"{bias.shape}")
    return linear_decoder, {"weight": weight, "bias": bias}


def linear_gaussian_log_marginal(params, images, *, sigma) -> np.ndarray:
    """Exact ``log p(x) = log N(x; b, W W^T + sigma^2 I)`` per image (float64 NumPy)."""
    w, b = np.asarray(params["weight"], np.float64), np.asarray(params["bias"], np.float64)
    x = np.atleast_2d(np.asarray(images, np.float64)) - b
    cov = w @ w.T + positive_sigma(sigma) ** 2 * np.eye(b.size)
    chol = np.linalg.cholesky(cov)
    resid = np.linalg.solve(chol, x.T)
    return -0.5 * np.sum(resid**2, axis=0) - np.sum(np.log(np.diag(chol))) - 0.5 * b.size * LOG_2PI


def linear_gaussian_posterior(params, image, *, sigma):
    """Exact ``p(z | x) = N(mean, cov)`` of pPCA: ``cov = (I + W^T W / sigma^2)^-1``, ``mean = cov W^T (x - b) /
    sigma^2`` (float64 NumPy)."""
    w, b = np.asarray(params["weight"], np.float64), np.asarray(params["bias"], np.float64)
    s2 = positive_sigma(sigma) ** 2
    cov = np.linalg.inv(np.eye(w.shape[1]) + w.T @ w / s2)
    return cov @ w.T @ (np.asarray(image, np.float64) - b) / s2, cov
