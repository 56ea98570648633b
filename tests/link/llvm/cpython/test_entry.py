"""The IR-emitted CPython wrapper: unboxing checks, allocation, outputs, error records, refcounts, overhead."""

import gc
import statistics
import sys
import threading
import timeit

import numpy as np
import pytest
from llvm_kernels import add_module, compile_callable, take_module

from graphjit.link.llvm.cpython.argspec import ArgSpec
from graphjit.link.llvm.ir.modules import new_module, symbol_prefix
from graphjit.link.basic import SlowPath


@pytest.fixture(scope="module")
def add2():
    return compile_callable(add_module())[0]


@pytest.fixture(scope="module")
def add1():
    return compile_callable(add_module(ndim=1, tag="1d"))[0]


@pytest.fixture(scope="module")
def take():
    return compile_callable(take_module())[0]


def test_is_a_builtin(add2):
    assert type(add2).__name__ == "builtin_function_or_method"


@pytest.mark.parametrize("view", [
    lambda a: a,
    lambda a: a[::2, ::3],
    lambda a: a[::-1, ::-2],
    lambda a: a.T[:4, :4].T,
    lambda a: np.asfortranarray(a),
    lambda a: a[:0, :],
    lambda a: a[:, :0],
    lambda a: a[2:3, 5:6],
], ids=["contiguous", "strided", "negative", "transposed", "fortran", "zero-rows", "zero-cols", "one"])
def test_add_matches_numpy(add2, view):
    rng = np.random.default_rng(0)
    x, y = view(rng.random((8, 12))), view(rng.random((8, 12)))
    out = add2(x, y)
    assert out.dtype == np.float64 and out.shape == x.shape and out.flags.c_contiguous
    np.testing.assert_array_equal(out, x + y)
    assert out.base is None and out.flags.owndata


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "uint8"])
def test_add_dtypes(dtype):
    f = compile_callable(add_module(dtype=dtype, tag=dtype))[0]
    x = (np.arange(12) % 7).astype(dtype).reshape(3, 4)
    np.testing.assert_array_equal(f(x, x[::-1]), x + x[::-1])
    assert f(x, x).dtype == np.dtype(dtype)


def test_longlong_is_int64():
    f = compile_callable(add_module(dtype="int64", tag="int64"))[0]
    x = np.arange(6, dtype=np.longlong).reshape(2, 3)
    np.testing.assert_array_equal(f(x, x), 2 * x)


@pytest.mark.parametrize("args", [
    lambda x: (x.astype(np.float32), x),               # dtype
    lambda x: (x, x[0]),                               # ndim
    lambda x: (x, x.tolist()),                         # not an array
    lambda x: (x.view(np.matrix), x),                  # subclass
    lambda x: (x, x.astype(x.dtype.newbyteorder())),   # byte order
    lambda x: (x,),                                    # nargs
    lambda x: (x, x, x),
], ids=["dtype", "ndim", "list", "subclass", "byteorder", "too-few", "too-many"])
def test_rejected_args_take_the_slow_path(add2, args):
    x = np.ones((2, 3))
    with pytest.raises(SlowPath):
        add2(*args(x))


def test_unaligned_takes_slow_path(add2):
    raw = np.zeros(8 * 6 + 1, dtype=np.uint8)
    x = raw[1:].view(np.float64).reshape(2, 3)
    assert not x.flags.aligned
    with pytest.raises(SlowPath):
        add2(x, np.ones((2, 3)))


def test_broadcastable_dims_are_checked():
    from llvmlite import ir
    from graphjit.link.llvm.ir.context import define_native_entry
    from graphjit.link.llvm.cpython.wrapper import build_python_wrapper
    module = new_module(symbol_prefix("test_bcast"))
    spec, out = ArgSpec.array("float64", 2, (True, False)), ArgSpec.array("float64", 1)
    entry, ctx = define_native_entry(module, "entry", [spec.layout()], [out.layout()])
    _, x, o = entry.args
    n = ctx.shape(x, 1)
    ctx.allocate_array(0, o, "float64", [n])
    with ctx.for_range(n) as j:
        ctx.store_element(o, [j], ctx.load_element(x, [ir.Constant(ir.IntType(64), 0), j]))
    ctx.builder.ret(ir.Constant(ir.IntType(32), 0))
    build_python_wrapper(module, entry, [spec], [out])
    f = compile_callable(module)[0]
    np.testing.assert_array_equal(f(np.arange(3.0)[None, :]), np.arange(3.0))
    with pytest.raises(SlowPath):
        f(np.ones((2, 3)))


@pytest.mark.parametrize("shape,good,bad", [
    ((4,), [(4,)], [(3,), (5,), (0,)]),
    ((2, None), [(2, 0), (2, 7)], [(1, 3), (3, 3)]),
    ((None, 3), [(0, 3), (5, 3)], [(5, 1), (5, 4)]),
    ((1, 3), [(1, 3)], [(2, 3), (1, 1)]),
])
def test_static_lengths_are_checked(shape, good, bad):
    """Every declared length is part of the wrapper's check (a wrong one takes the slow path)."""
    from llvmlite import ir
    from graphjit.link.llvm.ir.context import define_native_entry
    from graphjit.link.llvm.cpython.wrapper import build_python_wrapper
    module = new_module(symbol_prefix("test_static_" + "x".join(map(str, shape))))
    spec, out = ArgSpec.array("float64", len(shape), shape=shape), ArgSpec.array("int64", 0)
    assert spec.shape == shape and spec.broadcastable == tuple(n == 1 for n in shape)
    entry, ctx = define_native_entry(module, "entry", [spec.layout()], [out.layout()])
    _, x, o = entry.args
    ctx.allocate_array(0, o, "int64", [])
    ctx.store_element(o, [], ctx.shape(x, 0))
    ctx.builder.ret(ir.Constant(ir.IntType(32), 0))
    build_python_wrapper(module, entry, [spec], [out])
    f = compile_callable(module)[0]
    for s in good:
        assert int(f(np.zeros(s))) == s[0]
    for s in bad:
        with pytest.raises(SlowPath):
            f(np.zeros(s))


def test_distinct_arguments_take_the_slow_path_when_they_overlap():
    """An argument the entry overwrites may not share memory with another (bounds, as np.may_share_memory)."""
    from llvmlite import ir
    from graphjit.link.llvm.ir.context import define_native_entry
    from graphjit.link.llvm.cpython.wrapper import build_python_wrapper
    module = new_module(symbol_prefix("test_distinct"))
    spec, out = ArgSpec.array("float64", 2), ArgSpec.array("int64", 0)
    entry, ctx = define_native_entry(module, "entry", [spec.layout(), spec.layout()], [out.layout()])
    ctx.allocate_array(0, entry.args[3], "int64", [])
    ctx.store_element(entry.args[3], [], ir.Constant(ir.IntType(64), 7))
    ctx.builder.ret(ir.Constant(ir.IntType(32), 0))
    build_python_wrapper(module, entry, [spec, spec], [out], distinct=[(0, 1)])
    f = compile_callable(module)[0]
    a = np.zeros((6, 6))
    for x, y in [(a[:3], a[3:]), (a[:0], a), (np.zeros((2, 2)), a), (a[:1, :3], a[1:, :3])]:
        assert int(f(x, y)) == 7
    for x, y in [(a, a), (a[1:], a[:-1]), (a[::-1], a[:1]), (a.T, a[5:]), (a[::2], a[1::2]), (a[2:4, 2:4], a)]:
        with pytest.raises(SlowPath):
            f(x, y)


def test_argspec_shape_or_broadcastable():
    assert ArgSpec.array("float32", 2, (True, False)) == ArgSpec.array("float32", 2, shape=(1, None))
    with pytest.raises(ValueError):
        ArgSpec.array("float32", 2, (True, False), shape=(1, None))
    with pytest.raises(ValueError):
        ArgSpec.array("float32", 2, shape=(3,))


def test_value_error_record(add2):
    with pytest.raises(ValueError, match=r"shapes differ: 2 != 3 \(axis 0\)"):
        add2(np.ones((2, 3)), np.ones((3, 3)))


def test_index_error_record_and_tuple_outputs(take):
    x = np.arange(5.0) * 1.5
    a, b = take(x, 3)
    assert a.shape == () and float(a) == 4.5 and float(b) == 9.0
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        take(x, 5)
    with pytest.raises(IndexError, match="index -1"):
        take(x, -1)


@pytest.mark.parametrize("bad", [2.0, 2**70, "2", np.int64(2), True])
def test_scalar_not_accepted_goes_slow(take, bad):
    with pytest.raises(SlowPath):
        take(np.arange(5.0), bad)


def test_float_scalar_accepts_float_and_int():
    from llvmlite import ir
    from graphjit.link.llvm.ir.context import define_native_entry
    from graphjit.link.llvm.cpython.wrapper import build_python_wrapper
    module = new_module(symbol_prefix("test_scale"))
    x, s, o = ArgSpec.array("float32", 1), ArgSpec.scalar("float32"), ArgSpec.array("float32", 1)
    entry, ctx = define_native_entry(module, "entry", [x.layout(), s.layout()], [o.layout()])
    _, xp, sp, op = entry.args
    n = ctx.shape(xp, 0)
    ctx.allocate_array(0, op, "float32", [n])
    with ctx.for_range(n) as i:
        ctx.store_element(op, [i], ctx.builder.fmul(ctx.load_element(xp, [i]), ctx.builder.load(sp)))
    ctx.builder.ret(ir.Constant(ir.IntType(32), 0))
    build_python_wrapper(module, entry, [x, s], [o])
    f = compile_callable(module)[0]
    v = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(f(v, 2.5), v * np.float32(2.5))
    np.testing.assert_array_equal(f(v, 3), v * 3)
    with pytest.raises(SlowPath):
        f(v, 1 << 2000)                             # int too large for a double


def test_no_reference_leaks(add1, add2, take):
    x, y = np.random.rand(1), np.random.rand(1)
    a, b = np.ones((1, 2)), np.ones((2, 2))         # made here: numpy's own constructors move dtype refcounts
    f64 = np.dtype(np.float64)
    gc.collect()
    before = (sys.getrefcount(x), sys.getrefcount(y), sys.getrefcount(f64))
    for _ in range(1000):
        add1(x, y)
        take(x, 0)
        with pytest.raises(ValueError):
            add2(a, b)
        with pytest.raises(IndexError):
            take(x, 1)
        with pytest.raises(SlowPath):
            add1(x, [1.0])
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(y), sys.getrefcount(f64)) == before
    r = add1(x, y)
    assert sys.getrefcount(r) == 2


def test_release_gil():
    f = compile_callable(add_module(release_gil=True, tag="nogil"))[0]
    x = np.random.rand(300, 300)
    results = []
    threads = [threading.Thread(target=lambda: results.append(f(x, x))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(np.array_equal(r, x + x) for r in results)
    with pytest.raises(ValueError):
        f(x, x[:2])


def test_call_overhead(add1):
    x, y = np.random.rand(1), np.random.rand(1)
    timer = timeit.Timer("f(x, y)", globals={"f": add1, "x": x, "y": y})
    timer.timeit(2000)
    median = statistics.median(timer.timeit(5000) / 5000 for _ in range(21))
    print(f"\nwrapper overhead, size-1 float64 x + y: {median * 1e9:.0f} ns/call")
    assert median < 2e-6             # generous: shared CI machines; the measured figure is in the report


def test_keywords_and_rejected_args_go_to_the_fallback():
    from graphjit.link.llvm.cpython.builtin import make_python_callable
    _, lib = compile_callable(add_module(ndim=1, tag="1d"))
    seen = []

    def fallback(*args, **kwargs):
        seen.append((len(args), sorted(kwargs)))
        return "slow"

    f = make_python_callable(lib, "pywrap", fallback=fallback)
    x = np.random.rand(3)
    np.testing.assert_array_equal(f(x, x), x + x)   # the fast path never calls the fallback
    assert seen == []
    assert f(x, [1.0, 2.0, 3.0]) == "slow"
    assert f(x) == "slow"
    assert f(x, y=x) == "slow"
    assert seen == [(2, []), (1, []), (1, ["y"])]


def test_keywords_without_fallback_raise_slow_path(add1):
    x = np.random.rand(2)
    with pytest.raises(SlowPath):
        add1(x, y=x)
