"""Broadcasting elementwise groups run their vectorised kernel once per row (loops._row_elementwise)."""

import re

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt


def _calls(ir_text: str, suffix: str) -> int:
    """How many call sites of an internal kernel whose name ends in suffix the native entry has."""
    entry = re.search(r'define i32 @"gj_[0-9a-f]+_entry"\(.*?\n}\n', ir_text, re.S).group(0)
    return len(re.findall(r'call i32 @"[^"]*' + re.escape(suffix) + r'"\(', entry))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_bias_activation_rows_match_numpy(dtype):
    x, v = gt.matrix("x", dtype=dtype), gt.vector("v", dtype=dtype)
    f = gj.function([x, v], gt.tanh(x + v), mode="FAST_RUN")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((33, 17)).astype(dtype), rng.standard_normal(17).astype(dtype)
    tol = 1e-12 if dtype == "float64" else 1e-6
    np.testing.assert_allclose(f(a, b), np.tanh(a + b), rtol=tol, atol=tol)
    # v is statically broadcast along the rows, so a whole-array call could never run: only the per-row
    # calls of the kernel are there (no flat call, no thread body)
    assert _calls(f.native.llvm_ir, ".contig") == 1
    assert ".omp" not in f.native.llvm_ir
    assert f(a[:1], b).shape == (1, 17)
    np.testing.assert_allclose(f(a[:0], b), np.tanh(a[:0] + b))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_per_row_scalars_match_numpy(dtype):
    """An operand broadcast along the last axis is read once per row and passed to a row kernel."""
    x, c = gt.matrix("x", dtype=dtype), gt.TensorType(dtype, shape=(None, 1))("c")
    out = (x * c) if dtype == "bool" else (x - c) * 2
    f = gj.function([x, c], out, mode="FAST_RUN")
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((9, 70)) * 10).astype(dtype)
    col = (rng.standard_normal((9, 1)) * 10).astype(dtype)
    want = (a * col) if dtype == "bool" else (a - col) * 2
    np.testing.assert_array_equal(f(a, col), want)
    assert _calls(f.native.llvm_ir, ".row") == 1


@pytest.mark.parametrize("layout", ["plain", "transposed", "strided_rows", "reversed_rows", "runtime_bcast",
                                    "empty"])
def test_row_path_and_strided_fallback_agree_with_numpy(layout):
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    z = gt.dtensor3("z")
    f = gj.function([x, y], gt.exp(x) - y * 3, mode="FAST_RUN")
    g = gj.function([z, y], z / (1 + gt.sqr(y)), mode="FAST_RUN")
    rng = np.random.default_rng(2)
    base = rng.standard_normal((12, 20))
    a, b = {
        "plain": (base, base[:1]),                      # y broadcast along rows (runtime length 1)
        "transposed": (base[:, :12].T, base[:12, :12]),    # x has a non-unit inner stride: strided path
        "strided_rows": (base[::2], base[1::2]),        # unit inner stride, row stride 2 rows
        "reversed_rows": (base[::-1], base),
        "runtime_bcast": (base, base[:, :1]),           # inner length 1 at run time, not statically
        "empty": (base[:0], base[:0]),
    }[layout]
    np.testing.assert_allclose(f(a, b), np.exp(a) - b * 3, rtol=1e-13)
    t = rng.standard_normal((3, 4, 5))
    for zz, yy in [(t, t[0]), (t, t[0, :1]), (t[:, ::-1], t[1])]:
        np.testing.assert_allclose(g(zz, yy), zz / (1 + yy * yy), rtol=1e-13)


def test_integer_row_kernel_matches_numpy_with_zero_divisors():
    """Integer floor division per row (a per-row divisor, zero in one row) gives numpy's numbers."""
    x, c = gt.imatrix("x"), gt.TensorType("int32", shape=(None, 1))("c")
    f = gj.function([x, c], x // c, mode="FAST_RUN")
    a = np.arange(-6, 34, dtype="int32").reshape(4, 10)
    col = np.array([[1], [0], [-3], [7]], dtype="int32")
    with np.errstate(divide="ignore"):
        want = a // col
    np.testing.assert_array_equal(f(a, col), want)
    assert _calls(f.native.llvm_ir, ".row") == 1


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
def test_column_reductions_accumulate_rows(dtype, op):
    """Reductions keeping the last axis (column sums) accumulate each row into out in a vectorised kernel."""
    x, y = gt.tensor3("x", dtype=dtype), gt.matrix("y", dtype=dtype)
    reduce = lambda v, axis: getattr(gt, op)(v, axis=axis)  # noqa: E731
    outs = [reduce(x, 0), reduce(x, (0, 1)), reduce(x, 1), reduce(y, 0)]
    f = gj.function([x, y], outs, mode="FAST_RUN")
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((3, 5, 37)) * 3).astype(dtype)
    m = (rng.standard_normal((6, 37)) * 3).astype(dtype)
    npop = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}[op]
    for layout in (lambda v: v, lambda v: v[::-1], lambda v: v[..., ::2]):      # the last one: strided nest
        got = f(layout(a), layout(m))
        want = [npop(layout(a), axis=0), npop(layout(a), axis=(0, 1)), npop(layout(a), axis=1),
                npop(layout(m), axis=0)]
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-5 if dtype == "float32" else 1e-12)
    assert _calls(f.native.llvm_ir, ".rowacc") == 4


def test_column_reduction_of_a_broadcast_expression():
    """sum(x * (1 - c), axis=0) with c broadcast along the last axis: per-row scalars in the row kernel."""
    x, c = gt.dmatrix("x"), gt.TensorType("float64", shape=(None, 1))("c")
    f = gj.function([x, c], (x * (1 - c)).sum(axis=0), mode="FAST_RUN")
    rng = np.random.default_rng(5)
    a, col = rng.standard_normal((40, 33)), rng.standard_normal((40, 1))
    np.testing.assert_allclose(f(a, col), (a * (1 - col)).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(f(a[:0], col[:0]), np.zeros(33))
    assert _calls(f.native.llvm_ir, ".rowacc") == 1
