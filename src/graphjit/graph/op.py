"""Op: the definition of a computation; make_node builds Apply nodes, perform computes values."""

from __future__ import annotations

import operator
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.test_value import FLAG_VALUES, compute_test_values
from graphjit.graph.utils import MethodNotDefined

StorageCell = List[Any]


# op class -> a function returning the tuple of its __props__ values (an op's hash and equality read them; the
# rewrites and the merge hash many ops: an attrgetter costs a fraction of a generator over the names)
_PROPS_GETTERS: Dict[type, Callable[[Any], Tuple[Any, ...]]] = {}


def _props_getter(names: Sequence[str]) -> Callable[[Any], Tuple[Any, ...]]:
    """A function of an op returning the values of names, as a tuple."""
    names = tuple(names)
    if not names:
        return lambda op: ()
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda op: (one(op),)
    return operator.attrgetter(*names)


class Op:
    """Base class of all operations.

    Subclasses define make_node and perform (or make_thunk). Setting ``__props__`` to a tuple of
    attribute names generates ``__eq__``, ``__hash__`` and ``__str__`` from those attributes.

    The LLVM backend registers the lowerings of graphjit's ops itself (``link/llvm/registry.py``); a user's
    own op may instead define the hook ``lower(ctx: GraphContext, node, inputs) -> outputs`` (ctx: the
    ``link.llvm.ir.graph_context.GraphContext`` the entry is built with; inputs/outputs: IR pointers), optionally
    ``can_lower(node) -> bool`` (False: this node calls back into perform) and ``lower_version() -> tuple``
    (in the cache key).  Along the op's MRO, the first class that has a registered lowering or defines
    ``lower`` decides.  An op with neither runs its perform from the compiled function (docs/lowering.md).
    """

    default_output: Optional[int] = None
    view_map: Dict[int, List[int]] = {}
    destroy_map: Dict[int, List[int]] = {}
    params_type = None

    # --- identity -------------------------------------------------------------------------
    def _props(self) -> Tuple[Any, ...]:
        get = _PROPS_GETTERS.get(type(self))
        if get is None:
            get = _PROPS_GETTERS[type(self)] = _props_getter(type(self).__props__)
        return get(self)

    def _props_dict(self) -> Dict[str, Any]:
        """The __props__ attributes as a dict."""
        return {name: getattr(self, name) for name in self.__props__}

    def __eq__(self, other: Any) -> bool:
        if not hasattr(self, "__props__"):
            return self is other
        return type(self) is type(other) and self._props() == other._props()

    def __hash__(self) -> int:
        if not hasattr(self, "__props__"):
            return object.__hash__(self)
        return hash((type(self), self._props()))

    def __str__(self) -> str:
        props = getattr(self, "__props__", None)
        name = type(self).__name__
        if not props:
            return name
        return f"{name}{{{', '.join(f'{p}={_prop_str(getattr(self, p))}' for p in props)}}}"

    def __repr__(self) -> str:
        return str(self)

    def __getstate__(self) -> Dict[str, Any]:
        """The attributes, without the documentation string module-level instances carry (``gt.add``):
        equal ops pickle to equal bytes, which is what the compile caches' keys hash."""
        state = dict(self.__dict__)
        state.pop("__doc__", None)
        return state

    # --- graph building ------------------------------------------------------------------
    def make_node(self, *inputs: Variable) -> Apply:
        """Return an Apply of this op to inputs, with outputs of the right Types."""
        raise MethodNotDefined(f"{type(self).__name__}.make_node")

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        """Build the node and return its default output, its only output or all outputs."""
        node = self.make_node(*inputs, **kwargs)
        if FLAG_VALUES["compute_test_value"] != "off":
            compute_test_values(node)
        if self.default_output is not None:
            return node.outputs[self.default_output]
        if len(node.outputs) == 1:
            return node.outputs[0]
        return node.outputs

    # --- computing -----------------------------------------------------------------------
    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: List[StorageCell],
                *params: Any) -> None:
        """Compute the outputs from input values into one-element storage cells."""
        raise MethodNotDefined(f"{type(self).__name__}.perform")

    def get_params(self, node: Apply) -> Any:
        """The op's parameters for node, a value of params_type."""
        if self.params_type is None:
            raise MethodNotDefined(f"{type(self).__name__}.get_params")
        if hasattr(self.params_type, "get_params"):
            return self.params_type.get_params(self)
        raise MethodNotDefined(f"{type(self).__name__}.get_params")

    def prepare_node(self, node: Apply, storage_map: Any, compute_map: Any, impl: Optional[str]) -> None:
        """Hook called before make_thunk; nothing by default."""

    def make_thunk(self, node: Apply, storage_map: Dict[Variable, StorageCell],
                   compute_map: Dict[Variable, List[int]], no_recycling: Sequence[Variable],
                   impl: Optional[str] = None) -> Callable[[], None]:
        """Return a zero-argument callable that computes node's outputs from storage_map."""
        self.prepare_node(node, storage_map, compute_map, impl)
        return make_perform_thunk(self, node, storage_map, compute_map, no_recycling)

    # --- optional contract ---------------------------------------------------------------
    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: List[Tuple[Any, ...]]
                    ) -> List[Tuple[Any, ...]]:
        """Symbolic output shapes from symbolic input shapes."""
        raise MethodNotDefined(f"{type(self).__name__}.infer_shape")

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]) -> List[Variable]:
        """One symbolic gradient term (a Jacobian-vector product) per input."""
        raise MethodNotDefined(f"{type(self).__name__}.grad")

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> List[Variable]:
        """Like grad, with the outputs available; calls grad by default."""
        return self.grad(inputs, output_grads)

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Optional[Variable]]
             ) -> List[Optional[Variable]]:
        """The Jacobian of each output right-multiplied by eval_points."""
        raise MethodNotDefined(f"{type(self).__name__}.R_op")

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        """``pattern[input][output]``: whether that input's elements affect that output's elements."""
        return [[True] * len(node.outputs) for _ in node.inputs]

    def do_constant_folding(self, fgraph: Any, node: Apply) -> bool:
        """Whether a node with all-constant inputs may be replaced by its value at compile time."""
        return True

    def flops(self, inputs: Any, outputs: Any) -> Any:
        """Floating-point operation count, for profiling."""
        raise MethodNotDefined(f"{type(self).__name__}.flops")


def _prop_str(value: Any) -> str:
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return str(value)


def make_perform_thunk(op: Op, node: Apply, storage_map: Dict[Variable, StorageCell],
                       compute_map: Dict[Variable, List[int]], no_recycling: Sequence[Variable]
                       ) -> Callable[[], None]:
    """A thunk that runs op.perform on node with the cells of storage_map."""
    in_cells = [storage_map[v] for v in node.inputs]
    out_cells = [storage_map[v] for v in node.outputs]
    out_computed = [compute_map[v] for v in node.outputs] if compute_map is not None else []
    perform = op.perform
    extra = (op.get_params(node),) if op.params_type is not None else ()

    def thunk() -> None:
        perform(node, [c[0] for c in in_cells], out_cells, *extra)
        for flag in out_computed:
            flag[0] = True

    thunk.inputs = in_cells  # type: ignore[attr-defined]
    thunk.outputs = out_cells  # type: ignore[attr-defined]
    thunk.perform = perform  # type: ignore[attr-defined]
    thunk.lazy = False  # type: ignore[attr-defined]
    return thunk

