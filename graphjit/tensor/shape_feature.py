"""ShapeFeature: the symbolic shape of every variable of a FunctionGraph, from the ops' infer_shape.

Each tensor variable gets a tuple of int64 0-d tensors, one per dimension: a constant where the
static shape knows the length, ``Shape_i(d)(root)`` for graph inputs, and otherwise what the owner's
``infer_shape`` returns from its inputs' shapes. So ``shape_of[out]`` is a small graph over the inputs'
lengths that does not compute ``out`` itself (rewrites use it to drop ``x.shape[0]``'s dependence
on x's value). An op without ``infer_shape`` falls back to ``Shape_i(d)(out)``.
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable, equal_computations, io_toposort, walk
from graphjit.graph.features import AlreadyThere, Feature
from graphjit.graph.utils import MethodNotDefined
from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.join import make_vector
from graphjit.tensor.shape import Shape_i
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable

__all__ = ["ShapeFeature", "ShapeInference", "symbolic_shape_of"]

ShapeTuple = Tuple[TensorVariable, ...]


class ShapeInference:
    """The shape bookkeeping of ShapeFeature, usable on any graph (no FunctionGraph needed)."""

    def __init__(self) -> None:
        self.shape_of: Dict[Variable, Optional[ShapeTuple]] = {}
        # var -> the variables whose shape tuples refer to var (updated when var is replaced)
        self.shape_of_reverse_index: Dict[Variable, Set[Variable]] = {}
        self._constants: Dict[int, TensorVariable] = {}

    # --- entries -----------------------------------------------------------------------------
    def lscalar(self, value: int) -> TensorVariable:
        """The shared int64 constant of value."""
        if value not in self._constants:
            self._constants[value] = constant(int(value), dtype="int64")
        return self._constants[value]

    def unpack(self, entry: Any, var: Variable, d: int) -> TensorVariable:
        """One length returned by an infer_shape as an int64 0-d tensor."""
        if isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_)):
            return self.lscalar(int(entry))
        if not isinstance(entry, Variable):
            raise TypeError(f"infer_shape of {var.owner.op if var.owner else var} gave {entry!r} "
                            f"for dimension {d} of {var.describe()}; expected an int or a 0-d int")
        t = as_tensor_variable(entry)
        if t.ndim != 0 or t.type.numpy_dtype.kind not in "iu":
            raise TypeError(f"infer_shape of {var.owner.op if var.owner else var} gave "
                            f"{t.describe()} for dimension {d} of {var.describe()}; "
                            "expected a 0-d integer")
        if isinstance(t, Constant):
            return self.lscalar(int(np.asarray(t.data)))
        return t if t.dtype == "int64" else cast(t, "int64")

    def shape_tuple(self, var: Variable) -> Optional[ShapeTuple]:
        """var's own shape: constants where static, Shape_i(d)(var) elsewhere (None if no tensor)."""
        if not isinstance(var.type, TensorType):
            return None
        if isinstance(var, Constant):
            return tuple(self.lscalar(s) for s in np.shape(var.data))
        return tuple(self.lscalar(s) if s is not None else Shape_i(d)(var)
                     for d, s in enumerate(var.type.shape))

    def set_shape(self, var: Variable, entries: Optional[Sequence[Any]]) -> None:
        """Record var's shape; static lengths always win over the symbolic ones."""
        if entries is None or not isinstance(var.type, TensorType):
            self.shape_of[var] = None if not isinstance(var.type, TensorType) else self.shape_tuple(var)
            return
        if len(entries) != var.type.ndim:
            raise ValueError(f"a shape of {len(entries)} entries was given for {var.describe()}")
        shape = []
        for d, (static, entry) in enumerate(zip(var.type.shape, entries)):
            shape.append(self.lscalar(static) if static is not None else self.unpack(entry, var, d))
        self.shape_of[var] = tuple(shape)
        for root in _referenced_vars(shape):
            self.shape_of_reverse_index.setdefault(root, set()).add(var)

    def init_var(self, var: Variable) -> None:
        """Give var (a root, or a variable whose owner is unknown) its own shape if it has none."""
        if var not in self.shape_of:
            self.set_shape(var, self.shape_tuple(var))

    # --- nodes ---------------------------------------------------------------------------------
    def infer_node(self, node: Apply, fgraph: Any = None) -> None:
        """Compute the shapes of node's outputs from its inputs' shapes (they must be known)."""
        for inp in node.inputs:
            self.init_var(inp)
        in_shapes = [self.shape_of[i] for i in node.inputs]
        try:
            out_shapes = node.op.infer_shape(fgraph, node, in_shapes)
        except (MethodNotDefined, NotImplementedError):
            out_shapes = [self.shape_tuple(o) for o in node.outputs]
        except Exception as e:  # a bug in an op's infer_shape must not stop compilation
            warnings.warn(f"infer_shape of {node.op} failed ({type(e).__name__}: {e}); "
                          "using the shapes of its outputs", stacklevel=2)
            out_shapes = [self.shape_tuple(o) for o in node.outputs]
        if len(out_shapes) != len(node.outputs):
            raise ValueError(f"infer_shape of {node.op} gave {len(out_shapes)} shapes for "
                             f"{len(node.outputs)} outputs")
        for out, shp in zip(node.outputs, out_shapes):
            self.set_shape(out, shp)

    def replace_var(self, old: Variable, new: Variable) -> None:
        """new takes old's place: shapes that referred to old now refer to new."""
        self.init_var(new)
        users = [v for v in self.shape_of_reverse_index.pop(old, ()) if v is not old and self.shape_of.get(v)]
        if not users:
            return
        # one substitution for all of them: shape graphs share subexpressions (Shape_i of the same variable...)
        flat = _substitute([s for v in users for s in self.shape_of[v]], old, new)
        start = 0
        for var in users:
            n = len(self.shape_of[var])
            self.shape_of[var] = tuple(flat[start:start + n])
            start += n
            for root in _referenced_vars(self.shape_of[var]):
                self.shape_of_reverse_index.setdefault(root, set()).add(var)

    def shape_vector(self, var: Variable) -> TensorVariable:
        """var's shape as an int64 vector (a constant when every length is known)."""
        shape = self.shape_of[var]
        if shape is None:
            raise TypeError(f"{var.describe()} is not a tensor and has no shape")
        if all(isinstance(s, Constant) for s in shape):
            return constant(np.array([int(np.asarray(s.data)) for s in shape], dtype="int64"))
        return make_vector(list(shape), dtype="int64")


def _substitute(outputs: List[Variable], old: Variable, new: Variable) -> List[Variable]:
    """outputs with old replaced by new, rebuilding only the nodes that depend on old.

    (clone_replace copies the whole graph: shape graphs are deep broadcast-shape expressions and most of
    them do not read old; copying them was ~19% of the W3 training graph's rewriting calls.)
    """
    memo: Dict[Variable, Variable] = {old: new}
    for node in io_toposort([old], outputs):
        inputs = [memo.get(i, i) for i in node.inputs]
        if any(a is not b for a, b in zip(inputs, node.inputs)):
            rebuilt = node.clone_with_new_inputs(inputs, strict=False)
            memo.update(zip(node.outputs, rebuilt.outputs))
    return [memo.get(o, o) for o in outputs]


def _referenced_vars(shape: Iterable[Variable]) -> Set[Variable]:
    """The variables a shape tuple's graph reads: Shape_i inputs (not walked into) and the others."""
    found: Set[Variable] = set()

    def expand(v: Variable) -> Optional[List[Variable]]:
        if v.owner is None:
            return None
        if isinstance(v.owner.op, Shape_i):
            found.add(v.owner.inputs[0])  # only its length is read: do not walk into its graph
            return None
        return list(v.owner.inputs)

    for v in walk(list(shape), expand):
        if not isinstance(v, Constant):
            found.add(v)
    return found


class ShapeFeature(Feature, ShapeInference):
    """Keeps ``fgraph.shape_feature.shape_of[var]``: a tuple of int64 0-d tensors per tensor."""

    def __init__(self) -> None:
        ShapeInference.__init__(self)
        self.fgraph: Any = None

    def on_attach(self, fgraph: Any) -> None:
        if getattr(fgraph, "shape_feature", None) is not None:
            raise AlreadyThere("a ShapeFeature is already attached")
        self.fgraph = fgraph
        fgraph.shape_feature = self
        for var in fgraph.inputs:
            self.init_var(var)
        for node in fgraph.toposort():
            self.on_import(fgraph, node, "on_attach")

    def on_detach(self, fgraph: Any) -> None:
        self.shape_of.clear()
        self.shape_of_reverse_index.clear()
        self.fgraph = None
        if getattr(fgraph, "shape_feature", None) is self:
            del fgraph.shape_feature

    def on_import(self, fgraph: Any, node: Apply, reason: Optional[str]) -> None:
        if any(o in self.shape_of for o in node.outputs):
            return
        self.infer_node(node, fgraph)

    def on_change_input(self, fgraph: Any, node: Any, i: int, old: Variable, new: Variable,
                        reason: Optional[str]) -> None:
        self.replace_var(old, new)

    def get_shape(self, var: Variable, d: int) -> TensorVariable:
        """The length of dimension d of var."""
        if var not in self.shape_of:
            self.init_var(var)
        return self.shape_of[var][d]

    def same_shape(self, x: Variable, y: Variable, dim_x: Optional[int] = None,
                   dim_y: Optional[int] = None) -> bool:
        """True if x and y (or their dimensions dim_x, dim_y) provably have the same length(s)."""
        sx, sy = self.shape_of.get(x), self.shape_of.get(y)
        if sx is None or sy is None:
            return False
        if dim_x is not None:
            sx, sy = (sx[dim_x],), (sy[dim_y if dim_y is not None else dim_x],)
        return len(sx) == len(sy) and equal_computations(list(sx), list(sy))

    def clone(self) -> "ShapeFeature":
        """A fresh ShapeFeature for a cloned graph."""
        return ShapeFeature()


def symbolic_shape_of(var: Variable, inputs: Sequence[Variable]) -> TensorVariable:
    """var's shape as an int64 vector computed from inputs' lengths, without computing var."""
    inference = ShapeInference()
    for inp in inputs:
        inference.init_var(inp)
    for node in io_toposort(list(inputs), [var]):
        inference.infer_node(node)
    inference.init_var(var)
    return inference.shape_vector(var)
