"""scan keeps a state's dtype: a step output of another dtype is a TypeError naming both (Theano's rule), never a
silent cast; casting explicitly, as a Theano user had to, works in every mode."""

import numpy as np
import pytest

import graphjit as theano
from graphjit import tensor as T
from graphjit.scan_module import Scan
from graphjit.scan_module.info import ScanInfo
from tests.op_check import OP_TEST_MODES


def test_a_wider_step_result_is_refused():
    h0 = T.fscalar("h0")
    with pytest.raises(TypeError, match=r"output 0 is float64 but its state \(outputs_info\[0\].*float32.*[Cc]ast"):
        theano.scan(lambda h: h * np.float64(1e-50), outputs_info=h0, n_steps=2)


def test_a_narrower_step_result_is_refused_as_in_theano():
    x, h0 = T.fvector("x"), T.dvector("h0")
    with pytest.raises(TypeError, match="output 1 is float32 but its state.*float64"):
        theano.scan(lambda h, g: [h, x * 2], outputs_info=[h0, h0], n_steps=2)
    n = T.iscalar("n")
    with pytest.raises(TypeError, match="int64.*int32"):
        theano.scan(lambda k: k + np.int64(1), outputs_info=n, n_steps=3)


def test_tapped_states_are_checked_too():
    init = T.fmatrix("init")
    with pytest.raises(TypeError, match="float64.*float32"):
        theano.scan(lambda a, b: a + T.cast(b, "float64"), outputs_info=dict(initial=init, taps=[-2, -1]),
                    n_steps=3)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_an_explicit_cast_keeps_what_the_user_asked_for(mode):
    h0 = T.fscalar("h0")
    small32, _ = theano.scan(lambda h: T.cast(h * np.float64(1e-50), "float32"), outputs_info=h0, n_steps=2)
    f = theano.function([h0], small32, mode=mode)
    assert f(1.0).dtype == np.float32
    np.testing.assert_array_equal(f(1.0), [0.0, 0.0])          # float32 cannot hold 1e-50: the user chose it
    small64, _ = theano.scan(lambda h: h * np.float64(1e-50), outputs_info=T.cast(h0, "float64"), n_steps=2)
    got = theano.function([h0], small64, mode=mode)(1.0)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, [1e-50, 1e-100], rtol=1e-12)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_float32_loops_and_their_gradients_stay_float32(mode):
    W, X, h0 = T.fmatrix("W"), T.fmatrix("X"), T.fvector("h0")
    hs, _ = theano.scan(lambda x_t, h, W: T.tanh(T.dot(W, h) + x_t), sequences=X, outputs_info=h0, non_sequences=W)
    cost = T.cast(hs, "float64").sum()
    f = theano.function([W, X, h0], [hs] + theano.grad(cost, [W, X, h0]), mode=mode)
    rng = np.random.default_rng(0)
    vals = [rng.normal(size=(3, 3)).astype("float32") * 0.5, rng.normal(size=(4, 3)).astype("float32"),
            np.zeros(3, "float32")]
    assert [r.dtype for r in f(*vals)] == [np.float32] * 4


def test_a_scan_built_directly_checks_its_states():
    s = T.fscalar("s")
    info = ScanInfo(n_seqs=0, rec_taps=((-1,),), n_nitsot=0, n_shared=0, n_nonseqs=0)
    with pytest.raises(TypeError, match="recurrent output 0.*same dtype"):
        Scan([s], [T.cast(s, "float64") * 2], info)
