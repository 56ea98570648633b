"""Print: an op returning its input unchanged that prints it (or some of its attributes) whenever it runs."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable

PrintFn = Callable[["Print", Any], None]


def default_print(op: "Print", value: Any) -> None:
    """Print ``<message> <attr> = <value>`` for each attribute of op (a method is called: ``sum`` -> x.sum())."""
    for attr in op.attrs:
        found = getattr(value, attr)
        shown = found() if callable(found) else found
        print(op.message, attr, "=", shown, flush=True)


class Print(Op):
    """``Print(message, attrs=("__str__",))(x)`` is x; each time it is computed, for each name in attrs it prints
    ``message name = value`` (an attribute of the value, called if it is a method: ``"shape"``, ``"sum"``,
    ``"min"``, ``"__str__"``...).

    It prints under every linker: PY runs its perform; the LLVM linker calls back into it from the compiled
    function (``link/llvm/ops/debug.py``), with the GIL held, through Python's ``print`` (so pytest's capsys and
    capfd capture it).  The value it returns is its input (a view of it), so it changes nothing it is put into,
    gradients included: the gradient passes through and does not print.  It is never constant-folded; two
    Prints with the same message and attrs of the same variable are merged into one, like any equal nodes.
    ``global_fn(op, value)`` replaces the printing (a callback of your own).  A Print whose result is not used
    by an output is not part of the compiled graph: use its result.
    """

    __props__ = ("message", "attrs", "global_fn")
    view_map = {0: [0]}

    def __init__(self, message: str = "", attrs: Union[str, Sequence[str]] = ("__str__",),
                 global_fn: Optional[PrintFn] = None) -> None:
        if not isinstance(message, str):
            raise TypeError(f"Print: message must be a string, got {type(message).__name__}")
        attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        if not all(isinstance(a, str) for a in attrs):
            raise TypeError(f"Print: attrs must be attribute names (strings), got {attrs!r}")
        if global_fn is not None and not callable(global_fn):
            raise TypeError(f"Print: global_fn must be callable, got {global_fn!r}")
        self.message = message
        self.attrs: Tuple[str, ...] = attrs
        self.global_fn = global_fn if global_fn is not None else default_print

    def __str__(self) -> str:
        return f"Print{{{self.message!r}}}"

    def make_node(self, x: Any) -> Apply:
        """One tensor in, the same tensor (type and all) out."""
        x = as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: List[List[Any]]) -> None:
        """Print, then return the input itself (a view: view_map)."""
        self.global_fn(self, inputs[0])
        output_storage[0][0] = inputs[0]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        """The input's shape."""
        return [shapes[0]]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable], grads: Sequence[Variable]) -> list:
        """The gradient passes through unprinted."""
        return [grads[0]]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Optional[Variable]]) -> list:
        """The tangent passes through unprinted."""
        return [eval_points[0]]

    def do_constant_folding(self, fgraph: Any, node: Apply) -> bool:
        """Never folded: it must print at run time."""
        return False
