"""Graph pictures: to_dot (Graphviz DOT text, no dependency) and pydotprint (an image through graphviz).

Apply nodes are boxes; variables that are not the output of a node are ellipses. Colours: graph inputs
green, outputs blue, shared variables orange, constants grey, nodes that run their Python perform under
the LLVM linker red; the nodes the LLVM linker fuses into one loop nest are drawn inside one dashed cluster.
pydotprint takes Theano's keyword arguments (its docstring says how each is honoured).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Set

from graphjit.graph.basic import Apply, Constant, Variable, ancestors, io_toposort
from graphjit.graph.branch_schedule import is_branching
from graphjit.graph.fg import FunctionGraph

COLOURS = {"input": "limegreen", "output": "dodgerblue", "shared": "orange", "constant": "lightgrey",
           "fallback": "tomato", "node": "white", "variable": "white"}
# cond_highlight: the border of the nodes only the condition, only the first or only the second branch needs
BRANCH_COLOURS = ("gold", "seagreen", "firebrick")
FORMATS = ("png", "svg", "pdf", "dot")
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


@dataclass
class DotStyle:
    """How to_dot draws a graph (pydotprint's keyword arguments, Theano's names in its docstring)."""

    print_type: bool = True             # label edges and leaves with their Types
    max_label: int = 60                 # longer op labels are cut
    compact: bool = True                # an unnamed intermediate value is an edge, not an ellipse of its own
    with_ids: bool = False              # node labels carry their toposort index, variables a running number
    high_contrast: bool = True          # colours fill the shapes (else they colour the borders)
    cond_highlight: bool = False        # the nodes only one part of a lazy if needs get a coloured border
    colour_codes: Optional[Mapping[str, str]] = None    # op class name -> colour of its nodes
    var_with_name_simple: bool = False  # a named variable is labelled with its name only


class _DotWriter:
    """Builds the DOT lines of one graph: node and leaf declarations, fused clusters, edges, outputs."""

    def __init__(self, obj: Any, style: DotStyle) -> None:
        inputs, self.outputs, fgraph, native = _graph_of(obj)
        self.order = fgraph.toposort() if fgraph is not None else io_toposort([], self.outputs)
        self.in_set = set(inputs) if inputs is not None else None
        self.fallback = set(getattr(native, "fallback_nodes", ()))
        groups = native.fused_groups(fgraph) if native is not None and fgraph is not None else []
        self.grouped = {n: k for k, nodes in enumerate(groups) for n in nodes if len(nodes) > 1}
        # the names the user gave the outputs (a rewrite may have replaced the named variable)
        self.names = [getattr(getattr(o, "variable", None), "name", None)
                      for o in getattr(getattr(obj, "maker", None), "outputs", None) or ()]
        self.style = style
        self.borders = branch_borders(self.order) if style.cond_highlight else {}
        self.ids: Dict[Any, str] = {}
        self.lines: List[str] = []

    def paint(self, colour: str) -> str:
        """The DOT attributes giving a shape colour: its fill (high_contrast) or its border."""
        return f"style=filled, fillcolor={colour}" if self.style.high_contrast else f"color={colour}"

    def var_label(self, var: Variable, text: str) -> str:
        """text (a variable's name or str), with its Type and id as the style asks."""
        st = self.style
        if st.print_type and not (st.var_with_name_simple and var.name):
            text += f"\n{var.type}"
        return text + (f"  id={len(self.ids)}" if st.with_ids else "")

    def leaf(self, var: Variable, kind: Optional[str] = None) -> str:
        """The id of a variable drawn on its own (declared on first use)."""
        if var not in self.ids:
            kind = kind or _leaf_kind(var, self.in_set, set(self.outputs))
            label = self.var_label(var, var.name if var.name and self.style.var_with_name_simple else str(var))
            self.ids[var] = f"v{len(self.ids)}"
            self.lines.append(f"  {self.ids[var]} [label={_quote(label)}, shape=ellipse, {self.paint(COLOURS[kind])}];")
        return self.ids[var]

    def node_line(self, k: int, node: Apply) -> str:
        """The declaration of node, k-th of the toposort."""
        st = self.style
        label = str(node.op)
        label = label if len(label) <= st.max_label else label[:st.max_label - 3] + "..."
        label += f"  id={k}" if st.with_ids else ""
        label += "\n(python perform)" if node in self.fallback else ""
        colour = COLOURS["fallback" if node in self.fallback else "node"]
        colour = (st.colour_codes or {}).get(type(node.op).__name__, colour)
        border = self.borders.get(node)
        extra = f", color={border}, penwidth=3" if border and st.high_contrast else ""
        paint = self.paint(colour) if not border or st.high_contrast else f"color={border}, penwidth=3"
        self.ids[node] = f"a{len(self.ids)}"
        return f"{self.ids[node]} [label={_quote(label)}, shape=box, {paint}{extra}];"

    def nodes(self) -> None:
        """Declare the Apply nodes, those of each fused loop nest inside a dashed cluster."""
        clusters: Dict[int, List[str]] = {}
        for k, node in enumerate(self.order):
            text = self.node_line(k, node)
            group = self.grouped.get(node)
            if group is None:
                self.lines.append("  " + text)
            else:
                clusters.setdefault(group, []).append("    " + text)
        for k, body in clusters.items():
            self.lines.append(f"  subgraph cluster_fused_{k} {{")
            self.lines.append(f'    label="fused loop {k}"; style="dashed,rounded"; color=purple;')
            self.lines.extend(body)
            self.lines.append("  }")

    def edges(self) -> None:
        """An edge per node input (labelled with its position and, for computed values, its Type); an
        intermediate value drawn on its own (compact=False, or a named one) sits between its two nodes."""
        drawn: Set[Variable] = set()
        for node in self.order:
            for i, var in enumerate(node.inputs):
                label = [str(i)] if len(node.inputs) > 1 else []
                if var.owner in self.ids and (var.name or not self.style.compact):
                    if var not in drawn:
                        drawn.add(var)
                        self.lines.append(f"  {self.ids[var.owner]} -> {self.leaf(var, 'variable')};")
                    src = self.ids[var]
                elif var.owner in self.ids:
                    src = self.ids[var.owner]
                    label += [str(var.type)] if self.style.print_type else []
                else:
                    src = self.leaf(var)
                attr = f" [label={_quote(' '.join(label))}]" if label else ""
                self.lines.append(f"  {src} -> {self.ids[node]}{attr};")

    def results(self) -> None:
        """An output ellipse per computed output (inputs returned as is are leaves coloured as outputs)."""
        for k, var in enumerate(self.outputs):
            if var.owner is None or var.owner not in self.ids:
                self.leaf(var)
                continue
            name = var.name or (self.names[k] if k < len(self.names) and self.names[k] else f"output {k}")
            label = name + (f"\n{var.type}" if self.style.print_type and not
                            (self.style.var_with_name_simple and name == var.name) else "")
            self.lines.append(f"  out{k} [label={_quote(label)}, shape=ellipse, {self.paint(COLOURS['output'])}];")
            self.lines.append(f"  {self.ids[var.owner]} -> out{k};")


def branch_borders(order: List[Apply]) -> Dict[Apply, str]:
    """cond_highlight: for each lazy if (a branching node, graph/branch_schedule.py) of order, the nodes that
    only its condition, only its first or only its second branch needs, mapped to BRANCH_COLOURS."""
    members = set(order)
    borders: Dict[Apply, str] = {}
    for node in order:
        if not is_branching(node):
            continue
        parts = [[node.inputs[0]]] + [[node.inputs[i] for i in positions]
                                      for positions in node.op.lazy_branches(node)]
        needs = [{v.owner for v in ancestors(part) if v.owner in members} for part in parts]
        for k, nodes in enumerate(needs[:len(BRANCH_COLOURS)]):
            for n in nodes.difference(*(other for j, other in enumerate(needs) if j != k)):
                borders.setdefault(n, BRANCH_COLOURS[k])
    return borders


def to_dot(obj: Any, print_type: bool = True, max_label: int = 60, name: str = "graphjit", **style: Any) -> str:
    """The graph of a Function, FunctionGraph, Variable or list of Variables as Graphviz DOT text.

    print_type: label edges and leaves with their Types; max_label: longer op labels are cut; style: the other
    fields of DotStyle (compact, with_ids, high_contrast, cond_highlight, colour_codes, var_with_name_simple).
    """
    writer = _DotWriter(obj, DotStyle(print_type=print_type, max_label=max_label, **style))
    writer.nodes()
    writer.edges()
    writer.results()
    header = [f"digraph {_quote(name)} {{", "  rankdir=TB;", '  node [fontname="Helvetica", fontsize=10];',
              '  edge [fontname="Helvetica", fontsize=9];']
    return "\n".join(header + writer.lines + ["}"]) + "\n"


def pydotprint(fct: Any, outfile: Optional[str] = None, compact: bool = True, format: str = "png",
               with_ids: bool = False, high_contrast: bool = True, cond_highlight: Optional[bool] = None,
               colorCodes: Optional[Mapping[str, str]] = None, max_label_size: int = 70,
               scan_graphs: bool = False, var_with_name_simple: bool = False, print_output_file: bool = True,
               return_image: bool = False, print_type: bool = True) -> Any:
    """Draw the graph of fct (a Function, FunctionGraph, Variable or list of Variables, as to_dot does) with
    Graphviz, taking Theano's arguments in Theano's order:

    * outfile: the file written (its path is returned); None: nothing is written and the image is returned
      (Theano wrote a file in its compile directory).
    * compact: an intermediate value without a name is an edge; False: an ellipse of its own too.
    * format: 'png', 'svg', 'pdf', or 'dot' (the DOT text itself, which needs nothing installed).
    * with_ids: node labels end with their toposort index, variables' with a running number.
    * high_contrast: colours fill the shapes; False: they colour the borders.
    * cond_highlight: the nodes only the condition, only the first or only the second branch of a lazy if
      (``ifelse``) needs get a gold, green or red border.
    * colorCodes: {op class name: colour} for the nodes of those ops.
    * max_label_size: longer op labels are cut.
    * scan_graphs: the inner graph of each Scan is drawn too, into ``<outfile stem>_<scan name>_<toposort
      index><ext>`` (with outfile only), with the same arguments.
    * var_with_name_simple: a named variable is labelled with its name only, without its Type.
    * print_output_file: say where the file was written (printed).
    * return_image: return the image (bytes; str for 'svg' and 'dot') and write nothing, as Theano did.
    * print_type (graphjit's): label edges and variables with their Types.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be 'png', 'svg', 'pdf' or 'dot', got {format!r}")
    style = DotStyle(print_type=print_type, max_label=max_label_size, compact=compact, with_ids=with_ids,
                     high_contrast=high_contrast, cond_highlight=bool(cond_highlight), colour_codes=colorCodes,
                     var_with_name_simple=var_with_name_simple)
    dot = to_dot(fct, **_to_dot_args(style))
    data: Any = dot if format == "dot" else _render(dot, format)
    if format == "svg" and isinstance(data, bytes):
        data = data.decode("utf-8")
    if outfile is None or return_image:
        return data
    with open(os.fspath(outfile), "w" if isinstance(data, str) else "wb") as f:
        f.write(data)
    if print_output_file:
        print(f"The output file is available at {os.fspath(outfile)}")
    if scan_graphs:
        _inner_pictures(fct, os.fspath(outfile), format, style, print_output_file)
    return outfile


def _to_dot_args(style: DotStyle) -> Dict[str, Any]:
    return {f: getattr(style, f) for f in style.__dataclass_fields__}


def _inner_pictures(fct: Any, outfile: str, format: str, style: DotStyle, print_output_file: bool) -> None:
    """pydotprint's scan_graphs: each Scan's inner graph beside outfile (nested Scans too)."""
    _, outputs, fgraph, _ = _graph_of(fct)
    order = fgraph.toposort() if fgraph is not None else io_toposort([], outputs)
    stem, ext = os.path.splitext(outfile)
    for k, node in enumerate(order):
        inner = getattr(node.op, "fgraph", None)
        if not isinstance(inner, FunctionGraph) or not hasattr(node.op, "inner_outputs"):
            continue
        label = getattr(getattr(node.op, "info", None), "name", "") or "scan"
        pydotprint(inner, f"{stem}_{label}_{k}{ext}", style.compact, format, style.with_ids, style.high_contrast,
                   style.cond_highlight, style.colour_codes, style.max_label, True, style.var_with_name_simple,
                   print_output_file, False, style.print_type)


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
