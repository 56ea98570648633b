"""Layouts: numba's array model, scalar types, numpy/CPython object offsets checked against live objects."""

import ctypes

import numpy as np
import pytest
from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ndim", [0, 1, 3])
def test_array_struct_is_numbas_array_model(dtype, ndim):
    import numba
    from numba.core.datamodel import default_manager
    model = default_manager.lookup(numba.types.Array(numba.from_dtype(np.dtype(dtype)), ndim, "A"))
    assert str(L.array_struct_literal(dtype, ndim)) == str(model.get_value_type())
    # the named type graphjit's modules use has the same fields
    assert L.array_struct(dtype, ndim).elements == L.array_struct_literal(dtype, ndim).elements


@pytest.mark.parametrize("dtype", DTYPES)
def test_scalar_types(dtype):
    ty = L.llvm_scalar_type(dtype)
    width = {ir.FloatType: 32, ir.DoubleType: 64}.get(type(ty)) or ty.width
    assert width == 8 * np.dtype(dtype).itemsize
    assert L.type_num(dtype) in L.type_nums(dtype)


def test_int64_type_nums_cover_long_and_longlong():
    assert set(L.type_nums("int64")) == {np.dtype("l").num, np.dtype("q").num}


def test_field_offsets():
    for ndim in range(4):
        for name in L.ARRAY_FIELDS:
            assert L.array_field_offset(name, ndim) == 8 * sum(
                (ndim if f in ("shape",) else 1) for f in L.ARRAY_FIELDS[:L.FIELD_INDEX[name]])


def _read(addr, ctype):
    return ctype.from_address(addr).value


@pytest.mark.parametrize("arr", [np.zeros((3, 4)), np.arange(10, dtype=np.int32)[::-2], np.ones(()),
                                 np.zeros((2, 3), dtype=">f8")], ids=["c", "strided", "0d", "bigendian"])
def test_pyarray_offsets_match_live_arrays(arr):
    base, off = id(arr), L.PYARRAY_OFFSETS
    assert _read(base + L.PYOBJECT_TYPE_OFFSET, ctypes.c_void_p) == id(np.ndarray)
    assert _read(base + off["data"], ctypes.c_void_p) == arr.__array_interface__["data"][0]
    assert _read(base + off["nd"], ctypes.c_int) == arr.ndim
    dims = _read(base + off["dimensions"], ctypes.c_void_p)
    strides = _read(base + off["strides"], ctypes.c_void_p)
    for d in range(arr.ndim):
        assert _read(dims + 8 * d, ctypes.c_int64) == arr.shape[d]
        assert _read(strides + 8 * d, ctypes.c_int64) == arr.strides[d]
    descr = _read(base + off["descr"], ctypes.c_void_p)
    assert descr == id(arr.dtype)
    assert _read(descr + L.DESCR_TYPE_NUM_OFFSET, ctypes.c_int) == arr.dtype.num
    assert _read(descr + L.DESCR_ELSIZE_OFFSET, ctypes.c_ssize_t) == arr.dtype.itemsize
    assert _read(descr + L.DESCR_BYTEORDER_OFFSET, ctypes.c_char) == arr.dtype.byteorder.encode()
    flags = _read(base + off["flags"], ctypes.c_int)
    assert bool(flags & L.NPY_ARRAY_ALIGNED) == arr.flags.aligned
    assert bool(flags & L.NPY_ARRAY_WRITEABLE) == arr.flags.writeable


def test_python_object_offsets():
    assert ctypes.c_double.from_address(id(2.5) + L.PYFLOAT_VALUE_OFFSET).value == 2.5
    t = (7.0, 8.0)
    assert ctypes.c_void_p.from_address(id(t) + L.PYTUPLE_ITEMS_OFFSET + 8).value == id(t[1])


def test_runtime_struct_layout():
    assert str(L.error_struct()) == "{i32, i32, i32, i32, i64, i64, i64}"
    assert str(L.alloc_fn_type()) == "i32 (i8*, i32, i8*, i32, i32, i64*)"
    assert len(L.runtime_struct().elements) == 4
    assert L.runtime_struct().elements == L.runtime_struct_literal().elements


def test_named_types_are_declared_by_the_modules_that_use_them():
    from graphjit.link.llvm.ir.modules import new_module
    user, other = new_module("gj_test_"), new_module("gj_test_")
    fn = ir.Function(user, ir.FunctionType(ir.VoidType(), [L.array_struct("float64", 2).as_pointer(),
                                                           L.runtime_struct().as_pointer()]), "f")
    ir.IRBuilder(fn.append_basic_block("entry")).ret_void()
    text = str(user)
    assert text.count('%"arr.f64.2" = type {i8*, i8*, i64, i64, double*, [2 x i64], [2 x i64]}') == 1
    assert text.count('%"gj.rt" = type ') == 1
    assert text.count(" = type ") == 2            # only what the module uses, whatever else the process made
    assert " = type " not in str(other)
    assert str(user) == text                       # deterministic: the text is the cache key
    from llvmlite import binding as llvm
    llvm.parse_assembly(text).verify()


def test_a_named_type_is_defined_once():
    from graphjit.link.llvm.ir.modules import named_struct
    ty = named_struct("test.pair", [ir.IntType(64), ir.DoubleType()])
    assert named_struct("test.pair", [ir.IntType(64), ir.DoubleType()]) is ty
    with pytest.raises(ValueError, match="test.pair"):
        named_struct("test.pair", [ir.IntType(32)])
