"""Products, softmax family, arg-reductions, scans and TakeLabels are compiled by the LLVM linker (never in
f.native.fallback_nodes), with numpy's/scipy's values on awkward layouts and numpy's errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.extra_ops import Argmax, Argmin, CumOp
from graphjit.tensor.special import LogSoftmax, LogSumExp, Softmax, TakeLabels

RNG = np.random.default_rng(1234)
MODE = "FAST_RUN"


def _layouts(shape: tuple, dtype: str) -> dict:
    """The same logical array as contiguous, Fortran, non-contiguous and negative-stride inputs."""
    base = (RNG.standard_normal(shape) * 3).astype(dtype) if dtype != "bool" else RNG.random(shape) < .5
    big = np.zeros(tuple(2 * s for s in shape), dtype)
    strided = big[tuple(slice(None, None, 2) for _ in shape)]
    strided[...] = base
    neg = np.ascontiguousarray(base[tuple(slice(None, None, -1) for _ in shape)])
    neg = neg[tuple(slice(None, None, -1) for _ in shape)]
    return {"C": np.ascontiguousarray(base), "F": np.asfortranarray(base), "strided": strided, "neg": neg}


def _compile(inputs: list, output: object, ops: tuple, mode: object = MODE) -> gj.Function:
    f = gj.function(inputs, output, mode=mode)
    assert f.native.fallback_nodes == [], f.native.fallback_nodes
    assert any(isinstance(n.op, ops) for n in f.maker.fgraph.toposort())
    return f


def _close(got: np.ndarray, want: np.ndarray, dtype: str) -> None:
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


# ---------------------------------------------------------------- products

@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
@pytest.mark.parametrize("shapes", [((40, 70), (70, 30)), ((3, 4), (4, 2)), ((70,), (70, 30)),
                                    ((40, 70), (70,)), ((70,), (70,)), ((0, 5), (5, 3)), ((4, 0), (0, 3))])
@pytest.mark.parametrize("layout", ["C", "F", "strided", "neg"])
def test_dot(dtype: str, shapes: tuple, layout: str) -> None:
    from graphjit.tensor.blas import Dot
    from graphjit.tensor.blas_vector import Gemv
    sa, sb = shapes
    a, b = gt.TensorType(dtype, (None,) * len(sa))("a"), gt.TensorType(dtype, (None,) * len(sb))("b")
    f = _compile([a, b], gt.dot(a, b), (Dot, Gemv))     # float matrix-vector products become Gemv
    x, y = _layouts(sa, dtype)[layout], _layouts(sb, dtype)[layout]
    _close(f(x, y), np.dot(x, y), dtype)


def test_dot_mixed_dtypes_and_transposed_views() -> None:
    from graphjit.tensor.blas import Dot
    a, b = gt.matrix("a", dtype="float32"), gt.matrix("b", dtype="float64")
    f = _compile([a, b], gt.dot(a.T, b), (Dot,))
    x, y = RNG.standard_normal((50, 20)).astype("float32"), RNG.standard_normal((50, 30))
    _close(f(x, y), x.T @ y, "float64")


def test_dot_bad_shapes_raise_value_error() -> None:
    a, b = gt.matrix("a"), gt.matrix("b")
    f = gj.function([a, b], gt.dot(a, b), mode=MODE)
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        f(np.ones((2, 3)), np.ones((4, 2)))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("shapes", [((4, 30, 20), (20, 10)), ((2, 1, 5, 6), (3, 6, 7)), ((5,), (3, 5, 2)),
                                    ((3, 4, 5), (5,)), ((2, 0, 3), (3, 4)), ((3, 2, 2), (1, 2, 2))])
@pytest.mark.parametrize("layout", ["C", "F", "neg"])
def test_matmul_batches_broadcast(dtype: str, shapes: tuple, layout: str) -> None:
    from graphjit.tensor.blas import Matmul
    sa, sb = shapes
    a, b = gt.TensorType(dtype, (None,) * len(sa))("a"), gt.TensorType(dtype, (None,) * len(sb))("b")
    f = _compile([a, b], gt.matmul(a, b), (Matmul,))
    x, y = _layouts(sa, dtype)[layout], _layouts(sb, dtype)[layout]
    _close(f(x, y), np.matmul(x, y), dtype)


def test_matmul_bad_batch_and_core_raise_value_error() -> None:
    a, b = gt.tensor3("a"), gt.tensor3("b")
    f = gj.function([a, b], gt.matmul(a, b), mode=MODE)
    with pytest.raises(ValueError, match="batch"):
        f(np.ones((2, 3, 4)), np.ones((3, 4, 5)))
    with pytest.raises(ValueError, match="core"):
        f(np.ones((2, 3, 4)), np.ones((2, 5, 5)))


def test_tensordot() -> None:
    from graphjit.tensor.blas import TensorDot
    a, b = gt.tensor3("a"), gt.matrix("b")
    # FAST_RUN makes it a Dot (tensor/rewriting/tensordot.py): the op's own lowering is tested without that rewrite
    mode = gj.get_mode(MODE).excluding("local_tensordot_to_dot")
    f = _compile([a, b], gt.tensordot(a, b, axes=([1, 2], [1, 0])), (TensorDot,), mode)
    x, y = _layouts((3, 4, 5), "float64")["F"], _layouts((5, 4), "float64")["neg"]
    _close(f(x, y), np.tensordot(x, y, axes=([1, 2], [1, 0])), "float64")
    with pytest.raises(ValueError):
        f(np.ones((3, 4, 5)), np.ones((4, 4)))


# ---------------------------------------------------------------- softmax family

SOFTMAX_CASES = [
    ("softmax", lambda x, ax: gt.special.softmax(x, axis=ax), sp.softmax, Softmax),
    ("log_softmax", lambda x, ax: gt.special.log_softmax(x, axis=ax), sp.log_softmax, LogSoftmax),
    ("logsumexp", lambda x, ax: gt.logsumexp(x, axis=ax), sp.logsumexp, LogSumExp),
]


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=lambda c: c[0])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
@pytest.mark.parametrize("axis", [-1, 0, None])
@pytest.mark.parametrize("layout", ["C", "F", "strided", "neg"])
def test_softmax_family(case: tuple, dtype: str, axis: object, layout: str) -> None:
    _, build, ref, op = case
    x = gt.TensorType(dtype, (None, None))("x")
    f = _compile([x], build(x, axis), (op,))
    v = _layouts((7, 37), dtype)[layout]
    out_dtype = dtype if dtype.startswith("float") else "float64"
    _close(f(v), ref(v.astype(out_dtype), axis=axis).astype(out_dtype), out_dtype)


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=lambda c: c[0])
def test_softmax_family_extremes(case: tuple) -> None:
    _, build, ref, op = case
    x = gt.matrix("x")
    f = _compile([x], build(x, 1), (op,))
    v = np.array([[1, np.inf, 2], [-np.inf] * 3, [np.nan, 1, 2], [1e300, -1e300, 0], [np.inf, np.inf, 1]])
    with np.errstate(all="ignore"):
        want = ref(v, axis=1)
    _close(f(v), want, "float64")


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=lambda c: c[0])
@pytest.mark.parametrize("axis", [1, 0])
@pytest.mark.parametrize("layout", ["C", "strided", "neg"])
def test_softmax_family_threaded_rows(case: tuple, axis: int, layout: str) -> None:
    """Above the parallel cutoff the rows of a matrix are split across threads (GOMP_parallel)."""
    _, build, ref, op = case
    x = gt.matrix("x")
    f = _compile([x], build(x, axis), (op,))
    assert "gj_GOMP_parallel" in f.native.llvm_ir and f"gj_{case[0]}_rows_float64" in f.native.llvm_ir
    for shape in [(301, 700), (3, 50_000), (50_000, 3)]:
        v = _layouts(shape, "float64")[layout]
        _close(f(v), ref(v, axis=axis), "float64")


def test_logsumexp_several_axes_keepdims_and_empty() -> None:
    x = gt.tensor3("x")
    f = _compile([x], gt.logsumexp(x, axis=(0, 2), keepdims=True), (LogSumExp,))
    v = _layouts((3, 4, 5), "float64")["F"]
    _close(f(v), sp.logsumexp(v, axis=(0, 2), keepdims=True), "float64")
    g = _compile([x], gt.logsumexp(x, axis=2), (LogSumExp,))
    with np.errstate(divide="ignore"):
        _close(g(np.zeros((2, 3, 0))), np.full((2, 3), -np.inf), "float64")


def test_softmax_empty_axis_gives_an_empty_array() -> None:
    x = gt.matrix("x")
    f = _compile([x], gt.special.softmax(x, axis=1), (Softmax,))
    _close(f(np.zeros((3, 0))), np.zeros((3, 0)), "float64")
    _close(f(np.zeros((0, 3))), np.zeros((0, 3)), "float64")


# ---------------------------------------------------------------- arg-reductions, scans, labels

@pytest.mark.parametrize("fn,ref,op", [(gt.argmax, np.argmax, Argmax), (gt.argmin, np.argmin, Argmin)])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8", "bool"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), (None, True)])
@pytest.mark.parametrize("layout", ["C", "F", "neg"])
def test_argreduce(fn: object, ref: object, op: type, dtype: str, axis: object, keepdims: bool,
                   layout: str) -> None:
    x = gt.TensorType(dtype, (None, None))("x")
    f = _compile([x], fn(x, axis=axis, keepdims=keepdims), (op,))
    v = _layouts((6, 9), dtype)[layout]
    _close(f(v), np.asarray(ref(v, axis=axis, keepdims=keepdims)), "int64")


def test_argreduce_ties_nan_and_empty() -> None:
    x = gt.matrix("x")
    fmax, fmin = _compile([x], gt.argmax(x, axis=1), (Argmax,)), _compile([x], gt.argmin(x, axis=1), (Argmin,))
    v = np.array([[1, 3, 3, 0], [np.nan, 5, np.nan, 1], [2, np.nan, 9, np.nan], [4, 4, 4, 4]])
    _close(fmax(v), np.argmax(v, axis=1), "int64")
    _close(fmin(v), np.argmin(v, axis=1), "int64")
    with pytest.raises(ValueError):
        fmax(np.zeros((3, 0)))


@pytest.mark.parametrize("mode", ["add", "mul"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint32", "bool"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("layout", ["C", "F", "strided", "neg"])
def test_cumop(mode: str, dtype: str, axis: object, layout: str) -> None:
    x = gt.TensorType(dtype, (None, None))("x")
    fn, ref = (gt.cumsum, np.cumsum) if mode == "add" else (gt.cumprod, np.cumprod)
    f = _compile([x], fn(x, axis=axis), (CumOp,))
    v = _layouts((4, 6), dtype)[layout]
    want = ref(v, axis=axis)
    _close(f(v), want, str(want.dtype))
    _close(f(v[:0]), ref(v[:0], axis=axis), str(want.dtype))


@pytest.mark.parametrize("ldtype", ["int64", "int32", "uint8"])
@pytest.mark.parametrize("layout", ["C", "F", "neg"])
def test_take_labels(ldtype: str, layout: str) -> None:
    x, lab = gt.matrix("x"), gt.TensorType(ldtype, (None,))("lab")
    f = _compile([x, lab], gt.special.take_labels(x, lab), (TakeLabels,))
    v = _layouts((5, 7), "float64")[layout]
    labels = np.array([0, 6, 3, 3, 1], ldtype)
    _close(f(v, labels), v[np.arange(5), labels], "float64")
    with pytest.raises(IndexError):
        f(v, np.array([0, 7, 3, 3, 1], ldtype))
    if ldtype != "uint8":
        with pytest.raises(IndexError):
            f(v, np.array([0, -1, 3, 3, 1], ldtype))
    with pytest.raises(ValueError):
        f(v, np.array([0, 1], ldtype))
