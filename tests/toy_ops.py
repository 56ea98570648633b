"""Test-only Types and Ops that need no tensor layer: the seeds' `double` and a few generic ops."""

from __future__ import annotations

import operator
from typing import Any, Callable, List, Optional

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.op import Op
from graphjit.graph.type import Generic, Type, generic


class DoubleType(Type):
    """Python floats; ints convert only when exact unless downcasting is allowed."""

    def filter(self, data: Any, strict: bool = False, allow_downcast: Optional[bool] = None) -> float:
        if strict:
            if type(data) is float:
                return data
            raise TypeError(f"expected a float, got {type(data).__name__}")
        if allow_downcast:
            return float(data)
        try:
            as_float = float(data)
        except (TypeError, ValueError):
            raise TypeError(f"cannot convert {data!r} to double") from None
        if as_float != data:
            raise TypeError(f"double cannot represent {data!r} exactly; allow downcasting")
        return as_float

    def values_eq_approx(self, a: float, b: float, tolerance: float = 1e-4) -> bool:
        return abs(a - b) / (abs(a) + abs(b) + 1e-300) < tolerance

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(DoubleType)

    def __str__(self) -> str:
        return "double"

    __repr__ = __str__


double = DoubleType()


def as_double(x: Any) -> Variable:
    """x itself if a Variable, else a double Constant."""
    return x if isinstance(x, Variable) else Constant(double, x)


class BinaryDoubleOp(Op):
    """A binary op on doubles computed by a Python function."""

    __props__ = ("name", "fn")

    def __init__(self, name: str, fn: Callable[[float, float], float]):
        self.name = name
        self.fn = fn

    def make_node(self, x: Any, y: Any) -> Apply:
        x, y = as_double(x), as_double(y)
        if x.type != double or y.type != double:
            raise TypeError(f"{self.name} only works on doubles")
        return Apply(self, [x, y], [double()])

    def perform(self, node: Apply, inputs: List[Any], output_storage: List[List[Any]]) -> None:
        x, y = inputs
        output_storage[0][0] = self.fn(x, y)

    def __str__(self) -> str:
        return self.name


add = BinaryDoubleOp("add", operator.add)
sub = BinaryDoubleOp("sub", operator.sub)
mul = BinaryDoubleOp("mul", operator.mul)
div = BinaryDoubleOp("div", operator.truediv)


class DivMod(Op):
    """Two outputs: quotient and remainder."""

    __props__ = ()

    def make_node(self, x: Any, y: Any) -> Apply:
        return Apply(self, [as_double(x), as_double(y)], [double(), double()])

    def perform(self, node, inputs, output_storage) -> None:
        q, r = divmod(*inputs)
        output_storage[0][0], output_storage[1][0] = float(q), float(r)


divmod_op = DivMod()


class Append(Op):
    """Generic list op: a new list with an item appended (inplace=True appends to the input)."""

    __props__ = ("inplace",)

    def __init__(self, inplace: bool = False):
        self.inplace = inplace
        self.destroy_map = {0: [0]} if inplace else {}

    def make_node(self, lst: Variable, item: Any) -> Apply:
        item = item if isinstance(item, Variable) else Constant(generic, item)
        return Apply(self, [lst, item], [generic()])

    def perform(self, node, inputs, output_storage) -> None:
        lst, item = inputs
        if self.inplace:
            lst.append(item)
            output_storage[0][0] = lst
        else:
            output_storage[0][0] = list(lst) + [item]


append = Append()
append_inplace = Append(inplace=True)


class ViewOf(Op):
    """Returns its (generic) input itself: a view."""

    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, x: Variable) -> Apply:
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage) -> None:
        output_storage[0][0] = inputs[0]


view_of = ViewOf()


class Length(Op):
    """len() of a generic value, as a double."""

    __props__ = ()

    def make_node(self, x: Variable) -> Apply:
        if not isinstance(x.type, Generic):
            raise TypeError("Length needs a generic input")
        return Apply(self, [x], [double()])

    def perform(self, node, inputs, output_storage) -> None:
        output_storage[0][0] = float(len(inputs[0]))


length = Length()


class Fail(Op):
    """Raises the given exception type when run."""

    __props__ = ("exc_type",)

    def __init__(self, exc_type: type = ValueError):
        self.exc_type = exc_type

    def make_node(self, x: Variable) -> Apply:
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage) -> None:
        raise self.exc_type("boom")


def dshared(value: float, name: Optional[str] = None, **kwargs: Any):
    """A shared variable of type double (built directly, whatever shared() constructors exist)."""
    from graphjit.compile.sharedvalue import SharedVariable
    return SharedVariable(double, value, name=name, **kwargs)
