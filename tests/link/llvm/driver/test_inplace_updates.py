"""Shared-variable updates written in place (rewrites, then link/llvm/driver/inplace_outputs.py): PY mode's values, borrow rules."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.io import In


def _both(build, *args, steps=3):
    """Compile build() in FAST_RUN and PY (separate shared variables); run both; compare everything."""
    results = []
    for mode in ("FAST_RUN", "PY"):
        ins, outs, updates, shared = build()
        f = gj.function(ins, outs, updates=updates, mode=mode)
        results.append((f, shared))
    (fast, s_fast), (ref, s_ref) = results
    tol = 1e-5 if s_fast[0].get_value(borrow=True).dtype == np.float32 else 1e-12
    for _ in range(steps):
        got, want = fast(*args), ref(*args)
        for g, w in zip(np.atleast_1d(got) if not isinstance(got, list) else got,
                        np.atleast_1d(want) if not isinstance(want, list) else want):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
        for a, b in zip(s_fast, s_ref):
            np.testing.assert_allclose(a.get_value(borrow=True), b.get_value(borrow=True), rtol=tol, atol=tol)
    return fast, s_fast


def _sgd(dtype="float64", lr=0.1):
    def build():
        rng = np.random.default_rng(0)
        w = gj.shared(rng.standard_normal((5, 3)).astype(dtype), name="w")
        b = gj.shared(np.zeros(3, dtype), name="b")
        x, y = gt.matrix("x", dtype=dtype), gt.matrix("y", dtype=dtype)
        loss = ((gt.tanh(gt.dot(x, w) + b) - y) ** 2).mean()
        gw, gb = gj.grad(loss, [w, b])
        step = np.asarray(lr, dtype)
        return [x, y], loss, [(w, w - step * gw), (b, b - step * gb)], [w, b]
    return build


def _xy(dtype="float64"):
    rng = np.random.default_rng(1)
    return rng.standard_normal((4, 5)).astype(dtype), rng.standard_normal((4, 3)).astype(dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sgd_updates_write_into_the_shared_buffers(dtype):
    f, (w, b) = _both(_sgd(dtype), *_xy(dtype))
    held, snapshot = w.get_value(borrow=True), w.get_value()
    held_b = b.get_value(borrow=True)
    f(*_xy(dtype))
    assert w.get_value(borrow=True) is held and b.get_value(borrow=True) is held_b
    assert not np.array_equal(held, snapshot)           # borrow=True: the holder sees the new value


def test_get_value_copies_are_never_touched():
    f, (w, _) = _both(_sgd(), *_xy())
    copy = w.get_value()
    before = copy.copy()
    f(*_xy())
    np.testing.assert_array_equal(copy, before)


def test_an_output_that_is_the_old_value_keeps_it():
    """function returning w itself (and a view of it) while updating it: the caller gets the old values."""
    def build():
        w = gj.shared(np.arange(6.0).reshape(2, 3), name="w")
        x = gt.dmatrix("x")
        return [x], [w, w.T, (w * x).sum()], [(w, w + x)], [w]
    f, (w,) = _both(build, np.ones((2, 3)))
    old = w.get_value()
    got_w, got_wt, _ = f(np.ones((2, 3)))
    np.testing.assert_array_equal(got_w, old)
    np.testing.assert_array_equal(got_wt, old.T)


def test_updates_reading_each_other_and_transposes():
    def build():
        a = gj.shared(np.arange(9.0).reshape(3, 3), name="a")
        b = gj.shared(np.eye(3), name="b")
        s = gj.shared(np.arange(4.0).reshape(2, 2), name="s")
        x = gt.dscalar("x")
        return [x], (a * x).sum(), [(a, a + b * x), (b, b - a), (s, s.T + x)], [a, b, s]
    _both(build, 2.0)


def test_unusable_shared_buffers_get_fresh_arrays():
    """Non-contiguous, read-only, or a new shape: the update still has PY mode's value."""
    def build():
        w = gj.shared(np.zeros((3, 4)), name="w")
        r = gj.shared(np.zeros(4), name="r")
        g = gj.shared(np.zeros((1, 4)), name="g")
        x = gt.dmatrix("x")
        return [x], x.sum(), [(w, w + x), (r, r + 1), (g, g + x)], [w, r, g]
    fast, (w, r, g) = _both(build, np.ones((3, 4)), steps=1)
    base = np.arange(32.0).reshape(4, 8)
    w.set_value(base[:3, ::2], borrow=True)             # strided
    ro = np.ones(4)
    ro.setflags(write=False)
    r.set_value(ro, borrow=True)
    fast(np.ones((3, 4)))
    np.testing.assert_array_equal(w.get_value(), base[:3, ::2] + 1)
    np.testing.assert_array_equal(base, np.arange(32.0).reshape(4, 8))
    np.testing.assert_array_equal(ro, np.ones(4))
    np.testing.assert_array_equal(r.get_value(), np.full(4, 2.0))
    assert g.get_value().shape == (3, 4)


def test_an_argument_aliasing_the_shared_buffer():
    """The caller passes the shared variable's own buffer as an argument the update reads."""
    w = gj.shared(np.arange(6.0).reshape(2, 3), name="w")
    x = gt.dmatrix("x")
    f = gj.function([x], x.sum(), updates=[(w, w * 2 - x[::-1])], mode="FAST_RUN")
    buf = w.get_value(borrow=True)
    want = buf * 2 - buf[::-1]
    f(buf)
    np.testing.assert_array_equal(w.get_value(), want)


def test_explicit_state_inputs_are_not_overwritten():
    """In(x, value=arr, update=...): the caller's array is a default value, never written in place."""
    x = gt.dvector("x")
    arr = np.ones(4)
    f = gj.function([In(x, value=arr, update=x + 1)], x.sum(), mode="FAST_RUN")
    assert f() == 4.0 and f() == 8.0
    np.testing.assert_array_equal(arr, np.ones(4))


def test_debug_mode_compares_against_the_old_values():
    build = _sgd()
    ins, outs, updates, (w, _) = build()
    f = gj.function(ins, outs, updates=updates, mode="DEBUG")
    held = w.get_value(borrow=True)
    f(*_xy())
    f(*_xy())
    assert w.get_value(borrow=True) is held


def test_the_in_memory_map_tells_updates_from_outputs():
    """Same graph structure, once as an update and once as a plain output: only the update writes in place."""
    w = gj.shared(np.ones(3), name="w")
    f = gj.function([], [], updates=[(w, w * 2 + w.sum())], mode="FAST_RUN")   # w read twice: no inplace op
    g = gj.function([], w * 2 + w.sum(), mode="FAST_RUN")
    before = w.get_value(borrow=True)
    np.testing.assert_array_equal(g(), np.full(3, 5.0))
    np.testing.assert_array_equal(before, np.ones(3))
    f()
    np.testing.assert_array_equal(w.get_value(), np.full(3, 5.0))
    assert w.get_value(borrow=True) is before


def test_updates_of_the_same_types_share_their_run_time_checks():
    """Each update's checks and adoption are calls of glue functions named by types, shared between updates."""
    import re

    rng = np.random.default_rng(3)
    ws = [gj.shared(rng.standard_normal((4, 3)), name=f"w{k}") for k in range(3)]
    x = gt.matrix("x")
    loss = sum(((x * w) ** 2).sum() for w in ws)
    grads = gj.grad(loss, ws)
    f = gj.function([x], loss, updates=[(w, w - 0.1 * g) for w, g in zip(ws, grads)])
    text = f.native.llvm_ir
    assert len(re.findall(r'define internal [^\n]*@"glue\.adopt\.double\.2"', text)) == 1
    entry = re.search(r'define i32 @"[^"]*_entry".*?\n}\n', text, re.S).group(0)
    assert entry.count('@"glue.adopt.double.2"(') == 3
    # one writable check per update; each also keeps off what the later updates read (so they differ)
    assert len(re.findall(r'call [^\n]*@"glue\.writable\.float642\.', entry)) == 3
    buffers = [w.get_value(borrow=True) for w in ws]
    a = rng.standard_normal((4, 3))
    want = [w.get_value() - 0.1 * 2 * a * a * w.get_value() for w in ws]
    f(a)
    for w, buf, expected in zip(ws, buffers, want):
        assert w.get_value(borrow=True) is buf                   # written in place
        np.testing.assert_allclose(buf, expected, rtol=1e-12)


@pytest.mark.parametrize("order", [0, 1])
def test_a_failing_update_writes_no_other_in_place(order):
    """Every in-place update's checks run before the first one writes: a failed call changes no state."""
    w1 = gj.shared(np.ones(4), name="w1", shape=(4,))
    w2 = gj.shared(np.ones(4), name="w2", shape=(4,))
    x = gt.dvector("x")
    ups = [(w1, w1 + 1), (w2, w2 * 2 + x)]
    f = gj.function([x], [], updates=ups[::-1] if order else ups, mode="FAST_RUN")
    buffers = (w1.get_value(borrow=True), w2.get_value(borrow=True))
    for bad in (np.ones(5), np.ones(3)):
        with pytest.raises(ValueError, match="broadcast"):
            f(bad)
        assert buffers[0].tolist() == [1.0] * 4 and buffers[1].tolist() == [1.0] * 4
    f(np.ones(4))
    assert w1.get_value(borrow=True) is buffers[0] and w2.get_value(borrow=True) is buffers[1]   # in place
    assert buffers[0].tolist() == [2.0] * 4 and buffers[1].tolist() == [3.0] * 4
