"""Draws lowered by hand (link/llvm/ops/random_hand_*.py, random_permute.py, random_multivariate.py): numpy's
Generator methods step for step, so FAST_RUN gives PY's numbers and leaves the generator in PY's state; numpy's
parameter checks raise its ValueError."""

import warnings

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.random import RandomStream


def _state(srng):
    return [rng.get_value(borrow=True).bit_generator.state for rng, _ in srng.state_updates]


def same_in_both_modes(build, inputs, values, calls=2):
    """build(srng) -> outputs; FAST_RUN is native, without warning, and matches PY (numbers, dtypes, state)."""
    fns = {}
    for mode in ("FAST_RUN", "PY"):
        srng = RandomStream(11)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fns[mode] = (gj.function(inputs, build(srng), mode=mode), srng)
    fast, py = fns["FAST_RUN"][0], fns["PY"][0]
    assert fast.native.fallback_nodes == []
    for _ in range(calls):
        for got, want in zip(fast(*values), py(*values)):
            assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    assert _state(fns["FAST_RUN"][1]) == _state(fns["PY"][1])
    return fast


def test_binomial_and_negative_binomial():
    n, p = gt.lvector("n"), gt.dmatrix("p")
    fast = same_in_both_modes(
        lambda s: [s.binomial(n, p), s.binomial(10, 0.3, size=(4,)),     # inversion; btpe, p > 0.5, int32
                   s.binomial(1000, 0.7, size=(5,), dtype="int32"), s.binomial(5, 0.5, size=(0,)),
                   s.negative_binomial(n + 1, 0.4), s.negative_binomial(3.5, p, size=(2, 3))],
        [n, p], (np.array([0, 5, 2000]), np.array([[0.1], [0.9]])))
    good_n, good_p = np.array([0, 5, 2]), np.array([[0.1], [0.9]])
    for values, match in [((np.array([1, -1, 2]), good_p), "n < 0"),
                          ((good_n, np.array([[1.5], [0.2]])), "p < 0, p > 1 or p contains NaNs"),
                          ((good_n, np.array([[1e-30], [0.2]])), "n too large or p too small")]:
        with pytest.raises(ValueError, match=match):
            fast(*values)
    x = gt.dscalar("x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = gj.function([x], RandomStream(1).negative_binomial(x, 0.5, size=(2,)))
    with pytest.raises(ValueError, match="n must not be NaN"):
        f(np.nan)


def test_permutation_and_permuted():
    n, x, v, b = gt.lscalar("n"), gt.dtensor3("x"), gt.fvector("v"), gt.bmatrix("b")
    values = (7, np.asfortranarray(np.arange(24.0).reshape(2, 3, 4)), np.arange(5, dtype="float32"),
              np.arange(6, dtype="int8").reshape(3, 2))
    same_in_both_modes(lambda s: [s.permutation(n), s.permutation(x, axis=1), s.permutation(v),
                                  s.permutation(x[:, :0], axis=0), s.permuted(x), s.permuted(x, axis=-1),
                                  s.permuted(b, axis=0), s.permuted(v)], [n, x, v, b], values)
    f = same_in_both_modes(lambda s: [s.permutation(n), s.permuted(x, axis=2)], [n, x], (-2, np.zeros((2, 0, 3))))
    assert f(-2, np.zeros((2, 0, 3)))[0].shape == (0,)        # np.arange(-2) is empty


def test_choice_without_replacement():
    """Floyd's hash set (collisions in 12 of 50), the tail shuffle of a large population, the rounds with p."""
    n, a, p = gt.lscalar("n"), gt.dvector("a"), gt.dvector("p")
    weights = np.array([0.3, 0.2, 0.0, 0.1, 0.1, 0.1, 0.15, 0.05])
    f = same_in_both_modes(
        lambda s: [s.choice(n, size=(3, 4), replace=False), s.choice(a, size=(5,), replace=False),
                   s.choice(n, replace=False), s.choice(20000, size=(1000,), replace=False),
                   s.choice(a, size=(6,), replace=False, p=p), s.choice(n, size=(0,), replace=False)],
        [n, a, p], (50, np.arange(8.0), weights), calls=3)
    for values, match in [((5, np.arange(8.0), weights), "Cannot take a larger sample"),
                          ((50, np.arange(8.0), np.array([0.5, 0.5, 0, 0, 0, 0, 0, 0])), "Fewer non-zero entries"),
                          ((50, np.arange(8.0), np.full(8, 0.2)), "Probabilities do not sum to 1")]:
        with pytest.raises(ValueError, match=match):
            f(*values)


def test_dirichlet_and_multinomial():
    """Both dirichlet algorithms (stick-breaking when every alpha < 0.1, with its stop at a zero tail), batched
    parameters broadcast to size, float32 pvals, int32 counts; numpy's checks."""
    al, A, n, pv, P = gt.dvector("al"), gt.dmatrix("A"), gt.lvector("n"), gt.dvector("pv"), gt.fmatrix("P")
    values = (np.array([0.5, 2.0, 3.0]), np.array([[1.0, 2.0], [0.05, 0.02]]), np.array([3, 0, 100]),
              np.array([0.2, 0.3, 0.5]), np.array([[0.1, 0.9], [0.5, 0.5]], dtype="float32"))
    f = same_in_both_modes(
        lambda s: [s.dirichlet(al, size=(2, 3)), s.dirichlet(A), s.dirichlet(A, size=(4, 2)),
                   s.dirichlet(gt.concatenate([al * 0.01, gt.zeros((2,))]), size=(3,)), s.dirichlet(al, size=(0,)),
                   s.multinomial(20, pv, size=(3,)), s.multinomial(n, pv), s.multinomial(n[:, None], P),
                   s.multinomial(7, P, size=(4, 2)), s.multinomial(5, pv, size=(2,), dtype="int32")],
        [al, A, n, pv, P], values)
    for i, bad, match in [(0, np.array([0.5, -2.0, 3.0]), "alpha < 0"),
                          (1, np.array([[1.0, 2.0], [-0.05, 0.02]]), "alpha < 0"),
                          (2, np.array([3, -1, 100]), "n < 0"), (3, np.array([0.8, 0.3, 0.5]), "sum"),
                          (3, np.array([-0.2, 0.3, 0.5]), "pvals < 0, pvals > 1 or pvals contains NaNs")]:
        args = list(values)
        args[i] = bad
        with pytest.raises(ValueError, match=match):
            f(*args)


def test_multivariate_normal():
    """numpy's normals, Cholesky factor and product (one row: dgemv; several: dgemm; k = 1: a product), batched
    mean and cov; numpy's errors."""
    mu, C, M, CC = gt.dvector("mu"), gt.dmatrix("C"), gt.dmatrix("M"), gt.dtensor3("CC")
    rng = np.random.default_rng(1)
    a, bs = rng.standard_normal((5, 5)), rng.standard_normal((2, 5, 5))
    values = (np.arange(5.0), a @ a.T + np.eye(5), np.arange(10.0).reshape(2, 5), bs @ bs.transpose(0, 2, 1) + np.eye(5))
    f = same_in_both_modes(
        lambda s: [s.multivariate_normal(mu, C), s.multivariate_normal(mu, C, size=(3, 4)),
                   s.multivariate_normal(mu, C, size=(1,), dtype="float32"), s.multivariate_normal(M, C),
                   s.multivariate_normal(mu, CC, size=(3, 2)), s.multivariate_normal(mu, C, size=(0,)),
                   s.multivariate_normal(mu[:1], C[:1, :1], size=(4,))], [mu, C, M, CC], values)
    for i, bad, match in [(1, -values[1], "Matrix is not positive definite"), (0, np.arange(4.0), "same length")]:
        args = list(values)
        args[i] = bad
        with pytest.raises(ValueError, match=match):
            f(*args)
