"""Blockwise: a core op applied over leading "loop" dimensions with generalised-ufunc semantics, and
``vectorize_graph``, which rebuilds a graph over batched inputs (Blockwise's gradients are built with it).

``Blockwise(core_op, "(m,n),(n)->(m)")`` takes inputs whose trailing dimensions are the core operands of the
signature; the leading ones broadcast against each other as numpy broadcasts, and the core op runs once per
loop index. A core dimension named twice must have the same length everywhere (ValueError naming it).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Variable, io_toposort
from graphjit.graph.grad_markers import DisconnectedType, disconnected_type
from graphjit.graph.op import Op
from graphjit.graph.type import NullType
from graphjit.tensor.alloc import Alloc, alloc
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.elemwise import DimShuffle, Elemwise, broadcast_static_shape
from graphjit.tensor.elemwise_grad import SumToShape, sum_to_shape
from graphjit.tensor.join import join
from graphjit.tensor.gufunc_signature import Core, format_signature, node_signature, parse_signature
from graphjit.tensor.lengths import broadcast_shape_symbolic
from graphjit.tensor.math import sum as tsum
from graphjit.tensor.shape_base import Shape, Shape_i, shape, shape_i
from graphjit.tensor.type import TensorType

_CORE_GRAPHS: "OrderedDict[tuple, CoreGraph]" = OrderedDict()
_CORE_GRAPHS_MAX = 256


class CoreGraph:
    """The core op applied to core-typed dummy inputs: inputs, outputs and the nodes between (the core op's
    make_node may add conversions, e.g. casts)."""

    def __init__(self, inputs: List[Variable], outputs: List[Variable]):
        self.inputs, self.outputs = inputs, outputs
        self.order = io_toposort(inputs, outputs)

    def run(self, values: Sequence[Any]) -> List[Any]:
        """Evaluate the core graph on numpy values with the ops' perform."""
        env: Dict[Variable, Any] = dict(zip(self.inputs, values))
        for node in self.order:
            args = [env[v] if v in env else v.data for v in node.inputs]
            storage: List[List[Any]] = [[None] for _ in node.outputs]
            extra = (node.op.get_params(node),) if node.op.params_type is not None else ()
            node.op.perform(node, args, storage, *extra)
            env.update(zip(node.outputs, (cell[0] for cell in storage)))
        return [env[o] if o in env else o.data for o in self.outputs]


def core_type(var: Variable, core: Core) -> TensorType:
    """The type of var's core operand (its last len(core) dimensions)."""
    return TensorType(var.type.dtype, var.type.shape[var.type.ndim - len(core):])


class Blockwise(Op):
    """core_op applied over the loop dimensions of its inputs (see the module doc)."""

    __props__ = ("core_op", "signature")

    def __init__(self, core_op: Op, signature: str):
        if not isinstance(core_op, Op):
            raise TypeError(f"Blockwise: core_op must be an Op, got {core_op!r}")
        self.core_op = core_op
        self.inputs_sig, self.outputs_sig = parse_signature(signature)
        self.signature = format_signature(self.inputs_sig, self.outputs_sig)

    def __str__(self) -> str:
        return f"Blockwise{{{self.core_op}, {self.signature}}}"

    # ---------------------------------------------------------------- core graph and dimensions
    def core_graph(self, types: Sequence[TensorType]) -> CoreGraph:
        """The core graph for inputs of these (batched) types (cached)."""
        key = (self, tuple(types))
        found = _CORE_GRAPHS.get(key)
        if found is not None:
            _CORE_GRAPHS.move_to_end(key)
            return found
        dummies = [TensorType(t.dtype, t.shape[t.ndim - len(core):])() for t, core in zip(types, self.inputs_sig)]
        graph = CoreGraph(dummies, list(self.core_op.make_node(*dummies).outputs))
        _CORE_GRAPHS[key] = graph
        if len(_CORE_GRAPHS) > _CORE_GRAPHS_MAX:
            _CORE_GRAPHS.popitem(last=False)
        return graph

    def core_sizes(self, shapes: Sequence[Tuple[Any, ...]], static: bool) -> Dict[str, Any]:
        """name -> length of each named core dimension (None if unknown); ValueError naming a dimension whose
        lengths differ between inputs."""
        sizes: Dict[str, Any] = {}
        where: Dict[str, int] = {}
        for i, (shp, core) in enumerate(zip(shapes, self.inputs_sig)):
            for name, length in zip(core, shp[len(shp) - len(core):]):
                if length is None:
                    continue
                if sizes.get(name) is None:
                    sizes[name], where[name] = length, i
                elif sizes[name] != length:
                    kind = "static lengths" if static else "lengths"
                    raise ValueError(f"{self}: core dimension '{name}' has {kind} {sizes[name]} in input "
                                     f"{where[name]} and {length} in input {i}")
        return sizes

    def loop_ndim(self, ndims: Sequence[int]) -> int:
        """The number of loop dimensions of the node (the most any input has)."""
        return max([nd - len(core) for nd, core in zip(ndims, self.inputs_sig)] + [0])

    def _padded_loops(self, shapes: Sequence[Tuple[Any, ...]], one: Any) -> List[Tuple[Any, ...]]:
        nb = self.loop_ndim([len(s) for s in shapes])
        out = []
        for shp, core in zip(shapes, self.inputs_sig):
            loop = tuple(shp[:len(shp) - len(core)])
            out.append((one,) * (nb - len(loop)) + loop)
        return out

    # ---------------------------------------------------------------- the Op contract
    def make_node(self, *inputs: Any) -> Apply:
        inputs = [as_tensor_variable(x) for x in inputs]
        if len(inputs) != len(self.inputs_sig):
            raise TypeError(f"{self}: takes {len(self.inputs_sig)} input(s), got {len(inputs)}")
        for i, (x, core) in enumerate(zip(inputs, self.inputs_sig)):
            if x.type.ndim < len(core):
                raise TypeError(f"{self}: input {i} ({x.describe()}) has fewer dimensions than its core "
                                f"operand ({','.join(core)})")
        shapes = [x.type.shape for x in inputs]
        sizes = self.core_sizes(shapes, static=True)
        loop = broadcast_static_shape(self._padded_loops(shapes, 1), f"loop dimensions of {self}")
        core = self.core_graph([x.type for x in inputs])
        if len(core.outputs) != len(self.outputs_sig):
            raise TypeError(f"{self}: the core op has {len(core.outputs)} output(s), the signature "
                            f"{len(self.outputs_sig)}")
        outs = []
        for j, (o, names) in enumerate(zip(core.outputs, self.outputs_sig)):
            if not isinstance(o.type, TensorType) or o.type.ndim != len(names):
                raise TypeError(f"{self}: core output {j} is {o.type}, the signature gives it "
                                f"{len(names)} dimension(s)")
            shape = tuple(sizes.get(n) if sizes.get(n) is not None else o.type.shape[k]
                          for k, n in enumerate(names))
            outs.append(TensorType(o.type.dtype, tuple(loop) + shape)())
        return Apply(self, inputs, outs)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        sizes = self.core_sizes([x.shape for x in inputs], static=False)
        loops = self._padded_loops([x.shape for x in inputs], 1)
        try:
            batch = tuple(np.broadcast_shapes(*loops)) if loops else ()
        except ValueError:
            raise ValueError(f"{self}: loop dimensions {[tuple(l) for l in loops]} cannot be broadcast "
                             "together") from None
        core = self.core_graph([v.type for v in node.inputs])
        views = [np.broadcast_to(x, batch + x.shape[x.ndim - len(c):]) for x, c in zip(inputs, self.inputs_sig)]
        wanted = [tuple(sizes.get(n, node.outputs[j].type.shape[len(batch) + k]) for k, n in enumerate(names))
                  for j, names in enumerate(self.outputs_sig)]
        results: List[Optional[np.ndarray]] = [None] * len(node.outputs)
        for idx in np.ndindex(*batch):
            for j, r in enumerate(core.run([v[idx] for v in views])):
                r = np.asarray(r)
                if results[j] is None:
                    self._check_core_shape(j, r.shape, wanted[j])
                    results[j] = np.empty(batch + r.shape, dtype=node.outputs[j].type.dtype)
                elif r.shape != results[j].shape[len(batch):]:
                    raise ValueError(f"{self}: core output {j} has shape {r.shape} at loop index {idx}, "
                                     f"{results[j].shape[len(batch):]} before")
                results[j][idx] = r
        for j, res in enumerate(results):
            if res is None:
                if any(s is None for s in wanted[j]):
                    raise ValueError(f"{self}: the length of output {j}'s core dimensions cannot be known "
                                     "with no loop iterations (an empty loop dimension)")
                res = np.empty(batch + tuple(wanted[j]), dtype=node.outputs[j].type.dtype)
            out[j][0] = res

    def _check_core_shape(self, j: int, got: Tuple[int, ...], wanted: Sequence[Optional[int]]) -> None:
        if len(got) != len(wanted) or any(w is not None and w != g for g, w in zip(got, wanted)):
            raise ValueError(f"{self}: core output {j} has shape {got}, the signature and inputs give "
                             f"({', '.join('?' if w is None else str(w) for w in wanted)})")

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        loops = self._padded_loops([tuple(s) for s in shapes], 1)
        static = self._padded_loops([x.type.shape for x in node.inputs], 1)
        batch = tuple(broadcast_shape_symbolic(loops, static)) if self.loop_ndim([len(s) for s in shapes]) else ()
        named: Dict[str, Any] = {}
        for shp, core in zip(shapes, self.inputs_sig):
            for name, length in zip(core, tuple(shp)[len(shp) - len(core):]):
                named.setdefault(name, length)
        result = []
        for j, names in enumerate(self.outputs_sig):
            var = node.outputs[j]
            core = [named[n] if n in named else
                    (var.type.shape[len(batch) + k] if var.type.shape[len(batch) + k] is not None
                     else shape_i(var, len(batch) + k))
                    for k, n in enumerate(names)]
            result.append(batch + tuple(core))
        return result

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        try:
            cnode = self._direct_core_node(self.core_graph([v.type for v in node.inputs]))
        except NotImplementedError:
            return [[True] * len(node.outputs) for _ in node.inputs]
        return self.core_op.connection_pattern(cnode)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             grads: Sequence[Variable]) -> List[Variable]:
        """The core op's L_op on core-shaped dummies, vectorized over the loop dimensions, then summed back to
        each input's shape where it was broadcast."""
        core = self.core_graph([v.type for v in inputs])
        cgrads: List[Variable] = []
        replace: Dict[Variable, Variable] = dict(zip(core.inputs, inputs))
        replace.update(zip(core.outputs, outputs))
        for g, names in zip(grads, self.outputs_sig):
            if isinstance(g.type, DisconnectedType):
                cgrads.append(disconnected_type())
                continue
            dummy = TensorType(g.type.dtype, g.type.shape[g.type.ndim - len(names):])()
            cgrads.append(dummy)
            replace[dummy] = g
        cnode = self._direct_core_node(core)
        core_in_grads = self.core_op.L_op(core.inputs, list(cnode.outputs), cgrads)
        result = []
        for x, cg, names in zip(inputs, core_in_grads, self.inputs_sig):
            if cg is None or isinstance(cg.type, (DisconnectedType, NullType)):
                result.append(cg)
                continue
            result.append(_reduce_to(vectorize_graph(cg, replace), x, len(names)))
        return result

    def _direct_core_node(self, core: CoreGraph) -> Apply:
        """The core op's node when it takes the dummies as they are (gradients need it)."""
        cnode = core.outputs[0].owner if core.outputs else None
        if cnode is None or cnode.op != self.core_op or list(cnode.inputs) != core.inputs:
            raise NotImplementedError(f"{self}: no gradient through a core op that converts its inputs "
                                      "(a cast or a broadcast in its make_node)")
        return cnode

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Optional[Variable]]
             ) -> List[Optional[Variable]]:
        """The core op's R_op on core-shaped dummies, vectorized."""
        core = self.core_graph([v.type for v in inputs])
        self._direct_core_node(core)
        replace: Dict[Variable, Variable] = dict(zip(core.inputs, inputs))
        cpoints: List[Optional[Variable]] = []
        for e, names in zip(eval_points, self.inputs_sig):
            if e is None:
                cpoints.append(None)
                continue
            dummy = TensorType(e.type.dtype, e.type.shape[e.type.ndim - len(names):])()
            cpoints.append(dummy)
            replace[dummy] = e
        outs = self.core_op.R_op(core.inputs, cpoints)
        return [None if o is None else vectorize_graph(o, replace) for o in outs]


def _as_list(x: Any) -> List[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _reduce_to(g: Variable, x: Variable, core_ndim: int) -> Variable:
    """g (x's batched gradient) summed over the loop dimensions x was broadcast along (or broadcast to x's
    shape when it does not depend on the loop)."""
    extra = g.type.ndim - x.type.ndim
    if extra > 0:
        g = tsum(g, axis=tuple(range(extra)))
    elif extra < 0:
        g = alloc(g, *[shape_i(x, d) for d in range(x.type.ndim)])
    if g.type.dtype != x.type.dtype and x.type.dtype.startswith("float"):
        g = cast(g, x.type.dtype)
    return sum_to_shape(g, x) if x.type.ndim > core_ndim and extra >= 0 else g


# ---------------------------------------------------------------- vectorize_graph

def vectorize_graph(outputs: Any, replace: Dict[Variable, Variable]) -> Any:
    """outputs rebuilt over the replacements of replace's keys, which may have extra leading (batch) dimensions:
    elementwise nodes broadcast, DimShuffles shift, every other node becomes a Blockwise of its op."""
    single = not isinstance(outputs, (list, tuple))
    outs = [outputs] if single else list(outputs)
    memo: Dict[Variable, Variable] = {k: as_tensor_variable(v) for k, v in replace.items()}
    for node in io_toposort(list(memo), outs):
        new = [memo.get(v, v) for v in node.inputs]
        if all(a is b for a, b in zip(new, node.inputs)):
            continue
        memo.update(zip(node.outputs, vectorize_node(node, new)))
    result = [memo.get(o, o) for o in outs]
    return result[0] if single else result


def vectorize_node(node: Apply, new_inputs: Sequence[Variable]) -> List[Variable]:
    """The outputs of node applied to new_inputs (the old ones with extra leading dimensions)."""
    for i, (old, new) in enumerate(zip(node.inputs, new_inputs)):
        if not isinstance(old.type, TensorType) or not isinstance(new.type, TensorType):
            raise NotImplementedError(f"vectorize: {node.op} has a non-tensor input {i} ({old.type})")
        if new.type.ndim < old.type.ndim:
            raise ValueError(f"vectorize: the replacement of input {i} of {node.op} has fewer dimensions "
                             f"({new.type.ndim}) than the original ({old.type.ndim})")
    extra = [n.type.ndim - o.type.ndim for o, n in zip(node.inputs, new_inputs)]
    op = node.op
    if not any(extra):
        return _as_list(op.make_node(*new_inputs).outputs)
    special = _vectorize_shape_op(op, new_inputs, extra)
    if special is not None:
        return special
    if isinstance(op, DimShuffle):
        b = extra[0]
        order = tuple(range(b)) + tuple(d if d == "x" else d + b for d in op.new_order)
        return [DimShuffle(new_inputs[0].type.ndim, order)(new_inputs[0])]
    if isinstance(op, Elemwise):
        return _as_list(op(*align_batch(new_inputs, extra, [0] * len(extra), [0] * len(extra))))
    if isinstance(op, Blockwise):
        loops = [o.type.ndim - len(c) for o, c in zip(node.inputs, op.inputs_sig)]
        cores = [len(c) for c in op.inputs_sig]
        return _as_list(Blockwise(op.core_op, op.signature)(*align_batch(new_inputs, extra, loops, cores)))
    return _as_list(Blockwise(op, node_signature(node))(*new_inputs))


def _vectorize_shape_op(op: Op, new_inputs: Sequence[Variable], extra: Sequence[int]
                        ) -> Optional[List[Variable]]:
    """Shape ops ask for the core shape, which every loop index shares: the core part of the batched shape
    (not a Blockwise of Shape); a SumToShape of a batched gradient keeps the batch dims as they are."""
    e = extra[0]
    if type(op) is Shape:
        return [shape(new_inputs[0])[e:]]
    if type(op) is Shape_i:
        return [Shape_i(op.i + e)(new_inputs[0])]
    if type(op) is Alloc and not any(extra[1:]):
        value, lengths = new_inputs[0], list(new_inputs[1:])
        pad = len(lengths) - (value.type.ndim - e)
        value = DimShuffle(value.type.ndim, tuple(range(e)) + ("x",) * pad + tuple(range(e, value.type.ndim)))(value)
        return [Alloc()(value, *[shape_i(value, d) for d in range(e)], *lengths)]
    if type(op) is SumToShape and extra[1] == 0:
        g, target = new_inputs
        full = join(0, shape(g)[:e], target)
        return [SumToShape(tuple(g.type.shape[:e]) + tuple(op.static_shape))(g, full)]
    return None


def align_batch(inputs: Sequence[Variable], extra: Sequence[int], loops: Sequence[int],
                cores: Sequence[int]) -> List[Variable]:
    """Pad each input (extra new batch dims, then loops old loop dims, then its core) with broadcastable dims so
    that all have max(extra) batch dims and max(loops) loop dims, aligned."""
    nb, nl = max(extra), max(loops)
    out = []
    for x, e, lp in zip(inputs, extra, loops):
        nd = x.type.ndim
        order = ("x",) * (nb - e) + tuple(range(e)) + ("x",) * (nl - lp) + tuple(range(e, nd))
        out.append(x if order == tuple(range(nd)) else DimShuffle(nd, order)(x))
    return out


__all__ = ["Blockwise", "vectorize_graph", "vectorize_node", "CoreGraph", "core_type"]
