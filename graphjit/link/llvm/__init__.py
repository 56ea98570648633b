"""The LLVM backend.  Importing it registers every lowering and Type layout (registry.py) it knows: the modules
below hold them, keyed by the op and Type classes they import."""

from graphjit.link.llvm.cpython import boxing  # noqa: F401
from graphjit.link.llvm.ops import ifelse  # noqa: F401  (IfElse's native branch)
from graphjit.link.llvm.ops import alloc, blas, blas_vector, elemwise, extra_ops  # noqa: F401
from graphjit.link.llvm.ops import indexing, linalg, scan, shape, special  # noqa: F401
from graphjit.link.llvm.ops import special_bodies, ufunc_bodies, zeta_bodies  # noqa: F401
# after the others: ir/instrument.py -> ir/fallback.py needs ir/native_entry.py (which they load) complete
from graphjit.link.llvm.ops import debug  # noqa: F401
