"""Which LLVM passes and code generator level each kind of library part gets (jit/ir_prep.py's kinds).

LINKED and BULK parts: the O<n> pipeline, code generated at O<n>.  The light GLUE: SROA only (LIGHT_PASSES),
fast code generator.  A small entry's GLUE_SMALL: SMALL_GLUE_PASSES, fast code generator.  A very large entry
that runs loops, GLUE_HOT: the O1 pipeline and code generator (HOT_GLUE_LEVEL).
At opt level 0 (FAST_COMPILE) every part: LIGHT_PASSES, fast code generator.  BULK_VECTOR parts (kernels emitted already vectorised, loops/vector_body.py): a short list
(bulk.VECTOR_PASSES), fast code generator.
"""

from __future__ import annotations

from typing import Any, Sequence

from graphjit.link.llvm.jit import bulk
from graphjit.link.llvm.jit.binding import llvm
from graphjit.link.llvm.jit.ir_prep import BULK_VECTOR, GLUE, GLUE_HOT, GLUE_SMALL, Kind

# SROA only: the entry's allocas become registers.  instcombine and simplifycfg cost more than they save on
# a large graph's glue (W3: 0.24 s -> 0.09 s of LLVM time for the glue; instcombine alone was 0.11 s, and the
# selects and switches simplifycfg makes send the fast instruction selector to SelectionDAG), for ~1 us per
# call on a mid-sized graph of tiny arrays.
LIGHT_PASSES = ("sroa",)
# A small entry's glue (the CPython wrappers, the argument checks, one call per loop) compiled apart from its
# kernels: linked into them at O3 it took ~100 ms of LLVM time per small graph (a two-input elementwise graph
# compiled in 122 ms, now 40 ms); these three passes and the fast code generator keep its call overhead:
# benchmarks/trees_interleave.py (one core, 7 rounds) measured W2's `x + y` at 65 ns either way and W1 at 1e3
# within 2%; a loop of calls in a process that had compiled 16 graphs before measured 101 -> 108 ns.  The O2 code
# generator spent 30 ms more per small graph for at most that.  The kernels keep the full pipeline in their part.
SMALL_GLUE_PASSES = ("sroa", "instruction_combine", "simplify_cfg")


# A very large entry whose glue runs loops (scan bodies, hot_glue) takes the O1 pipeline apart from its kernels
# (which keep O<n>): O3 on one 60,000-line function (an RNN's Hessian-vector product: forward, backward and
# tangent loops) spent 11.7 s optimising and 2.6 s generating code, O1 2.4 s and 2.5 s, for 58 -> 67 us per call
# (50 steps); the light glue compiled in 0.5 s but ran 256 us.
HOT_GLUE_LEVEL = 1


def pass_level(kind: Kind, opt_level: int) -> int:
    """The pipeline's level for a part: a very large hot glue's HOT_GLUE_LEVEL, else opt_level."""
    return min(opt_level, HOT_GLUE_LEVEL) if kind == GLUE_HOT else opt_level


def codegen_level(kind: Kind, opt_level: int) -> int:
    """The code generator's level for a part: the glue's and the vector kernels' the fast one (O0).

    Vector kernels are one straight-line loop body (loops/vector_body.py), which the fast instruction selector
    and register allocator handle about as well: W9's N = 1000 call time was the same with their parts emitted
    at O0 or O3, for 2.6x less code generation time (docs/performance.md)."""
    if kind is GLUE or kind == GLUE_SMALL or kind == BULK_VECTOR:
        return 0
    return pass_level(kind, opt_level)


def pass_manager(kind: Kind, pb: Any, opt_level: int = 3) -> Any:
    """The module pass manager of a part of this kind: light, the vector kernels' short list, or pb's O<n>;
    at opt level 0 (FAST_COMPILE) every part gets the light list."""
    if kind is GLUE or opt_level == 0:
        return listed_passes(LIGHT_PASSES)
    if kind == BULK_VECTOR:
        return listed_passes(bulk.VECTOR_PASSES)
    if kind == GLUE_SMALL:
        return listed_passes(SMALL_GLUE_PASSES)
    return pb.getModulePassManager()


def listed_passes(names: Sequence[str]) -> Any:
    """A module pass manager running the named passes (llvmlite's add_<name>_pass), in order."""
    mpm = llvm.create_new_module_pass_manager()
    for name in names:
        getattr(mpm, f"add_{name}_pass")()
    return mpm
