"""Pathwise (reparameterisation) gradients of the draws: for a fixed generator state the sample is a function of
its parameters, and grad agrees with central differences of that function; the others are undefined."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.autodiff import NullTypeGradError
from graphjit.tensor.random import RandomStream

# (name, the draw from its parameters, the parameters' values)
REPARAM = [
    ("normal", lambda s, a, b: s.normal(a, b, size=(3,)), [0.5, 1.5]),
    ("uniform", lambda s, a, b: s.uniform(a, b, size=(3,)), [0.5, 1.5]),
    ("lognormal", lambda s, a, b: s.lognormal(a, b, size=(3,)), [0.2, 0.7]),
    ("exponential", lambda s, a: s.exponential(a, size=(3,)), [1.5]),
    ("laplace", lambda s, a, b: s.laplace(a, b, size=(3,)), [0.5, 1.5]),
    ("logistic", lambda s, a, b: s.logistic(a, b, size=(3,)), [0.5, 1.5]),
    ("gumbel", lambda s, a, b: s.gumbel(a, b, size=(3,)), [0.5, 1.5]),
    ("weibull", lambda s, a: s.weibull(a, size=(3,)), [1.7]),
    ("cauchy", lambda s, a, b: s.cauchy(a, b, size=(3,)), [0.5, 1.5]),
    ("halfnormal", lambda s, a, b: s.halfnormal(a, b, size=(3,)), [0.5, 1.5]),
    ("student_t_loc_scale", lambda s, a, b: s.student_t(5.0, a, b, size=(3,)), [0.5, 1.5]),
    ("truncated_normal", lambda s, a, b, c, d: s.truncated_normal(a, b, c, d, size=(3,)), [0.5, 1.5, -1.0, 2.0]),
    ("truncated_normal_tail", lambda s, a, b, c: s.truncated_normal(a, b, c, np.inf, size=(3,)), [0.5, 1.5, 2.0]),
]


@pytest.fixture(scope="module")
def grad_functions():
    """One function of all samples and one of all gradients (generators not updated: a fixed state)."""
    srng = RandomStream(5)
    params, samples, grads = [], [], []
    weights = np.array([0.3, -1.1, 0.7])
    for _, build, values in REPARAM:
        ps = [gt.dscalar() for _ in values]
        x = build(srng, *ps)
        params += ps
        samples.append(x)
        grads += gt.grad(gt.sum(x * weights), ps)
    sample_fn = gj.function(params, samples, mode="PY", no_default_updates=True)
    grad_fn = gj.function(params, grads, mode="PY", no_default_updates=True)
    return sample_fn, grad_fn, weights


@pytest.mark.parametrize("k", range(len(REPARAM)), ids=[r[0] for r in REPARAM])
def test_pathwise_gradient_matches_finite_differences(grad_functions, k):
    sample_fn, grad_fn, weights = grad_functions
    values = [v for r in REPARAM for v in r[2]]
    start = sum(len(r[2]) for r in REPARAM[:k])
    got = grad_fn(*values)[start:start + len(REPARAM[k][2])]
    eps = 1e-6
    for j in range(len(REPARAM[k][2])):
        up, down = list(values), list(values)
        up[start + j] += eps
        down[start + j] -= eps
        num = (weights @ sample_fn(*up)[k] - weights @ sample_fn(*down)[k]) / (2 * eps)
        np.testing.assert_allclose(got[j], num, rtol=1e-5, atol=1e-7, err_msg=f"parameter {j}")


@pytest.mark.parametrize("draw", [lambda s, p: s.gamma(p), lambda s, p: s.beta(p, 2.0), lambda s, p: s.poisson(p),
                                  lambda s, p: s.vonmises(0.0, p), lambda s, p: s.standard_t(p),
                                  lambda s, p: s.student_t(p, 0.0, 1.0)],
                         ids=["gamma", "beta", "poisson", "vonmises", "standard_t", "student_t_df"])
def test_no_pathwise_gradient_is_undefined(draw):
    p = gt.dscalar()
    with pytest.raises(NullTypeGradError):
        gt.grad(gt.sum(draw(RandomStream(0), p)), p)


def test_bernoulli_and_categorical_are_piecewise_constant_in_p():
    p = gt.dscalar()
    srng = RandomStream(0)
    grads = [gt.grad(gt.sum(srng.bernoulli(p, size=(3,)) * 1.0), p),
             gt.grad(gt.sum(srng.categorical(gt.stack([p, 1 - p]), size=(3,)) * 1.0), p)]
    assert gj.function([p], grads, mode="PY")(0.3) == [0.0, 0.0]
