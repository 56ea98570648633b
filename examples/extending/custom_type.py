"""Adding a Type with its layout: the seeds' ``double`` Type, given a layout registered for its class.

A layout says how values of a Type cross the native entry of a compiled function.  What the LLVM backend
supports today: an array struct (TensorType and its subclasses) or a ``PyObject*`` checked by the Type's
``filter`` in Python (every other Type).  ``double`` values are Python floats, so its layout is an
ObjectLayout; ops on doubles without a lowering run their ``perform``, called back from the compiled code.
The layout's version goes into the cache key: bump it when the layout changes.

Run: python examples/extending/custom_type.py
"""

import pathlib
import sys

import graphjit as gj
from graphjit.link.llvm.cpython.boxing import ObjectLayout, type_layout
from graphjit.link.llvm.registry import layouts

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))   # examples/, for double_type.py
from double_type import Double, add, div, double, mul, sub  # noqa: E402


@layouts.register(Double, version=(1,))
class DoubleLayout(ObjectLayout):
    """A double crosses the native entry as the Python float itself (filtered by Double.filter)."""


def main() -> None:
    x, y = double("x"), double("y")
    f = gj.function([x, y], div(add(x, 2), sub(y, 0.5)))
    print("layout of double:", type(type_layout(double)).__name__, type_layout(double).arg_spec().kind)
    print("(x + 2) / (y - 0.5) at (3.4, 1.5) =", f(3.4, 1.5))
    print("ops on doubles run their perform:", [str(n.op) for n in f.native.fallback_nodes])
    try:
        f(3.4, "1.5")
    except TypeError as e:
        print("the Type filters every argument:", type(e).__name__)
    print("mul(x, y) at (5, 6) =", gj.function([x, y], mul(x, y))(5, 6))


if __name__ == "__main__":
    main()
