"""Elementwise groups of compact graphs (elementwise_driver): shared bshape/ew glue and a per-group adapter.

Every case runs through the one op-test helper with the threshold lowered to 1 group, so that small graphs
take the compact path (all layouts, zero sizes, float32/float64, numpy's errors); then IR-level checks that
a large graph really shares the drivers, and the paths the op table cannot reach (threads, scalar errors).
"""

import re

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm import limits
from op_check import Case, arr, check_case


@pytest.fixture
def compact(monkeypatch):
    """Every graph with at least one fused group is compact (the threshold is part of the graph key)."""
    monkeypatch.setattr(limits, "COMPACT_MIN_GROUPS", 1)


CASES = [
    Case("unary-1d", gt.exp, np.exp, [arr((9,))]),
    Case("binary-2d", lambda x, y: x * y - x, lambda x, y: x * y - x, [arr((3, 4)), arr((3, 4))]),
    Case("bias-row", lambda x, b: gt.tanh(x + b), lambda x, b: np.tanh(x + b), [arr((5, 7)), arr((7,))]),
    Case("per-row-column", lambda x, c: (x - c) * 2, lambda x, c: (x - c) * 2,
         [arr((5, 7)), arr((5, 1), static=True)], zero_len=7),
    # every array one column wide at run time: the flat range would read the per-row operand only once
    Case("per-row-one-column", lambda x, c: (x - c) * 2, lambda x, c: (x - c) * 2,
         [arr((5, 1)), arr((5, 1), static=True)], zero_size=False),
    # every array statically one column wide (an (n, 1) result): flat, or rows of one element when broadcast
    Case("static-one-column", lambda x, c: gt.exp(x - c) * 2, lambda x, c: np.exp(x - c) * 2,
         [arr((5, 1), static=True), arr((1, 1), static=True)], zero_size=False),
    # statically short rows of a group that never runs flat: its kernel is built for exactly 3 elements
    Case("short-rows-per-row", lambda x, c: gt.exp(x - c), lambda x, c: np.exp(x - c),
         [arr((6, 3), static=True), arr((6, 1), static=True)], zero_size=False),
    Case("short-rows-broadcast", lambda x, r: gt.tanh(x) * r, lambda x, r: np.tanh(x) * r,
         [arr((2, 5, 3), static=True), arr((1, 1, 3), static=True)], zero_size=False),
    Case("runtime-broadcast", lambda x, y: x + y, np.add, [arr((3, 4)), arr((1, 4))]),
    Case("3d-broadcast", lambda x, y, z: x * y + z, lambda x, y, z: x * y + z,
         [arr((3, 1, 4)), arr((5, 1)), arr((4,))]),
    Case("python-scalars", lambda x: 2 * x + 1.5 - x / 3, lambda x: 2 * x + 1.5 - x / 3, [arr((4, 3))]),
    Case("0d-operand", lambda x, s: x * s + s, lambda x, s: x * s + s, [arr((4, 3)), arr(())]),
    Case("where", lambda c, a, b: gt.where(c > 0, a, b), lambda c, a, b: np.where(c > 0, a, b),
         [arr((3, 4)), arr((3, 4)), arr((4,))]),
    Case("compare-bool", lambda x, y: x < y, np.less, [arr((3, 4)), arr((4,))]),
    Case("int-mixed", lambda x, y: x * y + x, lambda x, y: x * y + x,
         [arr((3, 4), "int32"), arr((3, 4), "int8")], dtypes=("float64",)),
    Case("int-division", lambda x, y: x // y, np.floor_divide, [arr((3, 4), low=-9, high=9), arr((4,), low=1,
                                                                                                  high=5)],
         dtypes=("int64",)),
    # a kernel's error (a negative integer power) leaves the rows adapter with the message numpy raises
    Case("per-row-int-power", lambda x, y: x ** y, np.power,
         [arr((4, 3), "int64", low=0, high=5), arr((4, 1), "int64", static=True, low=-2, high=3)],
         dtypes=("int64",), zero_size=False),
    # non-contiguous full-shape inputs are copied into C order on glue.ew's stack (drivers._gathered), then flat
    Case("transposed-operands", lambda x, y: gt.exp(x.T) * y - x.T, lambda x, y: np.exp(x.T) * y - x.T,
         [arr((5, 7)), arr((7, 5))], dtypes=("float64", "float32", "complex128")),
    Case("transposed-self", lambda x: (x * 2) + (x * 2).T, lambda x: (x * 2) + (x * 2).T, [arr((6, 6))]),
    Case("transposed-beyond-room", lambda x, y: x.T * y + 1, lambda x, y: x.T * y + 1,
         [arr((70, 70)), arr((70, 70))], zero_size=False),
    Case("shape-mismatch", lambda x, y: x + y, np.add, [arr((3, 4)), arr((5, 4))], zero_size=False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_compact_groups_match_numpy(compact, case):
    check_case(case)


# reductions keeping the last axis run their rows through glue.ew in a compact graph (drivers.emit_driven_row_reduction)
ROW_REDUCTIONS = [
    Case("column-sum", lambda x: gt.exp(x).sum(axis=0), lambda x: np.exp(x).sum(axis=0), [arr((5, 7))]),
    Case("column-max-broadcast", lambda x, b: (x * b).max(axis=0), lambda x, b: (x * b).max(axis=0),
         [arr((5, 7)), arr((7,))], zero_len=5, zero_size=False),
    Case("column-min-per-row", lambda x, c: (x - c).min(axis=0), lambda x, c: (x - c).min(axis=0),
         [arr((4, 6)), arr((4, 1), static=True)], zero_size=False),
    # one column at run time: the output row has stride 0 in the driver, so glue.strided gathers it too
    Case("column-sum-one-wide", lambda x, y: (x * y).sum(axis=0), lambda x, y: (x * y).sum(axis=0),
         [arr((6, 1)), arr((6, 1))], zero_size=False),
    Case("short-rows-column-sum", lambda x, r: gt.exp(x * r).sum(axis=0), lambda x, r: np.exp(x * r).sum(axis=0),
         [arr((9, 2), static=True), arr((1, 2), static=True)], zero_size=False),
    Case("3d-two-axes", lambda x, y: (x * y + 1).sum(axis=(0, 1)), lambda x, y: (x * y + 1).sum(axis=(0, 1)),
         [arr((3, 4, 5)), arr((4, 5))]),
    Case("3d-middle-axis", lambda x: gt.tanh(x).prod(axis=1), lambda x: np.tanh(x).prod(axis=1),
         [arr((3, 4, 5), low=-1, high=1)]),
    Case("int-column-sum", lambda x: (x * 3).sum(axis=0), lambda x: (x * 3).sum(axis=0),
         [arr((5, 7), "int32", low=-9, high=9)], dtypes=("int64",)),
    Case("column-any-bool", lambda x: gt.any(x > 0.5, axis=0), lambda x: np.any(x > 0.5, axis=0), [arr((5, 7))]),
    Case("column-all-bool", lambda x: gt.all(x > -1.5, axis=0), lambda x: np.all(x > -1.5, axis=0), [arr((5, 7))]),
    # dimensions every operand has statically of length 1 are dropped (reduce._squeezed): n contiguous elements
    Case("column-sum-static-one-wide", lambda x, y: (x * y).sum(axis=0), lambda x, y: (x * y).sum(axis=0),
         [arr((6, 1), static=True), arr((6, 1), static=True)], zero_size=False),
    Case("3d-static-one-kept", lambda x: gt.exp(x).max(axis=0), lambda x: np.exp(x).max(axis=0),
         [arr((3, 1, 4), static=True)], zero_size=False),
    Case("reduced-shape-mismatch", lambda x, y: (x + y).sum(axis=0), lambda x, y: (x + y).sum(axis=0),
         [arr((3, 4)), arr((5, 4))], zero_size=False),
]


@pytest.mark.parametrize("case", ROW_REDUCTIONS, ids=str)
def test_compact_row_reductions_match_numpy(compact, case):
    check_case(case)


def test_compact_row_reduction_goes_through_the_driver(compact):
    x = gt.dmatrix("x")
    f = gj.function([x], gt.exp(x).sum(axis=0))
    text = f.native.llvm_ir
    assert re.search(r'call i32 @"glue\.ew\.2"\(i32 \(i64, i64, i8\*\*, i64\*, i8\*\)\* @"glue\.[^"]*rowacc', text) or \
        re.search(r'define internal i32 @"glue\.[^"]*\.adapt"[^\n]*\n[^}]*loop\.rowacc', text), "no driven rowacc"
    a = np.random.default_rng(1).normal(size=(64, 33))
    for view in (a, a[::2], a[:, ::-1], a.T.copy().T, a[::-3, 1::2]):
        np.testing.assert_allclose(f(view), np.exp(view).sum(axis=0), rtol=1e-12)


def _defines(ir_text: str, prefix: str) -> list[str]:
    return re.findall(r'define internal i32 @"(' + re.escape(prefix) + r'[^"]*)"', ir_text)


def test_large_graph_shares_drivers():
    x, v = gt.dmatrix("x"), gt.dvector("v")
    out = x
    for k in range(10):                 # ten 2-d groups of two float64 arrays, each ended by a sum
        out = gt.tanh(out * (k + 1.0) + v) + out.sum(axis=1, keepdims=True)
    f = gj.function([x, v], out)
    a, b = np.random.default_rng(0).normal(size=(6, 5)), np.linspace(-1, 1, 5)
    want = a
    for k in range(10):
        want = np.tanh(want * (k + 1.0) + b) + want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(f(a, b), want, rtol=1e-12)
    np.testing.assert_allclose(f(a[::-1, ::2], b[::2]), f(a[::-1, ::2].copy(), b[::2].copy()), rtol=1e-12)
    text = f.native.llvm_ir
    adapters = [n for n in _defines(text, "glue.") if n.endswith(".adapt")]
    drivers = _defines(text, "glue.ew.")
    assert len(re.findall(r'call i32 @"glue\.(group|ew)\.', text)) >= 10     # ten groups through the drivers
    assert 1 <= len(adapters) <= 2 and len(drivers) <= 2     # identical groups share kernel and adapter
    assert _defines(text, "glue.strided") == ["glue.strided"]   # one strided fallback for all of them
    glue_text = "".join(re.findall(r'define internal i32 @"glue\.[^"]*\.adapt".*?\n}\n', text, re.S))
    assert "tanh" not in glue_text                           # the fused body lives in the kernels only
    with pytest.raises(ValueError, match="shape mismatch"):
        f(a, b[:3])


def test_one_column_group_runs_flat(compact):
    """A group whose arrays are all statically one column wide is one flat call over its n elements, not n
    row calls of one element each (the normal mixture's isinf/exp of a (100, 1) logsumexp maximum)."""
    x = gt.dmatrix("x")
    col = x.max(axis=1, keepdims=True)
    f = gj.function([x], [gt.isinf(col), gt.exp(col)])
    text = f.native.llvm_ir
    assert re.search(r'define i32 @"[^"]*loop\.contig"', text) and not re.search(r'loop\.row"', text)
    a = np.random.default_rng(2).normal(size=(7, 3))
    a[2, 1] = np.inf
    for view in (a, a[::-2], a[:, ::2]):
        m = view.max(axis=1, keepdims=True)
        got = f(view)
        np.testing.assert_array_equal(got[0], np.isinf(m))
        np.testing.assert_allclose(got[1], np.exp(m), rtol=1e-13)
    col_view = a[:, 0:1]                     # a (7, 1) column whose rows are 3 elements apart
    g = gj.function([x], gt.exp(x) * 2)
    assert g(col_view).shape == (7, 1)
    y = gt.tensor("float64", shape=(None, 1), name="y")
    h = gj.function([y], gt.log1p(gt.abs(y)) - y)
    np.testing.assert_allclose(h(col_view), np.log1p(np.abs(col_view)) - col_view, rtol=1e-13)
    np.testing.assert_allclose(h(col_view[::-1]), np.log1p(np.abs(col_view[::-1])) - col_view[::-1], rtol=1e-13)


@pytest.mark.parametrize("n", [7, 70])      # temporaries on the stack (the entry's rows), and driven ones
def test_short_static_rows_have_no_vector_loop(compact, monkeypatch, n):
    """A group that only ever runs row by row, over static rows of 2..SHORT_ROW elements, calls a kernel built
    for exactly that length (unrolled): no vector loop whose tail every row would take."""
    from graphjit.link.llvm.loops import vector_body
    monkeypatch.setattr(vector_body, "MIN_GROUPS", 1)      # kernels vectorised as in a large graph
    x = gt.tensor("float64", shape=(n, 2), name="x")
    c, r = gt.tensor("float64", shape=(n, 1), name="c"), gt.tensor("float64", shape=(1, None), name="r")
    outs = [gt.exp(x - c) + 1.0, (x * r).sum(axis=0)] + ([gt.log1p(gt.abs(x * r)) - r] if n > 8 else [])
    f = gj.function([x, c, r], outs)
    text = f.native.llvm_ir
    kernels = re.findall(r'define i32 @"[^"]*\.(row|rowacc|contig)"', text)
    assert {"row", "rowacc"} <= set(kernels) and not re.search(r'define[^\n]*vtail', text), kernels
    a = np.random.default_rng(4).normal(size=(2 * n, 4))
    cv, rv = a[:n, :1] * 3, np.array([[0.5, -2.0]])
    for view in (a[:n, :2], a[::2, 1:3], a[n:, ::-2], a[::-2, ::3]):
        got = f(view, cv, rv)
        np.testing.assert_allclose(got[0], np.exp(view - cv) + 1.0, rtol=1e-13)
        np.testing.assert_allclose(got[1], (view * rv).sum(axis=0), rtol=1e-13)
        if n > 8:
            np.testing.assert_allclose(got[2], np.log1p(np.abs(view * rv)) - rv, rtol=1e-13)
    one = f(a[:n, :2], cv, np.array([[1.5]]))           # r's unknown length broadcasts from 1
    np.testing.assert_allclose(one[1], (a[:n, :2] * 1.5).sum(axis=0), rtol=1e-13)
    with pytest.raises(ValueError):
        f(a[:n, :2], cv, np.ones((1, 3)))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16", "int8", "bool"])
def test_strided_rows_cross_chunks(compact, dtype):
    """glue.strided (loops/gather.py): rows longer than a chunk, every element size, reversed and strided
    operands, a per-row operand and an output written in place over a strided input."""
    from graphjit.link.llvm.loops.gather import CHUNK
    n = 2 * CHUNK + 37
    x, y, c = (gt.tensor(dtype, shape=s, name=k) for s, k in (((None, None), "x"), ((None,), "y"), ((None, 1), "c")))
    out = (x + y) * c if dtype != "bool" else (x | y) & c
    f = gj.function([x, y, c], out)
    g = gj.function([gj.In(x, mutable=True), y], x - y if dtype != "bool" else x ^ y)
    rng = np.random.default_rng(3)
    base = rng.integers(-5, 6, size=(6, 2 * n)).astype(dtype)
    a, b, col = base[::-2, ::2], base[1, ::-2][:n].copy()[::-1], base[:3, :1]
    want = (a + b) * col if dtype != "bool" else (a | b) & col
    assert _defines(f.native.llvm_ir, "glue.strided") and _defines(g.native.llvm_ir, "glue.strided")
    np.testing.assert_array_equal(f(a, b, col), want)
    np.testing.assert_array_equal(f(np.ascontiguousarray(a), b, col), want)
    target = base.copy()[:, ::2]
    expect = target - b if dtype != "bool" else target ^ b
    np.testing.assert_array_equal(g(target, b), expect)


def test_threads_split_flat_range(compact, monkeypatch):
    from graphjit.link.llvm.ir import threads
    if not threads.gomp_available():
        pytest.skip("libgomp is not available on this machine")
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([x, y], gt.exp(x) * y)
    assert re.search(r'define internal void @"glue\.ew\.[^"]*\.omp"', f.native.llvm_ir)
    a, b = np.linspace(-3, 3, 1 << 19), np.linspace(1, 2, 1 << 19)
    np.testing.assert_allclose(f(a, b), np.exp(a) * b, rtol=1e-13)
    np.testing.assert_allclose(f(a[::-2], b[::2]), np.exp(a[::-2]) * b[::2], rtol=1e-13)


def test_scalar_error_in_kernel_and_strided_loop(compact):
    x, y = gt.lmatrix("x"), gt.lmatrix("y")
    f = gj.function([x, y], x ** y)
    a, b = np.arange(12).reshape(3, 4), np.ones((3, 4), dtype=np.int64)
    np.testing.assert_array_equal(f(a[:, ::-1], b[:, ::-1]), a[:, ::-1])
    b[1, 2] = -1
    for args in ((a, b), (a[:, ::-1], b[:, ::-1])):     # the kernel, then the adapter's strided loop
        with pytest.raises(ValueError, match="negative integer powers"):
            f(*args)
    np.testing.assert_array_equal(f(a, np.abs(b)), a)  # and the function still works


def _viewed(v):
    """A view of v as the graph's output: the group's own output becomes a temporary of the entry."""
    return v.T if v.ndim >= 2 else v[::-1] if v.ndim == 1 else v


@pytest.mark.parametrize("case", CASES, ids=str)
def test_compact_temporaries_match_numpy(compact, case):
    """A group whose output is a temporary runs as one glue.group call (broadcast, buffer, loop)."""
    check_case(Case(f"{case.name}-temporary", lambda *a: _viewed(case.build(*a)),
                    lambda *a: _viewed(np.asarray(case.reference(*a))), case.inputs, case.dtypes, case.zero_size,
                    case.zero_len, case.layouts, case.rtol, case.atol, case.check_dtype))


def test_temporary_groups_are_one_call(compact):
    x, y = gt.lmatrix("x"), gt.lmatrix("y")
    f = gj.function([x, y], [(x ** y).T, (x + y).T])
    text = f.native.llvm_ir
    assert _defines(text, "glue.group.2.2") == ["glue.group.2.2"]
    assert re.search(r'define i32 @"[^"]*_entry".*?\n}\n', text, re.S).group(0).count('@"glue.group.2.2"(') == 2
    a, b = np.arange(12).reshape(3, 4), np.ones((3, 4), dtype=np.int64)
    got = f(a, b)
    np.testing.assert_array_equal(got[0], a.T)
    np.testing.assert_array_equal(got[1], (a + b).T)
    b[1, 2] = -1
    for args in ((a, b), (a[:, ::-1], b[:, ::-1])):     # the kernel, then the adapter's strided loop
        with pytest.raises(ValueError, match="negative integer powers"):
            f(*args)
    with pytest.raises(ValueError, match="shape mismatch"):
        f(a, b[:2])
