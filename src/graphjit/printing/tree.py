"""debugprint / dprint: a graph as an indented tree, one line per node (Theano's format)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple, Union

from graphjit.config import config
from graphjit.graph.basic import Apply, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.test_value import get_test_value, has_test_value


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


@dataclass
class TreeOptions:
    """What debugprint shows on each line besides the op, id and name."""

    ids: str = "CHAR"
    print_type: bool = False
    stop_on_name: bool = False
    depth: int = -1
    print_op_info: bool = False         # fused loop nest (LLVM linker), perform fallback
    print_destroy_map: bool = False
    print_view_map: bool = False
    print_test_value: bool = False


class _TreePrinter:
    """Walks the graph depth-first (without recursion) and formats one line per Variable."""

    def __init__(self, options: TreeOptions, done: Dict[Any, str], topo: Dict[Apply, int],
                 storage_map: Optional[Dict], fallback: Sequence[Apply] = (),
                 groups: Optional[Dict[Apply, int]] = None):
        if options.ids not in ("CHAR", "id", "int", ""):
            raise ValueError(f"ids must be 'CHAR', 'id', 'int' or '', got {options.ids!r}")
        self.options, self.ids, self.print_type = options, options.ids, options.print_type
        self.stop_on_name, self.depth = options.stop_on_name, options.depth
        self.done, self.topo, self.storage_map = done, topo, storage_map
        self.fallback = set(fallback)
        self.groups = groups or {}
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
        value = self._test_value(var)
        if node is None:
            return f"{var}{self._id(var)}{type_text}{storage}{value}"
        op_text = str(node.op) if len(node.outputs) == 1 else f"{node.op}.{var.index}"
        topo = f"   {self.topo[node]}" if node in self.topo else ""
        mark = " (python perform)" if node in self.fallback else ""
        return f"{op_text}{self._id(node)}{type_text} '{var.name or ''}'{topo}{mark}{self._info(node)}{storage}{value}"

    def _info(self, node: Apply) -> str:
        opts, parts = self.options, []
        if opts.print_destroy_map and node.op.destroy_map:
            parts.append(f"d={dict(node.op.destroy_map)}")
        if opts.print_view_map and node.op.view_map:
            parts.append(f"v={dict(node.op.view_map)}")
        if opts.print_op_info and node in self.groups:
            parts.append(f"fused loop {self.groups[node]}")
        return "".join(f" {p}" for p in parts)

    def _test_value(self, var: Variable) -> str:
        if not self.options.print_test_value or not has_test_value(var):
            return ""
        text = repr(get_test_value(var)).replace("\n", " ")
        return f" test_value={' '.join(text.split())}"

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
               print_storage: bool = False, depth: int = -1, mark_fallback: bool = False,
               print_op_info: bool = False, print_destroy_map: bool = False, print_view_map: bool = False,
               print_test_value: Optional[bool] = None) -> Any:
    """Print a graph as an indented tree: op, [@id], 'name', and the toposort index when compiled.

    obj is a Variable, a list of them, an Apply, a FunctionGraph or a compiled Function. A node
    reached a second time is printed on one line, without its inputs again. With file="str" the
    text is returned; otherwise it is written to file (stdout by default) and file is returned.
    ids: 'CHAR' (A, B, ...), 'int', 'id' (Python id) or '' (none); depth: levels printed (-1: all);
    print_type: each variable's Type; stop_on_name: do not expand named variables. For a Function
    compiled by the LLVM linker, mark_fallback ends the lines of nodes that run their Python perform
    with "(python perform)"; print_op_info does that too and adds "fused loop N" to the nodes fused
    into loop nest N. print_destroy_map / print_view_map add "d={...}" / "v={...}" to in-place and
    view ops; print_test_value adds each variable's test value (config.compute_test_value; by default
    when config.print_test_value is set).
    """
    if print_test_value is None:
        print_test_value = bool(config.print_test_value)
    roots, fgraph, storage_map = _roots(obj)
    options = TreeOptions(ids, print_type, stop_on_name, depth, print_op_info, print_destroy_map,
                          print_view_map, print_test_value)
    native = getattr(obj, "native", None) if getattr(obj, "maker", None) is not None else None
    fallback = getattr(native, "fallback_nodes", ()) if mark_fallback or print_op_info else ()
    groups: Dict[Apply, int] = {}
    if print_op_info and native is not None and fgraph is not None:
        for k, nodes in enumerate(native.fused_groups(fgraph)):
            groups.update((n, k) for n in nodes)
    topo = {node: i for i, node in enumerate(fgraph.toposort())} if fgraph is not None else {}
    printer = _TreePrinter(options, {} if done is None else done, topo,
                           storage_map if print_storage else None, fallback, groups)
    text = "".join(line + "\n" for line in printer.run(roots))
    if file == "str":
        return text
    out = sys.stdout if file is None else file
    out.write(text)
    return out


dprint = debugprint
