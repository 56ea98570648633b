"""``f.native``: what the LLVM linker produced for a Function (IR, optimised IR, assembly, key, fallbacks, timings)."""

from __future__ import annotations

import weakref
from typing import Any, Callable

from graphjit.link.llvm.ir.errors import describe, node_suffix
from graphjit.link import llvm as _llvm   # fusion, read lazily (a warm process never plans groups)
from graphjit.graph import forksafe

_USERS_LOCK = forksafe.new_rlock()     # re-entrant: a user's finalizer may run (GC) while the lock is held


class CompiledGraph:
    """A compiled FunctionGraph, shared by every Function of the same structure (the in-memory map).

    (A plain class rather than a dataclass: defining one costs ~0.4 ms, in every cold compile.)"""

    _FIELDS = ("library", "in_specs", "out_specs", "fallback_indices", "n_groups", "timings", "messages",
               "message_nodes", "n_temp", "calls_python")

    def __init__(self, library: Any, in_specs: list, out_specs: list, fallback_indices: list[int], n_groups: int,
                 timings: dict[str, float] | None = None, messages: list[str] | None = None,
                 message_nodes: list[int] | None = None, n_temp: int = 0, calls_python: bool = False,
                 users: int = 0) -> None:
        self.library = library                      # jit.NativeLibrary
        self.in_specs = in_specs
        self.out_specs = out_specs
        self.fallback_indices = fallback_indices
        self.n_groups = n_groups
        self.timings = {} if timings is None else timings
        self.messages = [] if messages is None else messages    # error-message templates (rt->error.msg indexes it)
        self.message_nodes = [] if message_nodes is None else message_nodes   # the node of each message (-1: none)
        self.n_temp = n_temp                        # rt->slots past the outputs used for temporaries
        self.calls_python = calls_python            # the entry takes a callback table (ir/callbacks.py)
        self.users = users                          # live NativeInfos (add_user); not compared

    def __eq__(self, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]   # mutable (users), compared by value: as the dataclass was

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in (*self._FIELDS, "users"))
        return f"CompiledGraph({fields})"

    def add_user(self, user: Any) -> None:
        """Count user (a Function's NativeInfo) while it lives; when the last goes, release the cached buffers.

        The compiled graph itself may stay loaded a while longer (cache/in_memory.py keeps the recent ones).
        """
        with _USERS_LOCK:
            self.users += 1
        weakref.finalize(user, self._user_gone).atexit = False

    def _user_gone(self) -> None:
        with _USERS_LOCK:
            self.users -= 1
            last = self.users == 0
        if last:
            self.library.release_buffers()


class NativeInfo:
    """Introspection of one Function compiled by the LLVM linker."""

    def __init__(self, compiled: CompiledGraph, fallback_nodes: list, memory_hit: bool,
                 rebuild_ir: Callable[[], str] | None = None, order: list | None = None,
                 guard: bool = False) -> None:
        self._compiled = compiled
        self._guard = guard                     # NanGuardMode's entries fuse their own way (loops/fusion.py)
        self.fallback_nodes = fallback_nodes
        self.memory_hit = memory_hit
        self._rebuild_ir = rebuild_ir
        self._order = order

    def describe_error(self, code: int, msg: int, node: int, a: int, b: int, c: int) -> BaseException:
        """The exception of an error record of the entry, naming this graph's node and line (ir/errors.py)."""
        return describe(self._compiled.messages, self._compiled.message_nodes, self._order,
                        code, msg, node, a, b, c)

    @property
    def llvm_ir(self) -> str:
        """The module's IR as compiled (kernels, then glue); rebuilt if loaded by plan."""
        if self._rebuild_ir is not None:
            return self._rebuild_ir()
        return self._compiled.library.llvm_ir

    @property
    def optimized_ir(self) -> str:
        """The IR after the optimisation pipeline."""
        self.llvm_ir                          # noqa: B018 - a library loaded by plan needs its IR first
        return self._compiled.library.optimized_ir

    @property
    def asm(self) -> str:
        """The assembly of the optimised module."""
        self.llvm_ir                          # noqa: B018
        return self._compiled.library.asm

    @property
    def cache_key(self) -> str:
        """The object-cache key (sha256 of IR, target, versions, opt level)."""
        return self._compiled.library.cache_key

    @property
    def cache_hit(self) -> bool:
        """True if the object code came from the disk cache."""
        return self._compiled.library.cache_hit

    @property
    def timings(self) -> dict[str, Any]:
        """Seconds: rewrite (if known), ir_build, key, cache_load, optimize, codegen, link; plus cache_hit."""
        out = dict(self._compiled.timings)
        out.update(self._compiled.library.timings)
        out["cache_hit"] = self.cache_hit
        out["memory_hit"] = self.memory_hit
        return out

    @property
    def entry_address(self) -> int:
        """Address of the native entry ``i32 entry(gj_runtime*, in*..., out*...)`` (ir/layouts.py)."""
        return self._compiled.library.get_address("entry")

    @property
    def in_specs(self) -> list:
        """ArgSpec of each argument of the native entry (arrays in numba's layout, scalars, objects)."""
        return list(self._compiled.in_specs)

    @property
    def out_specs(self) -> list:
        """ArgSpec of each output of the native entry."""
        return list(self._compiled.out_specs)

    @property
    def messages(self) -> list[str]:
        """The entry's error messages (rt->error.msg indexes it; %lld take a, b, c), naming this graph's nodes."""
        order, out = self._order or [], []
        for text, k in zip(self._compiled.messages, self._compiled.message_nodes):
            node = order[k] if 0 <= k < len(order) else None
            out.append(text + node_suffix(node).replace("%", "%%"))
        return out

    @property
    def n_temp_slots(self) -> int:
        """How many rt->slots past the outputs the entry may fill with temporaries (the caller releases)."""
        return self._compiled.n_temp

    @property
    def ctypes_signature(self) -> Any:
        """A ctypes CFUNCTYPE for the native entry: c_int(c_void_p rt, c_void_p per argument and output)."""
        import ctypes
        n = len(self._compiled.in_specs) + len(self._compiled.out_specs)
        return ctypes.CFUNCTYPE(ctypes.c_int, *([ctypes.c_void_p] * (n + 1)))

    def release_buffers(self) -> None:
        """Free the intermediate buffers kept for later calls (link/llvm/ir/buffers.py); calls reallocate them."""
        self._compiled.library.release_buffers()

    @property
    def n_loop_groups(self) -> int:
        """How many fused loop nests the graph became."""
        return self._compiled.n_groups

    def fused_groups(self, fgraph: Any) -> list[list[Any]]:
        """The nodes of each fused loop nest (elementwise chain, then the reduction ending it), as planned for
        fgraph (the Function's ``maker.fgraph``) when it was lowered; for printing (printing.to_dot)."""
        groups = _llvm.fusion.plan_groups(fgraph, self._order or fgraph.toposort(), self._guard)
        unique = {id(g): g for g in groups.values()}.values()
        return [list(g.nodes) + ([g.reduce] if g.reduce is not None else []) for g in unique]

    def __repr__(self) -> str:
        return (f"<NativeInfo key={self.cache_key[:12]} fallbacks={len(self.fallback_nodes)} "
                f"groups={self.n_loop_groups}>")
