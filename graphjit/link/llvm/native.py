"""``f.native``: what the LLVM linker produced for a Function (IR, optimised IR, assembly, key, fallbacks, timings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class CompiledGraph:
    """A compiled FunctionGraph, shared by every Function of the same structure (the in-memory map)."""

    library: Any                       # jit.NativeLibrary
    callable: Callable[..., Any]       # the METH_FASTCALL builtin
    in_specs: list
    out_specs: list
    fallback_indices: list[int]
    n_groups: int
    timings: dict[str, float] = field(default_factory=dict)


class NativeInfo:
    """Introspection of one Function compiled by the LLVM linker."""

    def __init__(self, compiled: CompiledGraph, fallback_nodes: list, memory_hit: bool) -> None:
        self._compiled = compiled
        self.fallback_nodes = fallback_nodes
        self.memory_hit = memory_hit

    @property
    def llvm_ir(self) -> str:
        """The module's IR as compiled (GJMOD_ replaced by the key's prefix)."""
        return self._compiled.library.llvm_ir

    @property
    def optimized_ir(self) -> str:
        """The IR after the optimisation pipeline."""
        return self._compiled.library.optimized_ir

    @property
    def asm(self) -> str:
        """The assembly of the optimised module."""
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
    def n_loop_groups(self) -> int:
        """How many fused loop nests the graph became."""
        return self._compiled.n_groups

    def __repr__(self) -> str:
        return (f"<NativeInfo key={self.cache_key[:12]} fallbacks={len(self.fallback_nodes)} "
                f"groups={self.n_loop_groups}>")
