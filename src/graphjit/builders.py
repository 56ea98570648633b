"""OpFromGraph: a graph packaged as one op (Theano's ``theano.OpFromGraph``).

The op holds a private copy of the graph from ``inputs`` to ``outputs``.  Shared variables the graph reads become
extra inputs, appended by the op itself (the caller passes only ``inputs``).  It runs its inner graph in PY mode
(``perform``); its gradient and R_op differentiate the inner graph unless overridden; its shapes come from the
inner graph's shape inference.  ``inline=True`` replaces it by its graph at rewrite time in every mode; the LLVM
modes always do (the ``inline_inner_graphs`` rewrite, tensor/rewriting/inner_graphs.py), so its native code is
the inner graph's own, fused with its neighbours.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from graphjit.autodiff import Lop, rop_unchecked
from graphjit.graph.basic import (Apply, Constant, Node, Variable, ancestors, applys_between, clone_get_equiv,
                                  clone_replace, io_toposort)
from graphjit.graph.compile_hook import build_function
from graphjit.graph.op import Op
from graphjit.graph.shared import SharedVariable
from graphjit.graph.utils import MethodNotDefined
from graphjit.scan_module.inner import graph_key
from graphjit.tensor.shape_feature import symbolic_shape_of
from graphjit.tensor.type import TensorType

__all__ = ["OpFromGraph"]

Overrides = Optional[Callable[..., Any]]


class OpFromGraph(Op):
    """An op computing ``outputs`` from ``inputs`` (a graph), usable like any op: ``op(x, y)``.

    ``inline``: expand it into its graph at rewrite time.  ``lop_overrides(inputs, outputs, output_grads)``,
    ``grad_overrides(inputs, output_grads)`` and ``rop_overrides(inputs, eval_points)`` replace the derivatives
    computed from the inner graph (each returns one Variable, or None for no gradient, per input / output).
    """

    def __init__(self, inputs: Sequence[Variable], outputs: Union[Variable, Sequence[Variable]],
                 inline: bool = False, grad_overrides: Overrides = None, lop_overrides: Overrides = None,
                 rop_overrides: Overrides = None, name: Optional[str] = None) -> None:
        if grad_overrides is not None and lop_overrides is not None:
            raise ValueError("OpFromGraph: give grad_overrides or lop_overrides, not both")
        inputs = list(inputs)
        outputs = [outputs] if isinstance(outputs, Variable) else list(outputs)
        for k, v in enumerate(inputs):
            if not isinstance(v, Variable) or isinstance(v, Constant):
                raise TypeError(f"OpFromGraph: input {k} ({v!r}) must be a symbolic Variable, not a constant")
        for k, v in enumerate(outputs):
            if not isinstance(v, Variable):
                raise TypeError(f"OpFromGraph: output {k} ({v!r}) is not a Variable")
        self.shared_inputs = _free_shared(inputs, outputs)
        outer = inputs + self.shared_inputs
        memo: Dict[Node, Node] = {v: _fresh(v) for v in outer}
        equiv = clone_get_equiv(outer, outputs, copy_inputs=False, copy_orphans=False, memo=memo)
        self.inner_inputs: List[Variable] = [equiv[v] for v in outer]
        self.inner_outputs: List[Variable] = [equiv[v] for v in outputs]
        self.n_explicit = len(inputs)
        self.inline = bool(inline)
        self.grad_overrides, self.lop_overrides, self.rop_overrides = grad_overrides, lop_overrides, rop_overrides
        self.name = name
        self._fn: Any = None

    def __str__(self) -> str:
        return f"OpFromGraph{{{self.name}}}" if self.name else f"OpFromGraph{{inline={self.inline}}}"

    # --- identity: by structure, so two built from equal graphs are equal and their nodes merge
    def _identity(self) -> tuple:
        """The inner graph's structure (constants by value, ops by their props), the flags, the overrides
        (by identity) and the shared variables read (by identity); not the name."""
        key = self.__dict__.get("_key")
        if key is None:
            structure = graph_key(_Graph(self.inner_inputs, self.inner_outputs))
            key = (structure, self.n_explicit, self.inline, self.grad_overrides, self.lop_overrides,
                   self.rop_overrides, tuple(self.shared_inputs))
            self.__dict__["_key"] = key
        return key

    def __eq__(self, other: Any) -> bool:
        return self is other or (type(self) is type(other) and self._identity() == other._identity())

    def __hash__(self) -> int:
        return hash(self._identity())

    def __getstate__(self) -> Dict[str, Any]:
        state = super().__getstate__()
        state["_fn"] = None
        state.pop("_key", None)
        return state

    def make_node(self, *inputs: Any) -> Apply:
        """The node over the explicit inputs (converted to the inner inputs' types) and the shared variables."""
        if len(inputs) != self.n_explicit:
            raise TypeError(f"{self} takes {self.n_explicit} input(s), got {len(inputs)}")
        converted = [_convert(x, inner, k, self) for k, (x, inner) in enumerate(zip(inputs, self.inner_inputs))]
        outs = [v.type() for v in self.inner_outputs]
        return Apply(self, converted + list(self.shared_inputs), outs)

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        """The only output, or the list of outputs."""
        node = self.make_node(*inputs, **kwargs)
        return node.outputs[0] if len(node.outputs) == 1 else list(node.outputs)

    # --- expansion (inline rewrite, derivatives, shapes)
    def inline_expansion(self, node: Apply) -> List[Variable]:
        """The inner graph's outputs rebuilt over node's inputs (what the inline rewrite substitutes)."""
        return self.expand(node.inputs)

    def expand(self, inputs: Sequence[Variable]) -> List[Variable]:
        """The inner graph's outputs computed from inputs (explicit ones, then the shared variables)."""
        memo: Dict[Node, Node] = dict(zip(self.inner_inputs, inputs))
        equiv = clone_get_equiv(self.inner_inputs, self.inner_outputs, copy_inputs=False, copy_orphans=False,
                                memo=memo)
        return [equiv[v] for v in self.inner_outputs]

    # --- computing
    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: List[Any]) -> None:
        """Run the inner graph (compiled once, in PY mode)."""
        if self._fn is None:
            self._fn = build_function(self.inner_inputs, self.inner_outputs, mode="PY",
                                      on_unused_input="ignore")
        results = self._fn(*inputs)
        results = results if isinstance(results, list) else [results]
        for cell, value in zip(output_storage, results):
            cell[0] = value

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: List[tuple]) -> List[tuple]:
        """The inner graph's inferred shapes over node's inputs (MethodNotDefined when they need its values)."""
        inner_nodes = set(applys_between(self.inner_inputs, self.inner_outputs))
        shapes = []
        for out in self.inner_outputs:
            if not isinstance(out.type, TensorType):
                raise MethodNotDefined(f"{self}: output {out} is not a tensor")
            vec = symbolic_shape_of(out, self.inner_inputs)
            if any(v.owner in inner_nodes for v in ancestors([vec])):
                raise MethodNotDefined(f"{self}: the shape of {out} depends on computed values")
            shapes.append(vec)
        memo: Dict[Node, Node] = dict(zip(self.inner_inputs, node.inputs))
        equiv = clone_get_equiv(self.inner_inputs, shapes, copy_inputs=False, copy_orphans=False, memo=memo)
        return [tuple(equiv[vec][d] for d in range(out.type.ndim))
                for vec, out in zip(shapes, self.inner_outputs)]

    # --- derivatives
    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> List[Optional[Variable]]:
        """The vector-Jacobian product of the inner graph (or the override's)."""
        if self.lop_overrides is not None:
            return _complete(self.lop_overrides(list(inputs), list(outputs), list(output_grads)), inputs)
        if self.grad_overrides is not None:
            return _complete(self.grad_overrides(list(inputs), list(output_grads)), inputs)
        grads = Lop(self.inner_outputs, self.inner_inputs, list(output_grads), disconnected_inputs="ignore")
        return self._over(grads, inputs)

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Optional[Variable]]
             ) -> List[Optional[Variable]]:
        """The Jacobian-vector product of the inner graph (or the override's)."""
        if self.rop_overrides is not None:
            return list(self.rop_overrides(list(inputs), list(eval_points)))
        pairs = [(x, p) for x, p in zip(inputs, eval_points) if p is not None]
        if not pairs:
            return [None] * len(self.inner_outputs)
        inner = dict(zip(inputs, self.inner_inputs))
        out = rop_unchecked(self.inner_outputs, [inner[x] for x, _ in pairs], [p for _, p in pairs])
        return self._over(list(out) if isinstance(out, (list, tuple)) else [out], inputs)

    def _over(self, exprs: Sequence[Optional[Variable]], inputs: Sequence[Variable]) -> List[Optional[Variable]]:
        """exprs (built over the inner inputs, which stay leaves for the differentiation) over inputs."""
        present = [e for e in exprs if e is not None]
        moved = iter(clone_replace(present, dict(zip(self.inner_inputs, inputs))) if present else [])
        return [None if e is None else next(moved) for e in exprs]


class _Graph:
    """inputs -> outputs seen as graph_key sees a FunctionGraph (no clients attached to the op's graph)."""

    def __init__(self, inputs: List[Variable], outputs: List[Variable]) -> None:
        self.inputs, self.outputs = inputs, outputs

    def toposort(self) -> List[Apply]:
        """The nodes between inputs and outputs, in order."""
        return io_toposort(self.inputs, self.outputs)


def _fresh(v: Variable) -> Variable:
    new = v.type()
    new.name = v.name
    return new


def _free_shared(inputs: List[Variable], outputs: List[Variable]) -> List[Variable]:
    """The shared variables the graph reads that are not inputs; ValueError for another missing input."""
    given = set(inputs)
    shared: List[Variable] = []
    for v in ancestors(outputs, blockers=inputs):
        if v.owner is not None or v in given or isinstance(v, Constant):
            continue
        if isinstance(v, SharedVariable):
            if v not in shared:
                shared.append(v)
            continue
        raise ValueError(f"OpFromGraph: the outputs depend on {v.describe()}, which is not among the inputs")
    return shared


def _convert(x: Any, inner: Variable, k: int, op: OpFromGraph) -> Variable:
    """x as a Variable of inner's type; TypeError naming input k otherwise."""
    try:
        return inner.type.filter_variable(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{op}: input {k} ({x}) does not fit the inner input's type {inner.type}: {e}") from None


def _complete(grads: Sequence[Any], inputs: Sequence[Variable]) -> List[Optional[Variable]]:
    """Override results for the explicit inputs, None (no gradient) for the shared variables after them."""
    grads = list(grads)
    if len(grads) > len(inputs):
        raise ValueError(f"OpFromGraph: the gradient override returned {len(grads)} terms for {len(inputs)} inputs")
    return grads + [None] * (len(inputs) - len(grads))
