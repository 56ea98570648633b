"""The LLVM backend.  Importing it registers every lowering and Type layout (registry.py) it knows: the modules
below hold them, keyed by the op and Type classes they import."""

from . import boxing, lower_alloc, lower_blas, lower_blas_vector, lower_indexing  # noqa: F401
from . import lower_reduce_extra, lower_shape, lower_special, tensor_ops  # noqa: F401
