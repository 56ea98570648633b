"""graphjit's inline float64 exp (link/llvm/ir/fastmath.py): accuracy against numpy, special values, the flag."""

import ctypes
import uuid

import numpy as np
import pytest
from llvmlite import ir

import graphjit as gj
import graphjit.tensor as gt
from graphjit.config import config
from graphjit.link.llvm.ir import fastmath
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.jit.compiler import get_compiler
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.ir.modules import exported_name, new_module, symbol_prefix

DBL = ir.DoubleType()
MAX_ULP_F64 = 1          # measured: 1 (vs numpy, i.e. glibc's exp) on every range below
MAX_ULP_F32 = 3          # float32 exp stays libmvec's expf: measured 3 against exp rounded from float64
RANGES = {
    "[-1, 1]": (-1.0, 1.0),
    "tiny": (-1e-8, 1e-8),
    "normal results": (-708.39, 709.78),
    "near overflow": (700.0, 709.7827),
    "subnormal results": (-745.2, -708.39),
}
SPECIAL = [0.0, -0.0, 5e-324, -5e-324, 1e-300, np.inf, -np.inf, np.nan, -np.nan, 709.782712893384,
           709.7827128933841, 710.0, 1e308, -745.1332191019411, -745.1332191019412, -746.0, -1e308,
           -708.3964185322641, -708.3964185322642, 1.0, -1.0, 0.5 * np.log(2), -0.5 * np.log(2)]


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many representable values lie between a and b (0 for two NaNs; subnormals count one each)."""
    a, b = np.asarray(a), np.asarray(b)
    itype = np.int64 if a.dtype == np.float64 else np.int32
    low = np.iinfo(itype).min

    def ordered(v):
        i = v.view(itype).astype(np.int64)
        return np.where(i < 0, low - i, i)

    d = np.abs(ordered(a) - ordered(b))
    return np.where(np.isnan(a) & np.isnan(b), 0, np.where(np.isnan(a) | np.isnan(b), np.iinfo(np.int64).max, d))


def _compile(body, args, ret, name):
    module = new_module(symbol_prefix(f"{name}_{uuid.uuid4().hex[:8]}"))
    fn = ir.Function(module, ir.FunctionType(ret, args), exported_name(module, "f"))
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    body(ctx, fn.args)
    return get_compiler().compile(module)


@pytest.fixture(scope="module", params=fastmath.METHODS, ids=lambda m: m.name)
def method(request):
    """Both table methods, whichever the host uses (the other one is only slower here, never wrong)."""
    return request.param


@pytest.fixture(scope="module")
def vector_exp(method):
    """out[i] = exp(x[i]) over a contiguous loop (vectorised by LLVM, with its scalar remainder)."""
    def body(ctx, fargs):
        x, out, n = fargs
        b = ctx.builder
        with ctx.for_range(n) as i:
            b.store(fastmath.call_exp(b, b.load(b.gep(x, [i])), method), b.gep(out, [i]))
        b.ret_void()
    return _array_function(body, "vexp")


@pytest.fixture(scope="module")
def explicit_exp(method):
    """out[i] = exp(x[i]) over <8 x double> vectors emitted directly (the softmax rows' form); n % 8 == 0."""
    vty = ir.VectorType(DBL, 8)

    def body(ctx, fargs):
        x, out, n = fargs
        b = ctx.builder
        xv, ov = b.bitcast(x, vty.as_pointer()), b.bitcast(out, vty.as_pointer())
        with ctx.for_range(b.sdiv(n, I64(8)), vectorize=False) as i:
            b.store(fastmath.emit_exp(b, b.load(b.gep(xv, [i]), align=8), method), b.gep(ov, [i]), align=8)
        b.ret_void()
    return _array_function(body, "xexp")


def _array_function(body, name):
    lib = _compile(body, [DBL.as_pointer(), DBL.as_pointer(), I64], ir.VoidType(), name)
    f = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(lib.get_address("f"))

    def run(x):
        x = np.ascontiguousarray(x, dtype=np.float64)
        out = np.empty_like(x)
        f(x.ctypes.data, out.ctypes.data, x.size)
        return out
    run.library = lib          # the code lives as long as its NativeLibrary
    return run


@pytest.fixture(scope="module")
def scalar_exp(method):
    """``double f(double)``: the scalar form, one call per element."""
    def body(ctx, fargs):
        ctx.builder.ret(fastmath.call_exp(ctx.builder, fargs[0], method))
    lib = _compile(body, [DBL], DBL, "sexp")
    f = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(lib.get_address("f"))
    return lambda x, lib=lib: np.array([f(float(v)) for v in np.asarray(x, dtype=np.float64)])


def _samples(lo, hi, n, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.uniform(lo, hi, n), np.linspace(lo, hi, n)])


@pytest.mark.parametrize("name", list(RANGES))
def test_vectorised_loop_within_bound(vector_exp, explicit_exp, name):
    x = _samples(*RANGES[name], 200_000)
    with np.errstate(over="ignore"):
        assert ulp_distance(vector_exp(x), np.exp(x)).max() <= MAX_ULP_F64
    np.testing.assert_array_equal(explicit_exp(x), vector_exp(x))   # the same bits in both vector forms


@pytest.mark.parametrize("name", list(RANGES))
def test_scalar_form_within_bound(scalar_exp, vector_exp, name):
    x = _samples(*RANGES[name], 2_000, seed=1)
    got = scalar_exp(x)
    with np.errstate(over="ignore"):
        assert ulp_distance(got, np.exp(x)).max() <= MAX_ULP_F64
    np.testing.assert_array_equal(got, vector_exp(x))            # the same bits on both paths


def test_special_values(vector_exp, explicit_exp, scalar_exp):
    x = np.array(SPECIAL * 8)                                     # long enough for the vector body, n % 8 == 0
    with np.errstate(over="ignore"):
        want = np.exp(x)
    for got in (vector_exp(x), explicit_exp(x), scalar_exp(x)):
        assert ulp_distance(got, want).max() <= MAX_ULP_F64
        assert np.array_equal(np.isnan(got), np.isnan(x))
        assert np.all(got[np.isposinf(x)] == np.inf) and np.all(got[np.isneginf(x)] == 0.0)
        assert np.all(got[x == 0] == 1.0)


def test_every_table_entry_and_exact_powers(vector_exp, method):
    # x = k*ln2/N hits every table index exactly once per k range; integers n give 2**n where exact
    k = np.arange(-method.size * 1000, method.size * 1000 + 1)
    x = k * (np.log(2) / method.size)
    assert ulp_distance(vector_exp(x), np.exp(x)).max() <= MAX_ULP_F64
    n = np.arange(-1074, 1024)
    assert ulp_distance(vector_exp(n * np.log(2)), np.exp(n * np.log(2))).max() <= MAX_ULP_F64


@pytest.mark.parametrize("bits", sorted({m.bits for m in fastmath.METHODS}))
def test_table_is_correctly_rounded(bits):
    import mpmath as mp                                      # in the test extra
    with mp.workdps(40):
        want = [float(mp.power(2, mp.mpf(j) / 2 ** bits)) for j in range(2 ** bits)]
    assert list(fastmath.table_values(bits)) == want


def test_method_follows_the_host():
    features = get_compiler().features.split(",")
    assert fastmath.host_method() is (fastmath.REGISTER_TABLE if "+avx512f" in features else fastmath.MEMORY_TABLE)
    assert fastmath.host_method().name in fastmath.lowering_flags()


@pytest.mark.parametrize("dtype,bound", [("float64", MAX_ULP_F64), ("float32", MAX_ULP_F32)])
def test_graphjit_exp_contiguous_and_strided(dtype, bound):
    x = gt.vector("x", dtype=dtype)
    f = gj.function([x], gt.exp(x), mode="FAST_RUN")
    hi = 709.78 if dtype == "float64" else 88.72
    lo = -745.2 if dtype == "float64" else -103.9
    a = _samples(lo, hi, 100_000, seed=2).astype(dtype)
    with np.errstate(over="ignore"):
        a[:len(SPECIAL)] = np.array(SPECIAL).astype(dtype)
    with np.errstate(over="ignore"):
        for arr in (a, a[::3]):                                   # contiguous loop, strided loop
            want = np.exp(arr.astype(np.float64)).astype(dtype)   # float32: exp rounded from float64
            assert ulp_distance(f(arr), want).max() <= bound


def test_float64_exp_is_inline_and_flag_restores_libm():
    x = gt.dvector("x")
    f = gj.function([x], gt.exp(x), mode="FAST_RUN")
    assert fastmath.FUNCTION_NAME in f.native.llvm_ir and "_v_exp" not in f.native.asm
    try:
        config.inline_exp = False
        g = gj.function([x], gt.exp(x), mode="FAST_RUN")
    finally:
        config.inline_exp = True
    assert fastmath.FUNCTION_NAME not in g.native.llvm_ir and "llvm.exp.f64" in g.native.llvm_ir
    assert f.native.cache_key != g.native.cache_key
    a = np.linspace(-30, 30, 1001)
    assert ulp_distance(f(a), g(a)).max() <= 2
    y = gt.fvector("y")
    h = gj.function([y], gt.exp(y), mode="FAST_RUN")
    assert fastmath.FUNCTION_NAME not in h.native.llvm_ir                 # float32 keeps libm/libmvec


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_softmax_rows_around_the_prefetch_chunk(dtype):
    """The rows' passes: float64 in explicit vectors (16 per exp iteration, 32 per max iteration), float32 in
    the vectoriser's chunks of 64 with a prefetch of the next row; then a scalar tail."""
    sp = pytest.importorskip("scipy.special")
    x = gt.matrix("x", dtype=dtype)
    f = gj.function([x], [gt.special.softmax(x, axis=1), gt.special.log_softmax(x, axis=1),
                          gt.logsumexp(x, axis=1)], mode="FAST_RUN")
    rtol = 1e-5 if dtype == "float32" else 1e-13
    for n in (1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1000):
        a = (np.random.default_rng(n).standard_normal((5, n)) * 20).astype(dtype)
        sm, lsm, lse = f(a)
        want = a.astype(np.float64)
        np.testing.assert_allclose(sm, sp.softmax(want, axis=1), rtol=rtol, atol=1e-30)
        np.testing.assert_allclose(lsm, sp.log_softmax(want, axis=1), rtol=rtol, atol=rtol)
        np.testing.assert_allclose(lse, sp.logsumexp(want, axis=1), rtol=rtol)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_float64_rows_take_the_explicit_vector_pass(dtype):
    """float64 rows' exp pass is explicit vectors (no gather with the register table); float32 stays libmvec's."""
    x = gt.matrix("x", dtype=dtype)
    f = gj.function([x], gt.logsumexp(x, axis=1), mode="FAST_RUN")
    assert ("ve.cond" in f.native.llvm_ir) == (dtype == "float64")
    if dtype == "float64" and fastmath.host_method() is fastmath.REGISTER_TABLE:
        assert "gather" not in f.native.asm and "vpermq" in f.native.asm
