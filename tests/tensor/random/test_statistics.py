"""The distributions are the right ones: Kolmogorov-Smirnov (continuous) and chi-square (discrete) tests against
scipy.stats, moments for the multivariate ones; one seed, one significance, small samples."""

import numpy as np
import pytest
import scipy.stats as st

import graphjit as gj
from graphjit.tensor.random import RandomStream

SEED = 2024
N = 2000
ALPHA = 1e-3          # a test fails when its p-value is below ALPHA (at this fixed seed: deterministic)

CONTINUOUS = [
    ("normal", lambda s: s.normal(1.0, 2.0, size=N), st.norm(1.0, 2.0)),
    ("uniform", lambda s: s.uniform(-1.0, 3.0, size=N), st.uniform(-1.0, 4.0)),
    ("standard_normal", lambda s: s.standard_normal(size=N), st.norm()),
    ("standard_normal_f32", lambda s: s.standard_normal(size=N, dtype="float32"), st.norm()),
    ("random", lambda s: s.random(size=N), st.uniform()),
    ("exponential", lambda s: s.exponential(2.0, size=N), st.expon(scale=2.0)),
    ("gamma", lambda s: s.gamma(2.5, 1.5, size=N), st.gamma(2.5, scale=1.5)),
    ("beta", lambda s: s.beta(2.0, 3.0, size=N), st.beta(2.0, 3.0)),
    ("laplace", lambda s: s.laplace(1.0, 2.0, size=N), st.laplace(1.0, 2.0)),
    ("logistic", lambda s: s.logistic(1.0, 2.0, size=N), st.logistic(1.0, 2.0)),
    ("lognormal", lambda s: s.lognormal(0.5, 0.8, size=N), st.lognorm(0.8, scale=np.exp(0.5))),
    ("gumbel", lambda s: s.gumbel(1.0, 2.0, size=N), st.gumbel_r(1.0, 2.0)),
    ("student_t", lambda s: s.student_t(4.0, 1.0, 2.0, size=N), st.t(4.0, 1.0, 2.0)),
    ("cauchy", lambda s: s.cauchy(1.0, 2.0, size=N), st.cauchy(1.0, 2.0)),
    ("halfnormal", lambda s: s.halfnormal(1.0, 2.0, size=N), st.halfnorm(1.0, 2.0)),
    ("truncated_normal", lambda s: s.truncated_normal(1.0, 2.0, 0.0, 4.0, size=N), st.truncnorm(-0.5, 1.5, 1.0, 2.0)),
    ("truncated_normal_tail", lambda s: s.truncated_normal(0.0, 1.0, 6.0, np.inf, size=N), st.truncnorm(6.0, np.inf)),
    ("vonmises", lambda s: s.vonmises(0.5, 2.0, size=N), st.vonmises(2.0, loc=0.5)),
    ("weibull", lambda s: s.weibull(1.5, size=N), st.weibull_min(1.5)),
]

DISCRETE = [
    ("integers", lambda s: s.integers(3, 7, size=N), st.randint(3, 7)),
    ("binomial", lambda s: s.binomial(10, 0.3, size=N), st.binom(10, 0.3)),
    ("binomial_large_n", lambda s: s.binomial(1000, 0.4, size=N), st.binom(1000, 0.4)),
    ("bernoulli", lambda s: s.bernoulli(0.3, size=N), st.bernoulli(0.3)),
    ("poisson", lambda s: s.poisson(3.0, size=N), st.poisson(3.0)),
    ("poisson_large", lambda s: s.poisson(80.0, size=N), st.poisson(80.0)),
    ("geometric", lambda s: s.geometric(0.3, size=N), st.geom(0.3)),
    ("negative_binomial", lambda s: s.negative_binomial(3, 0.4, size=N), st.nbinom(3, 0.4)),
    ("choice", lambda s: s.choice(4, size=N, p=[0.1, 0.2, 0.3, 0.4]), st.rv_discrete(values=(range(4), [.1, .2, .3, .4]))),
    ("categorical", lambda s: s.categorical([0.1, 0.0, 0.5, 0.4], size=N),
     st.rv_discrete(values=(range(4), [0.1, 0.0, 0.5, 0.4]))),
]


@pytest.fixture(scope="module")
def samples():
    srng = RandomStream(SEED)
    names = [c[0] for c in CONTINUOUS + DISCRETE]
    outs = [c[1](srng) for c in CONTINUOUS + DISCRETE]
    return dict(zip(names, gj.function([], outs, mode="PY")()))


@pytest.mark.parametrize("name, dist", [(c[0], c[2]) for c in CONTINUOUS], ids=[c[0] for c in CONTINUOUS])
def test_kolmogorov_smirnov(samples, name, dist):
    x = samples[name]
    assert x.shape == (N,)
    assert st.kstest(x.astype("float64"), dist.cdf).pvalue > ALPHA


def _chi_square_p(x, dist):
    """The chi-square p-value of integer samples x against dist, the tails below 0.1% merged into the ends."""
    lo, hi = int(dist.ppf(0.001)), int(dist.ppf(0.999))
    ks = np.arange(lo, hi + 1)
    expected = dist.pmf(ks)
    expected[0], expected[-1] = dist.cdf(lo), dist.sf(hi - 1)
    observed = np.array([(x <= lo).sum()] + [(x == k).sum() for k in ks[1:-1]] + [(x >= hi).sum()])
    keep = expected > 0
    assert observed[~keep].sum() == 0, "draws where the distribution has no mass"
    return st.chisquare(observed[keep], expected[keep] / expected[keep].sum() * len(x)).pvalue


@pytest.mark.parametrize("name, dist", [(c[0], c[2]) for c in DISCRETE], ids=[c[0] for c in DISCRETE])
def test_chi_square(samples, name, dist):
    x = samples[name]
    assert x.shape == (N,) and x.dtype == np.int64
    assert _chi_square_p(x, dist) > ALPHA


def test_multivariate_moments():
    srng = RandomStream(SEED)
    alpha = np.array([1.0, 2.0, 3.0])
    p = np.array([0.2, 0.3, 0.5])
    mean, cov = np.array([1.0, -2.0]), np.array([[2.0, 0.8], [0.8, 1.0]])
    f = gj.function([], [srng.dirichlet(alpha, size=(N,)), srng.multinomial(20, p, size=(N,)),
                         srng.multivariate_normal(mean, cov, size=(N,)),
                         srng.multivariate_normal(np.zeros((N, 2)), cov)], mode="PY")
    diri, multi, mvn, mvn_batched = f()
    a0 = alpha.sum()
    np.testing.assert_allclose(diri.sum(1), 1.0)
    np.testing.assert_allclose(diri.mean(0), alpha / a0, atol=4 * np.sqrt(alpha.max() / a0 ** 2 / N))
    np.testing.assert_allclose(diri.var(0), alpha * (a0 - alpha) / (a0 ** 2 * (a0 + 1)), rtol=0.15)
    assert (multi.sum(1) == 20).all()
    np.testing.assert_allclose(multi.mean(0), 20 * p, atol=4 * np.sqrt(20 * 0.25 / N))
    np.testing.assert_allclose(np.cov(multi.T), 20 * (np.diag(p) - np.outer(p, p)), atol=0.3)
    for x, m in ((mvn, mean), (mvn_batched, 0.0)):
        np.testing.assert_allclose(x.mean(0), m + 0 * mean, atol=4 * np.sqrt(2.0 / N))
        np.testing.assert_allclose(np.cov(x.T), cov, atol=0.15)


def test_permutations_are_permutations():
    srng = RandomStream(SEED)
    x = np.arange(20.0).reshape(4, 5)
    perm, rows, each = gj.function([], [srng.permutation(50), srng.permutation(x), srng.permuted(x, axis=1)],
                                   mode="PY")()
    assert sorted(perm) == list(range(50)) and (perm != np.arange(50)).any()
    assert sorted(map(tuple, rows)) == sorted(map(tuple, x))
    assert (np.sort(each, axis=1) == x).all() and (each != x).any()


def test_two_streams_with_different_seeds_are_independent():
    a, b = RandomStream(1), RandomStream(2)
    xa, xb = gj.function([], [a.normal(size=(N,)), b.normal(size=(N,))], mode="PY")()
    assert not np.array_equal(xa, xb)
    assert abs(np.corrcoef(xa, xb)[0, 1]) < 4 / np.sqrt(N)
    assert st.ks_2samp(xa, xb).pvalue > ALPHA          # and from the same distribution
