"""Graph printing: debugprint (an indented tree, one line per node) and pprint (infix formulas)."""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple, Union

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.op import Op
from graphjit.tensor.print_op import Print  # noqa: F401 - graphjit.printing.Print, as Theano's


def _char_id(n: int) -> str:
    """0 -> 'A', 25 -> 'Z', 26 -> 'BA' (base 26 written with letters)."""
    text = ""
    while True:
        text = chr(ord("A") + n % 26) + text
        n //= 26
        if n == 0:
            return text


def _roots(obj: Any) -> Tuple[List[Variable], Optional[FunctionGraph], Optional[Dict]]:
    """The Variables to print, the FunctionGraph (for toposort indices) and a storage map."""
    maker = getattr(obj, "maker", None)
    if maker is not None and isinstance(getattr(maker, "fgraph", None), FunctionGraph):
        return list(maker.fgraph.outputs), maker.fgraph, getattr(obj.fn, "storage_map", None)
    if isinstance(obj, FunctionGraph):
        return list(obj.outputs), obj, None
    if isinstance(obj, Variable):
        return [obj], None, None
    if isinstance(obj, Apply):
        return list(obj.outputs), None, None
    if isinstance(obj, (list, tuple)):
        roots: List[Variable] = []
        for item in obj:
            roots.extend(_roots(item)[0])
        return roots, None, None
    raise TypeError(f"debugprint cannot print {type(obj).__name__} {obj!r}")


class _TreePrinter:
    """Walks the graph depth-first (without recursion) and formats one line per Variable."""

    def __init__(self, ids: str, print_type: bool, stop_on_name: bool, depth: int,
                 done: Dict[Any, str], topo: Dict[Apply, int], storage_map: Optional[Dict],
                 fallback: Sequence[Apply] = ()):
        if ids not in ("CHAR", "id", "int", ""):
            raise ValueError(f"ids must be 'CHAR', 'id', 'int' or '', got {ids!r}")
        self.ids, self.print_type, self.stop_on_name = ids, print_type, stop_on_name
        self.depth, self.done, self.topo, self.storage_map = depth, done, topo, storage_map
        self.fallback = set(fallback)
        self.lines: List[str] = []

    def _id(self, key: Any) -> str:
        if self.ids == "":
            return ""
        if key not in self.done:
            n = len(self.done)
            self.done[key] = {"CHAR": _char_id(n), "id": str(id(key)), "int": str(n)}[self.ids]
        return f" [@{self.done[key]}]"

    def _line(self, var: Variable) -> str:
        node = var.owner
        type_text = f" <{var.type}>" if self.print_type else ""
        storage = ""
        if self.storage_map is not None and var in self.storage_map:
            storage = f" -> {self.storage_map[var][0]!r}"
        if node is None:
            return f"{var}{self._id(var)}{type_text}{storage}"
        op_text = str(node.op) if len(node.outputs) == 1 else f"{node.op}.{var.index}"
        topo = f"   {self.topo[node]}" if node in self.topo else ""
        mark = " (python perform)" if node in self.fallback else ""
        return f"{op_text}{self._id(node)}{type_text} '{var.name or ''}'{topo}{mark}{storage}"

    def run(self, roots: Sequence[Variable]) -> List[str]:
        """The lines of the trees of roots, in order."""
        stack: List[Tuple[Variable, str, str, int]] = [(r, "", "", 0) for r in reversed(roots)]
        while stack:
            var, prefix, child_prefix, level = stack.pop()
            key = var.owner if var.owner is not None else var
            seen = key in self.done
            self.lines.append(prefix + self._line(var))
            node = var.owner
            if node is None or seen or (self.depth >= 0 and level >= self.depth):
                continue
            if self.stop_on_name and var.name is not None and level > 0:
                continue
            n = len(node.inputs)
            for i in reversed(range(n)):
                last = i == n - 1
                stack.append((node.inputs[i], child_prefix + " |",
                              child_prefix + ("  " if last else " |"), level + 1))
        return self.lines


def debugprint(obj: Any, file: Union[None, str, TextIO] = None, print_type: bool = False,
               ids: str = "CHAR", stop_on_name: bool = False, done: Optional[Dict[Any, str]] = None,
               print_storage: bool = False, depth: int = -1, mark_fallback: bool = False) -> Any:
    """Print a graph as an indented tree: op, [@id], 'name', and the toposort index when compiled.

    obj is a Variable, a list of them, an Apply, a FunctionGraph or a compiled Function. A node
    reached a second time is printed on one line, without its inputs again. With file="str" the
    text is returned; otherwise it is written to file (stdout by default) and file is returned.
    With mark_fallback, the nodes of a Function compiled by the LLVM linker that run their Python
    perform (no lower) end with "(python perform)".
    """
    roots, fgraph, storage_map = _roots(obj)
    native = getattr(obj, "native", None) if mark_fallback and getattr(obj, "maker", None) is not None else None
    topo = {node: i for i, node in enumerate(fgraph.toposort())} if fgraph is not None else {}
    printer = _TreePrinter(ids, print_type, stop_on_name, depth, {} if done is None else done,
                           topo, storage_map if print_storage else None,
                           getattr(native, "fallback_nodes", ()))
    text = "".join(line + "\n" for line in printer.run(roots))
    if file == "str":
        return text
    out = sys.stdout if file is None else file
    out.write(text)
    return out


dprint = debugprint


# --- pprint: infix formulas ------------------------------------------------------------------

Printer = Callable[[Variable, "PPrinter", int], str]


class OperatorPrinter:
    """Prints a node as ``a op b`` (or ``op a`` for one input), parenthesised by precedence."""

    def __init__(self, symbol: str, precedence: int, assoc: str = "left"):
        if assoc not in ("left", "right", "either"):
            raise ValueError(f"assoc must be 'left', 'right' or 'either', got {assoc!r}")
        self.symbol, self.precedence, self.assoc = symbol, precedence, assoc

    def __call__(self, var: Variable, pp: "PPrinter", outer: int) -> str:
        """The formula of var, in parentheses when outer binds tighter."""
        inputs = var.owner.inputs
        if len(inputs) == 1:
            text = f"{self.symbol}{pp.format(inputs[0], self.precedence + 1)}"
        else:
            parts = []
            for i, inp in enumerate(inputs):
                tighter = ((self.assoc == "left" and i > 0)
                           or (self.assoc == "right" and i < len(inputs) - 1))
                parts.append(pp.format(inp, self.precedence + (1 if tighter else 0)))
            text = f" {self.symbol} ".join(parts)
        return f"({text})" if self.precedence < outer else text


class FunctionPrinter:
    """Prints a node as ``name(a, b)``."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, var: Variable, pp: "PPrinter", outer: int) -> str:
        """``name(inputs...)``."""
        return f"{self.name}({', '.join(pp.format(i, -1000) for i in var.owner.inputs)})"


class PPrinter:
    """pprint(var): a formula of the graph, using printers registered per op (or op class)."""

    def __init__(self) -> None:
        self._printers: List[Tuple[Any, Printer]] = []

    def assign(self, condition: Union[Op, type, Callable[[Variable], bool]], printer: Printer
               ) -> None:
        """Use printer for nodes whose op equals condition, is an instance of it, or satisfies it."""
        self._printers.insert(0, (condition, printer))

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

    def format(self, var: Variable, outer: int = -1000) -> str:
        """The formula of var where the surrounding operator has precedence outer."""
        if isinstance(var, Constant):
            return var.name or str(var.data)
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
        """The formula of a Variable (one line per Variable for a list)."""
        if isinstance(obj, Variable):
            return self.format(obj)
        return "\n".join(self.format(v) for v in obj)


pprint = PPrinter()
