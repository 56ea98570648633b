"""Shared variables: value semantics (borrow), containers, the constructor registry."""

import numpy as np
import pytest

import graphjit as gj
from graphjit.compile.sharedvalue import (SharedVariable, SHARED_CONSTRUCTORS, generic_constructor,
                                          shared_constructor)
from graphjit.graph.type import generic
from toy_ops import add, double, dshared

# The toy ops (tests/toy_ops.py) have only a Python perform: under the LLVM linker their FallbackWarning
# is expected (it is emitted once per op per process, so whichever test compiles one first sees it).
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


def test_generic_shared_copies_unless_borrowed():
    data = [1, 2]
    s = gj.shared(data, name="s")
    assert isinstance(s, SharedVariable) and s.type == generic and s.name == "s"
    assert s.get_value() == data and s.get_value() is not data
    assert s.get_value(borrow=True) is not data  # shared() copied the value
    b = gj.shared(data, borrow=True)
    assert b.get_value(borrow=True) is data
    assert b.get_value() is not data


def test_set_value_copies_unless_borrowed():
    s = gj.shared([0])
    new = [5]
    s.set_value(new)
    new.append(6)
    assert s.get_value() == [5]
    s.set_value(new, borrow=True)
    assert s.get_value(borrow=True) is new
    s.value = [7]
    assert s.value == [7]


def test_set_value_filters_through_the_type():
    w = dshared(1.0, "w")
    w.set_value(3)
    assert w.get_value() == 3.0 and type(w.get_value()) is float
    with pytest.raises(TypeError) as info:
        w.set_value("abc")
    assert "'w'" in str(info.value) and w.trace in str(info.value)
    strict = dshared(1.0, "strict", strict=True)
    with pytest.raises(TypeError, match="strict"):
        strict.set_value(2)
    down = dshared(1.0, "down", allow_downcast=True)
    down.set_value("2.5")
    assert down.get_value() == 2.5


def test_shared_of_a_variable_is_refused():
    with pytest.raises(TypeError, match="not a symbolic Variable"):
        gj.shared(double("x"))


def test_clone_shares_the_container():
    w = dshared(1.0, "w")
    w.default_update = add(w, 1.0)
    c = w.clone()
    assert c is not w and c.container is w.container and c.name == "w"
    assert c.default_update is w.default_update and c.trace == w.trace
    c.set_value(4.0)
    assert w.get_value() == 4.0


def test_trace_is_the_users_line():
    s = gj.shared(3.5)
    assert __file__ in s.trace


def test_constructor_registry_newest_first_with_fallthrough():
    calls = []

    def floats_only(value, name=None, strict=False, allow_downcast=None, borrow=False):
        calls.append(value)
        if not isinstance(value, float):
            raise TypeError("floats only")
        return SharedVariable(double, value, strict=strict, allow_downcast=allow_downcast,
                              name=name)

    shared_constructor(floats_only)
    try:
        s = gj.shared(2.5, name="f")
        assert s.type == double and s.name == "f"
        g = gj.shared("text")
        assert g.type == generic and calls == [2.5, "text"]
    finally:
        shared_constructor(floats_only, remove=True)
    assert floats_only not in SHARED_CONSTRUCTORS


def test_unknown_keyword_arguments_are_refused_by_every_constructor():
    with pytest.raises(TypeError, match="no shared constructor accepts"):
        gj.shared([1], colour="red")


def test_generic_constructor_directly():
    arr = np.arange(3)
    s = generic_constructor(arr, name="a")
    assert s.get_value() is not arr and np.array_equal(s.get_value(), arr)


def test_shared_in_a_function_sees_set_value():
    s = gj.shared([1, 2, 3])
    from toy_ops import length
    f = gj.function([], length(s))
    assert f() == 3.0
    s.set_value([1])
    assert f() == 1.0
