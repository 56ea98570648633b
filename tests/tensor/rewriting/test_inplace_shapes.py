"""The inplace phase hands each replaced node's shape to its in-place version (rewriting/inplace.py _share_shape):
no shape inference per swapped node, and the shapes the linker reads stay right."""

import numpy as np

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.fg import FunctionGraph
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.rewriting.inplace import inplace_rewriter
from graphjit.tensor.shape_feature import ShapeFeature


def test_inplace_versions_take_the_shapes_without_inference(monkeypatch):
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    out = gt.exp(gt.tanh(x * y) + 1.0) * 2.0
    fg = FunctionGraph([x, y], [out])
    feature = ShapeFeature()
    fg.attach_feature(feature)
    before = {n.inputs[0]: feature.shape_of[n.outputs[0]] for n in fg.apply_nodes if isinstance(n.op, Elemwise)}
    calls = []
    original = Elemwise.infer_shape
    monkeypatch.setattr(Elemwise, "infer_shape", lambda self, *a: calls.append(self) or original(self, *a))
    inplace_rewriter.rewrite(fg)          # with its requirements (history, destroy handler)
    swapped = [n for n in fg.apply_nodes if isinstance(n.op, Elemwise) and n.op.destroy_map]
    assert len(swapped) >= 3 and calls == []
    for n in swapped:
        shape = feature.shape_of[n.outputs[0]]
        assert shape is before.get(n.inputs[0], shape)          # the very tuple the replaced node had
        assert len(shape) == 2 and all(s.type.dtype == "int64" for s in shape)


def test_the_compiled_function_with_inplace_nodes_agrees_with_py():
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    out = gt.exp(gt.tanh(x * y) + 1.0) * 2.0
    f = gj.function([x, y], [out, out.shape], mode="FAST_RUN")
    a, b = np.linspace(0, 1, 6).reshape(2, 3), np.linspace(1, 2, 6)[::-1].reshape(2, 3)
    r, s = f(a, b)
    np.testing.assert_allclose(r, np.exp(np.tanh(a * b) + 1.0) * 2.0)
    assert list(s) == [2, 3]
    assert any(n.op.destroy_map for n in f.maker.fgraph.apply_nodes if isinstance(n.op, Elemwise))
