"""The in-place update rewrites (tensor/rewriting/update_inplace.py): when they fire, when they must not, values."""

import io

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.blas_gemm import Gemm, gemm
from graphjit.tensor.elemwise import Elemwise


def _mlp(mode, dtype="float64"):
    rng = np.random.default_rng(3)
    x, y = gt.matrix("x", dtype=dtype), gt.matrix("y", dtype=dtype)
    shapes = [(12, 8), (8,), (8, 3), (3,)]
    shared = [gj.shared((rng.standard_normal(s) * 0.3).astype(dtype), name=n)
              for s, n in zip(shapes, ("W1", "b1", "W2", "b2"))]
    W1, b1, W2, b2 = shared
    z = gt.dot(gt.tanh(gt.dot(x, W1) + b1), W2) + b2
    loss = -(y * (z - gt.log(gt.exp(z).sum(axis=1, keepdims=True)))).sum(axis=1).mean()
    lr = np.asarray(0.1, dtype)
    f = gj.function([x, y], loss, updates=[(p, p - lr * g) for p, g in zip(shared, gj.grad(loss, shared))],
                    mode=mode)
    return f, shared


def _data(dtype="float64"):
    rng = np.random.default_rng(0)
    return rng.standard_normal((6, 12)).astype(dtype), np.eye(3, dtype=dtype)[rng.integers(0, 3, 6)]


def _destroyers(f):
    """{updated input's name: str(op)} for the nodes overwriting an input of f's graph."""
    fg = f.maker.fgraph
    found = {}
    for node in fg.apply_nodes:
        for ins in node.op.destroy_map.values():
            for i in ins:
                if node.inputs[i] in fg.inputs:
                    found[node.inputs[i].name] = str(node.op)
    return found


def _run(f, shared, args, steps=3):
    losses = [float(f(*args)) for _ in range(steps)]
    return losses, [p.get_value() for p in shared]


@pytest.mark.parametrize("mode", ["FAST_RUN", "PY"])
def test_the_mlp_update_becomes_inplace_gemm_and_elemwise(mode):
    f, _ = _mlp(mode)
    assert _destroyers(f) == {"W1": "Gemm{inplace}", "W2": "Gemm{inplace}",
                              "b1": "Elemwise{sub,inplace}", "b2": "Elemwise{sub,inplace}"}
    out = io.StringIO()
    gj.dprint(f, file=out)
    assert "Gemm{inplace}" in out.getvalue() and "Elemwise{sub,inplace}" in out.getvalue()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_py_fast_run_and_the_rewrites_turned_off_agree(dtype):
    tol = 1e-4 if dtype == "float32" else 1e-12
    runs = {}
    for name, mode in [("fast", "FAST_RUN"), ("py", "PY"),
                       ("off", gj.get_mode("FAST_RUN").excluding("update_gemm", "update_inplace"))]:
        f, shared = _mlp(mode, dtype)
        runs[name] = (f, _run(f, shared, _data(dtype)))
    assert _destroyers(runs["off"][0]) == {}
    for name in ("py", "off"):
        np.testing.assert_allclose(runs[name][1][0], runs["fast"][1][0], rtol=tol)
        for a, b in zip(runs[name][1][1], runs["fast"][1][1]):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_each_tag_turns_off_its_rewrite():
    f, _ = _mlp(gj.get_mode("FAST_RUN").excluding("update_gemm"))
    assert _destroyers(f)["W1"] == "Elemwise{sub,inplace}"       # the elementwise one takes over
    f, _ = _mlp(gj.get_mode("FAST_RUN").excluding("update_inplace"))
    assert set(_destroyers(f)) == {"W1", "W2"}


def _w_and_update(extra):
    rng = np.random.default_rng(1)
    w = gj.shared(rng.standard_normal((4, 3)), name="w")
    a, g = gt.dmatrix("a"), gt.dmatrix("g")
    new = w - 0.5 * gt.dot(a, g)
    return w, [a, g], extra(w, new), new


ARGS = (np.random.default_rng(2).standard_normal((4, 5)), np.random.default_rng(3).standard_normal((5, 3)))


@pytest.mark.parametrize("case", ["w_is_an_output", "w_read_with_the_update", "w_view_is_an_output"])
def test_no_rewrite_when_w_is_needed_after_the_update(case):
    extra = {"w_is_an_output": lambda w, new: [w],
             "w_read_with_the_update": lambda w, new: [(w * new).sum()],
             "w_view_is_an_output": lambda w, new: [w.T]}[case]
    results = []
    for mode in ("FAST_RUN", "PY"):
        w, ins, outs, new = _w_and_update(extra)
        start = w.get_value()
        f = gj.function(ins, outs, updates=[(w, new)], mode=mode)
        assert "w" not in _destroyers(f)
        got = f(*ARGS)
        np.testing.assert_allclose(w.get_value(), start - 0.5 * ARGS[0] @ ARGS[1], rtol=1e-12)
        results.append(got)
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)


@pytest.mark.parametrize("mode", ["FAST_RUN", "PY"])
def test_two_shared_variables_on_one_buffer(mode):
    """u and v hold the same array: each update is computed from the old values, as numpy would."""
    buf = np.random.default_rng(4).standard_normal((4, 3))
    u = gj.shared(buf, name="u", borrow=True)
    v = gj.shared(buf, name="v", borrow=True)
    a, g = gt.dmatrix("a"), gt.dmatrix("g")
    f = gj.function([a, g], [], updates=[(u, u - 0.5 * gt.dot(a, g)), (v, v * 2 + u.sum())], mode=mode)
    assert _destroyers(f) == {"u": "Gemm{inplace}", "v": "Elemwise{mul,inplace}"}
    old = buf.copy()
    f(*ARGS)
    np.testing.assert_allclose(u.get_value(), old - 0.5 * ARGS[0] @ ARGS[1], rtol=1e-12)
    np.testing.assert_allclose(v.get_value(), old * 2 + old.sum(), rtol=1e-12)


def test_gemm_op_values_and_broadcasting():
    z, x, y = gt.dmatrix("z"), gt.dmatrix("x"), gt.dmatrix("y")
    rng = np.random.default_rng(5)
    xv, yv = rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    for zv in (rng.standard_normal((4, 3)), rng.standard_normal((1, 3))):
        for mode in ("FAST_RUN", "PY"):
            f = gj.function([z, x, y], gemm(z, 2.0, x, y, 0.5), mode=mode)
            np.testing.assert_allclose(f(zv, xv, yv), 0.5 * zv + 2.0 * xv @ yv, rtol=1e-12)
            with pytest.raises(ValueError, match="not aligned"):
                f(zv, xv, yv[:4])


def test_a_learning_rate_variable_goes_into_alpha():
    w = gj.shared(np.ones((2, 2)), name="w")
    lr, a = gt.dscalar("lr"), gt.dmatrix("a")
    f = gj.function([lr, a], [], updates=[(w, w - lr * gt.dot(a, a))])
    gemms = [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, Gemm)]
    assert len(gemms) == 1 and not any(isinstance(n.op, Elemwise) and n.op.destroy_map and
                                       n.inputs[0] is w for n in f.maker.fgraph.apply_nodes)
    f(0.5, np.eye(2))
    np.testing.assert_allclose(w.get_value(), np.full((2, 2), 1.0) - 0.5 * np.eye(2))
