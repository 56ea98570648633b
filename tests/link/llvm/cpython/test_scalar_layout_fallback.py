"""A user's Type whose registered layout asks to cross the native entry as a native scalar (ArgSpec.scalar):
refused with a TypeError naming the layout and the variable (the entry knows array structs and PyObject*s
only; this used to read the double as a pointer and crash)."""

import warnings

import numpy as np
import pytest

import graphjit as gj
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.graph.type import Type
from graphjit.link.llvm.cpython.boxing import TypeLayout, scalar_layout
from graphjit.link.llvm.cpython.argspec import ArgSpec
from graphjit.link.llvm.registry import layouts


class NativeFloat(Type):
    """A Python float that crosses the native entry as an IEEE double."""

    def filter(self, data, strict=False, allow_downcast=None):
        if isinstance(data, bool) or not isinstance(data, (int, float, np.floating, np.integer)):
            raise TypeError(f"expected a real number, got {type(data).__name__}")
        return float(data)

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


class NativeFloatLayout(TypeLayout):
    """The native double itself."""

    def arg_spec(self) -> ArgSpec:
        return ArgSpec.scalar("float64")

    def layout(self, ctx=None):
        return scalar_layout("float64")


class AddHalf(Op):
    """x + 0.5 on NativeFloat, perform only (the LLVM linker calls it back)."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [NativeFloat()()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] + 0.5


@pytest.fixture
def registered():
    layouts.register(NativeFloat, version=(1,))(NativeFloatLayout)
    try:
        yield
    finally:
        layouts.unregister(NativeFloat)


def test_py_mode_runs_perform(registered):
    x = NativeFloat()("x")
    f = gj.function([x], AddHalf()(AddHalf()(x)), mode="PY")
    assert f(1.25) == 2.25


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_native_scalar_layout_is_refused_by_name(registered, mode):
    x = NativeFloat()("x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match="NativeFloatLayout.*crosses the native entry as 'scalar'"):
            gj.function([x], AddHalf()(AddHalf()(x)), mode=mode)
