"""A Scan's identity with non-string modes; the shapes of a zero-step loop's outputs_info=None outputs."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.mode import Mode
from graphjit.link.llvm.ir import fallback
from graphjit.link.llvm.ir.fallback import FallbackWarning
from graphjit.scan_module.op import Scan


def _op(mode):
    x = gt.dvector("x")
    out, _ = gj.scan(lambda v: v * 2, sequences=x, mode=mode)
    return out.owner.op


def test_scan_identity_with_modes():
    assert _op(None) == _op(None) and hash(_op("PY")) == hash(_op("PY"))
    assert _op("PY") != _op("FAST_RUN") and _op(None) != _op("PY")
    py = Mode(linker="py", rewriter="fast_run")
    assert _op(py) == _op(Mode(linker="py", rewriter="fast_run"))            # same configuration
    assert hash(_op(py)) == hash(_op(Mode(linker="py", rewriter="fast_run")))
    assert _op(py) != _op(Mode(linker="py", rewriter="none"))                # compiled differently: not merged
    assert _op(py) != _op(None)


def test_scans_with_different_modes_do_not_merge():
    x = gt.dvector("x")
    a, _ = gj.scan(lambda v: v * 2, sequences=x, mode=Mode(linker="py", rewriter="none"))
    b, _ = gj.scan(lambda v: v * 2, sequences=x, mode=Mode(linker="py", rewriter="fast_run"))
    c, _ = gj.scan(lambda v: v * 2, sequences=x, mode=Mode(linker="py", rewriter="fast_run"))
    f = gj.function([x], [a, b, c], mode="PY")
    scans = [n for n in f.maker.fgraph.toposort() if isinstance(n.op, Scan)]
    assert len(scans) == 2
    np.testing.assert_allclose(f(np.arange(3.0))[0], [0, 2, 4])


# ---------------------------------------------------------------- zero steps
MODES = ["PY", "FAST_RUN", "FAST_COMPILE"]


def _assert_native(f, mode):
    """The Scan is still in the compiled graph and, outside PY, lowered as a native loop (no fallback)."""
    assert any(isinstance(n.op, Scan) for n in f.maker.fgraph.toposort())
    if mode != "PY":
        assert f.native.fallback_nodes == []

def _empty_cases():
    W, X = gt.dmatrix("W"), gt.dmatrix("X")
    dot, _ = gj.scan(lambda x, W: gt.dot(W, x), sequences=X, non_sequences=W)
    outer, _ = gj.scan(lambda x, W: gt.outer(x, W.sum(0)), sequences=X, non_sequences=W)
    mixed, _ = gj.scan(lambda x, h: [gt.tanh(h + x), gt.concatenate([x, h, h])], sequences=X,
                       outputs_info=[gt.constant(np.ones(3)), None])
    return [W, X], [dot, outer, mixed[1]]


@pytest.mark.parametrize("mode", MODES)
def test_zero_step_nitsot_shapes(mode):
    """A map over an empty sequence: (0, *the shape one step would give), from the step graph's shapes."""
    ins, outs = _empty_cases()
    f = gj.function(ins, outs, mode=mode)
    _assert_native(f, mode)
    got = f(np.ones((4, 3)), np.ones((0, 3)))
    assert [g.shape for g in got] == [(0, 4), (0, 3, 3), (0, 9)]
    assert [g.dtype for g in got] == ["float64"] * 3
    full = f(np.ones((4, 3)), np.ones((2, 3)))
    assert [g.shape[1:] for g in full] == [g.shape[1:] for g in got]
    n = gt.iscalar("n")
    zeros, _ = gj.scan(lambda W: W.sum(0), non_sequences=ins[0], n_steps=n)
    assert gj.function([ins[0], n], zeros, mode=mode)(np.ones((4, 5)), 0).shape == (0, 5)


@pytest.mark.parametrize("mode", MODES)
def test_zero_step_shape_that_cannot_be_known(mode):
    X = gt.dmatrix("X")
    out, _ = gj.scan(lambda x: x[:gt.cast(x.sum(), "int64")], sequences=X)
    f = gj.function([X], out, mode=mode)
    assert f(np.ones((2, 3))).shape == (2, 3)
    with pytest.raises(ValueError, match="ran no step and the shape of output 0 depends on values"):
        f(np.ones((0, 3)))


@pytest.mark.parametrize("mode", MODES)
def test_zero_step_shapes_from_states_shared_and_while_loops(mode):
    """Row shapes read from a state's initial value, a shared state and a scalar non-sequence's value."""
    X, h0, k = gt.dmatrix("X"), gt.dvector("h0"), gt.lscalar("k")
    s = gj.shared(np.ones((2, 5)), name="s")
    outs, updates = gj.scan(lambda x, h, k: ([h * 2, gt.concatenate([h, x]), gt.outer(gt.zeros((k,)) + x.sum(), s[0])],
                                             {s: gt.concatenate([s, s], axis=1)}),
                            sequences=X, outputs_info=[h0, None, None], non_sequences=k)
    f = gj.function([X, h0, k], outs[1:], mode=mode, no_default_updates=True)
    _assert_native(f, mode)
    assert [g.shape for g in f(np.ones((0, 3)), np.ones(6), 4)] == [(0, 9), (0, 4, 5)]
    assert [g.shape for g in f(np.ones((1, 3)), np.ones(6), 4)] == [(1, 9), (1, 4, 5)]     # s doubles after
    p0, n, W = gt.dscalar("p0"), gt.lscalar("n"), gt.dmatrix("W")
    [_, rows], _ = gj.scan(lambda p, W: [p * 2, W[0] * p, gj.until(p > 10)], outputs_info=[p0, None],
                           non_sequences=W, n_steps=n)
    g = gj.function([p0, n, W], rows, mode=mode)
    _assert_native(g, mode)
    assert g(1.0, 0, np.ones((2, 7))).shape == (0, 7)
    assert g(1.0, 9, np.ones((2, 7))).shape == (5, 7)


@pytest.mark.parametrize("mode", MODES)
def test_zero_step_negative_length(mode):
    W, k = gt.dmatrix("W"), gt.lscalar("k")
    out, _ = gj.scan(lambda x, k: gt.zeros((k,)) + x.sum(), sequences=W, non_sequences=k)
    f = gj.function([W, k], out, mode=mode)
    _assert_native(f, mode)
    assert f(np.ones((0, 3)), 2).shape == (0, 2)
    with pytest.raises(ValueError, match="negative"):
        f(np.ones((0, 3)), -1)


@pytest.mark.parametrize("mode", MODES)
def test_zero_step_shape_from_a_sequence_value(mode):
    """A row shape from a sequence element's value (PY reads a zero placeholder): natively no row exists to read,
    so the Scan runs its perform (FallbackWarning) and agrees with PY."""
    K, W = gt.lvector("K"), gt.dmatrix("W")
    out, _ = gj.scan(lambda k, W: W[:k] * 2, sequences=K, non_sequences=W)
    if mode == "PY":
        f = gj.function([K, W], out, mode=mode)
    else:
        fallback._WARNED.clear()
        with pytest.warns(FallbackWarning, match="Scan"):
            f = gj.function([K, W], out, mode=mode)
        assert [type(n.op).__name__ for n in f.native.fallback_nodes] == ["Scan"]
    assert f(np.zeros(0, dtype="int64"), np.ones((4, 5))).shape == (0, 0, 5)
    assert f(np.zeros(2, dtype="int64"), np.ones((4, 5))).shape == (2, 0, 5)
