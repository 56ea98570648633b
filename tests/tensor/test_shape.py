"""Reshape, flatten, transpose, squeeze, expand_dims, padding, broadcast_to and scalar conversion."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.scalar.basic import ScalarType
from graphjit.tensor.basic import constant
from graphjit.tensor.scalar_conversion import (ScalarFromTensor, TensorFromScalar, scalar_from_tensor,
                                               tensor_from_scalar)
from graphjit.tensor.shape import (Reshape, broadcast_to, expand_dims, flatten, reshape, shape_i,
                                   shape_padaxis, shape_padleft, shape_padright, squeeze, transpose)
from op_check import Case, arr, check_case, check_infer_shape, check_op_contract

DTYPES = ("float64", "float32", "int64")
X3 = (2, 3, 4)


def _ivec(values):
    """A symbolic int64 vector input with fixed values."""
    return arr((len(values),), "int64", values=values)


def _flat(a, ndim):
    return a.reshape(a.shape[:ndim - 1] + (int(np.prod(a.shape[ndim - 1:])),))


CASES = [
    Case("reshape_const", lambda x: x.reshape((4, 6)), lambda a: a.reshape((4, 6)), [arr(X3)],
         dtypes=DTYPES),
    Case("reshape_minus1", lambda x: x.reshape((-1, 4)), lambda a: a.reshape((-1, 4)), [arr(X3)],
         dtypes=DTYPES),
    Case("reshape_minus1_first", lambda x: reshape(x, (3, -1)), lambda a: a.reshape((3, -1)),
         [arr((3, 4))]),
    Case("reshape_sym_entries", lambda x: reshape(x, (shape_i(x, 0), -1)),
         lambda a: a.reshape((a.shape[0], -1)), [arr(X3)]),
    Case("reshape_sym_entry_minus1", lambda x, n: reshape(x, (n, 6)), lambda a, n: a.reshape((n, 6)),
         [arr(X3), arr((), "int64", values=-1)], zero_size=False),
    Case("reshape_sym_vector", lambda x, s: reshape(x, s, ndim=2), lambda a, s: a.reshape(tuple(s)),
         [arr(X3), _ivec([6, 4])], zero_len=3),
    Case("reshape_sym_vector_minus1", lambda x, s: reshape(x, s, ndim=2),
         lambda a, s: a.reshape(tuple(s)), [arr(X3), _ivec([-1, 8])], zero_len=3),
    Case("reshape_to_scalar", lambda x: x.reshape(()), lambda a: a.reshape(()), [arr((1, 1))]),
    Case("reshape_add_dims", lambda x: x.reshape((1, 6, 1)), lambda a: a.reshape((1, 6, 1)),
         [arr((2, 3))]),
    Case("reshape_bad_size", lambda x: x.reshape((5, 5)), lambda a: a.reshape((5, 5)), [arr(X3)]),
    Case("reshape_bad_sym", lambda x, s: reshape(x, s, ndim=2), lambda a, s: a.reshape(tuple(s)),
         [arr(X3), _ivec([5, 5])], zero_len=3),
    Case("flatten", lambda x: flatten(x), lambda a: a.reshape(-1), [arr(X3)], dtypes=DTYPES),
    Case("ravel_method", lambda x: x.ravel(), np.ravel, [arr(X3)]),
    Case("flatten_2", lambda x: x.flatten(2), lambda a: _flat(a, 2), [arr(X3)]),
    Case("flatten_3", lambda x: flatten(x, 3), lambda a: _flat(a, 3), [arr(X3)]),
    Case("flatten_scalar", lambda x: flatten(x), lambda a: a.reshape(1), [arr(())]),
    Case("transpose", lambda x: transpose(x), np.transpose, [arr(X3)], dtypes=DTYPES),
    Case("transpose_T", lambda x: x.T, lambda a: a.T, [arr((3, 4))]),
    Case("transpose_axes", lambda x: x.transpose(1, 2, 0), lambda a: a.transpose(1, 2, 0), [arr(X3)]),
    Case("transpose_neg_axes", lambda x: transpose(x, (-1, 0, -2)),
         lambda a: np.transpose(a, (-1, 0, -2)), [arr(X3)]),
    Case("squeeze_axis_unknown", lambda x: squeeze(x, 1), lambda a: np.squeeze(a, 1), [arr((3, 1, 4))],
         dtypes=DTYPES),
    Case("squeeze_axes_neg", lambda x: x.squeeze((0, -1)), lambda a: np.squeeze(a, (0, -1)),
         [arr((1, 3, 1))]),
    Case("squeeze_not_one", lambda x: squeeze(x, 0), lambda a: np.squeeze(a, 0), [arr((3, 1, 4))]),
    Case("squeeze_static", lambda x: squeeze(x), np.squeeze, [arr((3, 1, 4), static=True)],
         zero_size=False),
    Case("expand_dims", lambda x: expand_dims(x, 1), lambda a: np.expand_dims(a, 1), [arr((3, 4))],
         dtypes=DTYPES),
    Case("expand_dims_tuple", lambda x: expand_dims(x, (0, -1)), lambda a: np.expand_dims(a, (0, -1)),
         [arr((3, 4))]),
    Case("padleft", lambda x: shape_padleft(x, 2), lambda a: a[None, None], [arr((3, 4))]),
    Case("padright", lambda x: shape_padright(x), lambda a: a[..., None], [arr((3, 4))]),
    Case("padaxis", lambda x: shape_padaxis(x, 1), lambda a: a[:, None], [arr((3, 4))]),
    Case("broadcast_to", lambda x: broadcast_to(x, (2, 3, 4)), lambda a: np.broadcast_to(a, (2, 3, 4)),
         [arr((3, 1))], dtypes=DTYPES),
    Case("broadcast_to_sym", lambda x, n: broadcast_to(x, (n, 3)), lambda a, n: np.broadcast_to(a, (n, 3)),
         [arr((3,)), arr((), "int64", values=5)]),
    Case("broadcast_to_bad", lambda x: broadcast_to(x, (3, 4)), lambda a: np.broadcast_to(a, (3, 4)),
         [arr((3, 2))]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_shape_ops(case):
    check_case(case)


INFER = [
    ("reshape_const", lambda x: x.reshape((4, 6)), [arr(X3)]),
    ("reshape_minus1", lambda x: x.reshape((-1, 4)), [arr(X3)]),
    ("reshape_sym", lambda x: reshape(x, (shape_i(x, 0), -1)), [arr(X3)]),
    ("reshape_sym_minus1", lambda x, n: reshape(x, (n, 6)), [arr(X3), arr((), "int64", values=-1)]),
    ("reshape_sym_pos", lambda x, n: reshape(x, (n, 6)), [arr(X3), arr((), "int64", values=4)]),
    ("reshape_vector", lambda x, s: reshape(x, s, ndim=2), [arr(X3), _ivec([-1, 8])]),
    ("reshape_vector_pos", lambda x, s: reshape(x, s, ndim=2), [arr(X3), _ivec([3, 8])]),
    ("flatten_2", lambda x: flatten(x, 2), [arr(X3)]),
    ("transpose", lambda x: x.T, [arr(X3)]),
    ("squeeze", lambda x: squeeze(x, 1), [arr((3, 1, 4))]),
    ("expand_dims", lambda x: expand_dims(x, (0, 2)), [arr((3, 4))]),
    ("broadcast_to", lambda x, n: broadcast_to(x, (n, 3)), [arr((3,)), arr((), "int64", values=5)]),
]


@pytest.mark.parametrize("name,build,inputs", INFER, ids=[c[0] for c in INFER])
def test_infer_shape(name, build, inputs):
    check_infer_shape(build, inputs)


def test_reshape_contract():
    check_op_contract(Reshape(2), lambda: [gt.dtensor3("x"), constant(np.array([6, 4]))])
    check_op_contract(Reshape(1), lambda: [gt.dmatrix("x"), gt.lvector("s")])


# --- static shapes --------------------------------------------------------------------------------

def test_static_shapes():
    x = gt.TensorType("float64", X3)("x")
    assert x.reshape((-1, 4)).type.shape == (6, 4)
    assert x.reshape((4, -1)).type.shape == (4, 6)
    assert flatten(x).type.shape == (24,)
    assert flatten(x, 2).type.shape == (2, 12)
    assert x.T.type.shape == (4, 3, 2)
    assert transpose(x, (1, 0, 2)).type.shape == (3, 2, 4)
    assert expand_dims(x, (0, -1)).type.shape == (1, 2, 3, 4, 1)
    assert broadcast_to(gt.dcol("c"), (5, 7)).type.shape == (5, 7)
    y = gt.dtensor3("y")
    assert reshape(y, (shape_i(y, 0), 12)).type.shape == (None, 12)
    assert reshape(y, (-1, 12)).type.shape == (None, 12)
    assert flatten(gt.TensorType("float64", (None, 3, 4))("z"), 2).type.shape == (None, 12)
    assert squeeze(gt.TensorType("float64", (None, 1, 4))("w")).type.shape == (None, 4)
    assert squeeze(y, 1).type.shape == (None, None)


def test_reshape_runtime_message():
    x = gt.dvector("x")
    f = gj.function([x], x.reshape((2, 2)), mode="PY")
    with pytest.raises(ValueError, match="cannot reshape array of size 3 into shape"):
        f(np.ones(3))


def test_squeeze_runtime_error():
    x = gt.dmatrix("x")
    f = gj.function([x], squeeze(x, 0), mode="PY")
    np.testing.assert_array_equal(f(np.ones((1, 3))), np.ones(3))
    with pytest.raises(ValueError):
        f(np.ones((2, 3)))


# --- build-time errors -----------------------------------------------------------------------------

def test_build_errors():
    x = gt.TensorType("float64", X3)("xs")
    with pytest.raises(ValueError, match="cannot reshape array of size 24.*'xs'"):
        x.reshape((5, 5))
    with pytest.raises(ValueError, match="one unknown"):
        x.reshape((-1, -1))
    with pytest.raises(ValueError, match="negative length"):
        x.reshape((-2, -12))
    with pytest.raises(TypeError, match="shape"):
        x.reshape((2.5, 3))
    with pytest.raises(TypeError, match="'v'"):
        reshape(x, gt.dvector("v"), ndim=2)
    with pytest.raises(ValueError, match="pass ndim"):
        reshape(x, gt.lvector("s"))
    with pytest.raises(ValueError, match="entries"):
        Reshape(3)(x, constant(np.array([6, 4])))
    with pytest.raises(ValueError, match="'xs'"):
        transpose(x, (0, 1))
    with pytest.raises(np.exceptions.AxisError, match="'xs'"):
        transpose(x, (0, 1, 3))
    with pytest.raises(ValueError, match="'xs'"):
        squeeze(x, 0)
    with pytest.raises(np.exceptions.AxisError):
        squeeze(x, 3)
    with pytest.raises(ValueError, match="'xs'"):
        flatten(x, 0)
    with pytest.raises(ValueError, match="'xs'"):
        flatten(x, 4)
    with pytest.raises(np.exceptions.AxisError, match="'xs'"):
        expand_dims(x, 5)
    with pytest.raises(ValueError, match="repeated"):
        expand_dims(x, (0, 0))
    with pytest.raises(ValueError):
        broadcast_to(x, (3, 4))


def test_variable_methods_use_shape_ops():
    x = gt.dmatrix("x")
    assert isinstance(x.reshape((2, -1)).owner.op, Reshape)
    assert isinstance(x.flatten().owner.op, Reshape)
    assert x.transpose().owner.op.new_order == (1, 0)
    assert transpose(x, (0, 1)) is x


# --- scalar <-> 0-d tensor conversion ------------------------------------------------------------

CONVERSION_CASES = [
    Case("scalar_roundtrip", lambda x: tensor_from_scalar(scalar_from_tensor(x)) * 2, lambda a: a * 2,
         [arr(())], dtypes=DTYPES),
    Case("scalar_in_tensor_math", lambda x, y: gt.as_tensor_variable(scalar_from_tensor(x)) + y,
         lambda a, b: a + b, [arr(()), arr((3,))]),
]


# ScalarType values have no LLVM layout yet: graphs holding them run those nodes' perform.
@pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")
@pytest.mark.parametrize("case", CONVERSION_CASES, ids=str)
def test_scalar_conversion(case):
    check_case(case)


def test_scalar_conversion_types_and_contracts():
    x = gt.fscalar("x")
    s = scalar_from_tensor(x)
    assert isinstance(s.type, ScalarType) and s.type.dtype == "float32"
    t = tensor_from_scalar(s)
    assert t.type == gt.TensorType("float32", ())
    assert tensor_from_scalar(3).type == gt.TensorType("int64", ())
    check_op_contract(ScalarFromTensor(), lambda: [gt.dscalar("x")])
    check_op_contract(TensorFromScalar(), lambda: [ScalarType("int32")("s")])
    check_infer_shape(lambda x: tensor_from_scalar(scalar_from_tensor(x)), [arr(())])
    with pytest.raises(TypeError, match="'v'"):
        scalar_from_tensor(gt.dvector("v"))
    with pytest.raises(TypeError, match="'m'"):
        tensor_from_scalar(gt.dmatrix("m"))
    f = gj.function([x], s, mode="PY")
    out = f(np.float32(1.5))
    assert np.asarray(out) == np.float32(1.5)


def test_broadcast_shape_of_a_repeated_length_is_that_length():
    """x + x, f(x) * x: the same length variable twice needs no runtime choice; distinct ones do."""
    from graphjit.graph.basic import ancestors
    from graphjit.tensor.shape import broadcast_shape_symbolic
    a, b = gt.lscalar("a"), gt.lscalar("b")
    (same,) = broadcast_shape_symbolic([(a,), (a,), (a,)], [(None,), (None,), (None,)])
    assert same is a
    (chosen,) = broadcast_shape_symbolic([(a,), (b,), (a,)], [(None,), (None,), (None,)])
    switches = [v for v in ancestors([chosen]) if v.owner is not None and "switch" in str(v.owner.op)]
    assert len(switches) == 1
    fn = gj.function([a, b], chosen, mode="PY")
    assert [int(fn(n, m)) for n, m in [(1, 5), (5, 1), (5, 5), (1, 1)]] == [5, 5, 5, 1]
