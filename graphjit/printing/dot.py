"""Graph pictures: to_dot (Graphviz DOT text, no dependency) and pydotprint (an image through graphviz).

Apply nodes are boxes; variables that are not the output of a node are ellipses. Colours: graph inputs
green, outputs blue, shared variables orange, constants grey, nodes that run their Python perform under
the LLVM linker red; the nodes the LLVM linker fuses into one loop nest are drawn inside one dashed cluster.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Set

from graphjit.graph.basic import Apply, Constant, Variable, io_toposort
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


def to_dot(obj: Any, print_type: bool = True, max_label: int = 60, name: str = "graphjit") -> str:
    """The graph of a Function, FunctionGraph, Variable or list of Variables as Graphviz DOT text.

    print_type: label edges and leaves with their Types; max_label: longer op labels are cut.
    """
    inputs, outputs, fgraph, native = _graph_of(obj)
    order = fgraph.toposort() if fgraph is not None else io_toposort([], outputs)
    out_set = set(outputs)
    in_set = set(inputs) if inputs is not None else None
    fallback = set(getattr(native, "fallback_nodes", ()))
    groups = native.fused_groups(fgraph) if native is not None and fgraph is not None else []
    # the names the user gave the outputs (a rewrite may have replaced the named variable)
    names = [getattr(getattr(o, "variable", None), "name", None)
             for o in getattr(getattr(obj, "maker", None), "outputs", None) or ()]
    ids: Dict[Any, str] = {}
    lines = [f"digraph {_quote(name)} {{", "  rankdir=TB;", '  node [fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9];']

    def leaf(var: Variable) -> str:
        if var not in ids:
            ids[var] = f"v{len(ids)}"
            kind = _leaf_kind(var, in_set, out_set)
            label = str(var) + (f"\n{var.type}" if print_type else "")
            lines.append(f"  {ids[var]} [label={_quote(label)}, shape=ellipse, style=filled, "
                         f"fillcolor={COLOURS[kind]}];")
        return ids[var]

    def node_text(node: Apply) -> str:
        label = str(node.op)
        label = label if len(label) <= max_label else label[:max_label - 3] + "..."
        colour = COLOURS["fallback"] if node in fallback else COLOURS["node"]
        extra = "\n(python perform)" if node in fallback else ""
        return f"a{len(ids)} [label={_quote(label + extra)}, shape=box, style=filled, fillcolor={colour}];"

    grouped = {n: k for k, nodes in enumerate(groups) for n in nodes if len(nodes) > 1}
    clusters: Dict[int, List[str]] = {}
    for node in order:
        text = node_text(node)
        ids[node] = text.split(" ", 1)[0]
        k = grouped.get(node)
        (clusters.setdefault(k, []) if k is not None else lines).append(("    " if k is not None else "  ") + text)
    for k, body in clusters.items():
        lines.append(f"  subgraph cluster_fused_{k} {{")
        lines.append(f'    label="fused loop {k}"; style="dashed,rounded"; color=purple;')
        lines.extend(body)
        lines.append("  }")
    for node in order:
        for i, var in enumerate(node.inputs):
            src = ids[var.owner] if var.owner is not None and var.owner in ids else leaf(var)
            label = [str(i)] if len(node.inputs) > 1 else []
            if var.owner is not None and print_type:
                label.append(str(var.type))
            attr = f" [label={_quote(' '.join(label))}]" if label else ""
            lines.append(f"  {src} -> {ids[node]}{attr};")
    for k, var in enumerate(outputs):
        if var.owner is None or var.owner not in ids:
            leaf(var)
            continue
        out_id = f"out{k}"
        label = (var.name or (names[k] if k < len(names) and names[k] else f"output {k}")
                 + (f"\n{var.type}" if print_type else ""))
        lines.append(f"  {out_id} [label={_quote(label)}, shape=ellipse, style=filled, "
                     f"fillcolor={COLOURS['output']}];")
        lines.append(f"  {ids[var.owner]} -> {out_id};")
    lines.append("}")
    return "\n".join(lines) + "\n"


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

