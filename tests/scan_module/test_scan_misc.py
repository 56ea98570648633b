"""scan: shared variables, random draws in the step, zero steps, bad input, the native loop and the disk cache."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.ir import fallback
from graphjit.link.llvm.ir.fallback import FallbackWarning
from tests.op_check import OP_TEST_MODES
from tests.perform_only import PlusOne

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_shared_read_and_updated_in_the_step(mode):
    w = gj.shared(np.array([1.0, 2.0]), name="w")
    count = gj.shared(np.int64(0), name="count")
    x = gt.dmatrix("x")
    out, updates = gj.scan(lambda xt: (xt * w, {count: count + 1}), sequences=x)
    assert list(updates) == [count]
    f = gj.function([x], out, mode=mode, updates=updates)
    np.testing.assert_allclose(f(np.ones((3, 2))), [[1, 2]] * 3)
    assert int(count.get_value()) == 3
    f(np.ones((2, 2)))
    assert int(count.get_value()) == 5


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_random_draw_inside_the_step(mode):
    srng = gt.RandomStream(seed=3)
    x = gt.dvector("x")
    out, updates = gj.scan(lambda xt: xt + srng.normal(0.0, 1.0, size=(2,)), sequences=x)
    assert len(updates) == 1
    f = gj.function([x], out, mode=mode, updates=updates)
    a, b = f(np.zeros(4)), f(np.zeros(4))
    assert a.shape == (4, 2) and not np.allclose(a[0], a[1]) and not np.allclose(a, b)   # new draws each step
    srng.seed(3)
    np.testing.assert_allclose(f(np.zeros(4)), a)                # reproducible from the seed
    g = gj.function([x], out, mode=mode)        # the default update is the loop's final state
    assert not np.allclose(g(np.zeros(4)), g(np.zeros(4)))


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_zero_steps(mode):
    x0, n = gt.dvector("x0"), gt.lscalar("n")
    fib, _ = gj.scan(lambda a, b: a + b, outputs_info=dict(initial=x0, taps=[-2, -1]), n_steps=n)
    last, _ = gj.reduce(lambda x, acc: acc + x, sequences=gt.dmatrix("unused")[:0], outputs_info=x0[:1])
    f = gj.function([x0, n], [fib, fib.shape[0]], mode=mode)
    got, length = f(np.array([1.0, 1.0]), 0)
    assert got.shape == (0,) and int(length) == 0
    np.testing.assert_allclose(f(np.array([1.0, 1.0]), 5)[0], [2, 3, 5, 8, 13])
    y = gt.TensorType("float64", (None, 3))("y")
    m, _ = gj.map(lambda r: r * 2, sequences=y)           # the step's static shape gives the empty result's
    assert gj.function([y], m, mode=mode)(np.zeros((0, 3))).shape == (0, 3)
    del last


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_bad_input_names_the_problem(mode):
    x, n = gt.dvector("xs"), gt.lscalar("n")
    out, _ = gj.scan(lambda xt, h: h + xt, sequences=x, outputs_info=gt.constant(0.0), n_steps=n)
    f = gj.function([x, n], out, mode=mode)
    with pytest.raises(ValueError, match="negative"):
        f(np.ones(3), -1)
    with pytest.raises(ValueError, match="sequence 0.*fewer than n_steps"):
        f(np.ones(3), 5)
    np.testing.assert_allclose(f(np.ones(5), 3), [1, 2, 3])    # a longer sequence is read up to n_steps
    init = gt.dmatrix("init")
    fib, _ = gj.scan(lambda a, b: a + b, outputs_info=dict(initial=init, taps=[-3, -1]), n_steps=4)
    g = gj.function([init], fib, mode=mode)
    with pytest.raises(ValueError, match="initial value of output 0.*rows"):
        g(np.ones((2, 2)))
    h0 = gt.dvector("h0")
    grow, _ = gj.scan(lambda h: gt.concatenate([h, h]), outputs_info=h0, n_steps=2)
    with pytest.raises(ValueError, match="shape"):
        gj.function([h0], grow, mode=mode)(np.ones(2))


def test_bad_construction_raises_clear_errors():
    x = gt.dvector("x")
    with pytest.raises(ValueError, match="negative"):
        gj.scan(lambda h: h * 2, outputs_info=x, n_steps=-1)
    with pytest.raises(ValueError, match="taps"):
        gj.scan(lambda a: a, outputs_info=dict(initial=x, taps=[1]), n_steps=2)
    with pytest.raises(ValueError, match="initial value"):
        gj.scan(lambda a, b: a + b, outputs_info=dict(initial=gt.dscalar("s"), taps=[-2, -1]), n_steps=2)
    with pytest.raises(ValueError, match="outputs_info has 2"):
        gj.scan(lambda a, b: a, outputs_info=[x, x], n_steps=2)
    with pytest.raises(ValueError, match="n_steps"):
        gj.scan(lambda h: h, outputs_info=x)
    with pytest.raises(TypeError, match="dimension"):
        gj.scan(lambda h: h.sum(), outputs_info=x, n_steps=2)


def test_common_loops_are_native():
    W, X, h0 = gt.dmatrix("W"), gt.dmatrix("X"), gt.dvector("h0")
    out, _ = gj.scan(lambda x, h, W: gt.tanh(gt.dot(W, h) + x), sequences=X, outputs_info=h0, non_sequences=W)
    c, z = gt.dvector("c"), gt.dscalar("z")
    comp, _ = gj.scan(lambda ci, p, z: ci * z ** p, sequences=[c, gt.arange(c.shape[0])], non_sequences=z)
    f = gj.function([W, X, h0, c, z], [out, comp.sum()], mode="FAST_RUN")
    assert f.native.fallback_nodes == []


def test_disk_cache_hit_in_a_new_process(tmp_path):
    def child():
        env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.path.join(ROOT, "src"))
        proc = subprocess.run([sys.executable, os.path.join(HERE, "scan_cache_child.py")], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    first, second = child(), child()
    assert first["ok"] and second["ok"] and first["zero_ok"] and second["zero_ok"]
    assert not first["zero_cache_hit"] and second["zero_cache_hit"]
    assert not first["plan_hit"] and second["plan_hit"] and second["cache_hit"]
    assert first["key"] == second["key"]


def test_step_that_cannot_be_compiled_falls_back_with_a_warning():
    """A step holding a node without a lowering: the whole Scan runs its perform (FallbackWarning, listed in
    fallback_nodes)."""
    x = gt.dvector("x")
    out, updates = gj.scan(lambda xt: PlusOne()(xt) * 2.0, sequences=x)
    fallback._WARNED.clear()
    with pytest.warns(FallbackWarning, match="Scan"):
        f = gj.function([x], out, updates=updates, mode="FAST_RUN")
    assert [type(n.op).__name__ for n in f.native.fallback_nodes] == ["Scan"]
    np.testing.assert_array_equal(f(np.arange(3.0)), (np.arange(3.0) + 1) * 2)


def _scalar_recurrence(w, x, s0):
    out, s = np.empty_like(x), s0
    for t in range(len(x)):
        s = np.tanh(w * s + x[t])
        out[t] = s
    return out


@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("form", ["all", "last", "dict", "int"])
def test_scalar_state_carried_in_a_register(mode, form):
    # a 0-d state read at tap -1 is carried in a register by the native loop (driver/scan.py): every way of
    # giving its initial value and of keeping its steps must still see the previous step's value
    w, x = gt.dscalar("w"), gt.dvector("x")
    xv = np.random.default_rng(3).standard_normal(7)
    if form == "int":
        s0 = gt.lscalar("s0")
        out, _ = gj.scan(lambda xt, s: s * 2 + gt.cast(xt > 0, "int64"), sequences=x, outputs_info=s0)
        f = gj.function([x, s0], out, mode=mode)
        expect, s = [], 1
        for v in xv:
            s = s * 2 + int(v > 0)
            expect.append(s)
        np.testing.assert_array_equal(f(xv, 1), expect)
        return
    s0 = gt.dscalar("s0")
    info = dict(initial=s0, taps=[-1]) if form == "dict" else s0
    out, _ = gj.scan(lambda xt, s, w_: gt.tanh(w_ * s + xt), sequences=x, outputs_info=info, non_sequences=w)
    if form == "last":
        out = out[-1]
    f = gj.function([w, x, s0], out, mode=mode)
    expect = _scalar_recurrence(0.7, xv, 0.25)
    np.testing.assert_allclose(f(0.7, xv, 0.25), expect[-1] if form == "last" else expect, rtol=1e-12)
    if form != "last":
        assert f(0.7, xv[:0], 0.25).shape == (0,)          # zero steps: the carried value is never read
