"""The modules that register the LLVM backend's own lowerings and layouts, loaded on first need.

A warm process (plan and object found in the disk cache) runs none of the lowerings' code and keys its plan
without them (cache/keys.py: graphjit's source digest covers their code, so they need no version in the keys);
registry.load_builtins imports these modules the first time anything asks for an entry (a cold compile).
tests/link/llvm/test_lazy_lowerings.py checks that every registering module is listed (or imported by one).
"""

from __future__ import annotations

# imported in this order by registry.load_builtins (no module of the backend imports another through a cycle, so
# the order only decides which registration a test sees first)
MODULES: tuple[str, ...] = (
    "graphjit.link.llvm.cpython.boxing",
    "graphjit.link.llvm.ops.ifelse",
    "graphjit.link.llvm.ops.alloc",
    "graphjit.link.llvm.ops.check_op",
    "graphjit.link.llvm.ops.blas",
    "graphjit.link.llvm.ops.blas_vector",
    "graphjit.link.llvm.driver.elemwise",
    "graphjit.link.llvm.ops.extra_ops",
    "graphjit.link.llvm.ops.indexing",
    "graphjit.link.llvm.ops.lane_index",
    "graphjit.link.llvm.ops.repeat_op",
    "graphjit.link.llvm.ops.advanced_indexing",
    "graphjit.link.llvm.ops.linalg",
    "graphjit.link.llvm.ops.linalg_expm",
    "graphjit.link.llvm.ops.linalg_lstsq",
    "graphjit.link.llvm.driver.blockwise",
    "graphjit.link.llvm.ops.search",
    "graphjit.link.llvm.ops.searchsorted",
    "graphjit.link.llvm.ops.linalg_eig",
    "graphjit.link.llvm.ops.shape",
    "graphjit.link.llvm.ops.sort",
    "graphjit.link.llvm.ops.special",
    "graphjit.link.llvm.ops.unique",
    "graphjit.link.llvm.ops.random",
    "graphjit.link.llvm.ops.random_integers",
    "graphjit.link.llvm.ops.random_choice",
    "graphjit.link.llvm.ops.random_choice_unique",
    "graphjit.link.llvm.ops.random_hand_discrete",
    "graphjit.link.llvm.ops.random_permute",
    "graphjit.link.llvm.ops.random_multivariate",
    "graphjit.link.llvm.ops.random_mvn",
    "graphjit.link.llvm.scalar.special_bodies",
    "graphjit.link.llvm.scalar.ufunc_bodies",
    "graphjit.link.llvm.scalar.zeta_bodies",
    "graphjit.link.llvm.ops.debug",
)

# imported by registry.load_builtins only once their trigger module is (then, or at the next lookup): the Scan
# lowering needs the scan package, which a process that never builds a Scan need not import (no graph of it can
# hold one); tests/link/llvm/test_lazy_lowerings.py imports the triggers
DEFERRED: dict[str, str] = {
    "graphjit.link.llvm.driver.scan": "graphjit.scan_module.op",
}
