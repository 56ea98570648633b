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
        # a length variable -> the variable whose shape tuple last held it, and the variables whose shape
        # graphs reach it (_index stops there; replace_var follows these links, _substitute stops at clean ones)
        self._entry_owner: Dict[Variable, Variable] = {}
        self._entry_users: Dict[Variable, Set[Variable]] = {}

    # --- entries -----------------------------------------------------------------------------
    def lscalar(self, value: int) -> TensorVariable:
        """The shared int64 constant of value."""
        if value not in self._constants:
            self._constants[value] = constant(int(value), dtype="int64")
        return self._constants[value]

    def unpack(self, entry: Any, var: Variable, d: int) -> TensorVariable:
        """One length returned by an infer_shape as an int64 0-d tensor."""
        typ = getattr(entry, "type", None)
        if type(typ) is TensorType and typ.dtype == "int64" and not typ.shape and not isinstance(entry, Constant):
            return entry                    # most lengths are one already (an input's, a broadcast's)
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
        self._index(var)

    def _index(self, var: Variable) -> None:
        """Record what var's shape tuple refers to (reverse index) and which lengths it holds.

        The walk of its graph stops at a length of another variable's current shape (recorded in
        _entry_users): a broadcast's length chains through every earlier operand's, and walking the whole
        chain for each variable made a 10,000-node graph's rewriting quadratic (W9).  replace_var follows
        those links, so the variables found are the same as a walk of the whole graph would find.
        """
        shape = self.shape_of[var]
        for s in shape:
            if s.owner is not None:
                self._entry_owner[s] = var
        stops: List[Variable] = []
        for root in _referenced_vars(shape, self._foreign(shape, stops)):
            self.shape_of_reverse_index.setdefault(root, set()).add(var)
        for v in stops:
            self._entry_users.setdefault(v, set()).add(var)

    def _foreign(self, shape: ShapeTuple, stops: List[Variable]) -> Any:
        """A test for _referenced_vars: is v a length of another variable's current shape (appended to stops)."""
        own = {id(s) for s in shape}
        owner_of, shape_of = self._entry_owner, self.shape_of

        def foreign(v: Variable) -> bool:
            owner = owner_of.get(v)
            if owner is None or id(v) in own:
                return False
            held = shape_of.get(owner)
            if held is None or not any(s is v for s in held):
                return False
            stops.append(v)
            return True
        return foreign

    def _users(self, old: Variable) -> List[Variable]:
        """The variables whose shape graphs may refer to old: the reverse index, then whoever reaches a length
        of one of them (a superset: substituting a shape that does not refer to old changes nothing)."""
        found = [v for v in self.shape_of_reverse_index.pop(old, ()) if v is not old]
        seen = set(found)
        for var in found:                  # grows while it is read
            for s in self.shape_of.get(var) or ():
                for user in self._entry_users.get(s, ()):
                    if user not in seen and user is not old:
                        seen.add(user)
                        found.append(user)
        return [v for v in found if self.shape_of.get(v)]

    def copy_shape(self, old: Variable, new: Variable) -> None:
        """Give new old's current shape tuple (new computes the same thing from the same inputs)."""
        shape = self.shape_of.get(old)
        self.shape_of[new] = shape
        if shape is not None:
            self._index(new)

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
        users = self._users(old)
        if not users:
            return
        # one substitution for all of them: shape graphs share subexpressions (Shape_i of the same variable...)
        flat = _substitute([s for v in users for s in self.shape_of[v]], old, new, self._clean(set(users)))
        start = 0
        for var in users:
            n = len(self.shape_of[var])
            self.shape_of[var] = tuple(flat[start:start + n])
            start += n
            for s in self.shape_of[var]:
                if s.owner is not None:
                    self._entry_owner[s] = var
        for var in users:       # once every new tuple is in place: each walk stops at the others' lengths
            self._index(var)

    def _clean(self, users: Set[Variable]) -> Any:
        """A test: does length variable v provably not refer to what users' shapes refer to?  True when v is
        in the current shape tuple of a variable that is not a user (the reverse index says that tuple does
        not refer to it), so the substitution need not walk into v's graph."""
        owner_of, shape_of = self._entry_owner, self.shape_of

        def clean(v: Variable) -> bool:
            owner = owner_of.get(v)
            if owner is None or owner in users:
                return False
            shape = shape_of.get(owner)
            return shape is not None and any(s is v for s in shape)
        return clean

    def shape_vector(self, var: Variable) -> TensorVariable:
        """var's shape as an int64 vector (a constant when every length is known)."""
        shape = self.shape_of[var]
        if shape is None:
            raise TypeError(f"{var.describe()} is not a tensor and has no shape")
        if all(isinstance(s, Constant) for s in shape):
            return constant(np.array([int(np.asarray(s.data)) for s in shape], dtype="int64"))
        return make_vector(list(shape), dtype="int64")


def _substitute(outputs: List[Variable], old: Variable, new: Variable,
                clean: Any = None) -> List[Variable]:
    """outputs with old replaced by new, rebuilding only the nodes that depend on old.

    (clone_replace copies the whole graph: shape graphs are deep broadcast-shape expressions and most of
    them do not read old; copying them was ~19% of the W3 training graph's rewriting calls.)  clean(v): True
    if v's graph provably does not refer to old; the walk does not enter it.  A length of a broadcast is a
    chain through every earlier operand's length: walking all of it (io_toposort from the outputs down to the
    roots) for each replacement made rewriting a 10,000-node graph quadratic (W9).
    """
    memo: Dict[Variable, Variable] = {old: new}
    for node in _nodes_between(old, outputs, clean or (lambda v: False)):
        inputs = [memo.get(i, i) for i in node.inputs]
        if any(a is not b for a, b in zip(inputs, node.inputs)):
            rebuilt = node.clone_with_new_inputs(inputs, strict=False)
            memo.update(zip(node.outputs, rebuilt.outputs))
    return [memo.get(o, o) for o in outputs]


def _nodes_between(old: Variable, outputs: List[Variable], clean: Any) -> List[Apply]:
    """The owners of outputs' graph, inputs first, not walking past old, roots, clean variables or a Shape_i
    (its input is replaced when it is old; the computation above it is not walked, as _referenced_vars does
    not index it)."""
    order: List[Apply] = []
    done: Set[Apply] = set()
    seen: Set[Variable] = set()
    stack: List[Tuple[Variable, bool]] = [(o, False) for o in reversed(outputs)]
    while stack:
        var, expanded = stack.pop()
        node = var.owner
        if expanded:
            if node not in done:
                done.add(node)
                order.append(node)
            continue
        if var in seen or var is old or node is None or node in done:
            continue
        seen.add(var)
        if clean(var):
            continue
        stack.append((var, True))
        if isinstance(node.op, Shape_i):     # its length only: the computation above is not a shape's graph
            continue
        stack.extend((i, False) for i in reversed(node.inputs) if i not in seen)
    return order


def _referenced_vars(shape: Iterable[Variable], stop: Any = None) -> Set[Variable]:
    """The variables a shape tuple's graph reads: Shape_i inputs (not walked into) and the others; not walked
    into either: the variables for which stop(v) is true (found themselves)."""
    found: Set[Variable] = set()

    def expand(v: Variable) -> Optional[List[Variable]]:
        if v.owner is None or (stop is not None and stop(v)):
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
        self._entry_owner.clear()
        self._entry_users.clear()
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
