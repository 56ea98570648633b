"""The runtime protocol's plain numbers, shared by the IR (ir/layouts.py) and the load side: the status codes a
native entry returns and the dtypes the backend takes.  No llvmlite here: a warm process (plan and object from the
disk cache) reads these without loading the IR builders (tests/link/llvm/cache/test_plan_alias.py)."""

from __future__ import annotations

import numpy as np

# the status a native entry returns (its error record holds the details: ir/layouts.py)
GJ_OK = 0
GJ_ERR_PYTHON = 1       # a Python exception is already set (allocation failure, a callback into Python)
GJ_ERR_INDEX = 2        # IndexError
GJ_ERR_VALUE = 3        # ValueError (shape mismatch, ...)
GJ_ERR_ZERO_DIVISION = 4
GJ_ERR_MEMORY = 5
GJ_ERR_RUNTIME = 6
GJ_ERR_LINALG = 7        # numpy.linalg.LinAlgError (singular / not positive definite, from LAPACK's info)
GJ_ERR_OVERFLOW = 8      # OverflowError (numpy's uniform: high - low not finite)

# the dtypes the backend lays out natively (ir/layouts.py gives each its LLVM type)
NATIVE_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                 "float32", "float64", "complex64", "complex128")


def dtype_name(dtype: object) -> str:
    """The canonical numpy name of a dtype-like ('float64', 'int32', 'bool', ...)."""
    name = np.dtype(dtype).name
    if name not in NATIVE_DTYPES:
        raise TypeError(f"graphjit LLVM backend: unsupported dtype {name!r}")
    return name
