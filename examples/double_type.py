"""The seeds' `double` Type and arithmetic Ops (Theano's "Making arithmetic Ops on double"), on graphjit.

Run: python examples/double_type.py
"""

import numpy as np

import graphjit
from graphjit.graph.basic import Apply, Constant
from graphjit.graph.op import Op
from graphjit.graph.type import Type


class Double(Type):
    """A Python float."""

    def filter(self, x, strict=False, allow_downcast=None):
        if strict:
            if isinstance(x, float):
                return x
            raise TypeError("Expected a float!")
        if allow_downcast:
            return float(x)
        # Keep the conversion only if it is exact (ints are fine, 0.1 as float32 is not).
        x_float = float(x)
        if x_float == x:
            return x_float
        raise TypeError(f"The double type cannot accurately represent value {x} "
                        f"(of type {type(x)}): you must explicitly allow downcasting if you want this.")

    def values_eq_approx(self, x, y, tolerance=1e-4):
        return abs(x - y) / (abs(x) + abs(y)) < tolerance

    def __str__(self):
        return "double"

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(Double)


double = Double()


class BinaryDoubleOp(Op):
    """A binary operation on doubles, parametrised by its name and Python function."""

    __props__ = ("name", "fn")

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn

    def make_node(self, x, y):
        if isinstance(x, (int, float)):
            x = Constant(double, x)
        if isinstance(y, (int, float)):
            y = Constant(double, y)
        if x.type != double or y.type != double:
            raise TypeError(f"{self.name} only works on doubles")
        return Apply(self, [x, y], [double()])

    def perform(self, node, inp, out):
        x, y = inp
        z, = out
        z[0] = self.fn(x, y)

    def __str__(self):
        return self.name


add = BinaryDoubleOp(name="add", fn=lambda x, y: x + y)
sub = BinaryDoubleOp(name="sub", fn=lambda x, y: x - y)
mul = BinaryDoubleOp(name="mul", fn=lambda x, y: x * y)
div = BinaryDoubleOp(name="div", fn=lambda x, y: x / y)


def main():
    x, y = double("x"), double("y")
    z = mul(x, y)
    f = graphjit.function([x, y], z)
    print("f(5, 6) =", f(5, 6))
    print("f(5.6, 6.7) =", f(5.6, 6.7))
    g = graphjit.function([x], div(add(x, 2), sub(x, 0.5)))
    print("(x + 2) / (x - 0.5) at 3.4 =", g(3.4))
    assert np.allclose(graphjit.function([x], mul(x, 2))(3.4), 6.8)
    graphjit.dprint(g)


if __name__ == "__main__":
    main()
