"""The structural ops (shape, join, alloc, indexing, SumToShape, copies, gradient-only ops) are compiled by the
LLVM linker (never in f.native.fallback_nodes), with numpy's values on awkward layouts and numpy's errors."""

from __future__ import annotations

import re
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.ops import DeepCopyOp
from graphjit.gradient import GRADIENT_ONLY_OPS, grad_clip, grad_scale, zero_grad
from graphjit.tensor.advanced_subtensor import AdvancedIncSubtensor1, AdvancedSubtensor1
from graphjit.tensor.alloc import ARange, Alloc, Eye, arange, eye, zeros_like
from graphjit.tensor.elemwise_grad import SumToShape, sum_to_shape
from graphjit.tensor.join import Join, MakeVector, Split, concatenate, make_vector, split, stack
from graphjit.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape, flatten, reshape, shape_i
from graphjit.tensor.subtensor import IncSubtensor, Subtensor, inc_subtensor, set_subtensor

STRUCTURAL_OPS = (Reshape, Shape, Shape_i, SpecifyShape, Join, Split, MakeVector, Alloc, ARange, Eye, Subtensor,
                  IncSubtensor, AdvancedSubtensor1, AdvancedIncSubtensor1, SumToShape, DeepCopyOp,
                  *GRADIENT_ONLY_OPS)


def structural_fallbacks(f: Any) -> list:
    """The nodes of structural ops that f runs through perform."""
    return [n for n in f.native.fallback_nodes if isinstance(n.op, STRUCTURAL_OPS)]


def compile_native(inputs: Sequence[Any], outputs: Any) -> Any:
    """A FAST_RUN Function, asserting none of the structural ops fell back to perform."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = gj.function(list(inputs), outputs, mode="FAST_RUN")
    assert structural_fallbacks(f) == []
    return f


def layouts(a: np.ndarray) -> dict:
    """a contiguous, strided (every other element of a bigger array) and reversed (negative strides)."""
    big = np.zeros(tuple(2 * n for n in a.shape), dtype=a.dtype)
    strided = big[tuple(slice(None, None, 2) for _ in a.shape)]
    strided[...] = a
    rev = np.ascontiguousarray(a[tuple(slice(None, None, -1) for _ in a.shape)])
    return {"contiguous": a, "strided": strided, "reversed": rev[tuple(slice(None, None, -1) for _ in a.shape)]}


def sample(shape: Sequence[int], dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Random values of dtype."""
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-3, 3, size=shape).astype(dtype)
    return rng.integers(-9, 10, size=shape).astype(dtype)


# (name, builder(x), numpy reference(a), input shape); x is a tensor of unknown static shape
CASES: list[tuple[str, Callable, Callable, tuple]] = [
    ("reshape", lambda x: x.reshape((4, -1)), lambda a: a.reshape((4, -1)), (2, 3, 4)),
    ("reshape_sym", lambda x: reshape(x, (shape_i(x, 2), -1)), lambda a: a.reshape((a.shape[2], -1)), (2, 3, 4)),
    ("flatten", lambda x: flatten(x), lambda a: a.reshape(-1), (2, 3, 4)),
    ("flatten_zero", lambda x: flatten(x, 2), lambda a: a.reshape(a.shape[0], -1), (2, 0, 4)),
    ("subtensor", lambda x: x[1:, ::-2, 1], lambda a: a[1:, ::-2, 1], (3, 5, 4)),
    ("subtensor_neg", lambda x: x[-1, -3::-1], lambda a: a[-1, -3::-1], (3, 5, 4)),
    ("subtensor_newaxis", lambda x: x[None, :, 2:100], lambda a: a[None, :, 2:100], (3, 5)),
    ("subtensor_empty", lambda x: x[5:2], lambda a: a[5:2], (7, 2)),
    ("set_subtensor", lambda x: set_subtensor(x[1:, ::-1], x[:-1, 0:1]), None, (4, 3)),
    ("inc_subtensor", lambda x: inc_subtensor((x * 2)[::2], x[0]), None, (5, 3)),
    ("take_rows", lambda x: x[np.array([2, -1, 0, 2])], lambda a: a[[2, -1, 0, 2]], (4, 3)),
    ("inc_rows_repeated", lambda x: inc_subtensor(x[np.array([1, 1, -1])], x[:3] * 1),
     lambda a: _add_at(a, [1, 1, -1], a[:3]), (4, 3)),
    ("set_rows", lambda x: set_subtensor(x[np.array([0, 2])], x[-1]), None, (3, 2)),
    ("join", lambda x: concatenate([x, x[:, ::-1] * 2], axis=1), lambda a: np.concatenate([a, a[:, ::-1] * 2], 1),
     (3, 4)),
    ("stack", lambda x: stack([x, x + 1]), lambda a: np.stack([a, a + 1]), (2, 3)),
    ("split", lambda x: split(x, [1, 2], axis=1)[1] * 1, lambda a: a[:, 1:], (2, 3)),
    ("alloc_like", lambda x: zeros_like(x) + gt.ones_like(x[0]), lambda a: np.zeros_like(a) + 1, (3, 4)),
    ("alloc_row", lambda x: gt.alloc(x[0], 3, x.shape[1]), lambda a: np.broadcast_to(a[0], (3, a.shape[1])),
     (2, 4)),
    ("make_vector", lambda x: make_vector([x.shape[0], x.shape[1], 7]), lambda a: np.array([*a.shape, 7]), (2, 5)),
]


def _add_at(a: np.ndarray, idx: list, y: np.ndarray) -> np.ndarray:
    out = a.copy()
    np.add.at(out, idx, y)
    return out


def _reference(name: str, a: np.ndarray) -> np.ndarray:
    """References of the write cases (numpy writes in place)."""
    out = a.copy()
    if name == "set_subtensor":
        out[1:, ::-1] = a[:-1, 0:1]
        return out
    if name == "inc_subtensor":
        out = a * 2
        out[::2] += a[0]
        return out
    out[[0, 2]] = a[-1]
    return out


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_structural_op_is_native(case: tuple, dtype: str) -> None:
    name, build, ref, shape = case
    x = gt.TensorType(dtype, (None,) * len(shape))("x")
    f = compile_native([x], build(x))
    rng = np.random.default_rng(0)
    for label, a in layouts(sample(shape, dtype, rng)).items():
        before = a.copy()
        want = ref(a) if ref is not None else _reference(name, a)
        got = f(a)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {dtype} {label}")
        assert got.shape == np.shape(want)
        np.testing.assert_array_equal(a, before)   # inputs untouched


def test_arange_eye_native() -> None:
    n = gt.TensorType("int64", ())("n")
    k = gt.TensorType("int64", ())("k")
    s = gt.TensorType("float32", ())("s")
    f = compile_native([n, k, s], [arange(n), eye(n, n + 1, k), arange(0.5, n, s), arange(n, 0, -3)])
    for nv, kv, sv in [(5, 1, 0.75), (0, 0, 1.0), (4, -7, 2.5)]:
        got = f(nv, kv, np.float32(sv))
        want = [np.arange(nv), np.eye(nv, nv + 1, kv), np.arange(0.5, nv, np.float32(sv)), np.arange(nv, 0, -3)]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)
            assert g.dtype == w.dtype and g.shape == w.shape
    with pytest.raises(ZeroDivisionError):
        f(3, 0, np.float32(0))
    with pytest.raises(ValueError):
        f(-1, 0, np.float32(1))


@pytest.mark.parametrize("make", [lambda x, i: x[i], lambda x, i: x[1:, i], lambda x, i: x[gt.stack([i, 0])],
                                  lambda x, i: set_subtensor(x[gt.stack([0, i])], 1.0),
                                  lambda x, i: inc_subtensor(x[i], 1.0)],
                         ids=["int", "slice_int", "take", "set_rows", "inc_int"])
def test_bad_index_raises_index_error(make: Callable) -> None:
    x = gt.dmatrix("x")
    i = gt.TensorType("int64", ())("i")
    f = compile_native([x, i], make(x, i))
    a = np.arange(12.0).reshape(3, 4)
    f(a, -3)
    for bad in (4, -5, 1 << 40):
        with pytest.raises(IndexError):
            f(a, bad)
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(3, 4))


def test_reshape_errors_and_views() -> None:
    x = gt.dmatrix("x")
    s = gt.TensorType("int64", (2,))("s")
    f = compile_native([x, s], reshape(x, s, ndim=2) * 1)
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(f(a, np.array([2, -1])), a.reshape(2, -1))
    np.testing.assert_array_equal(f(a.T, np.array([-1, 2])), a.T.reshape(-1, 2))
    for bad in ([5, -1], [-1, -1], [-2, -6], [4, 4]):
        with pytest.raises(ValueError):
            f(a, np.array(bad))


def test_sum_to_shape_runtime_broadcast() -> None:
    g = gt.dmatrix("g")
    b = gt.dmatrix("b")
    f = compile_native([g, b], sum_to_shape(g, b))
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(f(a, np.zeros((3, 4))), a)
    np.testing.assert_array_equal(f(a[::-1, ::2], np.zeros((1, 2))), a[::-1, ::2].sum(0, keepdims=True))
    np.testing.assert_array_equal(f(a, np.zeros((3, 1))), a.sum(1, keepdims=True))
    np.testing.assert_array_equal(f(a, np.zeros((1, 1))), a.sum(keepdims=True))
    with pytest.raises(ValueError, match="length 3 to length 2 in dimension 0"):
        f(a, np.zeros((2, 4)))
    entry = re.search(r'define i32 @"[^"]*_entry".*?\n}\n', f.native.llvm_ir, re.S).group(0)
    assert entry.count('@"glue.sum_to_shape_site.float64.2"(') == 1    # the whole node is one call


def test_gradient_only_ops_are_views() -> None:
    x = gt.dvector("x")
    f = compile_native([x], [grad_clip(x, -1, 1) * 2, zero_grad(x) + grad_scale(x, 3.0)])
    a = np.arange(4.0)
    np.testing.assert_array_equal(f(a)[0], 2 * a)
    np.testing.assert_array_equal(f(a)[1], 2 * a)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("labels", [True, False], ids=["int_labels", "one_hot"])
def test_mlp_gradient_graph_has_no_structural_fallback(dtype: str, labels: bool) -> None:
    from graphjit.tensor.math import relu
    from graphjit.tensor.special import categorical_crossentropy, softmax
    x, W1, W2 = (gt.TensorType(dtype, (None, None))(n) for n in ("x", "W1", "W2"))
    b1, b2 = (gt.TensorType(dtype, (None,))(n) for n in ("b1", "b2"))
    y = gt.TensorType("int64", (None,))("y") if labels else gt.TensorType(dtype, (None, None))("y")
    cost = categorical_crossentropy(softmax(relu(x @ W1 + b1) @ W2 + b2), y).mean()
    params = [W1, b1, W2, b2]
    outs = [cost] + gj.grad(cost, params)
    f = compile_native([x, y] + params, outs)
    rng = np.random.default_rng(1)
    vals = [rng.normal(size=s).astype(dtype) for s in [(8, 5), (5, 6), (6,), (6, 3), (3,)]]
    yv = rng.integers(0, 3, size=8) if labels else np.eye(3, dtype=dtype)[rng.integers(0, 3, size=8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = gj.function([x, y] + params, outs, mode="PY")
    tol = 1e-4 if dtype == "float32" else 1e-10
    for g, w in zip(f(vals[0], yv, *vals[1:]), ref(vals[0], yv, *vals[1:])):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_elementwise_kernels_interleave_two_reductions_keep_llvms_choice():
    """Elementwise kernels interleave two vectors; a row reduction keeps LLVM's interleaving (its several
    accumulators); a full reduction reads FULL_REDUCTION_STREAMS streams, one accumulator each, interleave 1."""
    from graphjit.link.llvm.loops.reduce import FULL_REDUCTION_STREAMS
    x, m = gt.dvector("x"), gt.dmatrix("m")
    f = gj.function([x], gt.exp(x) * 2.0 + 1.0)
    ir_text = f.native.llvm_ir
    assert '!"llvm.loop.interleave.count", i32 2' in ir_text
    np.testing.assert_allclose(f(np.arange(5.0)), np.exp(np.arange(5.0)) * 2 + 1)
    rows = gj.function([m], m.sum(axis=1))
    assert "llvm.loop.interleave.count" not in rows.native.llvm_ir
    total = gj.function([x], x.sum()).native.llvm_ir
    assert '!"llvm.loop.interleave.count", i32 1' in total
    assert f'%"acc{FULL_REDUCTION_STREAMS - 1}"' in total and f'%"acc{FULL_REDUCTION_STREAMS}"' not in total


def test_scalar_groups_have_no_kernel():
    a, b = gt.dscalar("a"), gt.dscalar("b")
    f = gj.function([a, b], gt.exp(a) * b + 1.0)
    assert ".contig" not in f.native.llvm_ir and ".omp" not in f.native.llvm_ir
    np.testing.assert_allclose(f(0.5, 2.0), np.exp(0.5) * 2 + 1)
