"""FunctionMaker: FunctionGraph + features + rewrites + output copies + linker -> Function."""

from __future__ import annotations

import copy
import warnings
from typing import Any, Dict, List, Optional, Sequence, Set, Union

from graphjit.compile.compiled_function import Function
from graphjit.compile.io import In, Out
from graphjit.compile.mode import Mode, get_mode, run_rewriter
from graphjit.compile import rewrite_cache
from graphjit.compile.ops import deep_copy_op
from graphjit.compile.pickling import maker_state, restore_maker
from graphjit.config import config
from graphjit.graph.basic import Constant, Variable, ancestors
from graphjit.graph.destroyhandler import storage_root, storage_root_step
from graphjit.graph.destroyhandler import attach_destroy_handler
from graphjit.graph import phase_timer
from graphjit.graph.gc_pause import gc_paused
from graphjit.graph.features import PreserveTraces, ReplaceValidate, Supervisor
from graphjit.graph.fg import FunctionGraph, check_inputs
from graphjit.link.basic import Container, StorageCell, StorageMap
from graphjit.tensor.shape import SpecifyShape, specify_shape


def as_update(var: Variable, expr: Any) -> Variable:
    """expr as the new value of the state input var (a shared variable), or TypeError naming var.

    It must be of var's Type; a static length of that Type which expr's does not know is asserted at run
    time, before any update is stored, by a SpecifyShape whose error names var.
    """
    what = f"the new value of {var.describe()}"
    try:
        value = var.type.filter_variable(expr)
    except (TypeError, ValueError) as e:
        got = getattr(expr, "type", type(expr).__name__)
        where = f" (update created at {expr.trace})" if getattr(expr, "trace", None) else ""
        raise TypeError(f"{what} has type {got}, which cannot become {var.type}{where}: {e}") from e
    owner = value.owner
    if value is not expr and owner is not None and type(owner.op) is SpecifyShape and not owner.op.what:
        value = specify_shape(owner.inputs[0], owner.op.shape, what)
    return value


class UnusedInputError(ValueError):
    """An input of function() is not needed to compute any output or update."""



def alias_chain(var: Variable) -> List[Variable]:
    """var and every Variable it is a view of (up to and including its alias root)."""
    chain = [var]
    while True:         # one step at a time (storage_root per step made a chain of in-place nodes quadratic)
        step = storage_root_step(chain[-1])
        if step is chain[-1]:
            return chain
        chain.append(step)


def _protected(variables: Sequence[Variable], specs: Sequence[In]) -> List[Variable]:
    """The inputs no op may overwrite: all but mutable ones and shared state (an update's shared variable).

    An explicit input with an update (``In(x, value=arr, update=...)``) stays protected: arr is the caller's.
    """
    return [v for v, spec in zip(variables, specs) if not spec.mutable and not (spec.update is not None
                                                                                and spec.implicit)]


def _as_in(spec: Union[In, Variable]) -> In:
    return spec if isinstance(spec, In) else In(spec)


def _as_out(spec: Union[Out, Variable]) -> Out:
    return spec if isinstance(spec, Out) else Out(spec)


class FunctionMaker:
    """Builds the FunctionGraph of a function and the linker over it; ``create()`` makes the Function.

    ``inputs`` are In specs (explicit ones first, then implicit shared inputs), ``outputs`` an Out,
    a Variable, or a list of them. Update expressions (``In.update``) become extra outputs of the
    graph, recorded in ``fgraph.update_mapping`` (output index -> input index).
    """

    def __init__(self, inputs: Sequence[Union[In, Variable]],
                 outputs: Union[Out, Variable, Sequence[Union[Out, Variable]], None],
                 mode: Union[str, Mode, None] = None, accept_inplace: bool = False,
                 on_unused_input: Optional[str] = None, name: Optional[str] = None,
                 profile: Optional[bool] = None):
        # profile (default config.profile): native counters per unit and the compile phases (compile/profiling.py)
        self.profile = config.profile if profile is None else bool(profile)
        self._prepare(inputs, outputs, mode, accept_inplace, on_unused_input, name)

    def _prepare(self, inputs: Sequence[Union[In, Variable]],
                 outputs: Union[Out, Variable, Sequence[Union[Out, Variable]], None],
                 mode: Union[str, Mode, None], accept_inplace: bool, on_unused_input: Optional[str],
                 name: Optional[str]) -> None:
        self.unpack_single = isinstance(outputs, (Out, Variable))
        outputs = [] if outputs is None else [outputs] if self.unpack_single else list(outputs)
        self.inputs: List[In] = [copy.copy(_as_in(i)) for i in inputs]
        self.outputs: List[Out] = [_as_out(o) for o in outputs]
        self.mode = get_mode(mode)
        self.name = name
        self.accept_inplace = accept_inplace
        self._phases = phase_timer.PhaseRecorder()
        with gc_paused(), phase_timer.recording(self._phases):
            with phase_timer.phase("graph"):
                self._check_updates()
                self._check_unused(on_unused_input)
                ends = self._graph_ends()
            self._rewrite(ends)
            self.no_recycling = self._no_recycling()
            self.linker = self._linker().accept(self.fgraph, self.no_recycling)

    def _linker(self) -> Any:
        """The mode's linker (its profiled variant with profile=True)."""
        linker = self.mode.linker
        if not self.profile:
            return linker
        profiled = getattr(linker, "profiled", None)
        if profiled is None:
            raise ValueError(f"profile=True: the linker {linker!r} of mode {self.mode} cannot be profiled "
                             "(the LLVM linkers and 'py' can)")
        return profiled()

    @property
    def compile_stats(self) -> Dict[str, float]:
        """Seconds per compile phase (graph/phase_timer.py): graph, rewrite_key, rewrite (its parts
        "rewrite:<step>"), cache_lookup, cache_store, link, and for the LLVM linker ir_build, key, ir_parse,
        optimize, codegen; "total" is the maker's and create()'s wall time (the top-level phases sum to less)."""
        phases = self.__dict__.get("_phases")
        return phases.as_dict() if phases is not None else {}

    # --- graph preparation -----------------------------------------------------------------
    @property
    def update_outs(self) -> List[Out]:
        """One Out per input with an update (borrow=False: updates get fresh storage every call)."""
        return [Out(i.update) for i in self.inputs if i.update is not None]

    def _check_updates(self) -> None:
        for spec in self.inputs:
            if spec.update is None:
                continue
            spec.update = as_update(spec.variable, spec.update)

    def _check_unused(self, on_unused_input: Optional[str]) -> None:
        if on_unused_input is None:
            on_unused_input = config.on_unused_input
        if on_unused_input not in ("raise", "warn", "ignore"):
            raise ValueError(f"on_unused_input must be 'raise', 'warn' or 'ignore', "
                             f"got {on_unused_input!r}")
        if on_unused_input == "ignore":
            return
        used = set(ancestors([o.variable for o in self.outputs + self.update_outs]))
        for k, spec in enumerate(self.inputs):
            if spec.implicit or spec.variable in used:
                continue
            msg = (f"input {k}, {spec.variable.describe()}, is not needed to compute any output "
                   "or update; pass on_unused_input='warn' or 'ignore' to allow it")
            if on_unused_input == "raise":
                raise UnusedInputError(msg)
            warnings.warn(msg, stacklevel=4)

    def _graph_ends(self) -> rewrite_cache.GraphEnds:
        """The user's inputs, outputs (updates last) and update mapping, the inputs checked (not cloned yet)."""
        update_mapping: Dict[int, int] = {}
        n_out = len(self.outputs)
        for k, spec in enumerate(i for i in self.inputs if i.update is not None):
            update_mapping[n_out + k] = self.inputs.index(spec)
        inputs = [i.variable for i in self.inputs]
        check_inputs(inputs)
        return rewrite_cache.GraphEnds(inputs, [o.variable for o in self.outputs + self.update_outs],
                                       update_mapping)

    def _build_fgraph(self, ends: rewrite_cache.GraphEnds) -> FunctionGraph:
        fgraph = FunctionGraph(ends.inputs, ends.outputs, clone=True, update_mapping=ends.update_mapping)
        destroyers = [n for n in fgraph.apply_nodes if n.op.destroy_map]
        if destroyers and not self.accept_inplace:
            raise TypeError(f"the graph contains ops that overwrite their inputs ({destroyers[0]}); "
                            "pass accept_inplace=True to function() to allow them")
        fgraph.attach_feature(ReplaceValidate())
        fgraph.attach_feature(PreserveTraces())
        fgraph.attach_feature(Supervisor(_protected(fgraph.inputs, self.inputs)))
        if destroyers:
            fgraph.validate()
        return fgraph

    def _rewrite(self, ends: rewrite_cache.GraphEnds) -> None:
        """Build the FunctionGraph, run the mode's rewrites and insert the output copies; or take the rewritten
        graph from disk (rewrite_cache), keyed on the user's graph itself so that a hit never clones it."""
        graphs = self.mode.linker.graph_store()
        with phase_timer.phase("rewrite_key"):
            key = rewrite_cache.rewrite_key(self, graphs, ends) if graphs is not None else None
        with phase_timer.phase("cache_lookup"):
            # fresh inputs, as FunctionGraph(clone=True) makes: the user's own variables join no graph of ours
            cached = rewrite_cache.load(graphs, key, [v.clone() for v in ends.inputs]) if key is not None else None
        self.rewrites_cached = cached is not None
        if cached is None:
            with phase_timer.phase("graph"):
                self.fgraph = self._build_fgraph(ends)
            with phase_timer.phase("rewrite"):
                run_rewriter(self.mode.rewriter, self.fgraph)
                self._insert_copies()
            if key is not None:
                with phase_timer.phase("cache_store"):
                    if rewrite_cache.store(graphs, key, self.fgraph):
                        self.fgraph.cache_key = key
            return
        inputs, outputs, update_mapping = cached
        fgraph = FunctionGraph(inputs, outputs, clone=False, update_mapping=update_mapping)
        fgraph.attach_feature(ReplaceValidate())
        fgraph.attach_feature(PreserveTraces())
        fgraph.attach_feature(Supervisor(_protected(fgraph.inputs, self.inputs)))
        if any(n.op.destroy_map for n in fgraph.apply_nodes):
            # as after the in-place rewrites: its orderings put each destroyer after the readers of what it
            # overwrites, so the loaded graph sorts (and keys its plan and symbols) as the rewritten one did
            attach_destroy_handler(fgraph)
            fgraph.validate()
        fgraph.cache_key = key
        self.fgraph = fgraph

    def _out_specs(self) -> List[Out]:
        return self.outputs + self.update_outs

    def _insert_copies(self) -> None:
        """Copy outputs that would alias an input, a constant or another output (unless borrowed)."""
        fgraph, outs = self.fgraph, self._out_specs()
        n_user = len(self.outputs)
        updated = {fgraph.inputs[k] for k in fgraph.update_mapping.values()}
        in_spec = dict(zip(fgraph.inputs, self.inputs))
        for i in range(len(fgraph.outputs)):
            root = storage_root(fgraph.outputs[i])
            others = [storage_root(o) for j, o in enumerate(fgraph.outputs) if j != i]
            both_user_borrow = [outs[i].borrow and i < n_user and outs[j].borrow and j < n_user
                                for j in range(len(outs)) if j != i]
            clash = any(r is root and not ok for r, ok in zip(others, both_user_borrow))
            if root in in_spec and root not in updated:
                clash = clash or not (outs[i].borrow and in_spec[root].borrow)
            elif isinstance(root, Constant):
                clash = clash or not outs[i].borrow
            if clash:
                fgraph.change_node_input("output", i, deep_copy_op(fgraph.outputs[i]),
                                         reason="insert_deepcopy")

    def _no_recycling(self) -> List[Variable]:
        """Variables whose storage must be fresh at every call: non-borrowed outputs and what they view."""
        result: List[Variable] = []
        seen: Set[Variable] = set()
        for var, spec in zip(self.fgraph.outputs, self._out_specs()):
            if spec.borrow:
                continue
            for v in alias_chain(var):
                if v.owner is not None and v not in seen:
                    seen.add(v)
                    result.append(v)
        return result

    # --- building functions ------------------------------------------------------------------
    def initial_cells(self) -> List[StorageCell]:
        """One storage cell per input: the shared container's cell, or a cell with the default."""
        cells = []
        for spec in self.inputs:
            if isinstance(spec.value, Container):
                cells.append(spec.value.storage)
            elif spec.value is not None:
                cells.append([spec.variable.type.filter(spec.value, strict=spec.strict,
                                                        allow_downcast=spec.allow_downcast)])
            else:
                cells.append([None])
        return cells

    def create(self, input_storage: Optional[List[StorageCell]] = None,
               storage_map: Optional[StorageMap] = None, trust_input: bool = False) -> Any:
        """Link the graph and wrap the thunk and its containers into a Function."""
        cells = input_storage if input_storage is not None else self.initial_cells()
        phases = self.__dict__.get("_phases")
        if phases is None:          # a maker rebuilt by unpickling (compile/pickling.py)
            phases = self._phases = phase_timer.PhaseRecorder()
        with gc_paused(), phase_timer.recording(phases):
            thunk, _, out_containers, _, _ = self.linker.make_thunk(input_storage=cells,
                                                                    storage_map=storage_map)
        containers = []
        for spec, cell in zip(self.inputs, cells):
            if isinstance(spec.value, Container) and spec.value.storage is cell:
                containers.append(spec.value)
            else:
                containers.append(Container(spec.variable, cell, strict=spec.strict,
                                            allow_downcast=spec.allow_downcast, name=spec.name))
        fn = Function(self, thunk, containers, out_containers, name=self.name)
        fn.trust_input = trust_input
        return fn

    def clone(self, share_memory: bool = False, swap: Optional[Dict[Variable, Variable]] = None
              ) -> "FunctionMaker":
        """A maker over a copy of the graph (or the same graph with share_memory), inputs swapped."""
        cp = copy.copy(self)
        cp.inputs = [_swap_input(spec, swap or {}) for spec in self.inputs]
        cp._phases = phase_timer.PhaseRecorder()        # the clone's create() records its own linking
        if not share_memory:
            cp.fgraph, memo = self.fgraph.clone_get_equiv(check_integrity=False,
                                                          attach_feature=False)
            cp.no_recycling = [memo[v] for v in self.no_recycling]
        cp.linker = self.linker.accept(cp.fgraph, cp.no_recycling)
        return cp

    def __copy__(self) -> "FunctionMaker":
        """A shallow copy (not a pickling round trip; clone() relies on it)."""
        cp = self.__class__.__new__(self.__class__)
        cp.__dict__.update(self.__dict__)
        return cp

    def __reduce__(self) -> tuple:
        """Pickle as the rewritten graph and settings; unpickling relinks without rewriting (compile/pickling.py)."""
        return rebuild_maker, (maker_state(self),)

    def __str__(self) -> str:
        return f"FunctionMaker({self.fgraph}, mode={self.mode})"


def rebuild_maker(state: Dict[str, Any]) -> FunctionMaker:
    """A FunctionMaker over a pickled rewritten graph (compile/pickling.py's maker_state), linked without rewrites."""
    maker = FunctionMaker.__new__(FunctionMaker)
    restore_maker(maker, state)
    return maker


def _swap_input(spec: In, swap: Dict[Variable, Variable]) -> In:
    new_var = swap.get(spec.variable)
    if new_var is None:
        return spec
    if new_var.type != spec.variable.type:
        raise TypeError(f"swap: {new_var.describe()} does not have the type of "
                        f"{spec.variable.describe()}")
    cp = copy.copy(spec)
    cp.variable = new_var
    cp.value = new_var.container
    return cp
