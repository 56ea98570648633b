"""What keeps a large graph's entry small (its size is most of the compile time): shared glue functions,
array fields loaded once, loop hints on the kernels' short tails (docs/lowering.md, "Compile time")."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from llvmlite import ir

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.ir.context import GLUE_PREFIX, LowerContext, glue_function
from graphjit.tensor.elemwise_grad import sum_to_shape

RNG = np.random.default_rng(7)


def compile_fast(inputs: list, outputs: list) -> gj.Function:
    """A FAST_RUN function (its IR is checked below)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gj.function(inputs, outputs, mode="FAST_RUN")


def entry_text(f: gj.Function) -> str:
    """The native entry's definition in f's IR."""
    return re.search(r'define [^\n]*_entry"?\(.*?\n}\n', f.native.llvm_ir, re.S).group(0)


def definitions(f: gj.Function, name: str) -> int:
    """How many functions named name f's IR defines."""
    return len(re.findall(rf'define [^\n]*@"?{re.escape(name)}"?\(', f.native.llvm_ir))


def test_products_share_one_glue_function_per_dtype_triple() -> None:
    x, y, z = gt.matrix("x"), gt.matrix("y"), gt.matrix("z")
    i, j = gt.matrix("i", dtype="int64"), gt.matrix("j", dtype="int64")
    f = compile_fast([x, y, z, i, j], [gt.dot(x, y), gt.dot(y, z), gt.dot(i, j)])
    assert definitions(f, GLUE_PREFIX + "matprod.float64.float64.float64") == 1
    assert definitions(f, GLUE_PREFIX + "matprod.int64.int64.int64") == 1
    assert entry_text(f).count('@"glue.matprod.float64.float64.float64"(') == 2
    a, b, c = (RNG.standard_normal(s) for s in ((40, 30), (30, 50), (50, 20)))
    p, q = RNG.integers(-5, 5, (3, 4)), RNG.integers(-5, 5, (4, 2))
    got = f(a, b[:, ::-1], c, p, q)             # a negative-stride operand takes the native loop
    for g, want in zip(got, (a @ b[:, ::-1], b[:, ::-1] @ c, p @ q)):
        np.testing.assert_allclose(g, want, rtol=1e-12)


def test_sum_to_shape_reductions_share_one_glue_function() -> None:
    g, h, c, r = gt.matrix("g"), gt.matrix("h"), gt.col("c"), gt.row("r")
    f = compile_fast([g, h, c, r], [sum_to_shape(g, c), sum_to_shape(h, r), sum_to_shape(g * h, r)])
    assert definitions(f, GLUE_PREFIX + "sum_to_shape.float64.2") == 1
    a, b = RNG.standard_normal((5, 7)), RNG.standard_normal((5, 7))
    out = f(a, b[:, ::-1], np.zeros((5, 1)), np.zeros((1, 7)))
    np.testing.assert_allclose(out[0], a.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(out[1], b[:, ::-1].sum(axis=0, keepdims=True))
    np.testing.assert_allclose(out[2], (a * b[:, ::-1]).sum(axis=0, keepdims=True))


def test_input_fields_are_loaded_once_for_every_node() -> None:
    x, y = gt.matrix("x"), gt.matrix("y")
    outs = [(x + y).sum(axis=0), gt.exp(x * y).sum(axis=1), gt.dot(x, y.T), gt.tanh(x) - y]
    f = compile_fast([x, y], outs)
    entry = entry_text(f)
    # the entry's arguments: the runtime record %".1", then the inputs' structs: x is %".2"
    assert '* noalias %".2"' in entry.split("\n")[0]
    assert len(re.findall(r'\* %"\.2", i32 0, i32 5, i32 0\n', entry)) == 1     # x.shape[0]
    assert len(re.findall(r'\* %"\.2", i32 0, i32 6, i32 1\n', entry)) == 1     # x.strides[1]
    a, b = RNG.standard_normal((6, 9)), RNG.standard_normal((6, 9))
    for got, want in zip(f(a, b[::-1]), [(a + b[::-1]).sum(0), np.exp(a * b[::-1]).sum(1), a @ b[::-1].T,
                                         np.tanh(a) - b[::-1]]):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    for got, want in zip(f(a[:0], b[:0]), [np.zeros(9), np.zeros(0), np.zeros((0, 0)), np.zeros((0, 9))]):
        assert got.shape == want.shape


def test_glue_function_is_built_once_per_module() -> None:
    module = ir.Module()
    built = []
    fnty = ir.FunctionType(ir.VoidType(), [])

    def build(fn: ir.Function) -> None:
        built.append(fn)
        ir.IRBuilder(fn.append_basic_block("entry")).ret_void()

    first = glue_function(module, "thing", fnty, build)
    assert glue_function(module, "thing", fnty, build) is first
    assert len(built) == 1 and first.name == "glue.thing" and first.linkage == "internal"


def test_loop_hints_become_loop_metadata() -> None:
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.IntType(64)]), "f")
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    with ctx.for_range(fn.args[0], name="a", unroll=False, vectorize=False):
        pass
    with ctx.for_range(fn.args[0], name="b", interleave=2):
        pass
    with ctx.for_range(fn.args[0], name="c"):
        pass
    ctx.builder.ret_void()
    text = str(module)
    assert '!"llvm.loop.unroll.disable"' in text and '!"llvm.loop.vectorize.enable", i1 0' in text
    assert '!"llvm.loop.interleave.count", i32 2' in text
    assert text.count('!llvm.loop') == 2


def test_softmax_rows_keep_numpy_values_on_every_layout() -> None:
    x = gt.matrix("x")
    f = compile_fast([x], [gt.special.softmax(x, axis=1), gt.special.logsumexp(x, axis=1)])
    for a in (RNG.standard_normal((5, 131)), RNG.standard_normal((131, 5)).T, RNG.standard_normal((4, 3))[:, ::-1]):
        e = np.exp(a - a.max(axis=1, keepdims=True))
        sm, lse = f(a)
        np.testing.assert_allclose(sm, e / e.sum(axis=1, keepdims=True), rtol=1e-13)
        np.testing.assert_allclose(lse, np.log(e.sum(axis=1)) + a.max(axis=1), rtol=1e-13)


def test_buffers_the_entry_allocated_take_no_layout_checks() -> None:
    """A reduction, a row softmax or a reshape of a product (a fresh C-contiguous buffer) has no strided path;
    the same ops on an input keep theirs, and both are right on every input layout."""
    x, w = gt.matrix("x"), gt.matrix("w")
    y = gt.dot(x, w)
    ops = lambda v: [v.max(axis=1), v.sum(axis=0), gt.special.softmax(v, axis=1),  # noqa: E731
                     gt.special.logsumexp(v, axis=1), v.reshape((-1,)) * 2.0]
    on_product, on_input = compile_fast([x, w], ops(y)), compile_fast([x, w], ops(x) + [y])
    strided_parts = ('"init.cond"', '"s1.cond"', "_strided", "copy")     # general loops, row copies
    product_text, input_text = on_product.native.llvm_ir, on_input.native.llvm_ir
    assert not [p for p in strided_parts if p in product_text]
    assert [p for p in strided_parts if p in input_text] == list(strided_parts)
    a, b = RNG.standard_normal((6, 9)), RNG.standard_normal((9, 5))

    def want(v: np.ndarray) -> list:
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return [v.max(axis=1), v.sum(axis=0), e / e.sum(axis=1, keepdims=True),
                np.log(e.sum(axis=1)) + v.max(axis=1), v.reshape(-1) * 2.0]

    for xa in (a, a[:, ::-1], np.asfortranarray(a)):
        for got, expected in zip(on_product(xa, b), want(xa @ b)):
            np.testing.assert_allclose(got, expected, rtol=1e-12)
        for got, expected in zip(on_input(xa, b), want(xa) + [xa @ b]):
            np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_kernels_that_cannot_fail_have_no_status_check() -> None:
    x, y = gt.vector("x", dtype="int64"), gt.vector("y", dtype="int64")
    safe, failing = compile_fast([x, y], [x * y + 1, (x - y).sum()]), compile_fast([x, y], [x ** y + 1])

    def status_uses(f: gj.Function) -> int:
        text = entry_text(f)
        calls = re.findall(r'(%"[^"]+") = call i32 @"[^"]*k\.node\d+\.loop\.(?:contig|reduce)"', text)
        return sum(text.count(status) - 1 for status in calls)

    assert status_uses(safe) == 0 and status_uses(failing) > 0 and "loop.reduce" in entry_text(safe)
    np.testing.assert_array_equal(failing(np.array([2, 3]), np.array([3, 2]))[0], [9, 10])
    np.testing.assert_array_equal(safe(np.array([2, 3]), np.array([3, 2]))[0], [7, 7])
    with pytest.raises(ValueError, match="negative integer powers"):
        failing(np.array([2, 3]), np.array([3, -2]))


def test_argument_checks_are_one_helper_per_argument_kind() -> None:
    x, y, z = gt.matrix("x"), gt.matrix("y"), gt.row("z")
    f = compile_fast([x, y, z], [x * y + z])
    text = f.native.llvm_ir
    assert definitions(f, GLUE_PREFIX + "unbox.float64.2._x_") == 1          # x and y
    assert definitions(f, GLUE_PREFIX + "unbox.float64.2.1x_") == 1          # the row z
    wrapper = re.search(r'define [^\n]*_pywrap"?\(.*?\n}\n', text, re.S).group(0)
    assert wrapper.count('@"glue.unbox.float64.2._x_"(') == 2
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    np.testing.assert_allclose(f(a, b[:, ::-1], np.ones((1, 4)))[0], a * b[:, ::-1] + 1)
    with pytest.raises(TypeError):
        f(a, b.astype(np.complex128), np.ones((1, 4)))           # another dtype, no safe cast
    with pytest.raises((TypeError, ValueError)):
        f(a, b, np.ones((2, 4)))                                   # a broadcastable length that is not 1
