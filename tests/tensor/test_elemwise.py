"""Elementwise ops, DimShuffle and reductions against numpy, through the shared op-test helper."""

import numpy as np
import pytest
import scipy.special as sps

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from op_check import Case, arr, check_case, check_infer_shape, check_op_contract

FLOATS = ("float64", "float32")
INTS = ("int64", "int32")

UNARY = [
    # name, graphjit op, numpy reference, (low, high), dtypes
    ("neg", gt.neg, np.negative, (-3, 3), FLOATS + INTS),
    ("abs", gt.abs, np.abs, (-3, 3), FLOATS + INTS),
    ("sign", gt.sign, np.sign, (-3, 3), FLOATS + INTS),
    ("sqr", gt.sqr, np.square, (-3, 3), FLOATS + INTS),
    ("floor", gt.floor, np.floor, (-3, 3), FLOATS + INTS),
    ("ceil", gt.ceil, np.ceil, (-3, 3), FLOATS + INTS),
    ("trunc", gt.trunc, np.trunc, (-3, 3), FLOATS + INTS),
    ("round", gt.round, np.round, (-3, 3), FLOATS),
    ("exp", gt.exp, np.exp, (-3, 3), FLOATS + INTS),
    ("exp2", gt.exp2, np.exp2, (-3, 3), FLOATS),
    ("expm1", gt.expm1, np.expm1, (-1, 1), FLOATS),
    ("log", gt.log, np.log, (0.1, 5), FLOATS),
    ("log2", gt.log2, np.log2, (0.1, 5), FLOATS),
    ("log10", gt.log10, np.log10, (0.1, 5), FLOATS),
    ("log1p", gt.log1p, np.log1p, (-0.5, 3), FLOATS),
    ("sqrt", gt.sqrt, np.sqrt, (0, 5), FLOATS + INTS),
    ("sin", gt.sin, np.sin, (-3, 3), FLOATS),
    ("cos", gt.cos, np.cos, (-3, 3), FLOATS),
    ("tan", gt.tan, np.tan, (-1, 1), FLOATS),
    ("arcsin", gt.arcsin, np.arcsin, (-0.9, 0.9), FLOATS),
    ("arccos", gt.arccos, np.arccos, (-0.9, 0.9), FLOATS),
    ("arctan", gt.arctan, np.arctan, (-3, 3), FLOATS),
    ("sinh", gt.sinh, np.sinh, (-3, 3), FLOATS),
    ("cosh", gt.cosh, np.cosh, (-3, 3), FLOATS),
    ("tanh", gt.tanh, np.tanh, (-3, 3), FLOATS),
    ("arcsinh", gt.arcsinh, np.arcsinh, (-3, 3), FLOATS),
    ("arccosh", gt.arccosh, np.arccosh, (1.1, 4), FLOATS),
    ("arctanh", gt.arctanh, np.arctanh, (-0.9, 0.9), FLOATS),
    ("erf", gt.erf, sps.erf, (-3, 3), FLOATS),
    ("erfc", gt.erfc, sps.erfc, (-3, 3), FLOATS),
    ("sigmoid", gt.sigmoid, sps.expit, (-30, 30), FLOATS),
    ("softplus", gt.softplus, lambda x: np.logaddexp(0, x), (-30, 30), FLOATS),
    ("isnan", gt.isnan, np.isnan, (-3, 3), FLOATS),
    ("isfinite", gt.isfinite, np.isfinite, (-3, 3), FLOATS),
    ("relu", gt.relu, lambda x: np.maximum(x, 0), (-3, 3), FLOATS + INTS),
]

BINARY = [
    ("add", gt.add, np.add, (-3, 3), FLOATS + INTS),
    ("sub", gt.sub, np.subtract, (-3, 3), FLOATS + INTS),
    ("mul", gt.mul, np.multiply, (-3, 3), FLOATS + INTS),
    ("true_div", gt.true_div, np.true_divide, (0.5, 3), FLOATS + INTS),
    ("int_div", gt.int_div, np.floor_divide, (1, 5), FLOATS + INTS),
    ("mod", gt.mod, np.remainder, (1, 5), FLOATS + INTS),
    ("pow", gt.pow, np.power, (0.5, 2), FLOATS),
    ("minimum", gt.minimum, np.minimum, (-3, 3), FLOATS + INTS),
    ("maximum", gt.maximum, np.maximum, (-3, 3), FLOATS + INTS),
    ("arctan2", gt.arctan2, np.arctan2, (-3, 3), FLOATS),
    ("lt", gt.lt, np.less, (-2, 2), FLOATS + INTS),
    ("le", gt.le, np.less_equal, (-2, 2), FLOATS + INTS),
    ("gt", gt.gt, np.greater, (-2, 2), FLOATS + INTS),
    ("ge", gt.ge, np.greater_equal, (-2, 2), FLOATS + INTS),
    ("eq", gt.eq, np.equal, (-2, 2), INTS),
    ("neq", gt.neq, np.not_equal, (-2, 2), INTS),
    ("and", gt.and_, np.bitwise_and, (0, 9), INTS),
    ("or", gt.or_, np.bitwise_or, (0, 9), INTS),
    ("xor", gt.xor, np.bitwise_xor, (0, 9), INTS),
]


def _unary_cases():
    for name, op, ref, (lo, hi), dtypes in UNARY:
        yield Case(name, op, ref, [arr((3, 4), low=lo, high=hi)], dtypes=dtypes)


def _binary_cases():
    for name, op, ref, (lo, hi), dtypes in BINARY:
        yield Case(name, op, ref, [arr((3, 4), low=lo, high=hi), arr((3, 4), low=lo, high=hi)],
                   dtypes=dtypes)
        yield Case(f"{name}-broadcast", op, ref,
                   [arr((3, 1, 4), low=lo, high=hi), arr((5, 1), low=lo, high=hi)], dtypes=dtypes[:1])


OTHER = [
    Case("chain-W1", lambda x, y, z: gt.exp(-x * x) * gt.sin(y) + x * y / (1 + z * z),
         lambda x, y, z: np.exp(-x * x) * np.sin(y) + x * y / (1 + z * z),
         [arr((7, 5)), arr((7, 5)), arr((5,))]),
    Case("python-scalars", lambda x: 2 * x + 1.5 - x / 3, lambda x: 2 * x + 1.5 - x / 3, [arr((4,))]),
    Case("clip", lambda x: gt.clip(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), [arr((3, 4))]),
    Case("where", lambda c, a, b: gt.where(c > 0, a, b), lambda c, a, b: np.where(c > 0, a, b),
         [arr((3, 4)), arr((3, 4)), arr((4,))]),
    Case("cast-int", lambda x: gt.cast(x, "int32"), lambda x: x.astype("int32"), [arr((3, 4), low=-9, high=9)]),
    Case("cast-bool-f", lambda x: gt.cast(x > 0, "float32"), lambda x: (x > 0).astype("float32"),
         [arr((3, 4))]),
    Case("runtime-broadcast", lambda x, y: x + y, np.add, [arr((3, 4)), arr((1, 4))]),
    Case("shape-mismatch", lambda x, y: x + y, np.add, [arr((3, 4)), arr((5, 4))], zero_size=False),
    Case("0-d", lambda x, y: x * y + 1, lambda x, y: x * y + 1, [arr(()), arr(())]),
    Case("transpose", lambda x: x.T, lambda x: x.T, [arr((3, 4))]),
    Case("dimshuffle", lambda x: x.dimshuffle(1, "x", 0), lambda x: x.T[:, None, :], [arr((3, 4))]),
    Case("int-mixed", lambda x, y: x * y + x, lambda x, y: x * y + x,
         [arr((3, 4), "int32"), arr((3, 4), "int8")], dtypes=("float64",)),
]

AXES = [None, 0, 1, -1, (0, 2), (0, 1, 2)]
REDUCTIONS = [
    ("sum", gt.sum, np.sum, FLOATS + INTS),
    ("prod", gt.prod, np.prod, FLOATS),
    ("max", gt.max, np.max, FLOATS + INTS),
    ("min", gt.min, np.min, FLOATS + INTS),
    ("mean", gt.mean, np.mean, FLOATS + INTS),
    ("all", gt.all, np.all, FLOATS),
    ("any", gt.any, np.any, FLOATS),
]


def _reduction_cases():
    for name, fn, ref, dtypes in REDUCTIONS:
        for axis in AXES:
            for keepdims in (False, True):
                yield Case(f"{name}-axis{axis}-keep{keepdims}",
                           lambda x, fn=fn, axis=axis, k=keepdims: fn(x, axis=axis, keepdims=k),
                           lambda x, ref=ref, axis=axis, k=keepdims: np.asarray(ref(x, axis=axis, keepdims=k)),
                           [arr((2, 3, 4), low=0.5, high=1.5)], dtypes=dtypes,
                           zero_size=name not in ("max", "min"), rtol=1e-5 if name == "prod" else None)
    for name, fn, ref in (("var", gt.var, np.var), ("std", gt.std, np.std)):
        for axis in (None, 0, (1, 2)):
            yield Case(f"{name}-axis{axis}", lambda x, fn=fn, axis=axis: fn(x, axis=axis),
                       lambda x, ref=ref, axis=axis: np.asarray(ref(x, axis=axis)), [arr((2, 3, 4))],
                       zero_size=False)
    yield Case("max-empty", lambda x: gt.max(x, axis=0), lambda x: np.max(x, axis=0),
               [arr((0, 3))], zero_size=False, layouts=False)


ALL_CASES = list(_unary_cases()) + list(_binary_cases()) + OTHER + list(_reduction_cases())


@pytest.mark.parametrize("case", ALL_CASES, ids=str)
def test_against_numpy(case):
    check_case(case)


def test_weak_python_scalars_follow_numpy2():
    f32 = gt.fvector()
    assert (f32 * 2.0).dtype == "float32"
    assert (f32 * 2).dtype == "float32"
    assert (gt.ivector() * 2.5).dtype == "float64"
    assert (gt.bvector() + 1).dtype == "int8"
    assert (gt.ivector() / 2).dtype == "float64"
    assert (f32 * gt.constant(2.0)).dtype == "float64"  # a typed constant is strong, like np.float64
    with pytest.raises(OverflowError):
        gt.bvector() + 1000


def test_reduction_dtypes_follow_numpy():
    assert gt.sum(gt.ivector()).dtype == "int64"
    assert gt.sum(gt.TensorType("uint8", (None,))()).dtype == "uint64"
    assert gt.sum(gt.fvector()).dtype == "float32"
    assert gt.mean(gt.ivector()).dtype == "float64"
    assert gt.max(gt.bvector()).dtype == "int8"
    assert gt.all(gt.fvector()).dtype == "bool"


def test_static_shapes_propagate():
    x = gt.TensorType("float64", (3, None))()
    y = gt.TensorType("float64", (None, 4))()
    assert (x + y).type.shape == (3, 4)
    assert gt.sum(x + y, axis=1).type.shape == (3,)
    assert (x.dimshuffle(1, "x", 0)).type.shape == (None, 1, 3)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        gt.TensorType("float64", (3,))() + gt.TensorType("float64", (4,))()


def test_build_errors_name_the_input():
    s = gt.TensorType("float64", (None,))("s")
    with pytest.raises(TypeError, match="'s'"):
        gt.and_(s, s)
    with pytest.raises(ValueError, match="cannot drop dimension"):
        DimShuffle(2, (0,))(gt.dmatrix("m"))
    with pytest.raises(np.exceptions.AxisError):
        gt.sum(gt.dmatrix(), axis=2)


def test_runtime_shape_error_names_op_and_line():
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([x, y], x + y, mode="PY")
    with pytest.raises(ValueError) as info:
        f(np.ones(3), np.ones(4))
    text = str(info.value)
    assert "add" in text and "test_elemwise.py" in text


@pytest.mark.parametrize("build", [
    lambda x, y: x * y + 1,
    lambda x, y: gt.exp(x).dimshuffle("x", 0, 1),
    lambda x, y: gt.sum(x * y, axis=0),
    lambda x, y: gt.max(x, axis=1, keepdims=True),
])
def test_infer_shape(build):
    check_infer_shape(build, [arr((3, 4)), arr((1, 4))])


def test_op_contract():
    check_op_contract(Elemwise(gt.add.scalar_op), lambda: [gt.dvector(), gt.dvector()])
    check_op_contract(DimShuffle(2, (1, "x", 0)), lambda: [gt.dmatrix()])
    check_op_contract(CAReduce(gt.add.scalar_op, (1,)), lambda: [gt.dmatrix()])
    assert Elemwise(gt.add.scalar_op) == gt.add and hash(Elemwise(gt.add.scalar_op)) == hash(gt.add)
    assert gt.add != gt.mul


def test_broadcast_static_shape_equal_shapes_and_clashes():
    from graphjit.tensor.elemwise import broadcast_static_shape
    assert broadcast_static_shape([(None, 1, 3), (None, 1, 3)]) == (None, 1, 3)
    assert broadcast_static_shape([[None, 2], [None, 2]]) == (None, 2)
    assert broadcast_static_shape([(None, 1, 3), (2, 5, 1)]) == (2, 5, 3)
    assert broadcast_static_shape([(1, None), (1, 1)]) == (1, None)
    assert broadcast_static_shape([]) == ()
    with pytest.raises(ValueError, match="dimension 1"):
        broadcast_static_shape([(2, 3), (2, 4)])

    def reference(shapes):                  # dimension by dimension, numpy's rule with None unknown
        out = []
        for lengths in zip(*shapes):
            known = {s for s in lengths if s is not None and s != 1}
            assert len(known) <= 1
            out.append(known.pop() if known else (1 if all(s == 1 for s in lengths) else None))
        return tuple(out)

    rng = np.random.default_rng(0)
    for _ in range(300):
        nin, ndim = rng.integers(1, 4), rng.integers(0, 4)
        shapes = [tuple([None, 1, 3, 0][k] for k in rng.integers(0, 4, ndim)) for _ in range(nin)]
        try:
            want = reference(shapes)
        except AssertionError:
            with pytest.raises(ValueError, match="cannot be broadcast together"):
                broadcast_static_shape(shapes)
        else:
            assert broadcast_static_shape(shapes) == want


def test_elementwise_operands_keep_identity_and_types():
    from graphjit.graph.type import generic
    from graphjit.tensor.basic import as_tensor_inputs
    x, y = gt.dmatrix("x"), gt.fvector("y")
    got = as_tensor_inputs(x, y, x)
    assert len(got) == 3 and all(a is b for a, b in zip(got, (x, y, x)))
    out = as_tensor_inputs(y, 2.0)
    assert out[0] is y and out[1].dtype == "float32"
    out = as_tensor_inputs(y, np.float64(1.0), [[1, 2]])
    assert out[0] is y and out[1].dtype == "float64" and out[2].ndim == 2
    with pytest.raises(TypeError, match="expected a tensor"):
        as_tensor_inputs(x, generic())
