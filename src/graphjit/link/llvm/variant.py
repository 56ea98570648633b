"""What shapes a graph's native code besides the graph itself: size limits, math flags, lowering and layout versions.

The linker keys its plans with these (linker._variant, the plan alias).  They live apart from the IR builders that
obey them so that a warm process, which finds its plan and object on disk, computes the key without loading any
lowering (registry.py answers versions from builtin_table.py until the lowerings are loaded).  The limits are
read at call time by their users (``variant.COMPACT_MIN_GROUPS``): a test may change them.
"""

from __future__ import annotations

from typing import Any, Sequence

from graphjit.config import config
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.graph.type import Type
from graphjit.link.llvm.jit import compiler as _compiler   # get_compiler read at call time
from graphjit.link.llvm.registry import layouts, lowerings

COMPACT_MIN_GROUPS = 8               # graphs with this many fused groups drive their elementwise groups (loops/drivers.py)
STACK_TEMP_MAX_BYTES = 1024          # a temporary this small lives on the entry's stack (ir/stack_temps.py) ...
STACK_TEMPS_MAX_TOTAL = 32 * 1024    # ... up to this much per entry
SMALL_GRAPH_MAX_NODES = 200          # a larger graph of small static arrays keeps the light glue pipeline
# fused loops skip the broadcast checks the graph proves needless, and take proven constant lengths as trip counts
# (loops/lengths.py); False: every check at run time (the measurement's "before")
PROVE_LENGTHS = True

# the two methods of the inline exp (ir/fastmath.py's ExpMethod names)
MEMORY_TABLE_NAME = "table256"
REGISTER_TABLE_NAME = "reg8"


def uses_register_table() -> bool:
    """Whether this host's exp uses the 8-entry register table (AVX-512 makes its lookup one permute)."""
    return "+avx512f" in _compiler.get_compiler().features.split(",")


def lowering_flags() -> tuple:
    """The flags that change how math lowers (part of the linker's keys)."""
    return (config.inline_exp, REGISTER_TABLE_NAME if uses_register_table() else MEMORY_TABLE_NAME)


def sizes() -> tuple:
    """The size limits in force (part of the linker's keys)."""
    return COMPACT_MIN_GROUPS, STACK_TEMP_MAX_BYTES, STACK_TEMPS_MAX_TOTAL, SMALL_GRAPH_MAX_NODES, PROVE_LENGTHS


def lowering_version(op: Op) -> tuple | None:
    """The version of op's lowering: its registered entry's, else its ``lower_version`` hook's ((0,) when it
    has only ``lower``); None when it has none (perform is called back)."""
    version = lowerings.version(type(op))
    if version is not None:
        return version
    if getattr(op, "lower", None) is None:
        return None
    hook = getattr(op, "lower_version", None)
    return tuple(hook()) if hook is not None else (0,)


def layout_version(type_: Type) -> tuple:
    """The version of a Type's layout code: registered, else its ``llvm_version`` hook's."""
    version = layouts.version(type(type_))
    return version if version is not None else tuple(type_.llvm_version())


def lowering_versions(fgraph: Any, order: Sequence[Apply]) -> tuple:
    """The versions of the lowerings and Type layouts a graph uses, once per class in first-use order (part of
    the structural signature: a lowering registered outside graphjit changes its version, not our sources)."""
    seen: dict[type, tuple | None] = {}
    for node in order:
        cls = type(node.op)
        if cls not in seen:
            seen[cls] = lowering_version(node.op)
    types: dict[type, tuple] = {}
    for var in (*fgraph.inputs, *fgraph.outputs):
        cls = type(var.type)
        if cls not in types:
            types[cls] = layout_version(var.type)
    return tuple(seen.values()), tuple(types.values())

