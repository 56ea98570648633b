"""The native compiler and the LowerContext helpers: symbols, laziness, loops, intrinsics, vector math."""

import ctypes
import re
import uuid

import numpy as np
import pytest
from llvmlite import ir

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.jit.compiler import PrefixClash, get_compiler
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.ir.modules import exported_name, new_module, symbol_prefix

DBL = ir.DoubleType()
DP = DBL.as_pointer()


def unary_loop_module(name, body):
    """``void <prefix>f(double* x, double* out, i64 n)``: out[i] = body(ctx, x[i])."""
    return indexed_loop_module(name, lambda ctx, v, i: body(ctx, v))


def indexed_loop_module(name, body):
    """``void <prefix>f(double* x, double* out, i64 n)``: out[i] = body(ctx, x[i], i)."""
    module = new_module(symbol_prefix(f"{name}_{uuid.uuid4().hex[:8]}"))
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [DP, DP, I64]), exported_name(module, "f"))
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    x, out, n = fn.args
    b = ctx.builder
    with ctx.for_range(n) as i:
        b.store(body(ctx, b.load(b.gep(x, [i])), i), b.gep(out, [i]))
    b.ret_void()
    return module


def run_unary(lib, x):
    out = np.empty_like(x)
    f = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(lib.get_address("f"))
    f(x.ctypes.data, out.ctypes.data, x.size)
    return out


def test_singleton_and_prefix():
    c = get_compiler()
    assert get_compiler() is c
    lib = c.compile(unary_loop_module("prefix", lambda ctx, v: ctx.builder.fadd(v, v)))
    assert f'@"{lib.prefix}f"(' in lib.llvm_ir
    assert lib.symbol("f") == lib.prefix + "f"
    x = np.arange(5.0)
    np.testing.assert_array_equal(run_unary(lib, x), 2 * x)
    with pytest.raises(KeyError):
        lib.get_address("nope")
    assert set(lib.timings) >= {"ir_parse", "optimize", "codegen", "cache_load", "total"}


def test_unprefixed_export_is_refused():
    module = new_module(symbol_prefix(uuid.uuid4().hex))
    fn = ir.Function(module, ir.FunctionType(I64, [I64]), "exported")
    ir.IRBuilder(fn.append_basic_block("entry")).ret(fn.args[0])
    with pytest.raises(ValueError, match="lacks the prefix"):
        get_compiler().compile(module)
    with pytest.raises(ValueError, match="new_module"):
        get_compiler().compile(ir.Module())            # no prefix: names cannot be known


def test_optimized_ir_and_asm_are_lazy():
    lib = get_compiler().compile(unary_loop_module("lazy", lambda ctx, v: ctx.builder.fmul(v, v)))
    assert lib._asm is None
    assert lib.prefix + "f:" in lib.asm
    assert "define" in lib.optimized_ir


def test_loop_nest_and_intrinsic():
    lib = get_compiler().compile(unary_loop_module("sqrt", lambda ctx, v: ctx.call_intrinsic("sqrt", [v])))
    x = np.linspace(0, 9, 37)
    np.testing.assert_array_equal(run_unary(lib, x), np.sqrt(x))


@pytest.mark.parametrize("fn", ["exp", "sin", "log1p", "expm1", "tanh"])
def test_call_math(fn):
    lib = get_compiler().compile(unary_loop_module(fn, lambda ctx, v: ctx.call_math(fn, [v])))
    x = np.linspace(0.01, 3, 1001)
    np.testing.assert_allclose(run_unary(lib, x), getattr(np, fn)(x), rtol=1e-14)


def test_libmvec_vectorises_sin():
    c = get_compiler()
    if not c.vector_library.startswith("libmvec"):
        pytest.skip("no libmvec on this host")
    lib = c.compile(unary_loop_module("vsin", lambda ctx, v: ctx.call_math("sin", [v])))
    assert re.search(r"_ZGV[bde]N\d+v_sin", lib.asm)     # (float64 exp is inline: test_fastmath.py)


def test_loop_nest_indices():
    module = new_module(symbol_prefix(f"nest_{uuid.uuid4().hex[:8]}"))
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I64, I64]), exported_name(module, "f"))
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    out, n0, n1 = fn.args
    b = ctx.builder
    with ctx.loop_nest([n0, n1]) as (i, j):
        b.store(b.add(b.mul(i, I64(100)), j), b.gep(out, [b.add(b.mul(i, n1), j)]))
    b.ret_void()
    lib = get_compiler().compile(module)
    res = np.zeros((3, 4), dtype=np.int64)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(lib.get_address("f"))(
        res.ctypes.data, 3, 4)
    np.testing.assert_array_equal(res, np.arange(3)[:, None] * 100 + np.arange(4))


_TABLE = np.linspace(-1.0, 1.0, 512)
_PARTS = {
    "declared": lambda xs: np.cos(xs),
    "libcalls": lambda xs: np.sin(xs) + np.fmod(xs, 0.7),
    "table": lambda xs: xs + _TABLE[np.arange(xs.size) % 512],
}


def _calls_module(part):
    """out[i] = cos(x[i]) (a declared libm function), sin(x[i]) + fmod(x[i], 0.7) (the backend's libcalls for
    llvm.sin and frem) or x[i] + table[i % 512] (a private constant table, addressed PC-relative)."""
    def body(ctx, v, i):
        b, module = ctx.builder, ctx.builder.module
        if part == "declared":
            return b.call(ir.Function(module, ir.FunctionType(DBL, [DBL]), "cos"), [v])
        if part == "libcalls":
            return b.fadd(b.call(module.declare_intrinsic("llvm.sin", [DBL]), [v]), b.frem(v, DBL(0.7)))
        table = ir.GlobalVariable(module, ir.ArrayType(DBL, 512), "table")
        table.linkage, table.global_constant = "private", True
        table.initializer = ir.Constant(ir.ArrayType(DBL, 512), [float(t) for t in _TABLE])
        return b.fadd(v, b.load(b.gep(table, [I64(0), b.srem(i, I64(512))])))
    return indexed_loop_module("calls", body)


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("part", sorted(_PARTS))
def test_objects_link_under_the_small_code_model(part, opt_level):
    """Objects are small-model PIC: external callees, declared here or by the backend, bind through the GOT
    (a PLT stub would need GOT room llvmlite's memory manager does not reserve: an abort)."""
    lib = get_compiler().compile(_calls_module(part), opt_level=opt_level)
    xs = np.linspace(-3.0, 3.0, 1000)
    np.testing.assert_allclose(run_unary(lib, xs), _PARTS[part](xs), rtol=1e-12, atol=1e-12)


def _plt_calls_out_of_object(asm: str) -> list[str]:
    defined = set(re.findall(r"^([\w.$]+):", asm, re.M))
    return [s for s in re.findall(r"([\w.$]+)@PLT", asm) if s not in defined]


@pytest.mark.parametrize("opt_level", [0, 3])
def test_external_calls_bind_through_the_got(opt_level):
    """Every declaration is nonlazybind in the IR LLVM compiles, so no call to another object goes through a PLT stub,
    at O0 (the fast instruction selector) as at O3: an object without writable data used to abort here."""
    for part in sorted(_PARTS):
        assert _plt_calls_out_of_object(get_compiler().compile(_calls_module(part), opt_level=opt_level).asm) == []
    x, y = gt.dmatrices("x", "y")
    mode = "FAST_RUN" if opt_level else "FAST_COMPILE"
    f = gj.function([x, y], (gt.exp(x) + y).sum(axis=0) * gt.tanh(x).mean() + gt.dot(x, y), mode=mode)
    assert _plt_calls_out_of_object(f.native.asm) == []


def test_declarations_the_optimiser_adds_are_bound_too():
    """A declaration the optimiser adds (written here without the attribute) is bound: in place through
    llvmlite.binding's add_function_attribute, or (llvmlite 0.47 put that attribute on the return value) in the
    module's text parsed again."""
    from llvmlite import binding as llvm
    from graphjit.link.llvm.jit.ir_prep import bind_through_got, function_attributes_work
    mod = llvm.parse_assembly('declare double @cos(double)\ndeclare double @llvm.sin.f64(double)\n'
                              'declare <4 x double> @"_ZGVdN4v_cos"(<4 x double>) local_unnamed_addr\n')
    bound = bind_through_got(mod)
    assert (bound is mod) == function_attributes_work()
    attrs = {fn.name: b" ".join(fn.attributes).split() for fn in bound.functions}
    assert b"nonlazybind" in attrs["cos"] and b"nonlazybind" in attrs["_ZGVdN4v_cos"]
    assert b"nonlazybind" not in attrs["llvm.sin.f64"]
    assert "declare double @cos(double) #0" in str(bound) and "attributes #0 = { nonlazybind }" in str(bound)
    assert bind_through_got(bound) is bound          # nothing left to bind


def test_ir_carries_got_binding_as_llvmlite_ir():
    """Declarations and the RtLibUseGOT flag are written with llvmlite.ir, not by editing text."""
    lib = get_compiler().compile(_calls_module("declared"))
    assert '@"cos"(double %".1") nonlazybind' in lib.llvm_ir
    assert '!{ i32 7, !"RtLibUseGOT", i32 1 }' in lib.llvm_ir


def test_a_prefix_is_never_shared_by_two_irs():
    """compile refuses a prefix a live library exports from other IR; compile_unique draws another."""
    c, seed = get_compiler(), uuid.uuid4().hex

    def module(prefix, k):
        m = new_module(prefix)
        fn = ir.Function(m, ir.FunctionType(I64, [I64]), exported_name(m, "f"))
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(b.add(fn.args[0], I64(k)))
        return m

    one = c.compile_unique(lambda prefix: module(prefix, 1), seed)
    assert one.prefix == symbol_prefix(seed)
    assert c.compile_unique(lambda prefix: module(prefix, 1), seed) is one          # same IR: shared
    with pytest.raises(PrefixClash):
        c.compile(module(one.prefix, 2))
    two = c.compile_unique(lambda prefix: module(prefix, 2), seed)
    assert two.prefix == symbol_prefix(seed + "#1")
    call = lambda lib: ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(lib.get_address("f"))(40)  # noqa: E731
    assert (call(one), call(two)) == (41, 42)
