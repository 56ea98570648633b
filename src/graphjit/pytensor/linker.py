"""The PyTensor linker that compiles a whole FunctionGraph with graphjit, and the "GRAPHJIT" mode."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence

from pytensor.compile.mode import Mode
from pytensor.graph.rewriting.db import RewriteDatabaseQuery
from pytensor.link.basic import JITLinker
from pytensor.raise_op import CheckAndRaise

import graphjit
from graphjit.pytensor.translate import translate_fgraph

# PyTensor's rewrites graphjit wants: fast_run up to (not including) its elementwise fusion (position 48), so
# none of its in-place passes; without its BLAS and C-only forms (graphjit's rewrites make their own) and without
# its ShapeFeature (ShapeOpt: graphjit infers shapes itself; the feature took ~40% of the rewrite time of a GP).
# Without the sparse local_usmm: graphjit has no sparse ops, and its pattern's constraint reads
# config.blas__ldflags, whose first read runs g++ probes (0.15-0.33 s inside the compile of 6 of the 13 models).
QUERY = RewriteDatabaseQuery(include=["fast_run"], exclude=["BlasOpt", "cxx_only", "inplace", "fusion", "ShapeOpt",
                                                            "local_usmm"], position_cutoff=48)


def thin_thunk(fn: Callable[..., Any], cells: Sequence[List[Any]]) -> Callable[[], Any]:
    """The thunk PyTensor's Function calls: the inputs' storage cells into ``fn`` (graphjit's native call); the
    outputs come back as a list (``fn`` was compiled with a list of outputs), which Function takes instead of
    reading the output cells."""
    if len(cells) == 1:
        (c0,) = cells
        return lambda: fn(c0[0])
    if len(cells) == 2:
        c0, c1 = cells
        return lambda: fn(c0[0], c1[0])
    return lambda: fn(*[c[0] for c in cells])


def raising_as_pytensor(fn: Callable[..., Any], checks: Dict[str, type]) -> Callable[..., Any]:
    """``fn``, re-raising a failed CheckAndRaise (graphjit raises ValueError) as PyTensor's exception type
    (PyMC's ParameterValueError, say)."""
    def checked(*args: Any) -> Any:
        try:
            return fn(*args)
        except ValueError as exc:
            for msg, exc_type in checks.items():
                if str(exc).startswith(msg) and not isinstance(exc, exc_type):
                    raise exc_type(msg) from exc
            raise
    return checked


def pytensor_checks(fgraph: Any) -> Dict[str, type]:
    """The message and exception type of each CheckAndRaise of the graph that raises something else than
    ValueError."""
    return {node.op.msg or str(node.op): node.op.exc_type for node in fgraph.apply_nodes
            if isinstance(node.op, CheckAndRaise) and node.op.exc_type is not ValueError}


class GraphjitLinker(JITLinker):
    """A PyTensor linker: the rewritten FunctionGraph, translated op by op, becomes one graphjit Function."""

    required_rewrites = ("minimum_compile",)
    incompatible_rewrites = ("cxx_only", "BlasOpt", "inplace", "fusion", "local_careduce_fusion",
                             "scan_save_mem_prealloc")

    def __init__(self, graphjit_mode: Any = "FAST_RUN", **kwargs: Any) -> None:
        self.graphjit_mode = graphjit_mode
        super().__init__(**kwargs)

    def fgraph_convert(self, fgraph: Any, **kwargs: Any) -> Any:
        """The graphjit Function of a PyTensor FunctionGraph."""
        inputs, outputs = translate_fgraph(fgraph)
        return graphjit.function(inputs, outputs, mode=self.graphjit_mode, on_unused_input="ignore")

    def jit_compile(self, fn: Any) -> Any:
        """graphjit compiled it already."""
        return fn

    def create_thunk_inputs(self, storage_map: Dict[Any, List[Any]]) -> List[Any]:
        """The storage cells of the graph's inputs, in order."""
        return [storage_map[v] for v in self.fgraph.inputs]

    def create_jitable_thunk(self, compute_map: Any, order: Any, input_storage: Any, output_storage: Any,
                             storage_map: Any) -> tuple:
        """One thunk that calls the graphjit Function (its native call path) and returns the outputs."""
        fn = self.fgraph_convert(self.fgraph)
        outputs = list(self.fgraph.outputs)
        if not outputs:
            raise ValueError("graphjit.pytensor: a function without outputs")
        checks = pytensor_checks(self.fgraph)
        native = raising_as_pytensor(fn, checks) if checks else fn
        thunk = thin_thunk(native, self.create_thunk_inputs(storage_map))
        thunk.native_call = native
        thunk.inputs = self.create_thunk_inputs(storage_map)
        thunk.outputs = [storage_map[v] for v in outputs]
        thunk.lazy = False
        nodes = [o.owner for o in outputs if o.owner is not None][:1]
        return [thunk], nodes, fn

    def make_all(self, input_storage: Any = None, output_storage: Any = None, storage_map: Any = None) -> tuple:
        """JITLinker's (its VM is the one thunk, whose ``native_call`` GraphjitFunction calls directly), with the
        thunk never collecting output storage (it hands its outputs over)."""
        result = super().make_all(input_storage, output_storage, storage_map)
        result[0].allow_gc = False
        return result


def make_mode(graphjit_mode: Any = "FAST_RUN") -> Mode:
    """A PyTensor Mode compiling with graphjit (``graphjit_mode``: graphjit's own mode for the translated graph)."""
    return Mode(linker=GraphjitLinker(graphjit_mode), optimizer=QUERY)
