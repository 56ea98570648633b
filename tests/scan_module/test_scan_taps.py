"""scan's taps counted as Theano counts them: the examples of Theano's scan pages and test suite, the general
rule for every mix of negative, zero and positive taps, n_steps, go_backwards and gradients, in every mode."""

import numpy as np
import pytest

import graphjit as theano
from graphjit import tensor as T
from tests.op_check import OP_TEST_MODES


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_negative_taps_of_a_sequence(mode):
    # Theano's test_using_negative_taps_sequence: taps [-2, -1] on 5 rows run 3 steps, tap -2 reading u[t]
    x = T.fvector("x")
    res, upd = theano.scan(lambda x_tm2, x_tm1: x_tm2, sequences=dict(input=x, taps=[-2, -1]))
    f = theano.function([x], res, updates=upd, mode=mode)
    np.testing.assert_array_equal(f([1, 2, 3, 4, 5]), np.array([1, 2, 3], dtype="float32"))
    res, _ = theano.scan(lambda x_tm2, x_tm1: x_tm1, sequences=dict(input=x, taps=[-2, -1]))
    np.testing.assert_array_equal(theano.function([x], res, mode=mode)([1, 2, 3, 4, 5]), [2, 3, 4])


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_a_single_past_tap_of_a_sequence(mode):
    # Theano's test_using_taps_sequence: tap -1 alone drops the last row
    x = T.dvector()
    y, updates = theano.scan(lambda x: [x], sequences=dict(input=x, taps=[-1]), outputs_info=[None])
    inp = np.arange(5).astype("float64")
    np.testing.assert_array_equal(theano.function([x], y, updates=updates, mode=mode)(inp), inp[:-1])


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_past_taps_of_a_sequence_and_of_an_output(mode):
    # Theano's test_using_taps_input_output: 6 rows read at tap -2 give 4 steps; taps (-1, -2) of the output
    W_in, W = 0.7, -0.4
    u, x0 = T.vector("u"), T.vector("x0")
    output, _ = theano.scan(lambda u_tm2, x_tm1, x_tm2: u_tm2 * W_in + x_tm1 * W + x_tm2,
                            dict(input=u, taps=-2), dict(initial=x0, taps=[-1, -2]), [])
    f = theano.function([u, x0], output, mode=mode)
    rng = np.random.default_rng(0)
    v_u, v_x0 = rng.uniform(-5, 5, size=6), rng.uniform(-5, 5, size=2)
    ref = []
    hist = list(v_x0)
    for step in range(4):
        hist.append(v_u[step] * W_in + hist[-1] * W + hist[-2])
        ref.append(hist[-1])
    np.testing.assert_allclose(f(v_u, v_x0), ref)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_past_and_future_taps(mode):
    # Theano's test_past_future_taps_shared: taps [-2, 2] on 6 rows give 2 steps
    W_in, W = 0.3, 0.9
    u, x0 = T.vector("u"), T.vector("x0")
    output, _ = theano.scan(lambda u_tm2, u_tp2, x_tm1, x_tm2: (u_tm2 + u_tp2) * W_in + x_tm1 * W + x_tm2,
                            dict(input=u, taps=[-2, 2]), dict(initial=x0, taps=[-1, -2]), [])
    rng = np.random.default_rng(1)
    v_u, v_x0 = rng.uniform(-5, 5, size=6), rng.uniform(-5, 5, size=2)
    out0 = (v_u[0] + v_u[4]) * W_in + v_x0[1] * W + v_x0[0]
    out1 = (v_u[1] + v_u[5]) * W_in + out0 * W + v_x0[1]
    np.testing.assert_allclose(theano.function([u, x0], output, mode=mode)(v_u, v_x0), [out0, out1])


def _one_step(u_tm4, u_t, x_tm3, x_tm1, y_tm1, W, W_in_1, W_in_2, W_feedback, W_out):
    x_t = T.tanh(T.dot(x_tm1, W) + T.dot(u_t, W_in_1) + T.dot(u_tm4, W_in_2) + T.dot(y_tm1, W_feedback))
    y_t = T.dot(x_tm3, W_out)
    return [x_t, y_t]


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_the_scan_page_recurrent_network(mode):
    # Theano's scan page, "Multiple outputs, several taps values": u read at t-4 and t, x at t-3 and t-1
    # (the page writes theano.dot, an alias of T.dot)
    W, W_in_1, W_in_2, W_feedback, W_out = (T.matrix() for _ in range(5))
    u = T.matrix()      # a sequence of vectors
    x0 = T.matrix()     # x's initial state covers x[-3]
    y0 = T.vector()     # y's covers y[-1] only
    ([x_vals, y_vals], updates) = theano.scan(fn=_one_step, sequences=dict(input=u, taps=[-4, -0]),
                                              outputs_info=[dict(initial=x0, taps=[-3, -1]), y0],
                                              non_sequences=[W, W_in_1, W_in_2, W_feedback, W_out], strict=True)
    f = theano.function([u, x0, y0, W, W_in_1, W_in_2, W_feedback, W_out], [x_vals, y_vals], mode=mode)
    rng = np.random.default_rng(2)
    nx, nu, ny = 3, 2, 2
    v_u, v_x0, v_y0 = rng.normal(size=(9, nu)), rng.normal(size=(3, nx)), rng.normal(size=ny)
    ws = [rng.normal(size=s) * 0.5 for s in [(nx, nx), (nu, nx), (nu, nx), (ny, nx), (nx, ny)]]
    xs, ys = list(v_x0), [v_y0]
    for t in range(9 - 4):
        xs.append(np.tanh(xs[-1] @ ws[0] + v_u[t + 4] @ ws[1] + v_u[t] @ ws[2] + ys[-1] @ ws[3]))
        ys.append(xs[-4] @ ws[4])
    got_x, got_y = f(v_u, v_x0, v_y0, *ws)
    np.testing.assert_allclose(got_x, xs[3:])
    np.testing.assert_allclose(got_y, ys[1:])


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_the_tutorial_two_tap_recurrence(mode):
    # Theano's loop tutorial: x(t) = x(t - 2).dot(U) + x(t - 1).dot(V) + tanh(x(t - 1).dot(W) + b)
    X, W, U, V = T.matrix("X"), T.matrix("W"), T.matrix("U"), T.matrix("V")
    b_sym, n_sym = T.vector("b_sym"), T.iscalar("n_sym")
    results, updates = theano.scan(
        lambda x_tm2, x_tm1: T.dot(x_tm2, U) + T.dot(x_tm1, V) + T.tanh(T.dot(x_tm1, W) + b_sym),
        n_steps=n_sym, outputs_info=[dict(initial=X, taps=[-2, -1])])
    compute_seq2 = theano.function(inputs=[X, U, V, W, b_sym, n_sym], outputs=results, mode=mode)
    x = np.zeros((2, 2))            # the initial value must be able to return x[-2]
    x[1, 1] = 1
    w = 0.5 * np.ones((2, 2))
    u = 0.5 * (np.ones((2, 2)) - np.eye(2))
    v = 0.5 * np.ones((2, 2))
    b = np.ones(2)
    x_res = np.zeros((10, 2))
    x_res[0] = x[0].dot(u) + x[1].dot(v) + np.tanh(x[1].dot(w) + b)
    x_res[1] = x[1].dot(u) + x_res[0].dot(v) + np.tanh(x_res[0].dot(w) + b)
    for i in range(2, 10):
        x_res[i] = x_res[i - 2].dot(u) + x_res[i - 1].dot(v) + np.tanh(x_res[i - 1].dot(w) + b)
    np.testing.assert_allclose(compute_seq2(x, u, v, w, b, 10), x_res)


TAP_SETS = [[0], [-1], [-2, -1], [-1, 0], [-1, 0, 1], [1], [2], [1, 2], [-2, 2], [-3, 1], [2, -1, 0], [-4, 0]]


def _reference(u, taps, go_backwards, n_steps=None):
    """Theano's rule: a step's window spans tap 0; step t is at time tau (t - min(taps, 0), or counted down
    from the end when going backwards) and tap k reads u[tau + k]."""
    lo, hi = min(min(taps), 0), max(max(taps), 0)
    steps = max(len(u) - (hi - lo), 0) if n_steps is None else n_steps
    rows = []
    for t in range(steps):
        tau = len(u) - 1 - hi - t if go_backwards else t - lo
        rows.append(sum(10.0 ** i * u[tau + k] for i, k in enumerate(taps)))
    return np.array(rows)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("go_backwards", [False, True])
def test_every_mix_of_taps(mode, go_backwards):
    u = T.dvector("u")
    v = np.arange(1.0, 8.0)
    for taps in TAP_SETS:
        out, _ = theano.scan(lambda *a: sum(10.0 ** i * x for i, x in enumerate(a)),
                             sequences=dict(input=u, taps=taps), go_backwards=go_backwards)
        f = theano.function([u], out, mode=mode)
        np.testing.assert_array_equal(f(v), _reference(v, taps, go_backwards), err_msg=str(taps))
        assert f(v[:2]).shape == _reference(v[:2], taps, go_backwards).shape   # shorter than the window: 0 steps


@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("go_backwards", [False, True])
def test_n_steps_with_taps(mode, go_backwards):
    u, n = T.dvector("u"), T.lscalar("n")
    taps = [-2, 1]
    out, _ = theano.scan(lambda a, b: a + 10 * b, sequences=dict(input=u, taps=taps), n_steps=n,
                         go_backwards=go_backwards)
    f = theano.function([u, n], out, mode=mode)
    v = np.arange(1.0, 8.0)                         # 7 rows, a window of 4: 4 steps at most
    for steps in range(5):
        np.testing.assert_array_equal(f(v, steps), _reference(v, taps, go_backwards, steps))
    with pytest.raises(ValueError, match="fewer than n_steps"):
        f(v, 5)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_gradient_through_tapped_sequences_and_outputs(mode):
    def loop(u, x0):
        out, _ = theano.scan(lambda u_tm2, u_tp1, x_tm2, x_tm1: T.tanh(u_tm2 * x_tm1 + u_tp1) + 0.5 * x_tm2,
                             sequences=dict(input=u, taps=[-2, 1]), outputs_info=dict(initial=x0, taps=[-2, -1]))
        return out

    rng = np.random.default_rng(3)
    v_u, v_x0 = rng.normal(size=(7, 2)), rng.normal(size=(2, 2))
    theano.verify_grad(loop, [v_u, v_x0], mode=mode)
    u, x0 = T.dmatrix("u"), T.dmatrix("x0")
    g = theano.function([u, x0], theano.grad(loop(u, x0).sum(), u), mode=mode)(v_u, v_x0)
    # 4 steps: tap -2 reads rows 0..3, tap 1 rows 3..6; every row is read
    assert np.all(g != 0)

    def lagged(u):
        return theano.scan(lambda a, b: a * b, sequences=dict(input=u, taps=[-2, -1]))[0]
    theano.verify_grad(lagged, [rng.normal(size=6)], mode=mode)
    w = T.dvector("w")
    g = theano.function([w], theano.grad(lagged(w).sum(), w), mode=mode)(np.arange(1.0, 6.0))
    np.testing.assert_allclose(g, [2, 1 + 3, 2 + 4, 3, 0])   # 3 steps: u0*u1 + u1*u2 + u2*u3; u4 is not read


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_output_taps_read_the_first_rows_of_the_initial_value(mode):
    # Theano keeps initial[:depth]: a longer initial value's extra rows are not read
    init = T.dmatrix("init")
    fib, _ = theano.scan(lambda a, b: a + b, outputs_info=dict(initial=init, taps=[-2, -1]), n_steps=3)
    got = theano.function([init], fib, mode=mode)(np.array([[1.0], [2.0], [100.0]]))
    np.testing.assert_array_equal(got[:, 0], [3, 5, 8])


def test_output_taps_are_distinct():
    x0 = T.dvector("x0")
    with pytest.raises(ValueError, match="each tap once"):
        theano.scan(lambda a, b: a + b, outputs_info=dict(initial=x0, taps=[-1, -1]), n_steps=2)
