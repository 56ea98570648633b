"""The 13 PyMC model families of issue 36, small enough for the suite, scaled up by ``n`` for the benchmark."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pymc as pm


def eight_schools(n: int = 8) -> pm.Model:
    """Non-centred eight schools (n schools: the data repeated)."""
    y = np.resize([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0], n)
    sigma = np.resize([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0], n)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta_t = pm.Normal("theta_t", 0.0, 1.0, shape=n)
        pm.Normal("obs", mu + tau * theta_t, sigma, observed=y)
    return model


def _design(n: int, k: int, seed: int) -> tuple[np.random.Generator, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng, rng.normal(size=(n, k))


def linear(n: int = 20) -> pm.Model:
    """Linear regression with an intercept and a half-normal noise scale."""
    rng, x = _design(n, 3, 1)
    y = x @ np.array([1.0, -2.0, 0.5]) + 0.3 + rng.normal(size=n)
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 10.0)
        beta = pm.Normal("beta", 0.0, 10.0, shape=3)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", a + pm.math.dot(x, beta), sigma, observed=y)
    return model


def hierarchical_logistic(n: int = 30) -> pm.Model:
    """Logistic regression with group intercepts drawn from a common normal."""
    rng, x = _design(n, 2, 2)
    groups = rng.integers(0, 4, size=n)
    y = rng.integers(0, 2, size=n)
    with pm.Model() as model:
        mu_a = pm.Normal("mu_a", 0.0, 2.0)
        sigma_a = pm.HalfNormal("sigma_a", 1.0)
        a = pm.Normal("a", mu_a, sigma_a, shape=4)
        b = pm.Normal("b", 0.0, 1.0, shape=2)
        pm.Bernoulli("y", logit_p=a[groups] + pm.math.dot(x, b), observed=y)
    return model


def poisson(n: int = 20) -> pm.Model:
    """Poisson regression with a log link."""
    rng, x = _design(n, 2, 3)
    y = rng.poisson(np.exp(0.5 + x @ np.array([0.3, -0.2])))
    with pm.Model() as model:
        b0 = pm.Normal("b0", 0.0, 2.0)
        b = pm.Normal("b", 0.0, 1.0, shape=2)
        pm.Poisson("y", pm.math.exp(b0 + pm.math.dot(x, b)), observed=y)
    return model


def gamma(n: int = 20) -> pm.Model:
    """Gamma regression (log link on the mean, a shape parameter)."""
    rng, x = _design(n, 2, 4)
    y = rng.gamma(2.0, np.exp(0.2 + x @ np.array([0.3, -0.1])) / 2.0)
    with pm.Model() as model:
        b0 = pm.Normal("b0", 0.0, 2.0)
        b = pm.Normal("b", 0.0, 1.0, shape=2)
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        mean = pm.math.exp(b0 + pm.math.dot(x, b))
        pm.Gamma("y", alpha=alpha, beta=alpha / mean, observed=y)
    return model


def beta(n: int = 20) -> pm.Model:
    """Beta regression (logit link on the mean, a precision parameter)."""
    rng, x = _design(n, 2, 5)
    y = np.clip(rng.beta(2.0, 3.0, size=n), 0.01, 0.99)
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 1.0, shape=2)
        kappa = pm.HalfNormal("kappa", 10.0)
        mu = pm.math.sigmoid(pm.math.dot(x, b))
        pm.Beta("y", alpha=mu * kappa, beta=(1.0 - mu) * kappa, observed=y)
    return model


def student_t(n: int = 20) -> pm.Model:
    """Robust regression with Student-t noise and an unknown degrees of freedom."""
    rng, x = _design(n, 2, 6)
    y = x @ np.array([1.0, -1.0]) + rng.standard_t(3.0, size=n)
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 5.0, shape=2)
        sigma = pm.HalfNormal("sigma", 2.0)
        nu = pm.Gamma("nu", 2.0, 0.1)
        pm.StudentT("y", nu=nu, mu=pm.math.dot(x, b), sigma=sigma, observed=y)
    return model


def normal_mixture(n: int = 30) -> pm.Model:
    """Two-component normal mixture (Dirichlet weights, ordered means)."""
    rng = np.random.default_rng(7)
    y = np.concatenate([rng.normal(-2.0, 1.0, n // 2), rng.normal(2.0, 1.0, n - n // 2)])
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        mu = pm.Normal("mu", 0.0, 5.0, shape=2, transform=pm.distributions.transforms.ordered,
                       initval=np.array([-1.0, 1.0]))
        sigma = pm.HalfNormal("sigma", 2.0, shape=2)
        pm.NormalMixture("y", w=w, mu=mu, sigma=sigma, observed=y)
    return model


def marginal_gp(n: int = 10) -> pm.Model:
    """Marginal GP regression with an exponentiated-quadratic kernel."""
    rng = np.random.default_rng(8)
    x = np.linspace(0.0, 5.0, n)[:, None]
    y = np.sin(x[:, 0]) + 0.1 * rng.normal(size=n)
    with pm.Model() as model:
        ls = pm.Gamma("ls", 2.0, 1.0)
        eta = pm.HalfNormal("eta", 1.0)
        gp = pm.gp.Marginal(cov_func=eta ** 2 * pm.gp.cov.ExpQuad(1, ls))
        sigma = pm.HalfNormal("sigma", 1.0)
        gp.marginal_likelihood("y", X=x, y=y, sigma=sigma)
    return model


def latent_gp(n: int = 10) -> pm.Model:
    """Latent GP (non-centred prior) with a normal likelihood."""
    rng = np.random.default_rng(9)
    x = np.linspace(0.0, 5.0, n)[:, None]
    y = np.sin(x[:, 0]) + 0.1 * rng.normal(size=n)
    with pm.Model() as model:
        ls = pm.Gamma("ls", 2.0, 1.0)
        gp = pm.gp.Latent(cov_func=pm.gp.cov.Matern52(1, ls))
        f = gp.prior("f", X=x)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", f, sigma, observed=y)
    return model


def stochastic_volatility(n: int = 30) -> pm.Model:
    """Stochastic volatility: a Gaussian random walk of log-volatility, Student-t returns."""
    rng = np.random.default_rng(10)
    returns = 0.02 * rng.standard_t(4.0, size=n)
    with pm.Model() as model:
        step = pm.Exponential("step", 10.0)
        vol = pm.GaussianRandomWalk("vol", sigma=step, init_dist=pm.Normal.dist(0.0, 10.0), shape=n)
        nu = pm.Exponential("nu", 0.1)
        pm.StudentT("r", nu=nu, lam=pm.math.exp(-2.0 * vol), observed=returns)
    return model


def dirichlet_categorical(n: int = 30) -> pm.Model:
    """Categorical draws with Dirichlet-distributed probabilities."""
    rng = np.random.default_rng(11)
    y = rng.integers(0, 4, size=n)
    with pm.Model() as model:
        p = pm.Dirichlet("p", np.ones(4))
        pm.Categorical("y", p=p, observed=y)
    return model


def censored_switchpoint(n: int = 30) -> pm.Model:
    """A continuous switchpoint between two means, the observations right-censored."""
    rng = np.random.default_rng(12)
    t = np.arange(n, dtype=float)
    y = np.minimum(np.where(t < n / 2, 1.0, 3.0) + rng.normal(size=n), 3.5)
    with pm.Model() as model:
        s = pm.Uniform("s", 0.0, float(n))
        early = pm.Normal("early", 0.0, 5.0)
        late = pm.Normal("late", 0.0, 5.0)
        mean = pm.math.switch(t < s, early, late)
        pm.Censored("y", pm.Normal.dist(mean, 1.0), lower=None, upper=3.5, observed=y)
    return model


FAMILIES: dict[str, Callable[..., pm.Model]] = {
    "eight_schools": eight_schools, "linear": linear, "hierarchical_logistic": hierarchical_logistic,
    "poisson": poisson, "gamma": gamma, "beta": beta, "student_t": student_t,
    "normal_mixture": normal_mixture, "marginal_gp": marginal_gp, "latent_gp": latent_gp,
    "stochastic_volatility": stochastic_volatility, "dirichlet_categorical": dirichlet_categorical,
    "censored_switchpoint": censored_switchpoint,
}
