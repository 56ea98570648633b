"""Graph pictures: to_dot (Graphviz DOT text, no dependency) and pydotprint (an image through graphviz).

Apply nodes are boxes; variables that are not the output of a node are ellipses. Colours: graph inputs
green, outputs blue, shared variables orange, constants grey, nodes that run their Python perform under
the LLVM linker red; the nodes the LLVM linker fuses into one loop nest are drawn inside one dashed cluster.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Set

from graphjit.graph.basic import Constant, Variable, io_toposort
from graphjit.graph.fg import FunctionGraph

COLOURS = {"input": "limegreen", "output": "dodgerblue", "shared": "orange", "constant": "lightgrey",
           "fallback": "tomato", "node": "white", "variable": "white"}
INSTALL_HINT = ("pip install 'graphjit[graphviz]' (the graphviz Python package) and install Graphviz's dot "
                "program (e.g. apt install graphviz, brew install graphviz); printing.to_dot(...) gives the DOT "
                "text without either")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _graph_of(obj: Any):
    """(inputs, outputs, fgraph or None, native info or None) of a Function, FunctionGraph or Variable(s)."""
    maker = getattr(obj, "maker", None)
    if maker is not None and isinstance(getattr(maker, "fgraph", None), FunctionGraph):
        fg = maker.fgraph
        return list(fg.inputs), list(fg.outputs), fg, getattr(obj, "native", None)
    if isinstance(obj, FunctionGraph):
        return list(obj.inputs), list(obj.outputs), obj, None
    outputs = [obj] if isinstance(obj, Variable) else list(obj) if isinstance(obj, (list, tuple)) else None
    if not outputs or not all(isinstance(v, Variable) for v in outputs):
        raise TypeError(f"to_dot needs a Function, a FunctionGraph or Variables, got {type(obj).__name__}")
    return None, outputs, None, None


def _is_shared(var: Variable) -> bool:
    return hasattr(var, "container") and hasattr(var, "get_value")


def _leaf_kind(var: Variable, inputs: Optional[Set[Variable]], outputs: Set[Variable]) -> str:
    if isinstance(var, Constant):
        return "constant"
    if _is_shared(var):
        return "shared"
    if var in outputs:
        return "output"
    return "input" if inputs is None or var in inputs else "variable"


class _DotWriter:
    """Builds the DOT lines of one graph: node and leaf declarations, fused clusters, edges, outputs."""

    def __init__(self, obj: Any, print_type: bool, max_label: int) -> None:
        inputs, self.outputs, fgraph, native = _graph_of(obj)
        self.order = fgraph.toposort() if fgraph is not None else io_toposort([], self.outputs)
        self.in_set = set(inputs) if inputs is not None else None
        self.fallback = set(getattr(native, "fallback_nodes", ()))
        groups = native.fused_groups(fgraph) if native is not None and fgraph is not None else []
        self.grouped = {n: k for k, nodes in enumerate(groups) for n in nodes if len(nodes) > 1}
        # the names the user gave the outputs (a rewrite may have replaced the named variable)
        self.names = [getattr(getattr(o, "variable", None), "name", None)
                      for o in getattr(getattr(obj, "maker", None), "outputs", None) or ()]
        self.print_type, self.max_label = print_type, max_label
        self.ids: Dict[Any, str] = {}
        self.lines: List[str] = []

    def leaf(self, var: Variable) -> str:
        """The id of a variable drawn on its own (declared on first use)."""
        if var not in self.ids:
            self.ids[var] = f"v{len(self.ids)}"
            kind = _leaf_kind(var, self.in_set, set(self.outputs))
            label = str(var) + (f"\n{var.type}" if self.print_type else "")
            self.lines.append(f"  {self.ids[var]} [label={_quote(label)}, shape=ellipse, style=filled, "
                              f"fillcolor={COLOURS[kind]}];")
        return self.ids[var]

    def nodes(self) -> None:
        """Declare the Apply nodes, those of each fused loop nest inside a dashed cluster."""
        clusters: Dict[int, List[str]] = {}
        for node in self.order:
            self.ids[node] = f"a{len(self.ids)}"
            label = str(node.op)
            label = label if len(label) <= self.max_label else label[:self.max_label - 3] + "..."
            colour = COLOURS["fallback" if node in self.fallback else "node"]
            label += "\n(python perform)" if node in self.fallback else ""
            text = f"{self.ids[node]} [label={_quote(label)}, shape=box, style=filled, fillcolor={colour}];"
            k = self.grouped.get(node)
            if k is None:
                self.lines.append("  " + text)
            else:
                clusters.setdefault(k, []).append("    " + text)
        for k, body in clusters.items():
            self.lines.append(f"  subgraph cluster_fused_{k} {{")
            self.lines.append(f'    label="fused loop {k}"; style="dashed,rounded"; color=purple;')
            self.lines.extend(body)
            self.lines.append("  }")

    def edges(self) -> None:
        """An edge per node input (labelled with its position and, for computed values, its Type)."""
        for node in self.order:
            for i, var in enumerate(node.inputs):
                src = self.ids[var.owner] if var.owner in self.ids else self.leaf(var)
                label = [str(i)] if len(node.inputs) > 1 else []
                if var.owner is not None and self.print_type:
                    label.append(str(var.type))
                attr = f" [label={_quote(' '.join(label))}]" if label else ""
                self.lines.append(f"  {src} -> {self.ids[node]}{attr};")

    def results(self) -> None:
        """An output ellipse per computed output (inputs returned as is are leaves coloured as outputs)."""
        for k, var in enumerate(self.outputs):
            if var.owner is None or var.owner not in self.ids:
                self.leaf(var)
                continue
            name = var.name or (self.names[k] if k < len(self.names) and self.names[k] else f"output {k}")
            label = name + (f"\n{var.type}" if self.print_type else "")
            self.lines.append(f"  out{k} [label={_quote(label)}, shape=ellipse, style=filled, "
                              f"fillcolor={COLOURS['output']}];")
            self.lines.append(f"  {self.ids[var.owner]} -> out{k};")


def to_dot(obj: Any, print_type: bool = True, max_label: int = 60, name: str = "graphjit") -> str:
    """The graph of a Function, FunctionGraph, Variable or list of Variables as Graphviz DOT text.

    print_type: label edges and leaves with their Types; max_label: longer op labels are cut.
    """
    writer = _DotWriter(obj, print_type, max_label)
    writer.nodes()
    writer.edges()
    writer.results()
    header = [f"digraph {_quote(name)} {{", "  rankdir=TB;", '  node [fontname="Helvetica", fontsize=10];',
              '  edge [fontname="Helvetica", fontsize=9];']
    return "\n".join(header + writer.lines + ["}"]) + "\n"


def pydotprint(obj: Any, outfile: Optional[str] = None, format: str = "png", print_type: bool = True,
               max_label: int = 60) -> Any:
    """Draw the graph of obj (as to_dot does) with Graphviz: write outfile and return its path, or with
    outfile=None return the image as bytes (str for format='svg'). format: 'png', 'svg', 'pdf' or 'dot'
    ('dot' is the DOT text itself and needs nothing installed).
    """
    if format not in ("png", "svg", "pdf", "dot"):
        raise ValueError(f"format must be 'png', 'svg', 'pdf' or 'dot', got {format!r}")
    dot = to_dot(obj, print_type=print_type, max_label=max_label)
    data: Any = dot if format == "dot" else _render(dot, format)
    if format == "svg" and isinstance(data, bytes):
        data = data.decode("utf-8")
    if outfile is None:
        return data
    mode = "w" if isinstance(data, str) else "wb"
    with open(os.fspath(outfile), mode) as f:
        f.write(data)
    return outfile


def _render(dot: str, format: str) -> bytes:
    try:
        import graphviz  # optional: the 'graphviz' extra
    except ImportError:
        raise ImportError(f"pydotprint needs the graphviz Python package to draw {format}: {INSTALL_HINT}") from None
    try:
        return graphviz.Source(dot).pipe(format=format)
    except graphviz.ExecutableNotFound:
        raise RuntimeError(f"pydotprint found the graphviz Python package but not Graphviz's dot program: "
                           f"{INSTALL_HINT}") from None

