"""Small static graphs (native_entry.stack_temporary, know_static_shape, small_static_graph) and the native call
path loaded from the disk cache in a new process."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.link.llvm.ir.fallback import FallbackWarning

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools(theta):
    mu, log_tau, eta = theta[0], theta[1], theta[2:]
    tau = gt.exp(log_tau)
    lp = -0.5 * (mu / 5.0) ** 2 - gt.log1p((tau / 5.0) ** 2) + log_tau - 0.5 * gt.sum(eta ** 2)
    return lp - 0.5 * gt.sum(((Y - (mu + tau * eta)) / SIGMA) ** 2)


def reference(theta):
    mu, log_tau, eta = theta[0], theta[1], theta[2:]
    tau = np.exp(log_tau)
    r = (Y - (mu + tau * eta)) / SIGMA
    value = -0.5 * (mu / 5) ** 2 - np.log1p((tau / 5) ** 2) + log_tau - 0.5 * eta @ eta - 0.5 * r @ r
    rs = r / SIGMA
    grad = np.concatenate([[-mu / 25 + rs.sum(), -2 * (tau / 5) ** 2 / (1 + (tau / 5) ** 2) + 1 + tau * (rs @ eta)],
                           -eta + tau * rs])
    return value, grad


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
@pytest.mark.parametrize("static", [True, False])
def test_eight_schools_value_and_gradient(mode, static):
    theta = gt.TensorType("float64", (10,))("theta") if static else gt.dvector("theta")
    lp = eight_schools(theta)
    f = gj.function([theta], [lp, gj.grad(lp, theta)], mode=mode)
    rng = np.random.default_rng(0)
    for _ in range(3):
        t = rng.standard_normal(10)
        value, grad = f(t)
        want_v, want_g = reference(t)
        np.testing.assert_allclose(value, want_v, rtol=1e-12)
        np.testing.assert_allclose(grad, want_g, rtol=1e-10, atol=1e-14)
    if mode != "PY":
        assert f.call_path == "native"
        with pytest.raises(TypeError if static else ValueError, match="argument 0" if static else "shape"):
            f(np.ones(9))
        with pytest.raises(TypeError, match="argument 0"):
            f(np.ones((10, 1)))
        with pytest.raises(TypeError, match="argument 0"):
            f(None)


def test_small_static_temporaries_live_on_the_stack():
    theta = gt.TensorType("float64", (10,))("theta")
    lp = eight_schools(theta)
    static = gj.function([theta], [lp, gj.grad(lp, theta)])
    d = gt.dvector("theta")
    lp_d = eight_schools(d)
    dynamic = gj.function([d], [lp_d, gj.grad(lp_d, d)])
    assert static.native.n_temp_slots == 0 < dynamic.native.n_temp_slots
    t = np.linspace(-1, 1, 10)
    for a, b in zip(static(t), dynamic(t)):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    ir_text = static.native.llvm_ir
    assert re.search(r'\.stack"? = alloca', ir_text) and "glue.buf" not in ir_text


def test_large_static_temporaries_and_fallback_graphs_keep_buffers():
    for n, on_stack in [(1000, False), (100, True)]:
        big = gt.TensorType("float64", (n,))("big")
        e = gt.exp(big * 2)                  # read by two groups: materialised
        f = gj.function([big], [e.sum() * (e * big).max(), big[0] + 1])
        assert (f.native.n_temp_slots == 0) == on_stack
        v = np.linspace(0, 1, n)
        np.testing.assert_allclose(f(v)[0], np.exp(v * 2).sum() * (np.exp(v * 2) * v).max())

    class Twice(Op):
        __props__ = ()

        def make_node(self, x):
            x = gt.as_tensor_variable(x)
            return Apply(self, [x], [x.type()])

        def perform(self, node, inputs, out):
            out[0][0] = inputs[0] * 2

    x = gt.TensorType("float64", (4,))("x")
    with pytest.warns(FallbackWarning):
        g = gj.function([x], Twice()(gt.exp(x) + 1) + 1)
    assert g.native.n_temp_slots > 0        # perform could keep a view of a stack temporary
    w = np.arange(4.0)
    np.testing.assert_allclose(g(w), 2 * (np.exp(w) + 1) + 1)


def test_static_lengths_broadcast_and_strides():
    a, b = gt.TensorType("float64", (3, 1))("a"), gt.TensorType("float64", (1, 4))("b")
    c = gt.TensorType("float64", (3, 4))("c")
    out = (a + b) * c
    f = gj.function([a, b, c], [out.sum(axis=0), (out.T * 2).sum(axis=1), gt.exp(a)])
    ref = gj.function([a, b, c], [out.sum(axis=0), (out.T * 2).sum(axis=1), gt.exp(a)], mode="PY")
    rng = np.random.default_rng(1)
    x, y, z = rng.random((3, 1)), rng.random((1, 4)), rng.random((6, 8))[::2, ::-2]
    for got, want in zip(f(x, y, z), ref(x, y, z)):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    with pytest.raises(TypeError, match="argument 2"):
        f(x, y, np.ones((3, 5)))


CHILD = r"""
import json, sys
import numpy as np
import graphjit as gj, graphjit.tensor as gt
x, a = gt.dvector("x"), gt.dscalar("a")
s = gj.shared(np.zeros(3), name="s")
f = gj.function([x, gj.In(a, value=2.0)], [(x * a).sum(), x * a], updates=[(s, s + x * a)])
got = [f(np.ones(3), a=1.5), f(np.ones(3)), f(np.arange(3.0), 0.5)]
print(json.dumps({"path": f.call_path, "hit": bool(f.native.cache_hit or f.native.timings.get("plan_hit")),
                  "values": [[float(np.asarray(v).sum()) for v in r] for r in got],
                  "state": s.get_value().tolist()}))
"""


@pytest.mark.soak
def test_the_native_call_path_from_the_disk_cache_in_a_new_process(tmp_path):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert not cold["hit"] and warm["hit"]
    for run in runs:
        assert run["path"] == "native"
        assert run["values"] == [[4.5, 4.5], [6.0, 6.0], [1.5, 1.5]]
        assert run["state"] == [3.5, 4.0, 4.5]
