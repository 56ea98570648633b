"""Native layouts: dtypes and numba's array model as LLVM types, CPython/numpy struct offsets, runtime protocol.

Everything here is plain data about memory: no IR is emitted. The runtime protocol (the struct a native entry
receives, its error record and the allocator signature) is defined here and documented in
``graphjit/link/llvm/README``-style docstrings below, because both the native side (ir/context.py) and the Python
wrapper (cpython/wrapper.py) must agree on it byte for byte.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Variable
from graphjit.tensor.type import TensorType

from graphjit.link.llvm.ir.modules import named_struct
# the status codes and dtype names live in ir/protocol.py (the load side reads them without llvmlite)
from graphjit.link.llvm.ir.protocol import NATIVE_DTYPES, dtype_name
# read as layouts.GJ_* by numba/overload.py (outside the backend); the backend imports them from ir/protocol.py
from graphjit.link.llvm.ir.protocol import GJ_ERR_MEMORY, GJ_ERR_PYTHON, GJ_OK  # noqa: F401

I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
I8P = I8.as_pointer()
I64P = I64.as_pointer()
PYOBJ_PP = I8P.as_pointer()     # PyObject**: vectorcall's arguments, a global holding an object

_SCALAR_TYPES: dict[str, ir.Type] = {
    "bool": I8,  # numpy bools are one byte in memory; compute with i1, store as i8
    "int8": I8, "uint8": I8,
    "int16": ir.IntType(16), "uint16": ir.IntType(16),
    "int32": I32, "uint32": I32,
    "int64": I64, "uint64": I64,
    "float32": ir.FloatType(), "float64": ir.DoubleType(),
    # numpy's complex is {re, im}; a literal struct has its alignment (4/8), where <2 x T> would claim 8/16
    # and make LLVM's aligned loads wrong on numpy's arrays, which are only aligned to the component
    "complex64": ir.LiteralStructType([ir.FloatType(), ir.FloatType()]),
    "complex128": ir.LiteralStructType([ir.DoubleType(), ir.DoubleType()]),
}
assert tuple(_SCALAR_TYPES) == NATIVE_DTYPES
_NATIVE = frozenset(NATIVE_DTYPES)


def is_native_tensor(var: Variable) -> bool:
    """A tensor whose layout is numba's array struct (other dtypes go through PyObject*)."""
    return isinstance(var.type, TensorType) and var.type.dtype in _NATIVE

# numba's array model, field order; strides are in bytes
ARRAY_FIELDS = ("meminfo", "parent", "nitems", "itemsize", "data", "shape", "strides")
FIELD_INDEX = {name: i for i, name in enumerate(ARRAY_FIELDS)}


def llvm_scalar_type(dtype: object) -> ir.Type:
    """The LLVM type of one element of dtype as stored in memory (bool is i8)."""
    return _SCALAR_TYPES[dtype_name(dtype)]


def itemsize(dtype: object) -> int:
    """Bytes per element."""
    return np.dtype(dtype).itemsize


def is_float(dtype: object) -> bool:
    """True for float32/float64."""
    return np.dtype(dtype).kind == "f"


def is_complex(dtype: object) -> bool:
    """True for complex64/complex128."""
    return np.dtype(dtype).kind == "c"


def is_signed(dtype: object) -> bool:
    """True for signed integer dtypes."""
    return np.dtype(dtype).kind == "i"


@lru_cache(maxsize=None)
def array_struct(dtype: object, ndim: int) -> ir.IdentifiedStructType:
    """numba's array model as the named type ``%"arr.<kind><bits>.<ndim>"`` (``%"arr.f64.2"``, fields of
    array_struct_literal): graphjit's modules (modules.new_module) use it; foreign ones (numba's) the literal."""
    dt = np.dtype(dtype)
    return named_struct(f"arr.{dt.kind}{8 * dt.itemsize}.{ndim}", array_struct_literal(dtype, ndim).elements)


@lru_cache(maxsize=None)
def array_struct_literal(dtype: object, ndim: int) -> ir.LiteralStructType:
    """numba's array model: {i8* meminfo, i8* parent, i64 nitems, i64 itemsize, T* data, [N x i64] shape, strides}."""
    dims = ir.ArrayType(I64, ndim)
    return ir.LiteralStructType([I8P, I8P, I64, I64, llvm_scalar_type(dtype).as_pointer(), dims, dims])


def array_field_offset(field: str, ndim: int) -> int:
    """Byte offset of a field of array_struct(_, ndim) on a 64-bit target (all fields are 8-byte aligned)."""
    if field == "strides":
        return 40 + 8 * ndim
    return {"meminfo": 0, "parent": 8, "nitems": 16, "itemsize": 24, "data": 32, "shape": 40}[field]


def type_num(dtype: object) -> int:
    """numpy's canonical type number of dtype (NPY_DOUBLE = 12, ...)."""
    return np.dtype(dtype).num


@lru_cache(maxsize=None)
def type_nums(dtype: object) -> tuple[int, ...]:
    """Every numpy type number that denotes dtype on this platform (int64 is both NPY_LONG and NPY_LONGLONG)."""
    want = np.dtype(dtype)
    nums = {np.dtype(c).num for c in "?bBhHiIlLqQfdFD" if np.dtype(c) == want}
    return tuple(sorted(nums))


# ---------------------------------------------------------------- CPython / numpy object layouts (64-bit)

class _PyArrayObjectFields(ctypes.Structure):
    """numpy 2's PyArrayObject_fields, after PyObject_HEAD."""

    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p), ("data", ctypes.c_void_p),
                ("nd", ctypes.c_int), ("dimensions", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("base", ctypes.c_void_p), ("descr", ctypes.c_void_p), ("flags", ctypes.c_int)]


class _PyArrayDescrHead(ctypes.Structure):
    """The leading fields of numpy 2's PyArray_Descr (elsize moved in numpy 2; the ABI is checked at runtime)."""

    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p), ("typeobj", ctypes.c_void_p),
                ("kind", ctypes.c_char), ("type", ctypes.c_char), ("byteorder", ctypes.c_char),
                ("former_flags", ctypes.c_char), ("type_num", ctypes.c_int), ("flags", ctypes.c_uint64),
                ("elsize", ctypes.c_ssize_t)]


PYOBJECT_TYPE_OFFSET = _PyArrayObjectFields.ob_type.offset          # Py_TYPE(o)
PYFLOAT_VALUE_OFFSET = 16                                           # PyFloatObject.ob_fval
PYTUPLE_ITEMS_OFFSET = 24                                           # PyTupleObject.ob_item[0]
PYARRAY_OFFSETS = {name: getattr(_PyArrayObjectFields, name).offset
                   for name in ("data", "nd", "dimensions", "strides", "base", "descr", "flags")}
DESCR_BYTEORDER_OFFSET = _PyArrayDescrHead.byteorder.offset
DESCR_TYPE_NUM_OFFSET = _PyArrayDescrHead.type_num.offset
DESCR_ELSIZE_OFFSET = _PyArrayDescrHead.elsize.offset

NPY_ARRAY_ALIGNED = 0x0100
NPY_ARRAY_WRITEABLE = 0x0400

# ---------------------------------------------------------------- the runtime protocol
#
# A native entry has the C signature
#     i32 entry(gj_runtime* rt, in_0*, ..., in_{n-1}*, out_0*, ..., out_{m-1}*)
# where every argument points to its layout (array_struct for arrays, the scalar itself for scalars).
# It returns GJ_OK (0) or an error code; on error it has filled rt->error.  Outputs are allocated by the
# native entry itself through rt->alloc, so it needs no Python object and computes output shapes itself.
#
#   gj_error   = { i32 code, i32 msg, i32 node, i32 reserved, i64 a, i64 b, i64 c }            (40 bytes)
#   gj_runtime = { i32 (i8* rt, i32 slot, i8* out, i32 type_num, i32 ndim, i64* shape)* alloc,
#                  i8** slots, i64 flags, gj_error error }                                      (64 bytes)
#
# alloc(rt, slot, out, type_num, ndim, shape) fills the array struct at `out` (an array_struct of that
# ndim) with a fresh C-contiguous buffer of that shape, keeps the owner in rt->slots[slot] (the Python
# wrapper returns slots 0..m-1 as the outputs and releases any further slots), and returns 0; on failure it
# returns GJ_ERR_PYTHON with the error record filled (a Python exception is then pending), and the native
# entry must return that status at once.  `msg` indexes the graph's message templates (kept in Python,
# taking a, b, c as %lld: ir/errors.py); `node` is the index of the failing node in the graph's toposort (-1 if
# none).

RT_ALLOC, RT_SLOTS, RT_FLAGS, RT_ERROR = range(4)
ERR_CODE, ERR_MSG, ERR_NODE, ERR_RESERVED, ERR_A, ERR_B, ERR_C = range(7)
RT_FLAG_GIL_RELEASED = 1
RT_FLAG_PY_SLOTS = 2    # rt->slots own numpy arrays (the CPython wrapper): temporaries may be cached (ir/buffers.py)


def error_struct() -> ir.LiteralStructType:
    """gj_error = {i32 code, i32 msg, i32 node, i32 reserved, i64 a, i64 b, i64 c}."""
    return ir.LiteralStructType([I32, I32, I32, I32, I64, I64, I64])


def alloc_fn_type() -> ir.FunctionType:
    """i32 alloc(i8* rt, i32 slot, i8* out_struct, i32 type_num, i32 ndim, i64* shape)."""
    return ir.FunctionType(I32, [I8P, I32, I8P, I32, I32, I64P])


@lru_cache(maxsize=None)
def runtime_struct() -> ir.IdentifiedStructType:
    """gj_runtime as the named type ``%"gj.rt"`` (runtime_struct_literal's fields), for graphjit's modules."""
    return named_struct("gj.rt", runtime_struct_literal().elements)


def runtime_struct_literal() -> ir.LiteralStructType:
    """gj_runtime = {alloc*, i8** slots, i64 flags, gj_error error} (as a foreign module, numba's, spells it)."""
    return ir.LiteralStructType([alloc_fn_type().as_pointer(), I8P.as_pointer(), I64, error_struct()])


def native_entry_type(arg_layouts: list[ir.Type], out_layouts: list[ir.Type]) -> ir.FunctionType:
    """i32 entry(gj_runtime*, in_layout*..., out_layout*...)."""
    ptrs = [t.as_pointer() for t in [*arg_layouts, *out_layouts]]
    return ir.FunctionType(I32, [runtime_struct().as_pointer(), *ptrs])
