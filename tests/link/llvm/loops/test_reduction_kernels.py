"""The contiguous reduction kernels: full reductions read their range as several memory streams
(loops._reduction_body), a vector dot is one such reduction (lower_blas._vector_dot), and a bare float max/min
runs explicit vectors (loops._vector_extremum): values on every length around the streams' and the vectors'
splits, every layout, NaN in each stream, vector and tail, and no product call for the dot."""

from __future__ import annotations

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.loops.reduce import FULL_REDUCTION_STREAMS

LENGTHS = sorted({0, 1, 2, 3, 5, 31, 32, 33, 127, 128, 129, 1001, 100_003})
RNG = np.random.default_rng(7)


def _views(n: int, dtype: str) -> dict:
    base = (RNG.standard_normal(2 * n) * 3).astype(dtype)
    return {"C": base[:n], "strided": base[::2], "neg": base[::-1][:n]}


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("reduction", ["sum", "prod", "max", "min"])
def test_full_reductions_on_every_length(dtype, reduction):
    x = gt.vector("x", dtype=dtype)
    f = gj.function([x], getattr(x, reduction)(), mode="FAST_RUN")
    tol = 1e-4 if dtype == "float32" else 1e-10
    for n in LENGTHS:
        if n == 0 and reduction in ("max", "min"):
            continue
        for layout, a in _views(n, dtype).items():
            a = np.clip(a, -1.2, 1.2) if reduction == "prod" and dtype != "int64" else a
            a = np.sign(a).astype(dtype) if reduction == "prod" and dtype == "int64" else a
            np.testing.assert_allclose(f(a), getattr(np, reduction)(a), rtol=tol, err_msg=f"{n} {layout}")


def test_nan_in_each_stream_and_the_tail_propagates():
    x = gt.dvector("x")
    f = gj.function([x], [x.sum(), x.max(), x.min()], mode="FAST_RUN")
    n = 4 * FULL_REDUCTION_STREAMS * 64 + 3
    part = n // FULL_REDUCTION_STREAMS
    for at in [k * part + 5 for k in range(FULL_REDUCTION_STREAMS)] + [n - 1]:
        a = np.ones(n)
        a[at] = np.nan
        assert all(np.isnan(v) for v in f(a)), at


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_vector_dot_is_a_fused_reduction(dtype):
    a, b = gt.vector("a", dtype=dtype), gt.vector("b", dtype=dtype)
    f = gj.function([a, b], gt.dot(a, b), mode="FAST_RUN")
    assert "gemm" not in f.native.llvm_ir and "matprod" not in f.native.llvm_ir
    tol = 1e-4 if dtype == "float32" else 1e-10
    for n in LENGTHS:
        x, y = _views(n, "float64")["strided"], _views(n, "float64")["neg"]
        x, y = (v > 0 if dtype == "bool" else v.astype(dtype) for v in (x, y))
        got, want = f(x, y), np.dot(x, y)
        assert got.dtype == want.dtype and got.shape == ()
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    with pytest.raises(ValueError, match="not aligned"):
        f(np.ones(3, dtype), np.ones(4, dtype))


def test_vector_dot_of_mixed_dtypes():
    a, b = gt.vector("a", dtype="int32"), gt.dvector("b")
    f = gj.function([a, b], gt.dot(a, b), mode="FAST_RUN")
    x, y = np.arange(1000, dtype="int32"), RNG.standard_normal(1000)
    np.testing.assert_allclose(f(x, y), np.dot(x, y), rtol=1e-12)


def test_a_body_is_compiled_once_whatever_its_streams():
    """A full and a row reduction of the same body share one kernel (the first built, here the streams one)."""
    import re
    m = gt.dmatrix("m")
    f = gj.function([m], [(m * 2.0).sum(), (m * 2.0).sum(axis=1)], mode="FAST_RUN")
    assert len(re.findall(r'define (?:internal )?i32 @"[^"]*\.reduce"', f.native.llvm_ir)) == 1
    for shape in [(3, 5), (64, 1000), (1000, 64), (7, 0)]:
        a = RNG.standard_normal(shape)
        total, rows = f(a)
        np.testing.assert_allclose(total, (a * 2).sum(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(rows, (a * 2).sum(axis=1), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_bare_extremum_runs_explicit_vectors_with_numpys_nan(dtype, op):
    x, m = gt.vector("x", dtype=dtype), gt.matrix("m", dtype=dtype)
    f = gj.function([x], getattr(x, op)(), mode="FAST_RUN")
    rows = gj.function([m], getattr(m, op)(axis=1), mode="FAST_RUN")
    fused = gj.function([x], getattr(x * 2, op)(), mode="FAST_RUN")
    assert '"x.cond"' in f.native.llvm_ir and '"x.cond"' in rows.native.llvm_ir
    assert '"x.cond"' not in fused.native.llvm_ir            # a fused body keeps the vectoriser's loop
    ref = getattr(np, op)
    for n in LENGTHS[1:]:
        for layout, a in _views(n, dtype).items():
            assert f(a) == ref(a), (n, layout)
            for at in {0, n // 3, n // 2, n - 1}:
                b = a.copy()
                b[at] = np.nan
                assert np.isnan(f(b)) and np.isnan(fused(b)), (n, at)
    a = np.array([-np.inf, np.inf, -np.inf], dtype)
    assert f(a) == ref(a) and f(np.full(40, -np.inf, dtype)) == ref(np.full(40, -np.inf, dtype))
    assert np.isnan(f(np.full(70, np.nan, dtype)))
    mat = (RNG.standard_normal((9, 133)) * 3).astype(dtype)
    mat[2, 5] = mat[4, 130] = mat[7, 64] = np.nan
    np.testing.assert_array_equal(rows(mat), ref(mat, axis=1))
    np.testing.assert_array_equal(rows(mat[:, ::-2]), ref(mat[:, ::-2], axis=1))
    with pytest.raises(ValueError, match="zero-size"):
        f(np.zeros(0, dtype))
