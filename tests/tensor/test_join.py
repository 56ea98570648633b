"""MakeVector, Join (concatenate, join, stack, vstack, hstack) and Split against numpy."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.basic import constant
from graphjit.tensor.join import (Join, MakeVector, Split, concatenate, hstack, join, make_vector,
                                  split, stack, vstack)
from op_check import Case, arr, check_case, check_infer_shape, check_op_contract

DTYPES = ("float64", "float32", "int64")


def _split_ref(a, sizes, axis=0):
    """Split's definition: the sizes must add up to the length (stricter than numpy.split)."""
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != a.shape[axis]:
        raise ValueError("split sizes do not add up")
    return [p.copy() for p in np.split(a, np.cumsum(sizes)[:-1], axis=axis)]


CASES = [
    Case("concat_axis0", lambda x, y: concatenate([x, y]), lambda a, b: np.concatenate([a, b]),
         [arr((2, 3)), arr((4, 3))], dtypes=DTYPES),
    Case("concat_axis1", lambda x, y: concatenate([x, y], axis=1),
         lambda a, b: np.concatenate([a, b], axis=1), [arr((2, 3)), arr((2, 4))], dtypes=DTYPES),
    Case("concat_neg_axis", lambda x, y, z: concatenate([x, y, z], axis=-1),
         lambda a, b, c: np.concatenate([a, b, c], axis=-1), [arr((2, 3, 1)), arr((2, 3, 2)),
                                                              arr((2, 3, 3))]),
    Case("concat_upcast", lambda x, y: concatenate([x, y]), lambda a, b: np.concatenate([a, b]),
         [arr((2, 3), "int32"), arr((4, 3), "float32")], dtypes=("float64",)),
    Case("concat_bool_int8", lambda x, y: concatenate([x, y]), lambda a, b: np.concatenate([a, b]),
         [arr((2,), "bool"), arr((3,), "int8")], dtypes=("float64",)),
    Case("concat_mismatch", lambda x, y: concatenate([x, y]), lambda a, b: np.concatenate([a, b]),
         [arr((2, 3)), arr((2, 4))]),
    Case("join", lambda x, y: join(1, x, y), lambda a, b: np.concatenate([a, b], 1),
         [arr((3, 2)), arr((3, 4))]),
    Case("stack", lambda x, y: stack([x, y]), lambda a, b: np.stack([a, b]), [arr((3, 4)), arr((3, 4))],
         dtypes=DTYPES),
    Case("stack_axis1", lambda x, y: stack([x, y], axis=1), lambda a, b: np.stack([a, b], axis=1),
         [arr((3, 4)), arr((3, 4))]),
    Case("stack_axis_last", lambda x, y, z: stack([x, y, z], axis=-1),
         lambda a, b, c: np.stack([a, b, c], axis=-1), [arr((3,)), arr((3,)), arr((3,))]),
    Case("stack_mismatch", lambda x, y: stack([x, y]), lambda a, b: np.stack([a, b]),
         [arr((3, 4)), arr((3, 2))]),
    Case("stack_scalars", lambda x, y: stack([x, y]), lambda a, b: np.stack([a, b]), [arr(()), arr(())],
         dtypes=DTYPES),
    Case("stack_scalars_upcast", lambda x, y: stack([x, y]), lambda a, b: np.stack([a, b]),
         [arr((), "int32"), arr((), "float32")], dtypes=("float64",)),
    Case("make_vector", lambda x, y, z: make_vector([x, y, z]), lambda a, b, c: np.array([a, b, c]),
         [arr(()), arr(()), arr(())], dtypes=DTYPES),
    Case("as_tensor_list", lambda x, y: gt.as_tensor_variable([[x, y], [y, x]]),
         lambda a, b: np.array([[a, b], [b, a]]), [arr(()), arr(())]),
    Case("vstack", lambda x, y: vstack([x, y]), lambda a, b: np.vstack([a, b]), [arr((3,)), arr((3,))]),
    Case("vstack_2d", lambda x, y: vstack([x, y]), lambda a, b: np.vstack([a, b]),
         [arr((2, 3)), arr((1, 3))]),
    Case("hstack", lambda x, y: hstack([x, y]), lambda a, b: np.hstack([a, b]), [arr((3,)), arr((2,))]),
    Case("hstack_2d", lambda x, y: hstack([x, y]), lambda a, b: np.hstack([a, b]),
         [arr((2, 3)), arr((2, 1))]),
    Case("split", lambda x: split(x, (1, 2), axis=0), lambda a: _split_ref(a, (1, 2)), [arr((3, 4))],
         dtypes=DTYPES),
    Case("split_axis1", lambda x: split(x, (1, 3, 0), axis=1), lambda a: _split_ref(a, (1, 3, 0), 1),
         [arr((3, 4))]),
    Case("split_neg_axis", lambda x: split(x, [2, 2], axis=-1), lambda a: _split_ref(a, [2, 2], -1),
         [arr((3, 4))]),
    Case("split_sym_sizes", lambda x, s: split(x, s, 3), lambda a, s: _split_ref(a, s),
         [arr((5, 2)), arr((3,), "int64", values=[2, 0, 3])], zero_len=5),
    Case("split_sym_scalars", lambda x, n: split(x, (n, 5 - n)), lambda a, n: _split_ref(a, (n, 5 - n)),
         [arr((5,)), arr((), "int64", values=2)], zero_len=5),
    Case("split_bad_sum", lambda x: split(x, (1, 1)), lambda a: _split_ref(a, (1, 1)), [arr((3, 4))]),
    Case("split_negative", lambda x, s: split(x, s, 2), lambda a, s: _split_ref(a, s),
         [arr((3,)), arr((2,), "int64", values=[4, -1])], zero_size=False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_join_ops(case):
    check_case(case)


INFER = [
    ("concat", lambda x, y: concatenate([x, y], 1), [arr((2, 3)), arr((2, 4))]),
    ("concat3", lambda x, y, z: concatenate([x, y, z]), [arr((2,)), arr((3,)), arr((1,))]),
    ("concat_static", lambda x, y: concatenate([x, y]), [arr((2, 3), static=True), arr((4, 3))]),
    ("stack", lambda x, y: stack([x, y], 1), [arr((3, 4)), arr((3, 4))]),
    ("make_vector", lambda x, y: make_vector([x, y]), [arr(()), arr(())]),
    ("split", lambda x: split(x, (1, 2, 1), axis=1), [arr((3, 4))]),
    ("split_sym", lambda x, s: split(x, s, 2), [arr((5, 2)), arr((2,), "int64", values=[4, 1])]),
    ("split_scalars", lambda x, n: split(x, (n, 5 - n)), [arr((5,)), arr((), "int64", values=3)]),
]


@pytest.mark.parametrize("name,build,inputs", INFER, ids=[c[0] for c in INFER])
def test_infer_shape(name, build, inputs):
    check_infer_shape(build, inputs)


def test_contracts():
    check_op_contract(Join(0), lambda: [gt.dmatrix("x"), gt.dmatrix("y")])
    check_op_contract(Join(1), lambda: [gt.imatrix("x"), gt.fmatrix("y")])
    check_op_contract(Split(2, 1), lambda: [gt.dmatrix("x"), constant(np.array([1, 2]))])
    check_op_contract(Split(3), lambda: [gt.dvector("x"), gt.lvector("s")])
    check_op_contract(MakeVector("int64"), lambda: [gt.lscalar("a"), gt.iscalar("b")])
    check_op_contract(MakeVector("float64"), lambda: [])


def test_static_shapes_and_dtypes():
    a = gt.TensorType("float32", (2, 3))("a")
    b = gt.TensorType("int32", (4, None))("b")
    out = concatenate([a, b])
    assert out.type.shape == (6, 3) and out.dtype == "float64"
    assert concatenate([a, gt.fmatrix("c")]).type.shape == (None, 3)
    assert stack([a, a], axis=1).type.shape == (2, 2, 3)
    assert make_vector([gt.lscalar("i"), 3]).type.shape == (2,)
    assert make_vector([]).type == gt.TensorType("int64", (0,))
    pieces = split(gt.TensorType("float64", (5, 3))("x"), (2, 3))
    assert [p.type.shape for p in pieces] == [(2, 3), (3, 3)]
    pieces = split(gt.dmatrix("y"), gt.lvector("s"), 2, axis=1)
    assert [p.type.shape for p in pieces] == [(None, None), (None, None)]


def test_build_errors():
    x, y = gt.dmatrix("xm"), gt.dvector("yv")
    with pytest.raises(ValueError, match="'yv'"):
        concatenate([x, y])
    with pytest.raises(ValueError, match="0-d"):
        concatenate([gt.dscalar("s"), gt.dscalar("t")])
    with pytest.raises(np.exceptions.AxisError, match="'xm'"):
        concatenate([x, x], axis=2)
    with pytest.raises(ValueError, match="at least one"):
        concatenate([])
    with pytest.raises(ValueError, match="dimension 1"):
        concatenate([gt.TensorType("float64", (2, 3))("p"), gt.TensorType("float64", (2, 4))("q")])
    with pytest.raises(ValueError, match="'yv'"):
        stack([x, y])
    with pytest.raises(TypeError, match="0-d"):
        make_vector([gt.lvector("v")])
    with pytest.raises(TypeError, match="cannot be cast"):
        MakeVector("int32")(gt.dscalar("f"))
    with pytest.raises(ValueError, match="sum to 4"):
        split(gt.TensorType("float64", (5,))("v5"), (1, 3))
    with pytest.raises(ValueError, match="negative"):
        split(x, (3, -1))
    with pytest.raises(ValueError, match="n_splits"):
        split(x, gt.lvector("s"))
    with pytest.raises(ValueError, match="0-d"):
        split(gt.dscalar("s"), (1,))
    with pytest.raises(ValueError, match="entries"):
        Split(3)(x, constant(np.array([1, 2])))
    with pytest.raises(TypeError):
        split(x, gt.dvector("fs"), 2)


def test_runtime_errors_name_the_op():
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    f = gj.function([x, y], concatenate([x, y]), mode="PY")
    with pytest.raises(ValueError, match=r"Join.*\(2, 3\), \(2, 4\)"):
        f(np.ones((2, 3)), np.ones((2, 4)))
    s = gt.lvector("s")
    g = gj.function([x, s], split(x, s, 2), mode="PY")
    with pytest.raises(ValueError, match="Split.*do not add up"):
        g(np.ones((3, 2)), np.array([1, 1]))
    with pytest.raises(ValueError, match="expected 2"):
        g(np.ones((3, 2)), np.array([1, 1, 1]))


def test_join_single_and_make_vector_folding():
    x = gt.dmatrix("x")
    assert join(0, x) is x
    v = gt.as_tensor_variable([gt.lscalar("i"), 2])
    assert isinstance(v.owner.op, MakeVector) and v.dtype == "int64"
