"""Intermediate buffers reused across calls (link/llvm/ir/buffers.py): same numbers, never shared, never returned."""

import threading
import uuid
import weakref

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.link.llvm.ir.fallback import FallbackWarning



class Probe(Op):
    """A Python-only op (a fallback) remembering, by weak reference, every array it was given."""

    __props__ = ("token",)

    def __init__(self) -> None:
        # a distinct op per test and per process: an equal op (same props) from the in-memory map or from a
        # graph rewritten by an earlier process would hold another `seen`
        self.token = uuid.uuid4().hex
        self.seen: list = []

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        self.seen.append(weakref.ref(inputs[0]))
        out[0][0] = inputs[0] + 1


def _probed():
    probe = Probe()
    x = gt.dmatrix("x")
    with pytest.warns(FallbackWarning):
        f = gj.function([x], probe(gt.exp(x) * 2) * 3, mode="FAST_RUN")
    return f, probe


def test_a_temporary_is_the_same_array_on_the_next_call():
    f, probe = _probed()
    a = np.linspace(-1, 1, 12).reshape(3, 4)
    want = (np.exp(a) * 2 + 1) * 3
    np.testing.assert_allclose(f(a), want, rtol=1e-14)
    assert probe.seen[0]() is not None, "the temporary was freed at the end of the call, not kept"
    np.testing.assert_allclose(f(a), want, rtol=1e-14)
    assert probe.seen[1]() is probe.seen[0]()
    b = np.linspace(0, 2, 10).reshape(5, 2)
    np.testing.assert_allclose(f(b), (np.exp(b) * 2 + 1) * 3, rtol=1e-14)
    assert probe.seen[0]() is None and probe.seen[2]() is not None     # wrong shape: replaced and freed
    kept = probe.seen[2]
    f.native.release_buffers()
    assert kept() is None
    np.testing.assert_allclose(f(a), want, rtol=1e-14)


def test_many_temporaries_are_cached_and_released_by_the_table_loop():
    # more cached slots than buffers._UNROLLED: give-back and release_buffers walk constant tables
    from graphjit.link.llvm.ir import buffers
    probes = [Probe() for _ in range(buffers._UNROLLED + 3)]
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    out = x
    for p in probes:
        out = p(gt.exp(out) * 0.5)
    with pytest.warns(FallbackWarning):
        f = gj.function([x, y], out + y, mode="FAST_RUN")
    assert "bufcache.globals" in f.native.llvm_ir
    a, c = np.linspace(-1, 1, 6).reshape(2, 3), np.ones((2, 3))
    want = a
    with np.errstate(over="ignore"):   # the iterated exp reaches inf, in graphjit too
        for _ in probes:
            want = np.exp(want) * 0.5 + 1
    np.testing.assert_allclose(f(a, c), want + 1, rtol=1e-14)
    np.testing.assert_allclose(f(a, c), want + 1, rtol=1e-14)
    assert all(p.seen[1]() is p.seen[0]() is not None for p in probes)
    with pytest.raises(ValueError, match="shape mismatch"):    # after the temporaries: all slots released
        f(a, np.ones((4, 3)))
    assert all(p.seen[2]() is None for p in probes)
    np.testing.assert_allclose(f(a, c), want + 1, rtol=1e-14)
    f.native.release_buffers()
    assert all(p.seen[3]() is None for p in probes)
    np.testing.assert_allclose(f(a, c), want + 1, rtol=1e-14)


def test_a_temporary_someone_still_holds_is_not_reused():
    """A perform that keeps its input alive (refcount > 1) keeps that buffer out of the cache."""
    class Keeper(Probe):
        def perform(self, node, inputs, out):
            self.kept = inputs[0]
            super().perform(node, inputs, out)

    keeper = Keeper()
    x = gt.dmatrix("x")
    with pytest.warns(FallbackWarning):
        f = gj.function([x], keeper(gt.exp(x) * 2) * 3, mode="FAST_RUN")
    a = np.ones((4, 4))
    f(a)
    held = keeper.kept
    snapshot = held.copy()
    np.testing.assert_allclose(f(a + 1), (np.exp(a + 1) * 2 + 1) * 3, rtol=1e-14)
    assert keeper.kept is not held
    np.testing.assert_array_equal(held, snapshot)


def _mlp_step(dtype):
    x, y = gt.matrix("x", dtype=dtype), gt.matrix("y", dtype=dtype)
    rng = np.random.default_rng(0)
    w = gj.shared(rng.standard_normal((7, 5)).astype(dtype), name="w")
    h = gt.tanh(gt.dot(x, w) + 1)
    loss = ((h - y) ** 2).sum(axis=1).mean()
    gw = gj.grad(loss, w)
    return [x, y], [loss, gw, h.T * 2]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_changing_shapes_give_the_reference_numbers(dtype):
    ins, outs = _mlp_step(dtype)
    fast = gj.function(ins, outs, mode="FAST_RUN")
    ref = gj.function(ins, outs, mode="PY")
    rng = np.random.default_rng(1)
    tol = 1e-12 if dtype == "float64" else 2e-5
    for n in [3, 3, 50, 1, 50, 3, 0, 8, 8]:
        a, b = rng.standard_normal((n, 7)).astype(dtype), rng.standard_normal((n, 5)).astype(dtype)
        for got, want in zip(fast(a, b), ref(a, b)):
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_outputs_are_fresh_and_never_overwritten():
    ins, outs = _mlp_step("float64")
    f = gj.function(ins, outs, mode="FAST_RUN")
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((6, 7)), rng.standard_normal((6, 5))
    first = f(a, b)
    saved = [np.array(r, copy=True) for r in first]
    second = f(a * 2, b)
    for r1, r2, s in zip(first, second, saved):
        assert not np.shares_memory(r1, r2)
        np.testing.assert_array_equal(r1, s)


def test_a_failed_call_leaves_the_cache_usable():
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    f = gj.function([x, y], (gt.exp(x) * 2 + y).sum(), mode="FAST_RUN")
    a = np.ones((3, 4))
    assert f(a, a) == pytest.approx(((np.exp(1) * 2) + 1) * 12)
    with pytest.raises(ValueError):
        f(a, np.ones((2, 4)))
    assert f(a, a) == pytest.approx(((np.exp(1) * 2) + 1) * 12)


def test_a_temporary_that_cannot_be_allocated_raises_memory_error():
    """The outer product is a temporary (the dot reads it): 32 TiB cannot be had, the call raises, and the
    next call (whose cached buffer is now of another shape) still gives numpy's answer."""
    x, v = gt.dvector("x"), gt.dvector("v")
    f = gj.function([x, v], gt.dot(x.dimshuffle(0, "x") * x.dimshuffle("x", 0), v), mode="FAST_RUN")
    a = np.arange(3.0)
    np.testing.assert_allclose(f(a, a), np.outer(a, a) @ a)
    big = np.zeros(1 << 21)
    with pytest.raises(MemoryError):
        f(big, big)
    np.testing.assert_allclose(f(a + 1, a), np.outer(a + 1, a + 1) @ a)


def test_two_threads_calling_one_function_never_share_a_temporary():
    """Big enough to run without the GIL: both threads are inside the native code at the same time."""
    x = gt.dmatrix("x")
    e = gt.exp(x) * 2
    f = gj.function([x], [(e * e).sum(axis=0), gt.dot(e, e.T).sum(axis=1)], mode="FAST_RUN")
    rng = np.random.default_rng(3)
    inputs = [rng.uniform(-1, 1, (160, 200)) * k for k in (1.0, 0.5)]
    expected = []
    for a in inputs:
        ea = np.exp(a) * 2
        expected.append(((ea * ea).sum(axis=0), (ea @ ea.T).sum(axis=1)))
    errors: list = []
    barrier = threading.Barrier(2)

    def work(k: int) -> None:
        barrier.wait()
        for _ in range(150):
            got = f(inputs[k])
            for g, w in zip(got, expected[k]):
                if not np.allclose(g, w, rtol=1e-12):
                    errors.append(k)
                    return

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, f"threads {errors} computed wrong results"
