"""DebugMode: each node's compiled result against its perform, undeclared in-place writes and aliases."""

from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile import DebugMode, DebugModeError, NanGuardError
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.nest import copy_array


class WrongLowering(Op):
    """perform doubles; lower (deliberately wrong) returns the input unchanged."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] * 2

    def lower(self, ctx, node, inputs):
        return [inputs[0]]


class NativeOverwrite(Op):
    """A copy whose compiled code also zeroes its input's first element (not declared in destroy_map)."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].copy()

    def lower(self, ctx, node, inputs):
        (x,) = inputs
        shape = ctx.shapes(x, 1)
        out = ctx.allocate(node, 0, shape)
        copy_array(ctx, x, out, "float64", shape)
        b = ctx.builder
        with b.if_then(b.icmp_signed(">", shape[0], I64(0))):
            b.store(ir.Constant(ir.DoubleType(), 0.0), ctx.element_ptr(x, [I64(0)]))
        return [out]


class PerformOverwrite(Op):
    """perform writes into its input (not declared in destroy_map)."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        inputs[0][...] = 0
        out[0][0] = inputs[0] + 1


class PerformAlias(Op):
    """perform returns its input itself (no view_map)."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0]


@pytest.mark.parametrize("mode", ["DebugMode", "DEBUG", DebugMode(), DebugMode(optimizer="fast_compile")])
def test_wrong_lowering_is_caught_at_its_node(mode):
    x = gt.dvector("x")
    y = WrongLowering()(gt.exp(x))
    f = gj.function([x], y + 1, mode=mode)
    with pytest.raises(DebugModeError, match="differs between the compiled code and its perform") as info:
        f(np.ones(3))
    # the line is the first frame outside graphjit: here the toy op's make_node, in this file
    assert "Apply node: WrongLowering(Elemwise{exp}.0)" in str(info.value)
    assert "Created at:" in str(info.value) and "test_debugmode.py" in str(info.value)


def test_native_write_into_an_undeclared_input():
    x = gt.dvector("x")
    f = gj.function([x], NativeOverwrite()(x * 3) + 1, mode=DebugMode())
    with pytest.raises(DebugModeError, match="NativeOverwrite overwrote its input .* when the compiled function ran it"):
        f(np.ones(3))


@pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")
@pytest.mark.parametrize("op, message", [(PerformOverwrite(), "PerformOverwrite overwrote its input"),
                                         (PerformAlias(), "shares memory with its input 0")])
def test_perform_checks(op, message):
    x = gt.dvector("x")
    f = gj.function([x], op(x * 2) * 3, mode=DebugMode())
    with pytest.raises(DebugModeError, match=message):
        f(np.ones(2))


class CopyLowered(Op):
    """A correct compiled copy; subclasses give it a wrong perform."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def lower(self, ctx, node, inputs):
        shape = ctx.shapes(inputs[0], 1)
        out = ctx.allocate(node, 0, shape)
        copy_array(ctx, inputs[0], out, "float64", shape)
        return [out]


class LoweredPerformOverwrite(CopyLowered):
    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].copy()
        inputs[0][...] = 7


class LoweredPerformAlias(CopyLowered):
    def perform(self, node, inputs, out):
        out[0][0] = inputs[0]


@pytest.mark.parametrize("op, message", [
    (LoweredPerformOverwrite(), "perform of LoweredPerformOverwrite overwrote its input 0"),
    (LoweredPerformAlias(), "output 0 of perform of LoweredPerformAlias shares memory with its input 0")])
def test_perform_checks_of_lowered_ops(op, message):
    x = gt.dvector("x")
    f = gj.function([x], op(x * 2) * 3, mode=DebugMode())
    assert not f.native.fallback_nodes
    with pytest.raises(DebugModeError, match=message):
        f(np.ones(2))


def test_check_py_code_off_keeps_the_inplace_check():
    x = gt.dvector("x")
    quiet = gj.function([x], WrongLowering()(x * 1) + 1, mode=DebugMode(check_py_code=False))
    with pytest.raises(DebugModeError, match="LLVM linker and the Python reference"):
        quiet(np.ones(2))                     # the end-to-end comparison still sees it
    f = gj.function([x], NativeOverwrite()(x * 3) + 1, mode=DebugMode(check_py_code=False))
    with pytest.raises(DebugModeError, match="overwrote"):
        f(np.ones(3))


def test_correct_graphs_pass_with_updates_and_reductions():
    rng = np.random.default_rng(0)
    x = gt.dmatrix("x")
    w = gj.shared(rng.normal(size=(4, 3)), name="w")
    b = gj.shared(np.zeros(3), name="b")
    h = gt.tanh(gt.dot(x, w) + b)
    cost = ((h - 1) ** 2).mean()
    gw, gb = gj.grad(cost, [w, b])
    train = gj.function([x], cost, updates=[(w, w - 0.1 * gw), (b, b - 0.1 * gb)], mode=DebugMode())
    ref = gj.function([x], cost, mode="PY")
    data = rng.normal(size=(5, 4))
    expected = ref(data)
    first = train(data)
    assert np.isclose(first, expected)
    assert train(data) < first                # the updates were applied


def test_check_isfinite():
    x = gt.dvector("x")
    f = gj.function([x], gt.log(x) + 1, mode=DebugMode(check_isfinite=True))
    with pytest.raises(NanGuardError):
        f(np.array([-1.0]))


def test_unknown_option():
    with pytest.raises(TypeError, match="bogus"):
        DebugMode(bogus=1)
    DebugMode(check_c_code=True, stability_patience=3)       # Theano's options without meaning here


def test_mode_theano_keywords():
    x = gt.dvector("x")
    for linker in ("vm", "cvm", "c", "c|py", "py"):
        for optimizer in (None, "None", "fast_run", "fast_compile", "merge", "default"):
            f = gj.function([x], gt.exp(x) + gt.exp(x), mode=gj.Mode(linker=linker, optimizer=optimizer))
            np.testing.assert_allclose(f(np.zeros(2)), [2.0, 2.0])
    merged = gj.function([x], gt.exp(x) + gt.exp(x), mode=gj.Mode(linker="py", optimizer="merge"))
    assert len(merged.maker.fgraph.apply_nodes) == 2
    unmerged = gj.function([x], gt.exp(x) + gt.exp(x), mode=gj.Mode(linker="py", optimizer=None))
    assert len(unmerged.maker.fgraph.apply_nodes) == 3
    with pytest.raises(ValueError, match="unknown optimizer"):
        gj.Mode(optimizer="o9000")
    with pytest.raises(TypeError, match="not both"):
        gj.Mode(rewriter="fast_run", optimizer="fast_run")
