"""A large graph's kernels as several modules ("bulk" parts of a library, jit/compiler.py), compiled apart.

A library with SPLIT_MIN_KERNELS or more kernels called from its glue (a large graph) has them printed as several
modules of at most BULK_PART_KERNELS kernels (compiler.ir_parts), compiled apart: on all its cores side by side
(jit/parallel.py), with a cheaper vectoriser: no vectorised epilogue loop, one vector per iteration (the loops'
interleave=2 hint overridden).  Measured on W9's N = 1000 kernels (215): optimisation 0.83 -> 0.59 s, codegen
0.89 -> 0.49 s on one core; a loop of a few thousand elements loses a few ns to its scalar remainder.  W3's 18
kernels stay one module, fully vectorised.  Smaller parts cost LLVM less per kernel (its module-level work grows
faster than the module); a part prints only its own kernels, so printing stays linear in the kernels."""

from __future__ import annotations

import contextlib
from typing import Iterator

from graphjit.link.llvm.jit.lazy_ir import ir    # llvmlite.ir on first use (never when warm)
from graphjit.link.llvm.jit.binding import llvm

SPLIT_MIN_KERNELS = 24
# and at most this many kernels per part: LLVM's module passes cost more per function in a larger module (W9,
# N = 10000: 1439 kernels in two parts, 23 ms of optimisation per kernel against 15 ms for 535 at N = 3000;
# N = 1000's 215 kernels on one core, CPU time of parse + optimise + codegen, min / median of 6: parts of 192
# 934 / 1052 ms, of 96 899 / 1032 ms, of 48 836 / 939 ms)
BULK_PART_KERNELS = 48
# the passes of a part whose kernels are already vectorised (loops/vector_body.py) instead of the O3 pipeline:
# what their IR needs to be clean (measured on W9's N = 1000 kernels, see docs/performance.md)
VECTOR_PASSES = ("always_inliner", "sroa", "instruction_combine", "simplify_cfg", "loop_rotate",
                 "instruction_combine")
# (option, value for the bulk parts, LLVM's default)
OPTIONS = (("-enable-epilogue-vectorization", "false", "true"), ("-force-vector-interleave", "1", "0"))


def describe_options() -> str:
    """The bulk options as the cache key's pipeline names them."""
    return ",".join(f"{o}={v}" for o, v, _ in OPTIONS) + ";vector:" + ",".join(VECTOR_PASSES)


@contextlib.contextmanager
def options() -> Iterator[None]:
    """The bulk parts' vectoriser options for the block (process-wide LLVM options: the caller holds its lock)."""
    for option, value, _ in OPTIONS:
        llvm.set_option("", f"{option}={value}")
    try:
        yield
    finally:
        for option, _, default in OPTIONS:
            llvm.set_option("", f"{option}={default}")


def split_kernels(kernels: ir.Module) -> list[tuple[str, bool]] | None:
    """The kernels module printed as several modules (one per BULK_PART_KERNELS, at least two), each defining its
    share of the exported kernels (balanced by instructions), with whether the part holds only kernels emitted
    already vectorised (loops/vector_body.py: compiled with VECTOR_PASSES; the others get the O3 pipeline);
    internal helpers and declarations are printed in all (each keeps what it calls).  A part leaves the other
    parts' kernels out (declared only where some function calls one), so printing is linear in the kernels,
    not in kernels x parts.  None below SPLIT_MIN_KERNELS exported kernels.  Deterministic: the text is the
    cache key."""
    exported = [fn for fn in kernels.functions if not fn.is_declaration and fn.linkage == ""]
    # a function naming the kernel it wraps (gj_rides_with: a group's rows adapter, loops/drivers.py) goes into
    # that kernel's part, so no part declares another part's kernel: the kernel and its riders are one unit
    riders: dict[str, list[ir.Function]] = {}
    for fn in exported:
        if getattr(fn, "gj_rides_with", None):
            riders.setdefault(fn.gj_rides_with, []).append(fn)
    units = [[fn] + riders.pop(fn.name, []) for fn in exported if not getattr(fn, "gj_rides_with", None)]
    units[:0] = [[fn] for fns in riders.values() for fn in fns]     # a rider whose kernel is not exported
    if len(units) < SPLIT_MIN_KERNELS:
        return None
    groups = [[u for u in units if getattr(u[0], "gj_vector", False) is vector] for vector in (True, False)]
    # beside vector parts, the O3 kernels (reductions, mostly) in smaller parts: the longest jobs of the pool
    limits = (BULK_PART_KERNELS, BULK_PART_KERNELS // 2 if groups[0] else BULK_PART_KERNELS)
    counts = [-(-sum(map(len, g)) // limit) for g, limit in zip(groups, limits)]
    if sum(counts) < 2:
        counts = [2 if g else 0 for g in groups]
    parts = [(part, vector) for g, n, vector in zip(groups, counts, (True, False)) for part in _balanced(g, n)]
    callees = _callees(kernels)
    called = set().union(*callees.values())
    everything = kernels.globals
    internal = {fn.name for fn in kernels.functions if not fn.is_declaration and fn.linkage == "internal"}
    texts = []
    for k, (part, vector) in enumerate(parts):
        # the internal helpers no kernel of this part reaches are left out too (vector tails, the vector exp)
        others = {fn.name for j, (p, _) in enumerate(parts) if j != k for fn in p}
        reach = _reached([fn.name for fn in part], callees)
        others |= internal - reach
        names = {name for name in others if name in called and name in reach and name not in internal}
        declared = [everything[name] for name in sorted(names)]
        bodies = [fn.blocks for fn in declared]
        for fn in declared:
            fn.blocks = []                  # printed as a declaration (external, as exported kernels are)
        kernels.globals = type(everything)((name, g) for name, g in everything.items()
                                           if name not in others or name in names)
        try:
            texts.append((str(kernels), vector))
        finally:
            kernels.globals = everything
            for fn, blocks in zip(declared, bodies):
                fn.blocks = blocks
    return texts


def _balanced(units: list[list[ir.Function]], n_parts: int) -> list[list[ir.Function]]:
    """The units' functions in n_parts lists of about equal instruction counts (largest unit first into the
    lightest), a unit's functions together."""
    size = {u[0].name: sum(len(b.instructions) for fn in u for b in fn.blocks) for u in units}
    parts: list[list[ir.Function]] = [[] for _ in range(n_parts)]
    loads = [0] * n_parts
    for u in sorted(units, key=lambda u: (-size[u[0].name], u[0].name)):
        k = min(range(n_parts), key=lambda j: (loads[j], len(parts[j]), j))
        parts[k].extend(u)
        loads[k] += size[u[0].name]
    return parts


def _callees(module: ir.Module) -> dict[str, set[str]]:
    """The functions each definition of module calls, itself apart (kernels seldom call each other)."""
    return {fn.name: {ins.callee.name for block in fn.blocks for ins in block.instructions
                      if isinstance(ins, ir.CallInstr) and isinstance(ins.callee, ir.Function)
                      and ins.callee is not fn}
            for fn in module.functions if not fn.is_declaration}


def _reached(roots: list[str], callees: dict[str, set[str]]) -> set[str]:
    """roots and every function they call, directly or not."""
    seen, todo = set(roots), list(roots)
    while todo:
        for name in callees.get(todo.pop(), ()):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen
