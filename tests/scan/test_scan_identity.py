"""A Scan's identity with non-string modes; the shapes of a zero-step loop's outputs_info=None outputs."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.mode import Mode
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

def _empty_cases():
    W, X = gt.dmatrix("W"), gt.dmatrix("X")
    dot, _ = gj.scan(lambda x, W: gt.dot(W, x), sequences=X, non_sequences=W)
    outer, _ = gj.scan(lambda x, W: gt.outer(x, W.sum(0)), sequences=X, non_sequences=W)
    mixed, _ = gj.scan(lambda x, h: [gt.tanh(h + x), gt.concatenate([x, h, h])], sequences=X,
                       outputs_info=[gt.constant(np.ones(3)), None])
    return [W, X], [dot, outer, mixed[1]]


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
def test_zero_step_nitsot_shapes(mode):
    """A map over an empty sequence: (0, *the shape one step would give), from the step graph's shapes."""
    ins, outs = _empty_cases()
    f = gj.function(ins, outs, mode=mode)
    got = f(np.ones((4, 3)), np.ones((0, 3)))
    assert [g.shape for g in got] == [(0, 4), (0, 3, 3), (0, 9)]
    assert [g.dtype for g in got] == ["float64"] * 3
    full = f(np.ones((4, 3)), np.ones((2, 3)))
    assert [g.shape[1:] for g in full] == [g.shape[1:] for g in got]
    n = gt.iscalar("n")
    zeros, _ = gj.scan(lambda W: W.sum(0), non_sequences=ins[0], n_steps=n)
    assert gj.function([ins[0], n], zeros, mode=mode)(np.ones((4, 5)), 0).shape == (0, 5)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
def test_zero_step_shape_that_cannot_be_known(mode):
    X = gt.dmatrix("X")
    out, _ = gj.scan(lambda x: x[:gt.cast(x.sum(), "int64")], sequences=X)
    f = gj.function([X], out, mode=mode)
    assert f(np.ones((2, 3))).shape == (2, 3)
    with pytest.raises(ValueError, match="ran no step and the shape of output 0 depends on values"):
        f(np.ones((0, 3)))
