"""LLVMLinker: one LLVM module, one native entry and one CPython wrapper per FunctionGraph; and DebugLinker.

A warm compile (plan and object in the disk cache) runs only the load side of this module: it reads the IR
builders, the lowerings and the instrumentation through the package's lazy attributes (``_llvm.native_entry``,
``_llvm.fallback``, ``_llvm.instrument``, ``_llvm.fusion``), which load when a cold compile or a feature needs
them (tests/link/llvm/cache/test_plan_alias.py checks what a warm process imports)."""

from __future__ import annotations

import copy
import time
from collections import OrderedDict
from typing import Any, Callable, Optional, Sequence

import numpy as np

from graphjit.config import config
from graphjit.graph import phase_timer
from graphjit.graph.basic import Apply, Variable
from graphjit.link.basic import (Container, Linker, StorageCell, StorageMap, ThunkResult, map_storage)
from graphjit.link.debug_checks import DebugHooks
from graphjit.link.node_hooks import DebugModeError  # noqa: F401 - also importable from here, as before
from graphjit.link.python import PerformLinker

from graphjit.link import llvm as _llvm  # lazy attributes: the cold side (see the module doc)
from graphjit.link.llvm.cache import in_memory, keys
from graphjit.link.llvm.cache.keys import graph_signature  # noqa: F401 - also importable from here, as before
from graphjit.link.llvm.cache.graphs import RewrittenGraphs
from graphjit.link.llvm.cpython.builtin import make_python_callable
from graphjit.link.llvm.jit.compiler import get_compiler
# symbol providers a cached object may need (jit/symbols.py): a warm process runs no lowering, whose modules
# import these, so the load side imports them itself (scipy's special functions, LAPACK; BLAS: runtime.py), or
# names the module to import when an object needs one of its symbols (numpy's random draws)
from graphjit.link.llvm.jit import lapack_library, special_library, symbols as _symbols  # noqa: F401
from graphjit.link.llvm.instrument_options import NO_INSTRUMENTATION, Instrumentation
from graphjit.link.llvm.native_view import CompiledGraph, NativeInfo
from graphjit.graph.gc_pause import gc_paused
from graphjit.link.llvm.cache.plans import load_plan, store_plan
from graphjit.link.llvm.jit.runtime import blas_source, ensure_blas, ensure_runtime
from graphjit.link.basic import SlowPath
from graphjit.graph import forksafe

_symbols.provided_by("gj_npr_", "graphjit.link.llvm.jit.npyrandom")            # numpy's distributions
_symbols.provided_by("gj_pcg64_", "graphjit.link.llvm.jit.generator_abi")      # the inline PCG64 step's check
_symbols.provided_by("gj_rng_", "graphjit.link.llvm.jit.generator_abi")        # copying a Generator


def structural_signature(fgraph: Any, order: Sequence[Apply], opt_level: int, parallel: bool,
                         inst: Instrumentation = NO_INSTRUMENTATION) -> Any:
    """The graph's structural signature on this process' compiler (keys.structural_signature); None if unhashable."""
    return keys.structural_signature(fgraph, order, opt_level, parallel, inst, get_compiler())


def compile_graph(fgraph: Any, order: Sequence[Apply], opt_level: int, parallel: bool,
                  inst: Instrumentation = NO_INSTRUMENTATION) -> tuple[CompiledGraph, bool]:
    """The CompiledGraph of fgraph: from the in-memory map, else a stored plan (cache/plans.py), else built.

    A graph that came through the rewrite cache (``fgraph.cache_key``) first looks its plan up under an alias
    (keys.alias_key): a warm process then needs neither the structural signature nor its pickle.  Loaded code
    is remembered by signature and by plan (keys.memory_key), so either way finds what the other loaded.
    """
    compiler = get_compiler()
    cache = compiler.cache
    alias = None
    if cache is not None and fgraph.cache_key is not None:
        with phase_timer.phase("plan_key"):
            alias = keys.alias_key(fgraph, order, opt_level, parallel, inst, compiler, _host(compiler))
        found = _from_alias(alias, cache, compiler, opt_level) if alias is not None else None
        if found is not None:
            return found
    with phase_timer.phase("plan_key"):
        sig = structural_signature(fgraph, order, opt_level, parallel, inst)
    if sig is not None:
        with phase_timer.phase("cache_lookup"):
            hit = in_memory.lookup(sig)
        if hit is not None:
            _store_alias(cache, alias, hit)
            return hit, True
    with phase_timer.phase("plan_key"):
        blob = keys.stable_pickle(sig) if sig is not None else None
        key = keys.plan_key(sig, _host(compiler), blob) if blob is not None and cache is not None else None
    with phase_timer.phase("cache_lookup"):
        plan = load_plan(cache, key) if key is not None else None
    found = _from_plan(plan, compiler, opt_level, sig) if plan is not None else None
    if found is None:
        seed = keys.prefix_seed(blob, fgraph, order, opt_level)
        with gc_paused():
            lib, plan = _build(fgraph, order, opt_level, parallel and ensure_runtime().gomp_available, seed, inst)
        stored = {k: v for k, v in plan.items() if k != "ir_build"}
        if key is not None:
            with phase_timer.phase("cache_store"):
                store_plan(cache, key, stored)
        found = _remember(_compiled(lib, plan, stored), sig), False
    _store_alias(cache, alias, found[0])
    return found


def _host(compiler: Any) -> tuple[str, ...]:
    """What the disk keys hold of this host (keys.host_parts), with this process' BLAS source."""
    return keys.host_parts(compiler, blas_source())


def _compiled(lib: Any, plan: dict, stored: dict) -> CompiledGraph:
    compiled = CompiledGraph(lib, plan["in_specs"], plan["out_specs"], plan["fallback_indices"], plan["n_groups"],
                             {"ir_build": plan["ir_build"]} if "ir_build" in plan else {"plan_hit": True},
                             messages=plan["messages"], message_nodes=plan["message_nodes"],
                             n_temp=plan["n_temp"], calls_python=plan["calls_python"])
    compiled.stored_plan = stored       # what an alias stores (_store_alias)
    return compiled


def _remember(compiled: CompiledGraph, sig: Any) -> CompiledGraph:
    """Record compiled in the in-memory map under its plan and its signature (if any); the one recorded."""
    compiled = in_memory.remember(keys.memory_key(compiled.stored_plan), compiled)
    return in_memory.remember(sig, compiled) if sig is not None else compiled


def _from_plan(plan: dict, compiler: Any, opt_level: int, sig: Any) -> tuple[CompiledGraph, bool] | None:
    """The CompiledGraph of a stored plan: loaded in this process already, else its object loaded; None if gone."""
    hit = in_memory.lookup(keys.memory_key(plan))
    if hit is not None:
        return (in_memory.remember(sig, hit) if sig is not None else hit), True
    _publish(plan)                      # symbols the object refers to resolve when it is linked
    lib = compiler.load(plan["object"], plan["prefix"], opt_level)
    if lib is None:
        return None
    return _remember(_compiled(lib, plan, plan), sig), False


# the aliases stored or loaded by this process (the last few hundred): each is written once
_ALIASES: OrderedDict[str, None] = OrderedDict()
_ALIASES_MAX = 256
_ALIASES_LOCK = forksafe.new_lock()


def _store_alias(cache: Any, alias: str | None, compiled: CompiledGraph) -> None:
    """Write compiled's plan under alias, unless this process did (or read it) already."""
    stored = getattr(compiled, "stored_plan", None)
    if alias is None or alias in _ALIASES or stored is None:
        return
    with phase_timer.phase("cache_store"):
        store_plan(cache, alias, stored)
    _note_alias(alias)


def _note_alias(alias: str) -> None:
    with _ALIASES_LOCK:
        _ALIASES[alias] = None
        _ALIASES.move_to_end(alias)
        while len(_ALIASES) > _ALIASES_MAX:
            _ALIASES.popitem(last=False)


def _from_alias(alias: str, cache: Any, compiler: Any, opt_level: int) -> tuple[CompiledGraph, bool] | None:
    """The CompiledGraph of the plan stored under alias (in memory already, or loaded); None if there is none."""
    with phase_timer.phase("cache_lookup"):
        plan = load_plan(cache, alias)
    found = _from_plan(plan, compiler, opt_level, None) if plan is not None else None
    if found is not None:
        _note_alias(alias)
    return found


def _build(fgraph: Any, order: Sequence[Apply], opt_level: int, parallel: bool, seed: str,
           inst: Instrumentation) -> tuple[Any, dict]:
    """Lower and compile fgraph: (library, plan) where plan is what cache/plans.py stores, plus ir_build."""
    index = {n: i for i, n in enumerate(order)}
    built: dict[str, Any] = {}

    def build(prefix: str) -> Any:
        t0 = time.perf_counter()
        entry = _llvm.native_entry.build_entry(fgraph, order, parallel, prefix, inst)
        built["ir_build"] = time.perf_counter() - t0
        phase_timer.add("ir_build", built["ir_build"])
        built["plan"] = {"in_specs": entry.in_specs, "out_specs": entry.out_specs, "messages": list(entry.messages),
                         "message_nodes": list(entry.message_nodes),
                         "fallback_indices": [index[n] for n in entry.fallback_nodes], "n_groups": len(entry.groups),
                         "n_temp": entry.n_temp, "uses_blas": entry.uses_blas,
                         "calls_python": entry.calls_python}
        _publish(built["plan"])
        return entry.modules

    lib = get_compiler().compile_unique(build, seed, opt_level)
    plan = built["plan"]
    plan["object"], plan["prefix"], plan["ir_build"] = lib.cache_key, lib.prefix, built["ir_build"]
    return lib, plan


def _publish(plan: dict) -> None:
    """Publish the runtime symbols the compiled entry of plan refers to (BLAS, the fallback callback)."""
    ensure_runtime()
    if plan["uses_blas"]:
        ensure_blas()
    if plan["fallback_indices"]:
        _llvm.fallback.publish_callback()
    if plan["calls_python"]:
        _llvm.instrument.publish_callback()


def rebuild_ir(fgraph: Any, order: Sequence[Apply], compiled: CompiledGraph, parallel: bool,
               flags: dict[str, Any], inst: Instrumentation = NO_INSTRUMENTATION) -> str:
    """The IR of a library loaded through a plan, built again on demand (introspection only), under the
    flags in force when the function was compiled (flags such as inline_exp change the IR)."""
    lib = compiled.library
    try:
        return lib.llvm_ir
    except LookupError:
        pass
    with config.change_flags(**flags):
        modules = _llvm.native_entry.build_entry(fgraph, order, parallel and ensure_runtime().gomp_available, lib.prefix, inst).modules
    lib.set_source(modules)
    return lib.llvm_ir


def _coerce(value: Any, spec: Any, var: Variable) -> Any:
    """A value the wrapper's fast path accepts: a C-contiguous aligned copy of what var's Type accepts.

    Values reach here filtered by the Function's containers, or unchecked (trust_input, a thunk called
    directly): those get the Type's filter (casting as numpy does), whose errors name var.
    """
    if spec.kind != "array":
        return value
    try:
        value = var.type.filter(value, allow_downcast=True)
    except (TypeError, ValueError, OverflowError) as e:
        raise type(e)(f"bad value for {var.describe()}: {e}") from None
    return np.array(value, dtype=spec.dtype, copy=True, order="C")


class LLVMLinker(Linker):
    """Compiles the whole FunctionGraph into one native function (see docs/lowering.md)."""

    # OpFromGraph-like ops are expanded (tensor/rewriting/inner_graphs.py): their inner graphs are compiled as part
    # of the fused function, which is this linker's lowering of them
    rewrite_tags = ("inline_inner_graphs",)

    def __init__(self, opt_level: int = 3, parallel: bool = True, instrument: Instrumentation = NO_INSTRUMENTATION,
                 hooks: Any = None) -> None:
        self.opt_level = opt_level
        self.parallel = parallel
        self.instrument = instrument
        self.hooks = hooks
        self.fgraph = None
        self.no_recycling = ()

    def instrumented(self, guard: int | None = None, hooks: Any = None, profile: bool | None = None) -> "LLVMLinker":
        """A linker of the same settings whose entries carry debugging instrumentation (ir/callbacks.py):
        guard (node_hooks.GUARD_* bits), hooks (an object with pre/post, called around every unit), profile."""
        inst = self.instrument
        inst = Instrumentation(inst.guard if guard is None else guard, inst.hooks or hooks is not None,
                               inst.profile if profile is None else profile)
        return LLVMLinker(self.opt_level, self.parallel, inst, hooks if hooks is not None else self.hooks)

    def profiled(self) -> "LLVMLinker":
        """This linker with native profiling counters (function(profile=True))."""
        return self.instrumented(profile=True)

    def graph_store(self) -> RewrittenGraphs | None:
        """Rewritten graphs beside the object cache (None when there is no cache directory)."""
        cache = get_compiler().cache
        return RewrittenGraphs(cache, graph_signature) if cache is not None else None

    def make_thunk(self, input_storage: Optional[Sequence[StorageCell]] = None,
                   output_storage: Optional[Sequence[StorageCell]] = None,
                   storage_map: Optional[StorageMap] = None) -> ThunkResult:
        """Compile (or reuse) the graph's native function; the thunk calls it on the input cells."""
        fgraph = self._require_fgraph()
        with phase_timer.phase("order"):
            order = fgraph.toposort()
        inst = self.instrument
        compiled, memory_hit = compile_graph(fgraph, order, self.opt_level, self.parallel, inst)
        with phase_timer.phase("wrap"):
            return self._wrap(fgraph, order, compiled, memory_hit, input_storage, output_storage, storage_map)

    def _wrap(self, fgraph: Any, order: list, compiled: CompiledGraph, memory_hit: bool,
              input_storage: Optional[Sequence[StorageCell]], output_storage: Optional[Sequence[StorageCell]],
              storage_map: Optional[StorageMap]) -> ThunkResult:
        """The thunk over the storage cells, calling compiled's wrapper, with its introspection attached."""
        inst = self.instrument
        fallback_nodes = [order[i] for i in compiled.fallback_indices]
        if fallback_nodes:
            _llvm.fallback.warn_fallbacks(fallback_nodes)
        counters = _llvm.instrument.counters_for(len(order)) if inst.profile else None
        extra: tuple = (counters,) if counters is not None else ()
        if compiled.calls_python:
            extra += (_llvm.instrument.CallbackTable(fgraph, order, fallback_nodes, self.hooks, inst.guard),)
        in_cells, out_cells, storage_map = map_storage(fgraph, order, input_storage, output_storage, storage_map)
        flags = {k: v for k, v in config.flags().items() if k != "cache_dir"}
        rebuild = lambda: rebuild_ir(fgraph, order, compiled, self.parallel, flags, inst)  # noqa: E731
        native = NativeInfo(compiled, fallback_nodes, memory_hit, rebuild, order, bool(inst.guard))
        compiled.add_user(native)
        # this graph's own builtin: its errors name this graph's nodes (the compiled code is shared)
        call = make_python_callable(compiled.library, "pywrap", name="graphjit_function",
                                    word_error=native.describe_error)
        thunk = _make_thunk(call, compiled.in_specs, fgraph.inputs, in_cells, out_cells, extra)
        thunk.native = native  # type: ignore[attr-defined]
        thunk.native_call = call  # type: ignore[attr-defined]
        thunk.wrapper_address = compiled.library.get_address("pywrap")  # type: ignore[attr-defined]
        # instrumented entries have no function-call wrapper (their hidden arguments): the Python call path
        thunk.function_call_address = (0 if inst.active  # type: ignore[attr-defined]
                                       else compiled.library.get_address("fncall"))
        thunk.extra_args = extra  # type: ignore[attr-defined]
        # the wrapper checks native tensors itself; other values must go through their Type's filter first
        thunk.inputs_checked = [s.kind == "array" for s in compiled.in_specs]  # type: ignore[attr-defined]
        thunk.storage_map = storage_map  # type: ignore[attr-defined]
        if counters is not None:
            thunk.profile_counters = counters  # type: ignore[attr-defined]
            thunk.profile_units = _profile_units(fgraph, order, bool(inst.guard))  # type: ignore[attr-defined]
        in_containers = [Container(v, cell) for v, cell in zip(fgraph.inputs, in_cells)]
        out_containers = [Container(v, cell, readonly=True) for v, cell in zip(fgraph.outputs, out_cells)]
        return thunk, in_containers, out_containers, [thunk], order

    def __repr__(self) -> str:
        return f"LLVMLinker(opt_level={self.opt_level})"


def _profile_units(fgraph: Any, order: Sequence[Apply], guard: bool = False) -> list[tuple[int, list[Apply]]]:
    """(counter slot, nodes) of every unit the entry times: fused groups (several nodes) and single nodes."""
    position = {n: k for k, n in enumerate(order)}
    anchored: dict[int, list[Apply]] = {}
    members: set = set()
    for group in {id(g): g for g in _llvm.fusion.plan_groups(fgraph, order, guard).values()}.values():
        nodes = group.nodes + ([group.reduce] if group.reduce is not None else [])
        anchored[position[group.anchor]] = nodes
        members.update(nodes)
    return [(k, anchored[k]) if k in anchored else (k, [node]) for k, node in enumerate(order)
            if k in anchored or node not in members]


def _make_thunk(call: Callable[..., Any], specs: list, variables: Sequence[Variable], in_cells: list,
                out_cells: list, extra: tuple) -> Callable[[], None]:
    n_out = len(out_cells)

    def thunk() -> None:
        args = [c[0] for c in in_cells]
        try:
            res = call(*args, *extra)
        except SlowPath:
            fixed = [_coerce(a, s, v) for a, s, v in zip(args, specs, variables)]
            try:
                res = call(*fixed, *extra)
            except SlowPath:            # never expected: the filter gave what the wrapper takes
                raise TypeError("the compiled function refused its arguments after conversion: "
                                + ", ".join(v.describe() for v in variables)) from None
        if n_out == 1:
            out_cells[0][0] = res
        elif n_out:
            for cell, value in zip(out_cells, res):
                cell[0] = value

    return thunk


class DebugLinker(Linker):
    """DebugMode's linker: the LLVM linker with a check after every unit (link/debug_checks.py: the compiled
    result against its nodes' performs, undeclared in-place writes, perform's undeclared aliases), and the whole
    graph run again by the PerformLinker on every call, its outputs compared with the compiled ones.

    check_py_code=False keeps only the in-place checks per unit; guard adds NanGuardMode's checks (node_hooks).
    """

    rewrite_tags = LLVMLinker.rewrite_tags

    def __init__(self, opt_level: int = 1, check_py_code: bool = True, guard: int = 0) -> None:
        self.opt_level = opt_level
        self.check_py_code = check_py_code
        self.guard = guard
        self.fgraph = None
        self.no_recycling = ()

    def make_thunk(self, input_storage: Optional[Sequence[StorageCell]] = None,
                   output_storage: Optional[Sequence[StorageCell]] = None,
                   storage_map: Optional[StorageMap] = None) -> ThunkResult:
        """Both thunks over the same input cells; the LLVM results are the ones returned."""
        fgraph = self._require_fgraph()
        base = LLVMLinker(self.opt_level).instrumented(guard=self.guard, hooks=DebugHooks(self.check_py_code))
        fast = base.accept(fgraph, self.no_recycling)
        thunk, ins, outs, _, order = fast.make_thunk(input_storage, output_storage, storage_map)
        ref = PerformLinker().accept(fgraph, self.no_recycling)
        ref_cells = [[None] for _ in ins]
        ref_thunk, _, ref_outs, _, _ = ref.make_thunk(ref_cells)
        updated = set(fgraph.update_mapping.values())

        def debug_thunk() -> None:
            # the reference reads the inputs as they were: updates may be written in place (inplace_outputs)
            for k, (cell, c) in enumerate(zip(ref_cells, ins)):
                cell[0] = copy.deepcopy(c.storage[0]) if k in updated else c.storage[0]
            thunk()
            ref_thunk()
            for k, (got, want) in enumerate(zip(outs, ref_outs)):
                var = fgraph.outputs[k]
                if not var.type.values_eq_approx(got.storage[0], want.storage[0]):
                    raise DebugModeError(f"DebugMode: output {k} ({var.describe()}) differs between the LLVM "
                                         f"linker and the Python reference:\nLLVM: {got.storage[0]!r}\n"
                                         f"PY:   {want.storage[0]!r}")

        debug_thunk.native = thunk.native  # type: ignore[attr-defined]
        debug_thunk.storage_map = thunk.storage_map  # type: ignore[attr-defined]
        return debug_thunk, ins, outs, [debug_thunk], order

    def __repr__(self) -> str:
        return "DebugLinker()"
