"""The LLVM backend.  Importing it registers every lowering and Type layout (registry.py) it knows: the modules
below hold them, keyed by the op and Type classes they import."""

from graphjit.link.llvm.cpython import boxing  # noqa: F401
from graphjit.link.llvm.ops import alloc as lower_alloc  # noqa: F401
from graphjit.link.llvm.ops import blas as lower_blas  # noqa: F401
from graphjit.link.llvm.ops import blas_vector as lower_blas_vector  # noqa: F401
from graphjit.link.llvm.ops import indexing as lower_indexing  # noqa: F401
from graphjit.link.llvm.ops import extra_ops as lower_reduce_extra  # noqa: F401
from graphjit.link.llvm.ops import shape as lower_shape  # noqa: F401
from graphjit.link.llvm.ops import special as lower_special  # noqa: F401
from graphjit.link.llvm.ops import elemwise as tensor_ops  # noqa: F401
