"""complex64/complex128 natively: arithmetic, the C99 complex functions, parts, casts, reductions, gradients
(issue 35), through op_check in every mode, and hard values against numpy bit for bit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import grad

from tests.op_check import Case, arr, check_case

CX = ("complex128", "complex64")


def _set(m: np.ndarray, i: int, value: complex) -> np.ndarray:
    out = m.copy()
    out[i] = value
    return out


def _inc_col(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = m.copy()
    out[:, 1] += v
    return out


CASES = [
    Case("arithmetic", lambda x, y: [x + y, x - y, x * y, x / y, -x, gt.sqr(x), gt.reciprocal(x), abs(x),
                                     gt.sign(x), gt.eq(x, y), gt.neq(x, x), x ** y, x ** 3, x ** -2, x ** 0.5],
         lambda x, y: [x + y, x - y, x * y, x / y, -x, np.square(x), 1 / x, np.abs(x), np.sign(x), x == y,
                       x != x, x ** y, x ** 3, x ** -2, x ** 0.5],
         [arr((3, 4)), arr((4,))], dtypes=("complex128",)),
    Case("functions", lambda x: [gt.exp(x), gt.log(x), gt.sqrt(x), gt.sin(x), gt.cos(x), gt.tan(x), gt.sinh(x),
                                 gt.cosh(x), gt.tanh(x)],
         lambda x: [np.exp(x), np.log(x), np.sqrt(x), np.sin(x), np.cos(x), np.tan(x), np.sinh(x), np.cosh(x),
                    np.tanh(x)],
         [arr((2, 3))], dtypes=("complex64",)),     # complex128: test_hard_values_match_numpy
    Case("parts", lambda x, r: [x.real, x.imag, x.conj(), gt.angle(x), gt.complex(r, x.imag), x * r, x + 2.5,
                                gt.cast(r, x.dtype)],
         lambda x, r: [x.real, x.imag, np.conj(x), np.angle(x), r + 1j * x.imag, x * r, x + 2.5,
                       r.astype(x.dtype)],
         [arr((3, 4)), arr((3, 4), "float64")], dtypes=("complex128",)),
    # 20 x 16 x 15 is above BLAS_MIN_FLOPS: zgemm/cgemm; the vector products run the native loop
    Case("products", lambda a, b, v: [gt.dot(a, b), gt.dot(a, v), gt.dot(v, v), gt.matmul(a, b),
                                      gt.tensordot(a, b, axes=[[1], [0]])],
         lambda a, b, v: [np.dot(a, b), np.dot(a, v), np.dot(v, v), np.matmul(a, b),
                          np.tensordot(a, b, axes=[[1], [0]])],
         [arr((20, 16)), arr((16, 15)), arr((16,))], dtypes=("complex128",)),
    # a complex operand with a real (or the other complex) one: cast to the result's dtype, one zgemm/cgemm
    Case("mixed_products", lambda a, b, v: [gt.dot(a, gt.real(b)), gt.dot(gt.imag(a), b), gt.dot(a, gt.real(v)),
                                            gt.matmul(gt.cast(a, "complex64"), b)],
         lambda a, b, v: [np.dot(a, b.real), np.dot(a.imag, b), np.dot(a, v.real),
                          np.matmul(a.astype("complex64"), b)],
         [arr((20, 16)), arr((16, 15)), arr((16,))], dtypes=("complex128",), layouts=False),
    Case("products64", lambda a, b: [gt.dot(a, b)], lambda a, b: [np.dot(a, b)], [arr((20, 16)), arr((16, 15))],
         dtypes=("complex64",), layouts=False, zero_size=False),
    Case("structure", lambda m, v: [gt.concatenate([m, m[:, ::-1]], axis=1), gt.set_subtensor(m[0], 1j),
                                    gt.inc_subtensor(m[:, 1], v[:3]), m.T.reshape((-1,)), gt.zeros_like(m) + v[0]],
         lambda m, v: [np.concatenate([m, m[:, ::-1]], axis=1), _set(m, 0, 1j), _inc_col(m, v[:3]),
                       m.T.reshape(-1), np.zeros_like(m) + v[0]],
         [arr((3, 4)), arr((5,))], dtypes=("complex128",)),
    Case("reductions", lambda x: [x.sum(), x.sum(axis=0), x.prod(axis=1), x.mean(axis=1)],
         lambda x: [x.sum(), x.sum(axis=0), x.prod(axis=1), x.mean(axis=1)],
         [arr((3, 5), low=-1.0, high=1.0)], dtypes=("complex128",)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_complex_ops(case):
    check_case(case)


def test_every_complex_op_is_native():
    """FAST_RUN compiles every op of the tables without a fallback node (the issue's own example too)."""
    x, y, r = gt.zvector("x"), gt.zvector("y"), gt.dvector("r")
    outs = [gt.exp(x) * 2, abs(x), x.sum(), x / y, gt.sign(x), gt.angle(x), gt.complex(r, r), x.real, x.imag,
            gt.conj(x), gt.log(x), gt.sqrt(x), gt.tan(x), gt.tanh(x), gt.eq(x, y), gt.prod(x), gt.mean(x),
            gt.arcsinh(x), gt.cast(x, "complex64"), gt.cast(r, "complex128"), x[::-2], x.dimshuffle("x", 0),
            x ** y, x ** 2]
    f = gj.function([x, y, r], outs, mode="FAST_RUN")
    assert f.native.fallback_nodes == []


_EDGE = [0.0, -0.0, 1.0, -1.5, 1e308, -3e38, 5e-324, 1e-40, np.inf, -np.inf, np.nan, 710.0]
_HARD = np.array([complex(a, b) for a, b in itertools.product(_EDGE, _EDGE)])


def _same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Per element: equal, or NaN where numpy has NaN (each part of a complex)."""
    g, w = got.view(got.real.dtype), want.view(want.real.dtype)
    ok = (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
    return ok.reshape(len(got), -1).all(axis=1)


@pytest.mark.parametrize("dtype", CX)
def test_hard_values_match_numpy(dtype):
    """inf/nan/huge/tiny/signed-zero components: numpy's results, bit for bit (abs and angle within 2 ulp:
    numpy's contiguous SIMD loops round those differently from its scalar ones)."""
    with np.errstate(over="ignore"):
        z = _HARD.astype(dtype)         # complex64: 1e308 is inf, 5e-324 is 0
    zz, ww = (a.ravel() for a in np.meshgrid(z, z))
    x, y = gt.vector("x", dtype=dtype), gt.vector("y", dtype=dtype)
    exact = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan,
             "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "arctan": np.arctan, "arccosh": np.arccosh,
             "sign": np.sign, "sqr": np.square, "neg": np.negative, "conj": np.conjugate}
    f = gj.function([x], [getattr(gt, n)(x) for n in exact] + [abs(x), gt.angle(x)], mode="FAST_RUN")
    g = gj.function([x, y], [x + y, x * y, x / y, x ** y, gt.eq(x, y), gt.neq(x, y)], mode="FAST_RUN")
    assert f.native.fallback_nodes == [] and g.native.fallback_nodes == []
    with np.errstate(all="ignore"):
        outs = f(z)
        for (name, ref), got in zip(exact.items(), outs):
            assert _same_bits(got, ref(z)).all(), (name, z[~_same_bits(got, ref(z))][:3])
        np.testing.assert_allclose(outs[-2], np.abs(z), rtol=3e-7 if dtype == "complex64" else 3e-16)
        np.testing.assert_allclose(outs[-1], np.angle(z), rtol=3e-7 if dtype == "complex64" else 3e-16)
        for got, want in zip(g(zz, ww), [zz + ww, zz * ww, zz / ww]):
            assert _same_bits(got, want).all()
        assert (g(zz, ww)[4] == (zz == ww)).all() and (g(zz, ww)[5] == (zz != ww)).all()
        exps = np.array([0, 1, 2, 3, -1, -2, 7, -99, 99, 100, 0.5, 2 + 1j, -0.5j], dtype)
        zp, wp = (a.ravel() for a in np.meshgrid(z, exps))
        assert _same_bits(g(zp, wp)[3], zp ** wp).all()


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
def test_maximum_minimum_and_their_reductions_are_lexicographic(mode):
    """numpy's order of complex values: by real part, then imaginary part; a NaN part propagates (the first
    operand's first); max/min of a zero-size array is a ValueError."""
    x, y = gt.zvector("x"), gt.zvector("y")
    f = gj.function([x, y], [gt.maximum(x, y), gt.minimum(x, y), x.max(), x.min(), x.reshape((2, -1)).max(axis=1),
                             x.reshape((2, -1)).min(axis=0)], mode=mode)
    if mode != "PY":
        assert f.native.fallback_nodes == []
    hard = _HARD[::7]
    pairs = [(hard, hard[::-1]), (hard[np.isfinite(hard)], hard[np.isfinite(hard)][::-1]),
             (np.array([1 + 2j, 1 + 3j, 2 - 1j, 1 + 1j]), np.array([1 + 2.5j, 1 + 2j, 2 + 1j, 1 + 1j])[::-1])]
    for a, b in pairs:
        n = len(a) // 2 * 2
        a, b = a[:n], b[:n]
        want = [np.maximum(a, b), np.minimum(a, b), a.max(), a.min(), a.reshape(2, -1).max(axis=1),
                a.reshape(2, -1).min(axis=0)]
        for got, ref in zip(f(a, b), want):
            assert _same_bits(np.atleast_1d(got), np.atleast_1d(ref)).all(), (got, ref)
    with pytest.raises(ValueError):
        f(np.zeros(0, complex), np.zeros(0, complex))


def test_division_scales_large_and_small_divisors():
    """Smith's method: no overflow or underflow in |y|**2 (a naive quotient gives nan/0 here)."""
    x, y = gt.zvector("x"), gt.zvector("y")
    f = gj.function([x, y], x / y, mode="FAST_RUN")
    a = np.array([1e300 + 1e300j, 1e-300 + 1e-300j, 1 + 1j, 4 + 0j])
    b = np.array([1e300 + 1e300j, 1e-300 + 2e-300j, 1e-310 + 0j, 0j])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(f(a, b), a / b)
    assert f(a, b)[0] == 1


def test_cast_from_complex_to_real_is_refused():
    """Theano's rule: ambiguous, name real/imag/angle/abs instead."""
    with pytest.raises(TypeError, match="consider real"):
        gt.cast(gt.zvector(), "float64")


def _numeric_grad(fn, v: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """dC/dx + i dC/dy by central differences."""
    out = np.zeros_like(v)
    for k in range(v.size):
        e = np.zeros_like(v)
        e.flat[k] = eps
        out.flat[k] = (fn(v + e) - fn(v - e)) / (2 * eps) + 1j * (fn(v + 1j * e) - fn(v - 1j * e)) / (2 * eps)
    return out


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_gradients_of_a_real_cost(mode):
    """PyTensor's convention: grad(abs(z).sum(), z) is z / |z| (dC/dx + i dC/dy); real, imag, angle, conj and the
    holomorphic ops through a real cost agree with finite differences."""
    z, r = gt.zvector("z"), gt.dvector("r")
    v, rv = np.array([1 + 2j, -0.5 + 0.3j, 2 - 1j]), np.array([1.0, -2.0, 0.5])
    costs = [abs(z).sum(), z.real.sum() + 3 * z.imag.sum(), gt.real(gt.exp(z) * (1 + 2j)).sum(),
             gt.imag(z * z + gt.conj(z) / 3).sum(), gt.angle(z).sum(), abs(gt.prod(z) * r[0]),
             gt.real(gt.log(z) + gt.sqrt(z) + gt.sin(z)).sum(), gt.imag(z ** 2.5 + z ** z).sum(),
             abs(gt.dot(z, z * 1j)) + abs(gt.dot(gt.outer(z, z), z)).sum()]
    grads = [grad(c, z) for c in costs]
    f = gj.function([z, r], grads, mode=mode)
    if mode == "FAST_RUN":
        assert f.native.fallback_nodes == []
    for c, got in zip(costs, f(v, rv)):
        cost = gj.function([z, r], c, mode="PY", on_unused_input="ignore")
        np.testing.assert_allclose(got, _numeric_grad(lambda w: cost(w, rv), v), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(f(v, rv)[0], v / np.abs(v))
    gr = gj.function([z, r], grad(abs(z * r).sum() + gt.real(gt.complex(r, r)).sum(), r), mode=mode)
    np.testing.assert_allclose(gr(v, rv), np.abs(v) * np.sign(rv) + 1)


def test_scan_over_complex_values_and_its_gradient():
    """A scan step on complex values compiles natively; its gradient follows the same convention."""
    x, w = gt.zvector("x"), gt.zscalar("w")
    out, _ = gj.scan(lambda a, acc: acc * a * w + 1j, sequences=[x],
                     outputs_info=[gt.as_tensor_variable(np.complex128(1))])
    cost = abs(out).sum()
    f = gj.function([x, w], [out, *grad(cost, [x, w])], mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    v, wv = np.array([1 + 1j, 0.5, 0.3j, -0.5]), 0.7 - 0.2j
    ref = gj.function([x, w], out, mode="PY")(v, wv)
    np.testing.assert_allclose(f(v, wv)[0], ref)
    c = gj.function([x, w], cost, mode="PY")
    np.testing.assert_allclose(f(v, wv)[1], _numeric_grad(lambda u: c(u, wv), v), atol=1e-6)
    np.testing.assert_allclose(f(v, wv)[2], _numeric_grad(lambda u: c(v, u), np.array(wv))[()], atol=1e-6)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_eig_natively_through_geev(dtype):
    """eig of real (batched, strided, empty) matrices compiles natively: numpy's eigenvalues, eigenvectors with
    a v = v w of unit norm; an inf or NaN is numpy's LinAlgError."""
    from graphjit.tensor import linalg as la
    a, t = gt.matrix("a", dtype=dtype), gt.tensor3("t", dtype=dtype)
    f = gj.function([a, t], [*la.eig(a), *la.eig(t)], mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    g = gj.function([a], la.eigvals(a), mode="FAST_RUN")
    assert g.native.fallback_nodes == []
    m = np.array([[2.0, -1.0], [1.0, 2.0]], dtype)
    np.testing.assert_allclose(np.sort_complex(g(m)), np.sort_complex(np.linalg.eigvals(m)), rtol=1e-6)
    rng = np.random.default_rng(0)
    big = rng.normal(size=(12, 12)).astype(dtype)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {"rtol": 1e-9, "atol": 1e-10}
    cases = [(big[::2, ::-2], rng.normal(size=(3, 4, 4)).astype(dtype)),
             (np.asfortranarray(big), np.zeros((2, 0, 0), dtype))]
    for m, batch in cases:
        w, v, wb, vb = f(m, batch)
        assert w.dtype == v.dtype == np.dtype("complex64" if dtype == "float32" else "complex128")
        np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(np.linalg.eig(m)[0]), **tol)
        np.testing.assert_allclose(m @ v, v * w, **tol)
        np.testing.assert_allclose(np.linalg.norm(v, axis=0), 1, **tol)
        np.testing.assert_allclose(batch @ vb, vb * wb[:, None, :], **tol)
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        f(np.array([[np.nan, 1], [0, 1]], dtype), batch)
