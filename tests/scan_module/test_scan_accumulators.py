"""scan_accumulate (scan_module/accumulators.py): an accumulating state becomes per-step outputs reduced after the
loop; it fires on BPTT and on hand-written accumulations, keeps the values, and leaves other states alone."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.scan_module.op import Scan
from graphjit.tensor.blas import Dot
from graphjit.tensor.blas_vector import Ger
from tests.op_check import OP_TEST_MODES, Case, arr, check_case

MODES = ["PY", "FAST_RUN"]


def unrewritten(mode: str) -> gj.Mode:
    """mode without the rewrite under test."""
    return gj.get_mode(mode).excluding("scan_accumulate")


def scans(f):
    return [n for n in f.maker.fgraph.toposort() if isinstance(n.op, Scan)]


def n_rec(f) -> int:
    return sum(n.op.info.n_rec for n in scans(f))


def inner_ops(f) -> list:
    return [type(m.op) for n in scans(f) for m in n.op.fgraph.toposort()]


def rnn(W, X, h0, **kw):
    hs, _ = gj.scan(lambda x, h, w: gt.tanh(gt.dot(w, h) + x), sequences=X, outputs_info=h0, non_sequences=W, **kw)
    return hs


def np_bptt(Wv, Xv, hv, start=0):
    """d sum(h) / dW through the steps from start on (truncate_gradient: the last len - start)."""
    hs, h = [], hv
    for x in Xv:
        h = np.tanh(Wv @ h + x)
        hs.append(h)
    g, dh = np.zeros_like(Wv), np.zeros_like(hv)
    for t in range(len(Xv) - 1, start - 1, -1):
        d = (1.0 + dh) * (1.0 - hs[t] ** 2)
        g += np.outer(d, hs[t - 1] if t else hv)
        dh = Wv.T @ d
    return g


def data(T=7, H=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(H, H)) * 0.5, rng.normal(size=(T, H)), rng.normal(size=H) * 0.1


# ---------------------------------------------------------------- BPTT
@pytest.mark.parametrize("mode", MODES)
def test_bptt_gradient_accumulates_after_the_loop(mode):
    W, X, h0 = gt.dmatrix("W"), gt.dmatrix("X"), gt.dvector("h0")
    gW = gj.grad(rnn(W, X, h0).sum(), W)
    f = gj.function([W, X, h0], gW, mode=mode)
    ref = gj.function([W, X, h0], gW, mode=unrewritten(mode))
    assert Ger not in inner_ops(f) and Ger in inner_ops(ref)      # the per-step rank-1 update left the loop
    assert any(isinstance(n.op, Dot) for n in f.maker.fgraph.toposort())
    assert n_rec(f) == n_rec(ref) - 1
    for T in (7, 1, 0):
        Wv, Xv, hv = data(T)
        got, want = f(Wv, Xv, hv), ref(Wv, Xv, hv)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(got, np_bptt(Wv, Xv, hv), rtol=1e-10, atol=1e-12)
    if mode != "PY":
        assert f.native.fallback_nodes == []


@pytest.mark.parametrize("mode", MODES)
def test_bptt_with_truncate_gradient_and_go_backwards(mode):
    W, X, h0 = gt.dmatrix("W"), gt.dmatrix("X"), gt.dvector("h0")
    gW = gj.grad(rnn(W, X, h0, truncate_gradient=3).sum(), W)
    f = gj.function([W, X, h0], gW, mode=mode)
    assert Ger not in inner_ops(f)
    for T in (7, 2):
        Wv, Xv, hv = data(T)
        np.testing.assert_allclose(f(Wv, Xv, hv), np_bptt(Wv, Xv, hv, start=max(T - 3, 0)), rtol=1e-10)
    back = gj.grad(rnn(W, X, h0, go_backwards=True).sum(), [W, h0])
    g = gj.function([W, X, h0], back, mode=mode)
    ref = gj.function([W, X, h0], back, mode=unrewritten(mode))
    assert Ger not in inner_ops(g)
    Wv, Xv, hv = data(6)
    for got, want in zip(g(Wv, Xv, hv), ref(Wv, Xv, hv)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(g(Wv, Xv, hv)[0], np_bptt(Wv, Xv[::-1], hv), rtol=1e-10)


def test_bptt_float32():
    W, X, h0 = gt.fmatrix("W"), gt.fmatrix("X"), gt.fvector("h0")
    f = gj.function([W, X, h0], gj.grad(rnn(W, X, h0).sum(), W), mode="FAST_RUN")
    assert Ger not in inner_ops(f)
    Wv, Xv, hv = (v.astype("float32") for v in data(40, 8))
    got = f(Wv, Xv, hv)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np_bptt(*(v.astype("float64") for v in (Wv, Xv, hv))), rtol=2e-4, atol=2e-5)


# ---------------------------------------------------------------- hand-written accumulations
def second_moment(X, a0):
    """a0 + sum_t outer(x_t, x_t), beside the running mean's last state."""
    (acc, mean), _ = gj.scan(lambda x, a, m: [a + gt.outer(x, x), m + x], sequences=X, outputs_info=[a0, a0[0]])
    return acc[-1], mean[-1]


def np_second_moment(Xv, a0):
    if len(Xv) == 0:
        raise IndexError("no step: out[-1] of nothing")
    return a0 + Xv.T @ Xv, a0[0] + Xv.sum(0)


def mixed(X, s0, h0):
    """A state h_t read by the step, and s accumulating f(x_t, h_t) (a sum), p a product, d a difference."""
    def step(x, h, s, p, d):
        h2 = gt.tanh(0.5 * h + x)
        return [h2, s + h2 ** 2 * x, p * (1 + 0.1 * gt.sin(h2)), d - 2 * x]
    (hs, s, p, d), _ = gj.scan(step, sequences=X, outputs_info=[h0, s0, s0, s0])
    return hs, s[-1], p[-1], d[-1]


def np_mixed(Xv, s0, h0):
    if len(Xv) == 0:
        raise IndexError("no step")
    h, s, p, d, hs = h0, s0, s0, s0, []
    for x in Xv:
        h = np.tanh(0.5 * h + x)
        hs.append(h)
        s, p, d = s + h ** 2 * x, p * (1 + 0.1 * np.sin(h)), d - 2 * x
    return np.array(hs), s, p, d


def squares(x, s0):
    """A 0-d state: s0 + sum(x_t ** 2) and s0 * prod(1 + x_t)."""
    (s, p), _ = gj.scan(lambda x_t, s, p: [s + x_t * x_t, p * (1 + x_t)], sequences=x, outputs_info=[s0, s0])
    return s[-1], p[-1]


def np_squares(xv, s0):
    if len(xv) == 0:
        raise IndexError("no step")
    return (np.asarray(s0 + (xv * xv).sum()).astype(s0.dtype),      # the state keeps its dtype
            np.asarray(s0 * (1 + xv).prod()).astype(s0.dtype))


CASES = [
    Case("scalar_accumulations", squares, np_squares, [arr((7,)), arr(())], zero_len=7),
    Case("int_accumulations", squares, np_squares, [arr((7,)), arr(())], zero_len=7, dtypes=("int64", "int32")),
    Case("outer_accumulation", second_moment, np_second_moment, [arr((6, 3)), arr((3, 3))], zero_len=6),
    Case("sum_prod_sub_accumulations", mixed, np_mixed, [arr((6, 3)), arr((3,)), arr((3,))], zero_len=6),
    Case("outer_accumulation_bad_rows", second_moment, np_second_moment, [arr((6, 3)), arr((4, 4))],
         zero_size=False, layouts=False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_accumulating_scans_match_numpy(case):
    check_case(case)


@pytest.mark.parametrize("mode", MODES)
def test_fires_on_hand_written_accumulations(mode):
    X, a0, h0 = gt.dmatrix("X"), gt.dmatrix("a0"), gt.dvector("h0")
    outs = second_moment(X, a0)
    f = gj.function([X, a0], list(outs), mode=mode)
    ref = gj.function([X, a0], list(outs), mode=unrewritten(mode))
    assert scans(f) == [] and scans(ref)              # both states accumulate: no loop is left
    Xv, av = np.random.default_rng(1).normal(size=(9, 3)), np.eye(3)
    for got, want in zip(f(Xv, av), ref(Xv, av)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    outs = mixed(X, h0, h0)
    f = gj.function([X, h0], list(outs), mode=mode)
    ref = gj.function([X, h0], list(outs), mode=unrewritten(mode))
    assert n_rec(f) == 1 and n_rec(ref) == 4          # only h, read by the step, stays recurrent
    hv = np.array([0.1, -0.2, 0.3])
    for got, want in zip(f(Xv, hv), ref(Xv, hv)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_does_not_fire_where_the_state_is_read_otherwise(mode):
    X, a0 = gt.dmatrix("X"), gt.dvector("a0")
    # the running sum feeds the step's other output
    (acc, y), _ = gj.scan(lambda x, a: [a + x, a * 2], sequences=X, outputs_info=[a0, None])
    # every state of the sum is read (not only the last)
    every, _ = gj.scan(lambda x, a: a + x * 3, sequences=X, outputs_info=a0)
    # the new value is read by another output too
    (acc2, z), _ = gj.scan(lambda x, a: [a + x, (a + x) * 2], sequences=X, outputs_info=[a0, None])
    # acc + acc: the previous value read twice
    dbl, _ = gj.scan(lambda x, a: a + a + x, sequences=X, outputs_info=a0)
    for outs, want_rec in (([acc[-1], y], 1), ([every], 1), ([acc2[-1], z], 1), ([dbl[-1]], 1)):
        f = gj.function([X, a0], outs, mode=mode)
        ref = gj.function([X, a0], outs, mode=unrewritten(mode))
        assert n_rec(f) == n_rec(ref) == want_rec
        Xv, av = np.arange(12.0).reshape(4, 3), np.ones(3)
        for got, want in zip(f(Xv, av), ref(Xv, av)):
            np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_a_state_changing_shape_still_raises(mode):
    X, a0 = gt.dmatrix("X"), gt.dvector("a0")
    (acc, m), _ = gj.scan(lambda x, a, m: [a + x, m + x], sequences=X, outputs_info=[a0, a0])
    f = gj.function([X, a0], [acc[-1], m[-1]], mode=mode)
    assert scans(f) == []
    with pytest.raises(ValueError):
        f(np.ones((4, 3)), np.ones(1))          # the loop: "a recurrent output keeps its shape"
    np.testing.assert_allclose(f(np.ones((4, 3)), np.ones(3))[0], np.full(3, 5.0))
    with pytest.raises(ValueError):
        gj.function([X, a0], gj.scan(lambda x, a: a + x, sequences=X, outputs_info=a0, n_steps=5)[0][-1],
                    mode=mode)(np.ones((4, 3)), np.ones(3))   # a sequence shorter than n_steps


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_a_scan_inside_a_step_keeps_its_loop(mode):
    # the zero-step guard is an ifelse, which an inner graph cannot lower: nested scans are left as written
    X, a0, h0 = gt.dtensor3("X"), gt.dmatrix("a0"), gt.dvector("h0")

    def step(M):
        (acc, _h), _ = gj.scan(lambda x, a, h: [a + gt.outer(x, gt.tanh(h)), gt.tanh(h + x)], sequences=M,
                               outputs_info=[a0, h0])
        return acc[-1]

    res, _ = gj.map(step, sequences=X)
    f = gj.function([X, a0, h0], res, mode=mode)
    Xv, av, hv = np.random.default_rng(2).normal(size=(3, 5, 4)), np.eye(4), np.zeros(4)
    want = []
    for M in Xv:
        a, h = av.copy(), hv
        for x in M:
            a, h = a + np.outer(x, np.tanh(h)), np.tanh(h + x)
        want.append(a)
    np.testing.assert_allclose(f(Xv, av, hv), want, rtol=1e-12)
    if mode != "PY":
        assert f.native.fallback_nodes == []
