"""Hand-built native entries (through LowerContext) and their wrappers, shared by the tests of link/llvm."""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.protocol import GJ_ERR_INDEX, GJ_ERR_VALUE
from graphjit.link.llvm.ir.context import define_native_entry
from graphjit.link.llvm.cpython.wrapper import build_python_wrapper
from graphjit.link.llvm.cpython.builtin import make_python_callable
from graphjit.link.llvm.cpython.argspec import ArgSpec
from graphjit.link.llvm.jit.compiler import get_compiler
from graphjit.link.llvm.ir.modules import new_module, symbol_prefix

MESSAGES = ["index %lld is out of bounds for axis %lld with size %lld",
            "shapes differ: %lld != %lld (axis %lld)"]


def add_module(dtype: str = "float64", ndim: int = 2, name: str = "add", release_gil: bool = False,
               tag: str = "") -> ir.Module:
    """out = x + y for two strided arrays of equal shape (ValueError record on a shape mismatch)."""
    module = new_module(symbol_prefix(f"test_{name}{tag}"), name=f"test_{name}{tag}")
    spec = ArgSpec.array(dtype, ndim)
    entry, ctx = define_native_entry(module, "entry", [spec.layout()] * 2, [spec.layout()])
    _, x, y, out = entry.args
    b = ctx.builder
    shape = ctx.shapes(x, ndim)
    for d in range(ndim):
        differs = b.icmp_signed("!=", shape[d], ctx.shape(y, d))
        ctx.error_if(differs, GJ_ERR_VALUE, msg=1, node=0, args=[shape[d], ctx.shape(y, d), d])
    ctx.allocate_array(0, out, dtype, shape)
    with ctx.loop_nest(shape) as idx:
        a, c = ctx.load_element(x, idx), ctx.load_element(y, idx)
        s = b.fadd(a, c) if L.is_float(dtype) else b.add(a, c)
        ctx.store_element(out, idx, s)
    b.ret(ir.Constant(ir.IntType(32), 0))
    build_python_wrapper(module, entry, [spec, spec], [spec], release_gil=release_gil)
    return module


def take_module() -> ir.Module:
    """out = (x[i], x[i] * 2) for a 1-d float64 x and an int64 scalar i (IndexError record when out of bounds)."""
    module = new_module(symbol_prefix("test_take"), name="test_take")
    xs, ispec, o = ArgSpec.array("float64", 1), ArgSpec.scalar("int64"), ArgSpec.array("float64", 0)
    entry, ctx = define_native_entry(module, "entry", [xs.layout(), ispec.layout()], [o.layout(), o.layout()])
    _, x, iptr, out0, out1 = entry.args
    b = ctx.builder
    i, n = b.load(iptr), ctx.shape(x, 0)
    bad = b.or_(b.icmp_signed("<", i, ir.Constant(L.I64, 0)), b.icmp_signed(">=", i, n))
    ctx.error_if(bad, GJ_ERR_INDEX, msg=0, node=3, args=[i, 0, n])
    ctx.allocate_array(0, out0, "float64", [])
    ctx.allocate_array(1, out1, "float64", [])
    v = ctx.load_element(x, [i])
    ctx.store_element(out0, [], v)
    ctx.store_element(out1, [], b.fmul(v, ir.Constant(ir.DoubleType(), 2.0)))
    b.ret(ir.Constant(ir.IntType(32), 0))
    build_python_wrapper(module, entry, [xs, ispec], [o, o])
    return module


def compile_callable(module: ir.Module):
    """Compile a module and return (builtin, library)."""
    lib = get_compiler().compile(module)
    return make_python_callable(lib, "pywrap", name=module.name, messages=MESSAGES), lib
