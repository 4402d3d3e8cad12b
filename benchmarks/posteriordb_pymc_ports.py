"""PyMC ports of a few posteriordb posteriors, for ``pm.sample_smc``'s log p(y) in ``posteriordb_peers.py``.

Each port is written as a PyMC user writes it: the same priors and likelihood as the NumPyro port of the same
name in ``posteriordb_models.py`` (the same parameterization and site names, PyMC's normalized densities), the
data read from ``posteriordb_models.load(name)``. Where the NumPyro port writes a joint likelihood by the chain
rule (the GP regression), the port here uses PyMC's joint distribution: ``sample_smc`` needs only the total.

Each port's log joint density was compared with the NumPyro port's at three posteriordb reference draws
(:func:`log_density_gaps`; ``python benchmarks/posteriordb_pymc_ports.py`` prints them): the differences are
one constant per port (below 2e-6: both normalize every density), stated next to it.

    import posteriordb_pymc_ports as ports      # with benchmarks/ on sys.path
    model = ports.pymc_model("sblrc-blr")       # a pm.Model, observed data included
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from posteriordb_models import DATA_DIR, POSTERIORS, load

from bdmc.errors import MissingCapabilityError


def eight_schools_noncentered(d: dict) -> pm.Model:
    # log p_pymc - log p_numpyro: -5.82369e-8 at three reference draws (equal to 1e-14)
    sigma, y = np.asarray(d["sigma"], float), np.asarray(d["y"], float)
    with pm.Model() as model:
        theta_trans = pm.Normal("theta_trans", 0.0, 1.0, shape=len(y))
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        pm.Normal("y", mu + tau * theta_trans, sigma, observed=y)
    return model


def eight_schools_centered(d: dict) -> pm.Model:
    # log p_pymc - log p_numpyro: -5.8237e-8 at three reference draws (equal to 1e-14)
    sigma, y = np.asarray(d["sigma"], float), np.asarray(d["y"], float)
    with pm.Model() as model:
        tau = pm.HalfCauchy("tau", 5.0)
        mu = pm.Normal("mu", 0.0, 5.0)
        theta = pm.Normal("theta", mu, tau, shape=len(y))
        pm.Normal("y", theta, sigma, observed=y)
    return model


def blr(d: dict) -> pm.Model:
    # log p_pymc - log p_numpyro: -1.9185e-7 at three reference draws, on sblrc-blr and on sblri-blr (equal to 1e-13)
    X, y = np.asarray(d["X"], float), np.asarray(d["y"], float)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 10.0, shape=X.shape[1])
        sigma = pm.HalfNormal("sigma", 10.0)
        pm.Normal("y", pt.dot(X, beta), sigma, observed=y)
    return model


def gp_regr(d: dict) -> pm.Model:
    # log p_pymc - log p_numpyro: 1.441208e-6 at three reference draws (equal to 1e-14)
    x, y = np.asarray(d["x"], float), np.asarray(d["y"], float)
    with pm.Model() as model:
        rho = pm.Gamma("rho", alpha=25.0, beta=4.0)
        alpha = pm.HalfNormal("alpha", 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        cov = alpha ** 2 * pm.gp.cov.ExpQuad(1, ls=rho)(x[:, None]) + sigma * pt.eye(len(x))
        pm.MvNormal("y", mu=np.zeros(len(x)), cov=cov, observed=y)
    return model


def arma11(d: dict) -> pm.Model:
    # log p_pymc - log p_numpyro: -6.2046e-8 at three reference draws (equal to 1e-13)
    y = np.asarray(d["y"], float)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        phi = pm.Normal("phi", 0.0, 2.0)
        theta = pm.Normal("theta", 0.0, 2.0)
        sigma = pm.HalfCauchy("sigma", 2.5)
        nu1 = mu + phi * mu  # err[0] = 0: the first prediction uses mu for y[0]
        # the parameters go in as non_sequences: PyMC's logp needs them as inputs of the scan, not captured
        errs = pytensor.scan(lambda y_prev, y_now, err_prev, mu, phi, theta: y_now - (mu + phi * y_prev
                                                                                     + theta * err_prev),
                             sequences=[pt.as_tensor(y[:-1]), pt.as_tensor(y[1:])], outputs_info=[y[0] - nu1],
                             non_sequences=[mu, phi, theta], return_updates=False)
        nu = pt.concatenate([pt.stack([nu1]), y[1:] - errs])
        pm.Normal("y", nu, sigma, observed=y)
    return model


def diamonds(d: dict) -> pm.Model:
    # log p_pymc - log p_numpyro: 1.282e-8 at three reference draws (equal to 1e-11)
    X, Y = np.asarray(d["X"], float), np.asarray(d["Y"], float)
    Xc = X[:, 1:] - X[:, 1:].mean(0)  # brms centres the predictors; its intercept is the column dropped
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 1.0, shape=Xc.shape[1])
        intercept = pm.StudentT("Intercept", nu=3.0, mu=8.0, sigma=10.0)
        sigma = pm.HalfStudentT("sigma", nu=3.0, sigma=10.0)
        pm.Normal("Y", intercept + pt.dot(Xc, b), sigma, observed=Y)
    return model


PORTS = {
    "eight_schools-eight_schools_noncentered": eight_schools_noncentered,
    "eight_schools-eight_schools_centered": eight_schools_centered,
    "sblrc-blr": blr,
    "sblri-blr": blr,
    "gp_pois_regr-gp_regr": gp_regr,
    "arma-arma11": arma11,
    "diamonds-diamonds": diamonds,
}


def pymc_model(name: str) -> pm.Model:
    """The PyMC port of posterior ``name``, its data from ``data/posteriordb/<name>/data.json``.

    Raises
    ------
    MissingCapabilityError
        Where no PyMC port is written here (see :data:`PORTS`).
    """
    if name not in PORTS:
        raise MissingCapabilityError(f"no PyMC port of {name!r}; the ports are {sorted(PORTS)}")
    return PORTS[name](load(name)[0])


def log_density_gaps(name: str, draws=(0, 400, 900)) -> np.ndarray:
    """``log p_pymc - log p_numpyro`` (joint, constrained values, no Jacobian) at reference draws ``draws``.

    A port writes the NumPyro port's density when these are one constant (0 where both normalize alike).
    """
    from numpyro.infer.util import log_density

    entry = POSTERIORS[name]
    data = load(name)[0]
    args = entry.args(data)
    sites = entry.latents(dict(np.load(DATA_DIR / name / "draws.npz")), args)
    model = pymc_model(name)
    logp = model.compile_logp(jacobian=False)
    gaps = []
    for i in draws:
        point = {site: np.asarray(value[i], float) for site, value in sites.items()}
        values = {}
        for rv in model.free_RVs:
            value_var = model.rvs_to_values[rv]
            transform = model.rvs_to_transforms[rv]
            x = point[rv.name]
            values[value_var.name] = x if transform is None else transform.forward(x, *rv.owner.inputs).eval()
        numpyro_logp, _ = log_density(entry.model, (), args, point)
        gaps.append(float(logp(values)) - float(numpyro_logp))
    return np.asarray(gaps)


if __name__ == "__main__":
    import jax

    jax.config.update("jax_enable_x64", True)
    for name in PORTS:
        print(name, log_density_gaps(name))
