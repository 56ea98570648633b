"""pprint / pp: a graph as a formula, as Theano's pretty printer writes it (``(x + y)``, ``exp((-x))``).

A PPrinter holds printers keyed by op, op class or predicate (the most recently assigned wins). The module's
``pprint`` (also ``pp``) knows graphjit's common ops; ``pprint.assign(...)`` teaches it a new one.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from graphjit.graph.basic import Constant, Variable
from graphjit.graph.op import Op

Printer = Callable[[Variable, "PPrinter", int], str]
LOWEST = -1000          # the precedence around a whole formula (or a function argument)


class OperatorPrinter:
    """Prints a node as ``a op b`` (or ``op a`` for one input).

    Parenthesised when the surrounding operator binds tighter (precedence), or always with parens=True
    (Theano's style: every operator expression in parentheses, ``(x + y)``).
    """

    def __init__(self, symbol: str, precedence: int, assoc: str = "left", parens: bool = False):
        if assoc not in ("left", "right", "either"):
            raise ValueError(f"assoc must be 'left', 'right' or 'either', got {assoc!r}")
        self.symbol, self.precedence, self.assoc, self.parens = symbol, precedence, assoc, parens

    def __call__(self, var: Variable, pp: "PPrinter", outer: int) -> str:
        """The formula of var, in parentheses when outer binds tighter."""
        return self.render(var.owner.inputs, pp, outer)

    def render(self, inputs: Sequence[Variable], pp: "PPrinter", outer: int) -> str:
        """The operator applied to inputs, in parentheses when outer binds tighter."""
        if len(inputs) == 1:
            text = f"{self.symbol}{pp.format(inputs[0], self.precedence + 1)}"
        else:
            parts = []
            for i, inp in enumerate(inputs):
                tighter = ((self.assoc == "left" and i > 0)
                           or (self.assoc == "right" and i < len(inputs) - 1))
                parts.append(pp.format(inp, self.precedence + (1 if tighter else 0)))
            text = f" {self.symbol} ".join(parts)
        return f"({text})" if self.parens or self.precedence < outer else text


class FunctionPrinter:
    """Prints a node as ``name(a, b)``, with optional keyword text from the op (``axis=0``)."""

    def __init__(self, name: str, keywords: Optional[Callable[[Op], str]] = None):
        self.name, self.keywords = name, keywords

    def __call__(self, var: Variable, pp: "PPrinter", outer: int) -> str:
        """``name(inputs..., keywords)``."""
        args = [pp.format(i, LOWEST) for i in var.owner.inputs]
        extra = self.keywords(var.owner.op) if self.keywords is not None else ""
        if extra:
            args.append(extra)
        return f"{self.name}({', '.join(args)})"


class PPrinter:
    """pprint(var): a formula of the graph, using printers registered per op (or op class, or predicate)."""

    def __init__(self) -> None:
        self._printers: List[Tuple[Any, Printer]] = []

    def assign(self, condition: Union[Op, type, Callable[[Variable], bool]], printer: Printer
               ) -> None:
        """Use printer for nodes whose op equals condition, is an instance of it, or satisfies it."""
        self._printers.insert(0, (condition, printer))

    def clone(self) -> "PPrinter":
        """A PPrinter with the same printers (assigning to it leaves this one alone)."""
        cp = PPrinter()
        cp._printers = list(self._printers)
        return cp

    def _printer_for(self, var: Variable) -> Optional[Printer]:
        op = var.owner.op
        for condition, printer in self._printers:
            if isinstance(condition, Op):
                if condition == op:
                    return printer
            elif isinstance(condition, type):
                if isinstance(op, condition):
                    return printer
            elif condition(var):
                return printer
        return None

    def format(self, var: Variable, outer: int = LOWEST) -> str:
        """The formula of var where the surrounding operator has precedence outer."""
        if isinstance(var, Constant):
            return var.name or constant_text(var.data)
        if var.owner is None:
            return str(var)
        printer = self._printer_for(var)
        if printer is not None:
            return printer(var, self, outer)
        node = var.owner
        args = ", ".join(self.format(i) for i in node.inputs)
        index = f"[{var.index}]" if len(node.outputs) > 1 else ""
        return f"{node.op}({args}){index}"

    def __call__(self, obj: Union[Variable, Sequence[Variable]]) -> str:
        """The formula of a Variable (one line per Variable for a list; a Function: its outputs)."""
        if isinstance(obj, Variable):
            return self.format(obj)
        fgraph = getattr(getattr(obj, "maker", None), "fgraph", obj)
        outputs = getattr(fgraph, "outputs", None)
        return "\n".join(self.format(v) for v in (outputs if outputs is not None else obj))


def constant_text(data: Any) -> str:
    """A constant's value as short text: a scalar (or an array of one element) as the number itself."""
    arr = np.asarray(data) if isinstance(data, (np.ndarray, np.generic, int, float, bool)) else None
    if arr is None:
        return str(data)
    if arr.size == 1:
        return repr(arr.reshape(()).item())
    text = np.array2string(arr, separator=", ", threshold=6)
    return text if len(text) <= 40 else f"array({arr.dtype}, shape={arr.shape})"


pprint = PPrinter()
"""The default pretty printer: ``pprint(var)`` is var as a formula (graphjit's ops: printing/math_printers.py)."""
pp = pprint
"""Theano's short name of pprint (the same object)."""
