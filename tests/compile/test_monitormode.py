"""MonitorMode: pre_func/post_func around every node (PY) or every unit the compiled function runs (LLVM)."""

from __future__ import annotations

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile import MonitorMode


def _graph():
    x = gt.dvector("x")
    return x, (gt.exp(x) * 2).sum() + gt.dot(x, x)


def test_py_linker_sees_every_node_in_order():
    x, out = _graph()
    pre, post = [], []
    def keep(cells):            # later in-place nodes overwrite these arrays: copy what you keep
        return [np.array(c[0], copy=True) for c in cells]

    f = gj.function([x], out, mode=MonitorMode(lambda i, node, fn: pre.append((i, node, keep(fn.inputs))),
                                               lambda i, node, fn: post.append((i, node, keep(fn.outputs)))))
    value = np.array([0.0, 1.0])
    assert np.isclose(f(value), 2 + 2 * np.e + 1)
    order = f.maker.fgraph.toposort()
    assert [i for i, _, _ in pre] == list(range(len(order))) == [i for i, _, _ in post]
    assert [n for _, n, _ in post] == order
    for i, node, outputs in post:              # every output is what perform computes from the inputs seen
        ins = pre[i][2]
        cells = [[None] for _ in node.outputs]
        node.op.perform(node, [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in ins], cells)
        for got, cell in zip(outputs, cells):
            np.testing.assert_allclose(got, cell[0])


@pytest.mark.parametrize("linker", ["llvm", "cvm"])
def test_llvm_linker_calls_back_per_unit(linker):
    x, out = _graph()
    post = []
    f = gj.function([x], out, mode=MonitorMode(post_func=lambda i, node, fn: post.append(
        (i, node, list(fn.nodes), [np.array(c[0], copy=True) for c in fn.outputs])), linker=linker))
    value = np.array([0.0, 1.0])
    assert np.isclose(f(value), 2 + 2 * np.e + 1)
    assert f.native is not None                       # compiled, not run through perform
    fused = [nodes for _, _, nodes, _ in post if len(nodes) > 1]
    assert fused, "the exp/mul/sum loop is one unit"
    assert any(isinstance(n.op, gt.CAReduce) for n in fused[0])
    last = post[-1]
    np.testing.assert_allclose(last[3][0], f(value))


def test_post_func_can_stop_a_call_with_an_exception():
    x = gt.dvector("x")

    def detect_nan(i, node, fn):
        for c in fn.outputs:
            if np.isnan(c[0]).any():
                raise RuntimeError(f"NaN after {node}")

    for linker in ("py", "llvm"):
        f = gj.function([x], gt.log(x) * 2, mode=MonitorMode(post_func=detect_nan, linker=linker))
        np.testing.assert_allclose(f(np.array([1.0])), [0.0])
        with pytest.raises(RuntimeError, match="NaN after"), np.errstate(invalid="ignore"):
            f(np.array([-1.0]))


def test_bad_arguments():
    with pytest.raises(TypeError, match="pre_func"):
        MonitorMode(pre_func=3)
    with pytest.raises(TypeError, match="post_func"):
        MonitorMode(post_func="no")
