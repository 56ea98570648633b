"""PatternNodeRewriter: a rewrite written as two nested tuples, e.g. ``(mul, "x", 1) -> "x"``.

Pattern syntax:
  ``(op, p1, p2, ...)``  a node of op (an Op instance, compared with ==, or an Op class) whose
                         inputs match p1, p2, ...
  ``"x"``                any variable, bound to the name x (a name used twice must bind the same one)
  a number or ndarray    a Constant all of whose elements equal it
  a Constant             a Constant with the same signature
  ``{"pattern": p, "constraint": fn}``  p, if fn(variable) is true
The output pattern uses the same tuples and names; numbers are given to the op as they are.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.op import Op
from graphjit.graph.rewriting.basic import NodeRewriter, Replacements, Tracks

Bindings = Dict[str, Variable]


def constant_equals(var: Variable, value: Any) -> bool:
    """True if var is a Constant whose every element equals value."""
    if not isinstance(var, Constant):
        return False
    try:
        data = np.asarray(var.data)
        return data.size > 0 and bool(np.all(data == value))
    except (TypeError, ValueError):
        return False


def _op_matches(spec: Any, op: Op) -> bool:
    if isinstance(spec, type):
        return isinstance(op, spec)
    return op == spec


def match_pattern(pattern: Any, var: Variable, bindings: Bindings, single_client: Callable[[Variable], bool],
                  root: bool = True) -> bool:
    """Match var against pattern, filling bindings; False if it does not match."""
    if isinstance(pattern, dict):
        return (match_pattern(pattern["pattern"], var, bindings, single_client, root)
                and bool(pattern.get("constraint", lambda v: True)(var)))
    if isinstance(pattern, str):
        bound = bindings.get(pattern)
        if bound is None:
            bindings[pattern] = var
            return True
        return bound is var or (isinstance(bound, Constant) and bound.equals(var))
    if isinstance(pattern, tuple):
        node = var.owner
        if node is None or not _op_matches(pattern[0], node.op) or len(node.inputs) != len(pattern) - 1:
            return False
        if not root and not single_client(var):
            return False
        return all(match_pattern(p, i, bindings, single_client, False)
                   for p, i in zip(pattern[1:], node.inputs))
    if isinstance(pattern, Constant):
        return pattern.equals(var)
    return constant_equals(var, pattern)


def build_pattern(pattern: Any, bindings: Bindings) -> Any:
    """The variable an output pattern describes, built from the bindings."""
    if isinstance(pattern, str):
        return bindings[pattern]
    if isinstance(pattern, tuple):
        op = pattern[0]
        return op(*[build_pattern(p, bindings) for p in pattern[1:]])
    if isinstance(pattern, dict):
        return build_pattern(pattern["pattern"], bindings)
    return pattern


class PatternNodeRewriter(NodeRewriter):
    """Replaces what matches in_pattern by what out_pattern builds (when the Type is kept).

    allow_multiple_clients=False refuses matches whose inner nodes have other clients (the
    rewrite would then duplicate work instead of removing it).
    """

    def __init__(self, in_pattern: tuple, out_pattern: Any, allow_multiple_clients: bool = False,
                 name: Optional[str] = None):
        if not isinstance(in_pattern, tuple) and not isinstance(in_pattern, dict):
            raise TypeError(f"in_pattern must be a tuple (op, ...), got {in_pattern!r}")
        self.in_pattern = in_pattern
        self.out_pattern = out_pattern
        self.allow_multiple_clients = allow_multiple_clients
        self.name = name or f"{_pattern_str(in_pattern)} -> {_pattern_str(out_pattern)}"

    def tracks(self) -> Tracks:
        head = self.in_pattern["pattern"] if isinstance(self.in_pattern, dict) else self.in_pattern
        return [head[0]]

    def transform(self, fgraph: FunctionGraph, node: Apply) -> Replacements:
        if len(node.outputs) != 1:
            return None
        out = node.outputs[0]
        bindings: Bindings = {}

        def single_client(v: Variable) -> bool:
            return self.allow_multiple_clients or len(fgraph.clients.get(v, ())) <= 1

        if not match_pattern(self.in_pattern, out, bindings, single_client):
            return None
        new = build_pattern(self.out_pattern, bindings)
        if not isinstance(new, Variable) or not out.type.is_super(new.type):
            return None
        return [new]


def _pattern_str(p: Any) -> str:
    if isinstance(p, tuple):
        return f"{p[0]}({', '.join(_pattern_str(x) for x in p[1:])})"
    if isinstance(p, dict):
        return _pattern_str(p["pattern"])
    return str(p)


def pattern_rewriters(table: List[tuple], **kwargs: Any) -> List[PatternNodeRewriter]:
    """PatternNodeRewriters from a table of (in_pattern, out_pattern) pairs."""
    return [PatternNodeRewriter(i, o, **kwargs) for i, o in table]
