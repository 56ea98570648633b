"""Runtime symbols: numpy C API, CPython API, BLAS from scipy, libgomp."""

import ctypes
import time
import uuid

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.modules import exported_name, new_module, symbol_prefix
from graphjit.link.llvm.jit.compiler import get_compiler
from graphjit.link.llvm.ir.blas_shims import routine
from graphjit.link.llvm.jit.runtime import (BLAS_SIGNATURES, NUMPY_API_INDEX, PY_DATA, PY_FUNCTIONS, blas_source,
                                      ensure_blas, ensure_runtime)


def test_ensure_runtime_publishes_and_is_cheap():
    info = ensure_runtime()
    assert info.numpy_abi_version == 0x02000000
    for name in NUMPY_API_INDEX:
        assert llvm.address_of_symbol("gj_" + name)
    assert llvm.address_of_symbol("gj_PyArray_Type") == id(np.ndarray)
    for name in PY_FUNCTIONS + PY_DATA:
        assert llvm.address_of_symbol(name), name
    t0 = time.perf_counter()
    for _ in range(1000):
        assert ensure_runtime() is info
    assert (time.perf_counter() - t0) / 1000 < 20e-6


def test_gomp_recorded():
    info = ensure_runtime()
    assert info.gomp_available == bool(llvm.address_of_symbol("gj_GOMP_parallel"))


def test_blas_ddot_callable_from_ir():
    assert set(ensure_blas()) == {"dgemm", "sgemm", "dgemv", "sgemv", "ddot", "sdot", "dger", "sger", "zgemm", "cgemm"}
    dbl, i32 = ir.DoubleType(), ir.IntType(32)
    module = new_module(symbol_prefix(f"ddot_{uuid.uuid4().hex[:8]}"))
    fnty = ir.FunctionType(dbl, [dbl.as_pointer(), dbl.as_pointer(), i32])
    fn = ir.Function(module, fnty, exported_name(module, "dot"))
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    x, y, n = fn.args
    n_slot, inc = ctx.alloca(i32), ctx.alloca(i32)
    ctx.builder.store(n, n_slot)
    ctx.builder.store(i32(1), inc)
    ddot = routine(module, "ddot", BLAS_SIGNATURES["ddot"], blas_source())
    args = [ctx.builder.bitcast(a, ir.IntType(8).as_pointer()) for a in (n_slot, x, inc, y, inc)]
    ctx.builder.ret(ctx.builder.call(ddot, args))
    lib = get_compiler().compile(module)
    f = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)(lib.get_address("dot"))
    a, b = np.random.rand(100), np.random.rand(100)
    assert f(a.ctypes.data, b.ctypes.data, 100) == pytest.approx(a @ b, rel=1e-12)
