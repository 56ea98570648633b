"""The scan rewrites (scan_module/rewriting.py): each fires where it should and keeps the values."""

import tracemalloc

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.scan_module.info import KEEP_LAST_OR_EMPTY
from graphjit.scan_module.op import Scan
from graphjit.tensor.blas_vector import Gemv
from tests.op_check import OP_TEST_MODES


def scans(f):
    return [n for n in f.maker.fgraph.toposort() if isinstance(n.op, Scan)]


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_last_state_only_keeps_constant_memory(mode):
    X, h0 = gt.dmatrix("X"), gt.dvector("h0")
    hs, _ = gj.scan(lambda x, h: 0.5 * h + x, sequences=X, outputs_info=h0)
    f = gj.function([X, h0], hs[-1], mode=mode)
    (node,) = scans(f)
    assert node.op.info.keep == (KEEP_LAST_OR_EMPTY,)
    # 50,000 steps, whose stored states would be 6.4 MB, for the compiled modes' memory bound; PY (whose
    # memory is not bounded here: numpy's perform keeps what it keeps) checks the values on fewer steps
    Xv = np.ones((500 if mode == "PY" else 50000, 16))
    want = np.full(16, 2.0)
    f(Xv[:10], np.zeros(16))
    tracemalloc.start()
    got = f(Xv, np.zeros(16))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_allclose(got, want)
    if mode != "PY":
        assert peak < 1 << 20, f"peak {peak} bytes: the loop stored every step"   # all steps: 6.4 MB
    with pytest.raises(IndexError):
        f(Xv[:0], np.zeros(16))                       # out[-1] of no step is still an IndexError
    m, _ = gj.map(lambda x: gt.exp(x) * 2, sequences=X)
    g = gj.function([X], m[-1], mode=mode)
    assert scans(g)[0].op.info.keep == (KEEP_LAST_OR_EMPTY,)
    g(Xv[:10])
    tracemalloc.start()
    got = g(Xv)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_allclose(got, np.exp(Xv[-1]) * 2)
    if mode != "PY":
        assert peak < 1 << 20, f"peak {peak} bytes: the map stored every step"


def test_invariants_are_pushed_out_and_inner_graphs_rewritten():
    X, W, h0 = gt.dmatrix("X"), gt.dmatrix("W"), gt.dvector("h0")
    hs, _ = gj.scan(lambda x, h, W: gt.tanh(gt.dot(gt.exp(W) * 0.1, h) + x), sequences=X, outputs_info=h0,
                    non_sequences=W)
    f = gj.function([X, W, h0], hs, mode="FAST_RUN")
    (node,) = scans(f)
    inner_ops = [type(n.op).__name__ for n in node.op.fgraph.toposort()]
    assert all("exp" not in str(n.op) for n in node.op.fgraph.toposort()), inner_ops
    assert any(isinstance(n.op, Gemv) for n in node.op.fgraph.toposort()), inner_ops
    rng = np.random.default_rng(0)
    Xv, Wv, hv = rng.normal(size=(5, 3)), rng.normal(size=(3, 3)), rng.normal(size=3)
    np.testing.assert_allclose(f(Xv, Wv, hv), gj.function([X, W, h0], hs, mode="PY")(Xv, Wv, hv))
    assert f.native.fallback_nodes == []


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_unused_outputs_removed_and_scans_merged(mode):
    X = gt.dmatrix("X")
    (a, b), _ = gj.scan(lambda x, s, t: [s + x, t * 2], sequences=X,
                        outputs_info=[gt.zeros_like(X[0]), gt.ones_like(X[0])])
    c, _ = gj.map(lambda x: gt.sin(x), sequences=X)
    f = gj.function([X], [a, c], mode=mode)
    (node,) = scans(f)                                  # b dropped, the two loops merged
    assert len(node.outputs) == 2
    Xv = np.arange(6.0).reshape(3, 2)
    got_a, got_c = f(Xv)
    np.testing.assert_allclose(got_a, np.cumsum(Xv, axis=0))
    np.testing.assert_allclose(got_c, np.sin(Xv))


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_accumulating_scan_becomes_a_sum(mode):
    X, a0 = gt.dmatrix("X"), gt.dvector("a0")
    total, _ = gj.reduce(lambda x, acc: acc + x, sequences=X, outputs_info=a0)
    prod, _ = gj.reduce(lambda x, acc: x * acc, sequences=X, outputs_info=a0)
    f = gj.function([X, a0], [total, prod], mode=mode)
    assert scans(f) == []
    Xv = np.arange(1.0, 7.0).reshape(3, 2)
    got_s, got_p = f(Xv, np.array([1.0, 2.0]))
    np.testing.assert_allclose(got_s, Xv.sum(0) + [1, 2])
    np.testing.assert_allclose(got_p, Xv.prod(0) * [1, 2])
