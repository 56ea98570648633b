"""ShapeFeature and symbolic_shape_of: shapes from infer_shape, without computing the variables."""

import warnings

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import Apply, Constant, ancestors
from graphjit.graph.features import AlreadyThere
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.join import concatenate
from graphjit.tensor.scalar_conversion import scalar_from_tensor
from graphjit.tensor.shape import Shape_i, reshape
from graphjit.tensor.shape_feature import ShapeFeature, symbolic_shape_of
from op_check import arr, check_infer_shape


class NoInferShape(Op):
    """A copy of x, with no infer_shape (the feature must fall back to Shape_i of the output)."""

    __props__ = ()

    def make_node(self, x):
        x = as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].copy()


class BrokenInferShape(NoInferShape):
    """An op whose infer_shape raises a bug-like error."""

    def infer_shape(self, fgraph, node, shapes):
        raise KeyError("oops")


def _eval(shape_tuple, inputs, values):
    vec = gt.as_tensor_variable(list(shape_tuple)) if shape_tuple else None
    if vec is None:
        return ()
    fn = gj.function(inputs, vec, mode="PY", on_unused_input="ignore")
    return tuple(int(s) for s in fn(*values))


def _computes(entries, var):
    return var in set(ancestors(list(entries)))


def test_feature_shapes_do_not_compute_the_variables():
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    out = gt.exp(x) * y + 1
    fg = FunctionGraph([x, y], [out], features=[ShapeFeature()], clone=False)
    sf = fg.shape_feature
    entries = sf.shape_of[out]
    assert len(entries) == 2 and all(e.type == gt.TensorType("int64", ()) for e in entries)
    for node in fg.apply_nodes:
        for o in node.outputs:
            assert not _computes(sf.shape_of[o], o)
    assert not _computes(entries, out.owner.inputs[0])
    vals = [np.ones((3, 1)), np.ones((1, 4))]
    assert _eval(entries, [x, y], vals) == (3, 4)
    assert sf.get_shape(out, 1) is entries[1]


def test_inputs_and_static_lengths():
    x = gt.TensorType("float64", (3, None))("x")
    xt = x.T
    fg = FunctionGraph([x], [xt], features=[ShapeFeature()], clone=False)
    sf = fg.shape_feature
    first, second = sf.shape_of[x]
    assert isinstance(first, Constant) and int(first.data) == 3
    assert isinstance(second.owner.op, Shape_i) and second.owner.inputs[0] is x
    assert sf.shape_of[xt][1] is first
    assert sf.shape_of[xt][0] is second


def test_constants_and_non_tensors():
    x = gt.dscalar("x")
    s = scalar_from_tensor(x)
    out = gt.as_tensor_variable(s) + np.ones(3)
    fg = FunctionGraph([x], [out], features=[ShapeFeature()], clone=False)
    sf = fg.shape_feature
    assert sf.shape_of[s] is None
    assert [int(e.data) for e in sf.shape_of[out]] == [3]


def test_fallback_to_shape_i_of_the_output():
    x = gt.dmatrix("x")
    t = NoInferShape()(x)
    out = t + 1
    fg = FunctionGraph([x], [out], features=[ShapeFeature()], clone=False)
    sf = fg.shape_feature
    assert all(isinstance(e.owner.op, Shape_i) and e.owner.inputs[0] is t for e in sf.shape_of[t])
    assert _eval(sf.shape_of[out], [x], [np.ones((2, 5))]) == (2, 5)


def test_broken_infer_shape_warns_and_falls_back():
    x = gt.dvector("x")
    t = BrokenInferShape()(x)
    with pytest.warns(UserWarning, match="infer_shape of BrokenInferShape failed"):
        fg = FunctionGraph([x], [t], features=[ShapeFeature()], clone=False)
    assert fg.shape_feature.shape_of[t][0].owner.inputs[0] is t


def test_replace_updates_shapes_that_refer_to_the_old_variable():
    x = gt.dmatrix("x")
    t = NoInferShape()(x)
    out = t * 2
    fg = FunctionGraph([x], [out], features=[ShapeFeature()], clone=False)
    sf = fg.shape_feature
    assert _computes(sf.shape_of[out], t)
    new = gt.exp(x)
    fg.replace(t, new, reason="test")
    assert new in sf.shape_of          # imported nodes get shapes
    assert not _computes(sf.shape_of[out], t)
    assert _eval(sf.shape_of[out], [x], [np.ones((2, 3))]) == (2, 3)


def test_attach_detach_and_clone():
    x = gt.dvector("x")
    fg = FunctionGraph([x], [gt.exp(x)], clone=False)
    feature = ShapeFeature()
    fg.attach_feature(feature)
    with pytest.raises(AlreadyThere):
        ShapeFeature().on_attach(fg)
    clone, memo = fg.clone_get_equiv()
    assert clone.shape_feature is not feature and memo[fg.outputs[0]] in clone.shape_feature.shape_of
    fg.remove_feature(feature)
    assert not hasattr(fg, "shape_feature") and not feature.shape_of


def test_same_shape():
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    a, b = gt.exp(x), x * 2
    bt = b.T
    fg = FunctionGraph([x, y], [a, bt, y], features=[ShapeFeature()], clone=False)
    sf = fg.shape_feature
    assert sf.same_shape(a, b)
    assert not sf.same_shape(a, y)
    assert sf.same_shape(a, bt, 0, 1)
    assert not sf.same_shape(a, bt)


def test_symbolic_shape_of():
    x, y = gt.dmatrix("x"), gt.dvector("y")
    out = concatenate([gt.exp(x), reshape(y, (1, -1))])
    shp = symbolic_shape_of(out, [x, y])
    assert shp.type == gt.TensorType("int64", (2,))
    assert not _computes([shp], out)
    fn = gj.function([x, y], shp, mode="PY", on_unused_input="ignore")
    assert tuple(fn(np.ones((3, 4)), np.ones(4))) == (4, 4)
    static = symbolic_shape_of(gt.TensorType("float64", (2, 3))("s").T, [])
    assert isinstance(static, Constant) and list(static.data) == [3, 2]


def test_elemwise_broadcast_with_zero_length():
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    shp = symbolic_shape_of(x + y, [x, y])
    fn = gj.function([x, y], shp, mode="PY")
    assert tuple(fn(np.ones((0, 1)), np.ones((1, 4)))) == (0, 4)
    assert tuple(fn(np.ones((3, 1)), np.ones((1, 0)))) == (3, 0)
    check_infer_shape(lambda a, b: a * b, [arr((3, 1)), arr((1, 4))])


def test_no_warnings_for_the_library_ops():
    x = gt.dtensor3("x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = reshape(concatenate([x, x], 1), (-1,)) + gt.zeros_like(x).sum()
        FunctionGraph([x], [out, gt.split(x, (1, 1), 2, axis=0)[0]], features=[ShapeFeature()],
                      clone=False)


def test_replace_updates_shapes_that_use_the_old_variable_as_a_length():
    x, n = gt.dvector("x"), gt.lscalar("n")
    m = n * 2
    out = gt.alloc(x, m, 3)
    fg = FunctionGraph([x, n], [out], features=[ShapeFeature()], clone=False)
    sf = fg.shape_feature
    assert sf.shape_of[out][0] is m
    new = n + n
    fg.replace(m, new, reason="test")
    assert sf.shape_of[out][0] is new



def test_substitution_rebuilds_only_what_reads_the_replaced_variable():
    """The shape graphs after a replacement share every subgraph that does not read the old variable."""
    from graphjit.tensor.shape_feature import _substitute
    n, k = gt.lscalar("n"), gt.lscalar("k")
    m, k3 = n * 2, k * 3
    first, second = m + k3, k3 - 1
    new = n + n
    out_first, out_second = _substitute([first, second], m, new)
    assert out_second is second                       # does not read m: the same variable
    assert out_first is not first and out_first.owner.inputs[0] is new
    assert out_first.owner.inputs[1] is k3            # the shared part is not copied
    fn = gj.function([n, k], [out_first, out_second], mode="PY")
    assert [int(v) for v in fn(5, 7)] == [5 + 5 + 21, 20]


def test_elemwise_static_lengths_cost_no_constant_and_stay_shared():
    """Elemwise.infer_shape gives a statically known length as an int (broadcast_shape_symbolic(ints=True)):
    no new constant per node; the feature holds its own shared constant there, the symbolic length elsewhere."""
    from graphjit.tensor.shape import broadcast_shape_symbolic
    x = gt.TensorType("float64", (None, 1))("x")
    y = gt.TensorType("float64", (4, 1))("y")
    z = gt.TensorType("float64", (None, 1))("z")
    sx, sz = (gt.constant(7, dtype="int64"), gt.constant(1, dtype="int64")), (gt.constant(5, dtype="int64"),) * 2
    assert broadcast_shape_symbolic([sx, sz], [x.type.shape, z.type.shape], ints=True)[1] == 1
    lengths = broadcast_shape_symbolic([sx, sz], [x.type.shape, z.type.shape])
    assert isinstance(lengths[1], Constant) and int(lengths[1].data) == 1 and not isinstance(lengths[0], int)
    assert broadcast_shape_symbolic([sx, sx], [x.type.shape, y.type.shape], ints=True)[0] == 4
    out = x * y + z
    fg = FunctionGraph([x, y, z], [out], clone=False)
    feature = ShapeFeature()
    fg.attach_feature(feature)
    for node in fg.toposort():
        shapes = node.op.infer_shape(fg, node, [feature.shape_of[i] for i in node.inputs])
        assert shapes[0][1] == 1 and not isinstance(shapes[0][1], Constant)
    shape = feature.shape_of[out]
    assert shape[0] is feature.lscalar(4) and shape[1] is feature.lscalar(1)
    f = gj.function([x, y, z], out.shape, mode="FAST_RUN")
    assert list(f(np.ones((4, 1)), np.ones((4, 1)), np.ones((4, 1)))) == [4, 1]
