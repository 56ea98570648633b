"""Argmax/Argmin and CumOp (cumsum/cumprod) against numpy."""

import pickle

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.scalar import math as smath
from graphjit.tensor.extra_ops import Argmax, Argmin, CumOp, argmax, argmin, cumprod, cumsum
from op_check import Case, arr, check_case, check_infer_shape, check_op_contract

DTYPES = ("float64", "float32", "int64", "int32")
TIES = [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [np.nan, 1.0, np.nan, 5.0]]


def _np(fn, **kw):
    return lambda x: fn(x, **kw)


def _g(fn, **kw):
    return lambda x: fn(x, **kw)


ARG_CASES = []
for _name, _fn, _ref in (("argmax", argmax, np.argmax), ("argmin", argmin, np.argmin)):
    ARG_CASES += [
        Case(f"{_name}_flat", _fn, _ref, [arr((3, 4))], DTYPES + ("bool", "uint8")),
        Case(f"{_name}_axis1", _g(_fn, axis=1), _np(_ref, axis=1), [arr((3, 4))], DTYPES, zero_len=3),
        Case(f"{_name}_axis1_empty", _g(_fn, axis=1), _np(_ref, axis=1), [arr((3, 4))], zero_len=4),
        Case(f"{_name}_axis0_keepdims", _g(_fn, axis=0, keepdims=True),
             _np(_ref, axis=0, keepdims=True), [arr((3, 4))], DTYPES),
        Case(f"{_name}_flat_keepdims", _g(_fn, keepdims=True), _np(_ref, keepdims=True),
             [arr((2, 3, 4))]),
        Case(f"{_name}_neg_axis", _g(_fn, axis=-2), _np(_ref, axis=-2), [arr((2, 3, 4))], zero_len=2),
        Case(f"{_name}_scalar", _fn, _ref, [arr(())]),
        Case(f"{_name}_ties_nan", _g(_fn, axis=1), _np(_ref, axis=1), [arr((3, 4), values=TIES)],
             zero_size=False),
    ]

CUM_CASES = []
for _name, _fn, _ref in (("cumsum", cumsum, np.cumsum), ("cumprod", cumprod, np.cumprod)):
    CUM_CASES += [
        Case(f"{_name}_flat", _fn, _ref, [arr((3, 4))], DTYPES + ("bool", "uint8", "int8")),
        Case(f"{_name}_axis0", _g(_fn, axis=0), _np(_ref, axis=0), [arr((3, 4))], DTYPES),
        Case(f"{_name}_axis1", _g(_fn, axis=1), _np(_ref, axis=1), [arr((3, 4))], DTYPES, zero_len=4),
        Case(f"{_name}_neg_axis", _g(_fn, axis=-1), _np(_ref, axis=-1), [arr((2, 3, 4))]),
        Case(f"{_name}_scalar", _fn, _ref, [arr(())], DTYPES),
    ]


@pytest.mark.parametrize("case", ARG_CASES + CUM_CASES, ids=str)
def test_extra_ops(case):
    check_case(case)


def test_methods_and_exports():
    x = gt.dmatrix("x")
    assert isinstance(x.argmax(axis=1).owner.op, Argmax)
    assert isinstance(x.argmin().owner.op, Argmin)
    assert isinstance(x.cumsum(0).owner.op, CumOp) and x.cumprod(0).owner.op.mode is smath.mul
    assert gt.argmax is argmax and gt.math.cumsum is cumsum


def test_static_shapes_and_dtypes():
    x = gt.tensor("int8", (2, 3, None))
    assert argmax(x).type == gt.TensorType("int64", ())
    assert argmax(x, 1).type.shape == (2, None)
    assert argmin(x, 1, keepdims=True).type.shape == (2, 1, None)
    assert argmax(x, keepdims=True).type.shape == (1, 1, 1)
    assert cumsum(x).type == gt.TensorType("int64", (None,))
    assert cumsum(gt.tensor("float32", (2, 3))).type == gt.TensorType("float32", (6,))
    assert cumprod(gt.tensor("bool", (2, 3)), 1).type == gt.TensorType("int64", (2, 3))
    assert cumsum(gt.tensor("uint8", (4,))).dtype == "uint64"


def test_empty_reduction_raises():
    with pytest.raises(ValueError, match="Argmax"):
        argmax(gt.tensor("float64", (3, 0)), axis=1)
    with pytest.raises(ValueError, match="Argmin"):
        argmin(gt.tensor("float64", (0,)))
    x = gt.dmatrix()
    f = gj.function([x], argmax(x), mode="PY")
    with pytest.raises(ValueError, match=r"Argmax.*\(0, 3\)"):
        f(np.zeros((0, 3)))


def test_bad_arguments():
    with pytest.raises(np.exceptions.AxisError):
        argmax(gt.dmatrix(), 2)
    with pytest.raises(np.exceptions.AxisError):
        cumsum(gt.dvector(), 1)
    with pytest.raises(TypeError):
        argmax(gt.dmatrix(), 1.5)
    with pytest.raises(ValueError, match="repeated axis"):
        argmax(gt.dmatrix(), (0, -2))
    with pytest.raises(np.exceptions.AxisError):
        argmin(gt.dmatrix(), (0, 2))
    with pytest.raises(ValueError, match="mode"):
        CumOp(0, "max")
    with pytest.raises(ValueError, match="mode"):
        CumOp(0, smath.maximum)


def test_cumop_holds_its_scalar_op():
    """mode is the scalar op (as CAReduce holds one); str and pickles as before, Theano's strings accepted."""
    op = cumprod(gt.dmatrix(), 1).owner.op
    assert op.mode is smath.mul and op == CumOp(1, smath.mul) == CumOp(1, "mul") != CumOp(1, smath.add)
    assert CumOp(0, "add").mode is smath.add and CumOp().mode is smath.add
    assert str(op) == "CumOp{axis=1, mode=mul}" and str(CumOp()) == "CumOp{axis=None, mode=add}"
    back = pickle.loads(pickle.dumps(op))
    assert back == op and back.mode is smath.mul and hash(back) == hash(op)


INFER = [
    (argmax, [arr((3, 4))]),
    (lambda x: argmax(x, 1), [arr((3, 4))]),
    (lambda x: argmin(x, 0, keepdims=True), [arr((3, 4))]),
    (lambda x: argmin(x, keepdims=True), [arr((2, 3, 4))]),
    (cumsum, [arr((3, 4))]),
    (lambda x: cumprod(x, 1), [arr((3, 4))]),
    (cumsum, [arr(())]),
]


@pytest.mark.parametrize("build, inputs", INFER)
def test_infer_shape(build, inputs):
    check_infer_shape(build, inputs)


@pytest.mark.parametrize("op, make_inputs", [
    (Argmax(1, False), lambda: [gt.dmatrix()]),
    (Argmin(None, True), lambda: [gt.imatrix()]),
    (CumOp(None, "add"), lambda: [gt.dmatrix()]),
    (CumOp(0, "mul"), lambda: [gt.ltensor3()]),
], ids=lambda v: str(v) if hasattr(v, "make_node") else None)  # no addresses in ids (xdist)
def test_op_contract(op, make_inputs):
    check_op_contract(op, make_inputs)
