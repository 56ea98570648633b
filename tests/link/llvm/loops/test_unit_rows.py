"""Row kernels of rows of one element store it with no loop at all (loops/nest.py _row_elementwise,
loops/reduce.py _row_reduction, build_kernel's trip = 1): LLVM's cost is per loop."""

import re

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt


def _kernel(ir_text: str, suffix: str) -> list[str]:
    """The bodies of the kernels defined in ir_text whose names end in suffix."""
    return re.findall(r'define [^\n]*k\.node\d+\.loop\.' + re.escape(suffix) + r'"?\(.*?\n}\n', ir_text, re.S)


def _column(dtype: str, rows: int, layout: str) -> np.ndarray:
    rng = np.random.default_rng(3)
    base = (rng.standard_normal((2 * rows + 1, 3)) * 4).astype(dtype)
    return {"plain": base[:rows, :1].copy(), "strided": base[::2, 1:2][:rows], "reversed": base[::-1, 2:][:rows],
            "empty": base[:0, :1]}[layout]


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
@pytest.mark.parametrize("layout", ["plain", "strided", "reversed", "empty"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_per_row_groups_are_loop_free(dtype, layout, mode):
    c = gt.TensorType(dtype, shape=(None, 1))("c")
    if dtype == "bool":
        outs, want = [c & ~c, c | c], lambda a: [a & ~a, a | a]
    elif dtype == "int32":
        outs, want = [c * 3 - 1, abs(c) + 7], lambda a: [a * 3 - 1, abs(a) + 7]
    else:
        outs, want = [gt.exp(c) * 2, gt.sin(c) + 1], lambda a: [np.exp(a) * 2, np.sin(a) + 1]
    f = gj.function([c], outs, mode=mode)
    a = _column(dtype, 9, layout)
    tol = 1e-12 if dtype == "float64" else 1e-6
    for got, ref in zip(f(a), want(a)):
        assert got.dtype == ref.dtype and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    rows = _kernel(f.native.llvm_ir, "row")
    assert len(rows) == 2                                 # one per group, each storing its row's one element
    assert all("!llvm.loop" not in body and " phi " not in body for body in rows)


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_a_failing_per_row_value_raises(mode):
    x, y = (gt.TensorType("int64", shape=(None, 1))(n) for n in "xy")
    f = gj.function([x, y], x ** y, mode=mode)
    a = np.arange(6, dtype="int64").reshape(6, 1)
    np.testing.assert_array_equal(f(a, a % 3), a ** (a % 3))
    with pytest.raises(ValueError, match="negative integer powers"):
        np.asarray(a) ** (-a)                            # numpy raises it too
    with pytest.raises(ValueError, match="negative integer powers"):
        f(a, -a)


@pytest.mark.parametrize("op", ["sum", "max", "prod"])
@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
def test_column_reduction_of_per_row_values(dtype, op):
    c = gt.TensorType(dtype, shape=(None, 1))("c")
    body = c if dtype == "bool" else c * 2 + 1
    f = gj.function([c], getattr(body, op)(axis=0), mode="FAST_RUN")
    for layout in ("plain", "strided", "reversed"):
        a = _column(dtype, 7, layout)
        want = getattr(a if dtype == "bool" else a * 2 + 1, op)(axis=0)
        got = f(a)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # the static length-1 column is dropped from the loop (reduce._squeezed): one reduction over the n
    # elements, no row kernel per element
    ir_text = f.native.llvm_ir
    assert not _kernel(ir_text, "rowacc") and len(_kernel(ir_text, "reduce")) == 1


def test_short_static_rows_keep_their_loop():
    """A static row length above 1 keeps the row kernel's vectorised loop; the results are numpy's."""
    x, c = gt.TensorType("float64", shape=(None, 3))("x"), gt.TensorType("float64", shape=(None, 1))("c")
    f = gj.function([x, c], gt.exp(x) * c, mode="FAST_RUN")
    g = gj.function([x, c], (x * c).sum(axis=0), mode="FAST_RUN")
    rng = np.random.default_rng(4)
    a, col = rng.standard_normal((6, 3)), rng.standard_normal((6, 1))
    for a_, c_ in ((a, col), (a[::-1], col[::-2].repeat(2, axis=0)), (a[:0], col[:0])):
        np.testing.assert_allclose(f(a_, c_), np.exp(a_) * c_, rtol=1e-12)
        np.testing.assert_allclose(g(a_, c_), (a_ * c_).sum(axis=0), rtol=1e-12, atol=1e-15)
    rows = _kernel(f.native.llvm_ir, "row")
    assert len(rows) == 1 and "!llvm.loop" in rows[0]
    with pytest.raises(TypeError, match="expected length 3"):
        f(a[:, :2], col)                                  # not the static length 3: refused by name
