"""The LLVM linker: one native entry per graph, fusion, fallbacks, entry checks, shared updates, cache, DEBUG."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import special

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.link.llvm.ir.fallback import FallbackWarning
from graphjit.link.llvm.linker import DebugModeError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from toy_ops import BinaryDoubleOp, double  # noqa: E402


def w1(x, y, z):
    return gt.exp(-x * x) * gt.sin(y) + x * y / (1 + z * z)


def w1_ref(a, b, c):
    return np.exp(-a * a) * np.sin(b) + a * b / (1 + c * c)


@pytest.fixture
def xyz():
    return gt.dvector("x"), gt.dvector("y"), gt.dvector("z")


@pytest.fixture
def abc():
    rng = np.random.default_rng(0)
    return [rng.uniform(-2, 2, 1000) for _ in range(3)]


def test_w1_is_one_loop_nest_without_intermediates(xyz, abc):
    f = gj.function(list(xyz), w1(*xyz), mode="FAST_RUN")
    np.testing.assert_allclose(f(*abc), w1_ref(*abc), rtol=1e-12, atol=1e-14)
    ir_text = f.native.llvm_ir
    assert len(re.findall(r'define i32 @"gj_\w+_entry"', ir_text)) == 1          # exactly one native entry
    assert f.native.n_loop_groups == 1 and not f.native.fallback_nodes
    assert "gj_fallback" not in ir_text
    assert "shape_slot0" in ir_text and "shape_slot1" not in ir_text   # only the output is allocated
    assert "_ZGV" in f.native.optimized_ir                           # libmvec vector variants are called


def test_fused_reduction_and_accuracy(xyz):
    x, y, _ = xyz
    f = gj.function([x, y], (gt.exp(x) * y).sum(), mode="FAST_RUN")
    assert f.native.n_loop_groups == 1
    rng = np.random.default_rng(1)
    a, b = rng.random(100_001), rng.random(100_001)
    np.testing.assert_allclose(f(a, b), np.sum(np.exp(a) * b), rtol=1e-12)
    m = gt.dmatrix("m")
    g = gj.function([m], [m.sum(axis=1), m.max(axis=0), m.sum()], mode="FAST_RUN")
    v = rng.random((37, 53))
    for got, want in zip(g(v), [v.sum(1), v.max(0), v.sum()]):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    for got, want in zip(g(v[::-2, ::3]), [v[::-2, ::3].sum(1), v[::-2, ::3].max(0), v[::-2, ::3].sum()]):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("axis,layout", [(0, "C"), (1, "T"), (None, "reversed"), ((0, 1), "T")])
def test_wider_accumulator_is_kept_on_every_path(axis, layout):
    """sum(float32, acc_dtype=float64) accumulates in float64 whatever the axes and strides."""
    x = gt.fmatrix("x")
    f = gj.function([x], gt.sum(x, axis=axis, acc_dtype="float64"))
    v = np.full((200_001, 3), 0.1, dtype="float32")
    v[0] = 1e4
    data = {"C": v, "T": v.T, "reversed": v[::-1]}[layout]
    want = data.astype("float64").sum(axis=axis).astype("float32")
    got = f(data)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_large_arrays_take_the_threaded_path(xyz):
    rng = np.random.default_rng(2)
    a, b, c = [rng.uniform(-2, 2, 1_000_003) for _ in range(3)]
    f = gj.function(list(xyz), w1(*xyz))
    np.testing.assert_allclose(f(a, b, c), w1_ref(a, b, c), rtol=1e-12, atol=1e-14)


def test_entry_checks(xyz, abc):
    x, y, z = xyz
    f = gj.function([x, y], x * y + 1)
    a, b, _ = abc
    np.testing.assert_allclose(f(a.astype("float32"), b), a.astype("float32") * b + 1)   # slow path upcasts
    np.testing.assert_allclose(f(list(a[:3]), [1.0, 2.0, 3.0]), a[:3] * [1, 2, 3] + 1)   # lists
    with pytest.raises(TypeError, match="x"):
        f(a.reshape(10, 100), b.reshape(10, 100))                  # wrong ndim names the input
    with pytest.raises((TypeError, ValueError), match="argument 0"):
        f("abc", b)                                                # same error as the PY mode
    with pytest.raises(ValueError, match="broadcast") as info:
        f(a, b[:10])                                               # shape mismatch names the op
    assert "Elemwise" in str(info.value) and __file__ in str(info.value)
    ro = a.copy()
    ro.flags.writeable = False
    before = a.copy()
    np.testing.assert_allclose(f(ro, a), a * a + 1)                # read-only and aliased inputs
    np.testing.assert_array_equal(a, before)
    r1, r2 = f(a, b), f(a, b)
    assert r1 is not r2 and not np.shares_memory(r1, r2) and not np.shares_memory(r1, a)
    s = gt.dscalar("s")
    g = gj.function([s, x], s * x)
    np.testing.assert_allclose(g(2.0, a), 2 * a)
    np.testing.assert_allclose(g(np.float64(2.0), a), 2 * a)       # numpy scalar through the slow path


def test_seed_double_op_runs_under_fast_run():
    x, y = double("x"), double("y")
    mul_once = BinaryDoubleOp("mul_llvm_test", lambda a, b: a * b)
    with pytest.warns(FallbackWarning, match="mul_llvm_test"):
        f = gj.function([x, y], mul_once(x, y), mode="FAST_RUN")
    assert f(3.0, 4.0) == 12.0
    assert [str(n.op) for n in f.native.fallback_nodes] == ["mul_llvm_test"]
    with pytest.raises(TypeError):
        f("a", 1.0)


class Twice(Op):
    """A tensor op with only perform (not lowered): the fallback sits between fused loops."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        if np.any(np.isnan(inputs[0])):
            raise ValueError("Twice got a NaN")
        out[0][0] = inputs[0] * 2


class SlowPlusOne(Op):
    """A fallback op that lets other threads run in the middle of a call (time.sleep drops the GIL)."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        import time
        time.sleep(0.0005)
        out[0][0] = inputs[0] + 1


def test_fallback_results_are_kept_per_thread():
    """Two threads in one Function: a call's fallback results must outlive the other thread's next call."""
    import threading
    x = gt.vector("x")
    with pytest.warns(FallbackWarning):
        f = gj.function([x], SlowPlusOne()(2 * x) + SlowPlusOne()(x))
    errors = []

    def work(k):
        v = np.full(2000, float(k))
        for _ in range(40):
            got = f(v)
            if not np.array_equal(got, 3 * v + 2):
                errors.append((k, got[:3]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_tensor_fallback_between_loops(xyz, abc):
    x, y, _ = xyz
    with pytest.warns(FallbackWarning):
        f = gj.function([x, y], gt.exp(Twice()(x + y)) - 1)
    a, b, _ = abc
    np.testing.assert_allclose(f(a, b), np.exp(2 * (a + b)) - 1)
    np.testing.assert_allclose(f(a[::-3], b[::-3]), np.exp(2 * (a[::-3] + b[::-3])) - 1)
    bad = a.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="Twice got a NaN"):
        f(bad, b)
    g = gj.function([x], Twice()(x))                             # a fallback result as the output
    np.testing.assert_allclose(g(a), 2 * a)


def test_shared_updates(xyz):
    x = xyz[0]
    w = gj.shared(np.zeros(3), name="w")
    f = gj.function([x], (w * x).sum(), updates=[(w, w + x)])
    assert f(np.ones(3)) == 0.0
    assert f(np.ones(3)) == 3.0
    np.testing.assert_allclose(w.get_value(), [2.0, 2.0, 2.0])


def test_view_outputs_and_dimshuffle(abc):
    m = gt.dmatrix("m")
    v = gt.dvector("v")
    f = gj.function([m, v], [(m + 1).T, m + v.dimshuffle(0, "x")])
    a = abc[0].reshape(10, 100)
    t, s = f(a, abc[1][:10])
    np.testing.assert_allclose(t, (a + 1).T)
    np.testing.assert_allclose(s, a + abc[1][:10, None])


class BadNeg(Op):
    """perform negates; lower (deliberately wrong) returns the input unchanged."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = -inputs[0]

    def lower(self, ctx, node, inputs):
        return [inputs[0]]


def test_debug_mode_catches_a_wrong_lowering(abc):
    x = gt.dvector("x")
    f = gj.function([x], BadNeg()(x) + 1, mode="DEBUG")
    with pytest.raises(DebugModeError, match="output 0"):
        f(abc[0])
    g = gj.function([x], gt.exp(x) + 1, mode="DEBUG")
    np.testing.assert_allclose(g(abc[0]), np.exp(abc[0]) + 1)


_CHILD = textwrap.dedent("""
    import graphjit as gj, graphjit.tensor as gt
    x, y, z = gt.dvector("x"), gt.dvector("y"), gt.dvector("z")
    f = gj.function([x, y, z], gt.exp(-x * x) * gt.sin(y) + x * y / (1 + z * z))
    print(f.native.cache_key, f.native.cache_hit)
""")


@pytest.mark.soak
def test_same_key_and_cache_hit_in_fresh_processes(tmp_path):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
            for _ in range(2)]
    (k1, hit1), (k2, hit2) = [r.stdout.split() for r in runs]
    assert k1 == k2 and hit1 == "False" and hit2 == "True"


def test_memory_map_skips_ir_generation(xyz):
    f1 = gj.function(list(xyz), w1(*xyz) * 3)
    f2 = gj.function(list(xyz), w1(*xyz) * 3)
    assert f2.native.memory_hit and f2.native.cache_key == f1.native.cache_key


def test_costly_broadcast_producer_gets_its_own_loop():
    """gammaln of a (1, k) row read by an (n, k) loop is computed once per column, not per element; the cheap
    invariant product beside it stays fused."""
    m = gt.dmatrix("m")
    c = gt.TensorType("float64", shape=(1, None))("c")
    out = (m * gt.gammaln(c) + m * (c * 2.0)).sum()
    f = gj.function([m, c], out, mode="FAST_RUN")
    rng = np.random.default_rng(3)
    a, b = rng.random((50, 3)), rng.uniform(0.5, 4.0, (1, 3))
    np.testing.assert_allclose(f(a, b), np.sum(a * special.gammaln(b) + a * (b * 2.0)), rtol=1e-12)
    groups = f.native.fused_groups(f.maker.fgraph)
    names = [sorted(str(n.op) for n in g) for g in groups]
    assert f.native.n_loop_groups == 2 and not f.native.fallback_nodes
    assert ["Elemwise{gammaln}"] in names                            # its own one-row loop
    big = next(g for g in names if "Sum" in " ".join(g))
    assert "Elemwise{gammaln}" not in big and any("mul" in n for n in big)


def test_cheap_group_read_by_loops_is_recomputed_in_each():
    """sqrt(x * 2) (37 elements) read by two loops is computed inside both (no loop or buffer of its own); once it is
    also an output, or of a size not known statically, it stays a loop."""
    x = gt.TensorType("float64", shape=(37,))("x")
    y = gt.dvector("y")
    h = gj.function([y], [gt.exp(y * 2.0).sum(), gt.log(y * 2.0 + 3.0)], mode="FAST_RUN")
    assert h.native.n_loop_groups == 3
    c = gt.sqrt(x * 2.0)
    outs = [gt.exp(c).sum(), gt.log(c + 3.0)]
    a = np.linspace(0.1, 2.0, 37)
    root = np.sqrt(a * 2.0)
    want = [np.exp(root).sum(), np.log(root + 3.0)]
    f = gj.function([x], outs, mode="FAST_RUN")
    g = gj.function([x], outs + [c], mode="FAST_RUN")
    assert (f.native.n_loop_groups, g.native.n_loop_groups) == (2, 3)
    assert not f.native.fallback_nodes
    for got, ref in zip(f(a), want):
        np.testing.assert_allclose(got, ref, rtol=1e-13)
    for got, ref in zip(g(a), want + [root]):
        np.testing.assert_allclose(got, ref, rtol=1e-13)
