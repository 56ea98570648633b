"""Type: filter, validity, values_eq, filter_variable/convert_variable; Generic, Singleton, Null."""

import numpy as np
import pytest

from graphjit.graph.basic import Constant, Variable
from graphjit.graph.type import Generic, NullType, SingletonType, Type, generic
from graphjit.graph.utils import MethodNotDefined
from toy_ops import DoubleType, double


class BoxedDouble(SingletonType):
    """A Type that accepts double variables by conversion (convert_variable)."""

    def filter(self, data, strict=False, allow_downcast=None):
        return float(data)

    def convert_variable(self, var):
        if var.type == double:
            return Variable(self, name=var.name)
        return None


def test_double_filter_strict_downcast_and_exact():
    assert double.filter(2.5) == 2.5
    assert double.filter(3) == 3.0 and type(double.filter(3)) is float
    with pytest.raises(TypeError, match="float"):
        double.filter(3, strict=True)
    assert double.filter(3.0, strict=True) == 3.0
    with pytest.raises(TypeError, match="exactly"):
        double.filter(2 ** 60 + 1)
    assert double.filter("2.5", allow_downcast=True) == 2.5


def test_is_valid_value_and_validity_message():
    assert double.is_valid_value(1.0) and not double.is_valid_value(1)
    assert double.value_validity_msg(1.0) == "value is valid"
    assert "float" in double.value_validity_msg("a")


def test_values_eq():
    assert double.values_eq(1.0, 1.0) and not double.values_eq(1.0, 1.0 + 1e-9)
    assert double.values_eq_approx(1.0, 1.0 + 1e-9)
    assert generic.values_eq(np.arange(3), np.arange(3))
    assert not generic.values_eq(np.arange(3), np.arange(1, 4))
    assert generic.values_eq("a", "a")


def test_filter_variable_and_convert_variable():
    x = double("x")
    assert double.filter_variable(x) is x
    c = double.filter_variable(2.0)
    assert isinstance(c, Constant) and c.data == 2.0
    with pytest.raises(TypeError, match="cannot convert"):
        double.filter_variable(generic("g"))
    boxed = BoxedDouble()
    converted = boxed.filter_variable(x)
    assert converted.type == boxed and converted.name == "x"
    with pytest.raises(TypeError):
        boxed.filter_variable(x, allow_convert=False)
    assert double.convert_variable(generic("g")) is None


def test_variable_factories_and_defaults():
    v = double("v")
    assert v.type is double and v.name == "v" and double.make_variable().name is None
    k = double.make_constant(1.5, name="k")
    assert isinstance(k, Constant) and k.name == "k"
    assert double.clone() is double
    with pytest.raises(MethodNotDefined):
        double.clone(dtype="x")
    assert double.in_same_class(DoubleType()) and double.is_super(DoubleType())
    a = [1]
    assert double.may_share_memory(a, a) and not double.may_share_memory(a, [1])
    assert double.llvm_version() == () and double.get_shape_info(3.0) == 3.0
    with pytest.raises(MethodNotDefined):
        Type().filter(1)


def test_generic_and_singletons():
    obj = object()
    assert generic.filter(obj) is obj and generic.is_valid_value(None)
    assert Generic() == generic and hash(Generic()) == hash(generic) and str(generic) == "generic"
    assert BoxedDouble() == BoxedDouble() and str(BoxedDouble()) == "BoxedDouble"
    assert BoxedDouble() != generic


def test_null_type_refuses_values():
    null = NullType("grad undefined")
    with pytest.raises(ValueError, match="grad undefined"):
        null.filter(1)
    with pytest.raises(ValueError):
        null.filter_variable(double("x"))
    assert NullType() == null and str(null) == "NullType" and hash(NullType()) == hash(null)
