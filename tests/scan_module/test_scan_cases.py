"""scan through the op-test helper: every mode, float32/float64, strided/reversed/Fortran inputs, zero steps."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from tests.op_check import Case, arr, check_case


def rnn(W, X, h0):
    out, _ = gj.scan(lambda x, h, W: gt.tanh(gt.dot(W, h) + x), sequences=X, outputs_info=h0, non_sequences=W)
    return out


def rnn_ref(W, X, h0):
    hs, h = [], h0
    for x in X:
        h = np.tanh(W @ h + x)
        hs.append(h)
    return np.array(hs, dtype=X.dtype).reshape((len(X),) + h0.shape)


def taps2(init, X):
    out, _ = gj.scan(lambda x, a, b: 0.5 * a - 0.25 * b + x, sequences=X,
                     outputs_info=dict(initial=init, taps=[-2, -1]))
    return out


def taps2_ref(init, X):
    hist = [init[0], init[1]]
    for x in X:
        hist.append(0.5 * hist[-2] - 0.25 * hist[-1] + x)
    return np.array(hist[2:], dtype=X.dtype).reshape((len(X),) + init.shape[1:])


def poly(c, z):
    comp, _ = gj.scan(lambda ci, p, z: ci * gt.cast(z ** p, c.dtype), sequences=[c, gt.arange(c.shape[0])],
                      outputs_info=None, non_sequences=z)
    return [comp, comp.sum()]


def poly_ref(c, z):
    comp = (c * z ** np.arange(len(c), dtype=c.dtype)).astype(c.dtype)
    return [comp, comp.sum(dtype=c.dtype)]


def backwards(X, a0):
    out, _ = gj.scan(lambda x, acc: 0.5 * acc + x, sequences=X, outputs_info=a0, go_backwards=True)
    return out


def backwards_ref(X, a0):
    acc, out = a0, []
    for x in X[::-1]:
        acc = 0.5 * acc + x
        out.append(acc)
    return np.array(out, dtype=X.dtype).reshape(X.shape)


def seq_taps(X):
    out, _ = gj.scan(lambda a, b, c: a - 2 * b + c, sequences=dict(input=X, taps=[-1, 0, 1]))
    return out


def seq_taps_ref(X):
    return (X[:-2] - 2 * X[1:-1] + X[2:]).astype(X.dtype) if len(X) >= 2 else np.zeros((0,) + X.shape[1:], X.dtype)


def power_iteration(A, v0):
    vs, _ = gj.scan(lambda v, A: gt.dot(A, v) / gt.sqrt(gt.sum(gt.dot(A, v) ** 2)), outputs_info=v0,
                    non_sequences=A, n_steps=25)
    v = vs[-1]
    return [v, gt.dot(v, gt.dot(A, v))]


def power_iteration_ref(A, v0):
    v = v0
    for _ in range(25):
        w = A @ v
        v = w / np.sqrt(np.sum(w ** 2))
    return [v.astype(A.dtype), np.asarray(v @ (A @ v), dtype=A.dtype)]


def doubling(p0, limit):
    out, _ = gj.scan(lambda p, limit: (p * 2, gj.until(p * 2 > limit)), outputs_info=p0, non_sequences=limit,
                     n_steps=40)
    return out


def doubling_ref(p0, limit):
    out, p = [], p0
    for _ in range(40):
        p = p * 2
        out.append(p)
        if p > limit:
            break
    return np.array(out, dtype=p0.dtype)


def mapped(X, y):
    out, _ = gj.map(lambda x, y: gt.exp(x) * y, sequences=X, non_sequences=y)
    return out


def matvec_map(W, X):
    """Rows W @ x: a step shape (W.shape[0],) that is not static (zero steps: (0, 4) from the shape graph)."""
    out, _ = gj.scan(lambda x, W: gt.dot(W, x), sequences=X, non_sequences=W)
    return out


def outer_map(W, X):
    """Rows outer(x, W.sum(0)): a (3, 3) step shape that is not static (zero steps: (0, 3, 3))."""
    out, _ = gj.scan(lambda x, W: gt.outer(x, W.sum(0)), sequences=X, non_sequences=W)
    return out


def outer_map_ref(W, X):
    return (X[:, :, None] * W.sum(0, dtype=W.dtype)[None, None, :]).astype(X.dtype)


def reduced(X, a0):
    s, _ = gj.reduce(lambda x, acc: acc * 0.5 + x, sequences=X, outputs_info=a0)
    l, _ = gj.foldl(lambda x, acc: acc * 0.5 + x, sequences=X, outputs_info=a0)
    r, _ = gj.foldr(lambda x, acc: acc * 0.5 + x, sequences=X, outputs_info=a0)
    return [s, l, r]


def reduced_ref(X, a0):
    def fold(seq):
        acc = a0
        for x in seq:
            acc = acc * 0.5 + x
        return acc.astype(X.dtype)
    return [fold(X), fold(X), fold(X[::-1])]


CASES = [
    Case("rnn", rnn, rnn_ref, [arr((3, 3), low=-0.5, high=0.5), arr((5, 3)), arr((3,))], zero_len=5),
    Case("taps[-2,-1]", taps2, taps2_ref, [arr((2, 3)), arr((6, 3))], zero_len=6),
    Case("polynomial, outputs_info=None", poly, poly_ref, [arr((6,)), arr((), low=0.5, high=1.5)]),
    Case("go_backwards", backwards, backwards_ref, [arr((5, 2)), arr((2,))], zero_len=5),
    Case("sequence taps[-1,0,1]", seq_taps, seq_taps_ref, [arr((6, 2))], zero_size=False),
    Case("power iteration", power_iteration, power_iteration_ref,
         [arr((4, 4), values=np.diag([4.0, 2.0, 1.0, 0.5]) + 0.1), arr((4,), low=0.5, high=1.0)],
         zero_size=False, rtol=1e-4, atol=1e-5),
    Case("until", doubling, doubling_ref, [arr((), low=0.5, high=1.0), arr((), values=100.0)], zero_size=False),
    Case("map", mapped, lambda X, y: (np.exp(X) * y).astype(X.dtype), [arr((4, 3)), arr((3,))], zero_len=4),
    Case("matrix-vector map", matvec_map, lambda W, X: (X @ W.T).astype(X.dtype), [arr((4, 3)), arr((5, 3))],
         zero_len=5, rtol=1e-5, atol=1e-6),
    Case("outer-product map", outer_map, outer_map_ref, [arr((4, 3)), arr((5, 3))], zero_len=5,
         rtol=1e-5, atol=1e-6),
    Case("reduce/foldl/foldr", reduced, reduced_ref, [arr((5, 2)), arr((2,))], zero_size=False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_scan_case(case):
    check_case(case)
