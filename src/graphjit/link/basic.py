"""The Linker base class and the GraphStore protocol, and what every linker shares: storage maps, the gc plan,
node error messages, streamline, destroyed inputs; Container and StorageCell re-exported from graph/container.py."""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.container import Container, StorageCell  # noqa: F401  (Container lives in the graph layer)
from graphjit.graph.destroyhandler import storage_root_step
from graphjit.graph.fg import FunctionGraph

StorageMap = Dict[Variable, StorageCell]
ThunkResult = Tuple[Callable[[], None], List["Container"], List["Container"],
                    List[Callable[[], None]], List[Apply]]


class SlowPath(Exception):
    """Raised by a compiled wrapper for arguments its fast path does not take; the caller filters and retries.

    Defined here, not in the LLVM backend, so that Function can catch it without loading the backend.
    """


class GraphStore(Protocol):
    """Where a linker keeps rewritten graphs between processes (compile/rewrite_cache.py): keys and blobs."""

    def key(self, fgraph: FunctionGraph, state: Any) -> Optional[str]:
        """A digest of state, of fgraph as built and of the backend's sources; None: do not cache."""

    def source_digest(self, module: str) -> str:
        """The digest of a module's source."""

    def load(self, key: str) -> Optional[bytes]:
        """The authenticated blob stored under key, or None."""

    def store(self, key: str, blob: bytes) -> None:
        """Write blob under key."""

    def discard(self, key: str) -> None:
        """Remove the entry under key."""


class Linker:
    """Turns a FunctionGraph into a thunk plus input and output containers.

    ``accept(fgraph, no_recycling)`` returns a linker bound to fgraph (a copy: the linker held by a
    Mode stays an unbound prototype); ``make_thunk()`` on the bound linker returns
    ``(thunk, input_containers, output_containers, node_thunks, order)``.
    """

    fgraph: Optional[FunctionGraph] = None
    no_recycling: Sequence[Variable] = ()
    rewrite_tags: Tuple[str, ...] = ()     # rewrite tags a Mode using this linker includes (compile/mode.py)

    def clone(self) -> "Linker":
        """An unbound copy of this linker with the same settings."""
        cp = copy.copy(self)
        cp.fgraph, cp.no_recycling = None, ()
        return cp

    def accept(self, fgraph: FunctionGraph, no_recycling: Optional[Sequence[Variable]] = None,
               profile: Any = None) -> "Linker":
        """A copy of this linker bound to fgraph; the no_recycling Variables get fresh storage per call."""
        bound = self.clone()
        bound.fgraph = fgraph
        bound.no_recycling = list(no_recycling or [])
        return bound

    def graph_store(self) -> Optional[GraphStore]:
        """Where the mode's rewritten graphs outlive the process (compile/rewrite_cache.py); None: nowhere."""
        return None

    def make_thunk(self, input_storage: Optional[Sequence[StorageCell]] = None,
                   output_storage: Optional[Sequence[StorageCell]] = None,
                   storage_map: Optional[StorageMap] = None) -> ThunkResult:
        """Build (thunk, input_containers, output_containers, node_thunks, order)."""
        raise NotImplementedError(f"{type(self).__name__}.make_thunk")

    def make_function(self) -> Callable[..., Any]:
        """A plain callable over the bound graph: positional inputs in, list of outputs out."""
        thunk, inputs, outputs, _, _ = self.make_thunk()

        def run(*args: Any) -> List[Any]:
            if len(args) != len(inputs):
                raise TypeError(f"expected {len(inputs)} arguments, got {len(args)}")
            for container, arg in zip(inputs, args):
                container.data = arg
            thunk()
            return [c.data for c in outputs]

        return run

    def _require_fgraph(self) -> FunctionGraph:
        if self.fgraph is None:
            raise ValueError(f"{type(self).__name__}: call accept(fgraph) before make_thunk()")
        return self.fgraph

    def __str__(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def map_storage(fgraph: FunctionGraph, order: Sequence[Apply],
                input_storage: Optional[Sequence[StorageCell]] = None,
                output_storage: Optional[Sequence[StorageCell]] = None,
                storage_map: Optional[StorageMap] = None) -> Tuple[List[StorageCell], List[StorageCell],
                                                                   StorageMap]:
    """One cell per Variable of fgraph (given cells kept; Constants preloaded with their data)."""
    storage_map = dict(storage_map or {})
    if input_storage is None:
        input_storage = [storage_map.get(v) or [None] for v in fgraph.inputs]
    elif len(input_storage) != len(fgraph.inputs):
        raise ValueError(f"{len(input_storage)} input cells for {len(fgraph.inputs)} inputs")
    for var, cell in zip(fgraph.inputs, input_storage):
        storage_map[var] = cell
    for node in order:
        for var in node.inputs:
            if var not in storage_map:
                if not isinstance(var, Constant):
                    raise ValueError(f"no storage for {var.describe()}, which is not an input")
                storage_map[var] = [var.data]
        for var in node.outputs:
            storage_map.setdefault(var, [None])
    if output_storage is not None:
        if len(output_storage) != len(fgraph.outputs):
            raise ValueError(f"{len(output_storage)} output cells for {len(fgraph.outputs)} outputs")
        for var, cell in zip(fgraph.outputs, output_storage):
            if var.owner is not None and storage_map.get(var) is not cell:
                storage_map[var] = cell
    for var in fgraph.outputs:
        if var not in storage_map:
            storage_map[var] = [var.data] if isinstance(var, Constant) else [None]
    return list(input_storage), [storage_map[v] for v in fgraph.outputs], storage_map


def gc_plan(fgraph: FunctionGraph, order: Sequence[Apply], storage_map: StorageMap
            ) -> List[List[StorageCell]]:
    """For each node, the cells of intermediates used for the last time by it (freed after it)."""
    keep = set(fgraph.inputs) | set(fgraph.outputs)
    last_use: Dict[Variable, int] = {}
    for i, node in enumerate(order):
        for var in node.inputs:
            last_use[var] = i
    plan: List[List[StorageCell]] = [[] for _ in order]
    for var, i in last_use.items():
        if var.owner is not None and var not in keep:
            plan[i].append(storage_map[var])
    return plan


def describe_value(value: Any) -> str:
    """A short description of a runtime value: shape and dtype for arrays, repr for small scalars."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{type(value).__name__} shape={tuple(shape)} dtype={dtype}"
    text = repr(value)
    return text if len(text) <= 40 else f"{type(value).__name__} (repr too long)"


def node_error_message(node: Apply, input_values: Sequence[Any], position: Optional[int] = None
                       ) -> str:
    """The context added to an error raised while computing node."""
    lines = [f"Apply node that caused the error: {node}"]
    if position is not None:
        lines.append(f"Toposort index: {position}")
    lines.append("Inputs types: [" + ", ".join(str(v.type) for v in node.inputs) + "]")
    lines.append("Inputs values: [" + ", ".join(describe_value(v) for v in input_values) + "]")
    trace = node.outputs[0].trace if node.outputs else None
    lines.append(f"Created at: {trace}" if trace else "Created at: unknown (no user source line)")
    return "\n".join(lines)


def raise_with_op(node: Apply, exc: BaseException, input_values: Sequence[Any],
                  position: Optional[int] = None) -> None:
    """Re-raise exc as the same exception type, its message extended with node's context."""
    context = node_error_message(node, input_values, position)
    try:
        new = type(exc)(f"{exc}\n{context}")
    except Exception:  # an exception class whose constructor takes other arguments
        exc.add_note(context)
        raise exc
    new.node = node  # type: ignore[attr-defined]
    raise new.with_traceback(exc.__traceback__) from exc


def streamline(fgraph: FunctionGraph, thunks: Sequence[Callable[[], None]], order: Sequence[Apply],
               no_recycling_cells: Sequence[StorageCell] = (),
               post_thunk_clear: Optional[Sequence[Sequence[StorageCell]]] = None
               ) -> Callable[[], None]:
    """One thunk running the node thunks in order; errors are re-raised naming the failing node."""
    if len(thunks) != len(order):
        raise ValueError("streamline: one thunk per node is needed")
    pairs = list(zip(thunks, order))

    def fail(i: int, exc: Exception) -> None:
        node = order[i]
        values = [c[0] for c in getattr(thunks[i], "inputs", [])]
        raise_with_op(node, exc, values, i)

    if post_thunk_clear is None:
        def streamlined() -> None:
            for cell in no_recycling_cells:
                cell[0] = None
            i = 0
            try:
                for i, (thunk, _node) in enumerate(pairs):
                    thunk()
            except Exception as e:
                fail(i, e)
    else:
        clears = list(zip(thunks, post_thunk_clear))

        def streamlined() -> None:
            for cell in no_recycling_cells:
                cell[0] = None
            i = 0
            try:
                for i, (thunk, old) in enumerate(clears):
                    thunk()
                    for cell in old:
                        cell[0] = None
            except Exception as e:
                fail(i, e)

    streamlined.thunks = list(thunks)  # type: ignore[attr-defined]
    streamlined.nodes = list(order)  # type: ignore[attr-defined]
    return streamlined


def destroyed_inputs(fgraph: Any, order: Sequence[Apply]) -> List[int]:
    """Indices of the inputs of fgraph whose storage some node overwrites (destroy_map, through views)."""
    position = {v: k for k, v in enumerate(fgraph.inputs)}
    root: dict = {}                     # var -> its storage root: a chain of in-place nodes is walked once
    found = set()
    for node in order:
        for indices in node.op.destroy_map.values():
            for i in indices:
                k = position.get(_root(node.inputs[i], root))
                if k is not None:
                    found.add(k)
    return sorted(found)


def _root(var: Variable, memo: dict) -> Variable:
    """storage_root(var), remembering it for var and every variable on the way."""
    path = []
    while var not in memo:
        path.append(var)
        step = storage_root_step(var)
        if step is var:
            memo[var] = var
            break
        var = step
    found = memo[var]
    for v in path:
        memo[v] = found
    return found
