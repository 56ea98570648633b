"""scan steps compiled natively with shared-variable updates and with a lazy ifelse (no FallbackWarning: the
pytest configuration turns any warning into an error, and the native tests also check fallback_nodes)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.ifelse import ifelse
from graphjit.link.llvm.driver.scan import can_lower_scan
from graphjit.scan_module.op import Scan
from tests.op_check import OP_TEST_MODES, Case, arr, check_case

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
ACC0 = np.array([0.5, -1.0, 2.0])


def _native(f, mode):
    if mode != "PY":
        assert f.native.fallback_nodes == []


def _scans(f):
    return [n for n in f.maker.fgraph.toposort() if isinstance(n.op, Scan)]


# ------------------------------------------------------------------ shared updates through the op-test helper

def decay(X, h0):
    """h_t = 0.5 h + x_t * acc; acc <- 0.9 acc + x_t (acc a shared vector the step updates); hs and the final acc."""
    acc = gj.shared(ACC0.astype(X.dtype), name="acc")
    half, decay = gt.constant(0.5, dtype=X.dtype), gt.constant(0.9, dtype=X.dtype)
    hs, updates = gj.scan(lambda x, h: (h * half + x * acc, {acc: acc * decay + x}), sequences=X, outputs_info=h0)
    return [hs, updates[acc]]


def decay_ref(X, h0):
    acc, h, hs = ACC0.astype(X.dtype), h0, []
    for x in X:
        h = (h * X.dtype.type(0.5) + x * acc).astype(X.dtype)
        hs.append(h)
        acc = (acc * X.dtype.type(0.9) + x).astype(X.dtype)
    return [np.array(hs, dtype=X.dtype).reshape(X.shape), acc]


def reversed_view(X, h0):
    """The new state is a view of the old one (acc[::-1] * x_t) while the step also reads the old one."""
    acc = gj.shared(ACC0.astype(X.dtype), name="acc")
    hs, updates = gj.scan(lambda x, h: (h + acc, {acc: acc[::-1] * x}), sequences=X, outputs_info=h0)
    return [hs, updates[acc]]


def reversed_view_ref(X, h0):
    acc, h, hs = ACC0.astype(X.dtype), h0, []
    for x in X:
        h = h + acc
        hs.append(h)
        acc = acc[::-1] * x
    return [np.array(hs, dtype=X.dtype).reshape(X.shape), acc]


def gated(X, h0):
    """A lazy ifelse in the step: the branch depends on the row."""
    out, _ = gj.scan(lambda x, h: ifelse(x.sum() > 0, h * 0.5 + x, gt.tanh(h) - x), sequences=X, outputs_info=h0)
    return out


def gated_ref(X, h0):
    h, out = h0, []
    for x in X:
        h = (h * 0.5 + x if x.sum() > 0 else np.tanh(h) - x).astype(X.dtype)
        out.append(h)
    return np.array(out, dtype=X.dtype).reshape(X.shape)


CASES = [
    Case("shared-decay", decay, decay_ref, [arr((5, 3)), arr((3,))]),
    Case("shared-view-update", reversed_view, reversed_view_ref, [arr((4, 3)), arr((3,))]),
    Case("ifelse-in-step", gated, gated_ref, [arr((6, 3)), arr((3,))]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_cases(case):
    check_case(case)


# ------------------------------------------------------------------ shared updates applied by the function

@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_counter_and_accumulator_updated(mode):
    calls = gj.shared(np.int64(0), name="calls")
    total = gj.shared(np.zeros(2), name="total")
    rows = gt.dmatrix("rows")
    out, updates = gj.scan(lambda r: (r * 2, {calls: calls + 1, total: total + r}), sequences=rows)
    f = gj.function([rows], out, updates=updates, mode=mode)
    _native(f, mode)
    r = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(f(r), r * 2)
    assert int(calls.get_value()) == 3
    np.testing.assert_allclose(total.get_value(), r.sum(0))
    f(r[::-2])                                   # a strided, reversed sequence
    assert int(calls.get_value()) == 5
    np.testing.assert_allclose(total.get_value(), r.sum(0) + r[::-2].sum(0))
    assert f(r[:0]).shape[0] == 0                # zero steps: the states keep their values
    assert int(calls.get_value()) == 5


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_parallel_assignment_and_changing_shapes(mode):
    """{a: b, b: a[::-1]}: every new value is computed from the old ones (a swap), shapes change per step."""
    a = gj.shared(np.array([1.0, 2.0, 3.0]), name="a")
    b = gj.shared(np.array([10.0]), name="b")
    n = gt.lscalar("n")
    sums, updates = gj.scan(lambda: (a.sum(), {a: b, b: a[::-1]}), n_steps=n)
    f = gj.function([n], sums, updates=updates, mode=mode)
    _native(f, mode)
    np.testing.assert_allclose(f(3), [6, 10, 6])
    np.testing.assert_allclose(a.get_value(), [10.0])
    np.testing.assert_allclose(b.get_value(), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(f(2), [10, 6])
    np.testing.assert_allclose(a.get_value(), [10.0])
    np.testing.assert_allclose(b.get_value(), [3.0, 2.0, 1.0])


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_update_inside_a_while_loop(mode):
    """until reads the shared state; the loop stops after the step where it holds (that step's update kept)."""
    s = gj.shared(np.float64(1.0), name="s")
    n = gt.lscalar("n")
    out, updates = gj.scan(lambda: (s * 2, {s: s * 2}, gj.until(s * 2 > 20)), n_steps=n)
    f = gj.function([n], out, updates=updates, mode=mode)
    _native(f, mode)
    np.testing.assert_allclose(f(100), [2, 4, 8, 16, 32])
    assert float(s.get_value()) == 32.0
    np.testing.assert_allclose(f(1), [64])
    assert float(s.get_value()) == 64.0


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_float32_matrix_state_and_unchanged_update(mode):
    m = gj.shared(np.eye(2, dtype="float32"), name="m")
    keep = gj.shared(np.arange(3.0), name="keep")
    x = gt.fvector("x")
    out, updates = gj.scan(lambda xt: (gt.dot(m, m).sum() + xt, {m: m * 2 + xt, keep: keep}), sequences=x)
    f = gj.function([x], out, updates=updates, mode=mode)
    _native(f, mode)
    got = f(np.array([1.0, -1.0], dtype="float32"))
    M, want = np.eye(2, dtype="float32"), []
    for xt in np.array([1.0, -1.0], dtype="float32"):
        want.append((M @ M).sum() + xt)
        M = M * 2 + xt
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(m.get_value(), M, rtol=1e-6)
    assert m.get_value().dtype == np.float32
    np.testing.assert_allclose(keep.get_value(), np.arange(3.0))


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_bad_input_with_shared_state(mode):
    count = gj.shared(np.int64(0), name="count")
    xs, n = gt.dvector("xs"), gt.lscalar("n")
    out, updates = gj.scan(lambda xt: (xt + 1, {count: count + 1}), sequences=xs, n_steps=n)
    f = gj.function([xs, n], out, updates=updates, mode=mode)
    with pytest.raises(ValueError, match="sequence 0.*fewer than n_steps"):
        f(np.ones(2), 5)
    with pytest.raises(ValueError, match="negative"):
        f(np.ones(2), -1)
    assert int(count.get_value()) == 0          # a failed call applies no update
    np.testing.assert_allclose(f(np.ones(3), 2), [2, 2])
    assert int(count.get_value()) == 2


def test_updates_with_other_loop_features():
    """Shared updates with go_backwards, out[-1] (the state kept as a ring), a second loop that may be merged,
    and a while loop: the LLVM modes agree with PY."""
    results = {}
    for mode in OP_TEST_MODES:
        acc, cnt, s = (gj.shared(np.zeros(2), name="acc"), gj.shared(np.int64(0), name="cnt"),
                       gj.shared(np.float64(0.0), name="s"))
        x, h0 = gt.dmatrix("x"), gt.dvector("h0")
        out, up = gj.scan(lambda row: (acc + row, {acc: acc + row}), sequences=x, go_backwards=True)
        out2, up2 = gj.scan(lambda row: (row.sum(), {cnt: cnt + 2}), sequences=x)
        f = gj.function([x], [out[-1], out2], updates={**up, **up2}, mode=mode)
        hs, up3 = gj.scan(lambda h: (h * 2, {s: s + h.sum()}, gj.until(h.sum() > 50)), outputs_info=h0,
                          n_steps=100)
        g = gj.function([h0], hs[-1], updates=up3, mode=mode)
        _native(f, mode)
        _native(g, mode)
        v = np.arange(6.0).reshape(3, 2)
        got = f(v) + f(v[::-1]) + [acc.get_value(), cnt.get_value(), g(np.ones(2)), s.get_value()]
        results[mode] = got
    np.testing.assert_allclose(results["PY"][0], [6, 9])
    for got, want in zip(results["PY"][4:], [[12, 18], 12, [64, 64], 126]):
        np.testing.assert_allclose(got, want)
    for mode in OP_TEST_MODES:
        for want, got in zip(results["PY"], results[mode]):
            np.testing.assert_allclose(got, want)


def test_shared_updates_and_ifelse_steps_are_lowered():
    """No fallback: the lowering accepts the Scan nodes (a random draw still falls back: see test_scan_misc)."""
    count = gj.shared(np.int64(0), name="count")
    x = gt.dvector("x")
    out, updates = gj.scan(lambda xt: (ifelse(xt > 0, xt, -xt), {count: count + 1}), sequences=x)
    f = gj.function([x], out, updates=updates, mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    assert [can_lower_scan(node) for node in _scans(f)] == [True]


# ------------------------------------------------------------------ laziness inside the step

@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_untaken_branch_costs_nothing_inside_a_step(mode):
    """Per step, the untaken branch holds an n x n allocation (n = 1e7: 800 TB) and an out-of-range index."""
    x, n = gt.dvector("x"), gt.lscalar("n")

    def step(xt, acc, x, n):
        huge = gt.sin(gt.alloc(xt, n, n)).max() + x[n - gt.cast(xt > 1e300, "int64")]   # reads the step: not hoisted
        return acc + ifelse(xt > 0, xt * 2, huge)
    out, _ = gj.scan(step, sequences=x, outputs_info=gt.constant(0.0), non_sequences=[x, n])
    f = gj.function([x, n], out, mode=mode)
    _native(f, mode)
    np.testing.assert_allclose(f(np.array([1.0, 2.0, 3.0]), 10 ** 7), [2, 6, 12])
    v = np.array([1.0, -1.0, 3.0])
    np.testing.assert_allclose(f(v, 2), [2, 5 + np.sin(-1.0), 11 + np.sin(-1.0)])
    with pytest.raises(IndexError):
        f(v, 3)                                 # taken at step 1: x[3] is out of range
    with pytest.raises(MemoryError):
        f(np.array([1.0, -1.0]), 10 ** 7)       # taken at step 1: the huge allocation is attempted


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_nested_ifelse_and_shared_state_in_a_step(mode):
    hits = gj.shared(np.zeros(2), name="hits")
    x, n = gt.dvector("x"), gt.lscalar("n")

    def step(xt, x, n):
        inner = ifelse(xt > 1, gt.alloc(xt, n, n).sum(), xt * 10)     # taken only for xt > 1
        value = ifelse(xt > 0, inner, -xt)
        return value, {hits: hits + gt.stack([gt.cast(xt > 0, "float64"), gt.cast(xt <= 0, "float64")])}
    out, updates = gj.scan(step, sequences=x, non_sequences=[x, n])
    f = gj.function([x, n], out, updates=updates, mode=mode)
    _native(f, mode)
    np.testing.assert_allclose(f(np.array([0.5, -2.0, 0.25]), 10 ** 7), [5, 2, 2.5])
    np.testing.assert_allclose(hits.get_value(), [2, 1])
    np.testing.assert_allclose(f(np.array([2.0]), 3), [18])
    np.testing.assert_allclose(hits.get_value(), [3, 1])


# ------------------------------------------------------------------ OpFromGraph(inline=False) inside a step

@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_opfromgraph_in_a_step_and_in_a_nested_step(mode):
    """The step calls an OpFromGraph that is not inlined in the outer graph; the inner scan calls it too."""
    a, b = gt.dscalar("a"), gt.dscalar("b")
    affine = gj.OpFromGraph([a, b], [a * b + 1.0], inline=False)
    x = gt.dvector("x")
    out, _ = gj.scan(lambda xt, acc: affine(xt, acc), sequences=x, outputs_info=gt.constant(1.0))

    def outer_step(xt, acc):
        inner, _ = gj.scan(lambda yt, c: affine(yt, c), sequences=x, outputs_info=acc)
        return inner[-1] + xt
    nested, _ = gj.scan(outer_step, sequences=x, outputs_info=gt.constant(0.0))
    f = gj.function([x], [out, nested, gj.grad(out[-1], x)], mode=mode)
    _native(f, mode)
    v = np.array([1.0, -2.0, 3.0])
    acc, ref = 1.0, []
    for t in v:
        acc = t * acc + 1.0
        ref.append(acc)
    nest, ref_nested = 0.0, []
    for t in v:
        c = nest
        for u in v:
            c = u * c + 1.0
        nest = c + t
        ref_nested.append(nest)
    got, got_nested, g = f(v)
    np.testing.assert_allclose(got, ref)
    np.testing.assert_allclose(got_nested, ref_nested)
    eps, num = 1e-6, []
    for i in range(3):
        up, down = v.copy(), v.copy()
        up[i] += eps
        down[i] -= eps
        num.append((f(up)[0][-1] - f(down)[0][-1]) / (2 * eps))
    np.testing.assert_allclose(g, num, rtol=1e-6)


# ------------------------------------------------------------------ the disk cache in a new process

CHILD = r"""
import json, numpy as np, graphjit as gj, graphjit.tensor as gt
from graphjit.ifelse import ifelse
count = gj.shared(np.int64(0), name="count")
acc = gj.shared(np.zeros(2), name="acc")
x = gt.dmatrix("x")
out, up = gj.scan(lambda r: (ifelse(r.sum() > 0, r * 2, -r), {count: count + 1, acc: acc + r}), sequences=x)
f = gj.function([x], out, updates=up)
v = np.array([[1.0, 2.0], [-3.0, -4.0]])
ok = bool(np.allclose(f(v), [[2, 4], [3, 4]]) and int(count.get_value()) == 2
          and np.allclose(acc.get_value(), [-2, -2]))
print(json.dumps({"ok": ok, "cache_hit": f.native.cache_hit, "fallback": len(f.native.fallback_nodes)}))
"""


def test_disk_cache_hit_in_a_new_process(tmp_path):
    def child():
        env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.path.join(ROOT, "src"))
        proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    first, second = child(), child()
    assert first["ok"] and second["ok"]
    assert first["fallback"] == second["fallback"] == 0
    assert not first["cache_hit"] and second["cache_hit"]
