"""Alloc (alloc, zeros, ones, full, *_like, fill), ARange and Eye against numpy."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.fg import FunctionGraph
from graphjit.tensor.alloc import (ALLOC_FOLD_MAX_SIZE, ARange, Alloc, Eye, alloc, arange, eye, fill,
                                   full, full_like, ones, ones_like, second, zeros, zeros_like)
from graphjit.tensor.basic import constant
from op_check import Case, arr, check_case, check_infer_shape, check_op_contract

DTYPES = ("float64", "float32", "int64")
INT_FLOAT = ("int64", "int32", "float64", "float32")


def _n(value, dtype="int64"):
    """A symbolic 0-d input with a fixed value (dtype None: the case's dtype)."""
    return arr((), dtype, values=value)


def _fill_ref(model, value):
    return np.broadcast_to(value, np.broadcast_shapes(model.shape, value.shape)).copy()


CASES = [
    Case("alloc", lambda x: alloc(x, 2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4)).copy(),
         [arr((3, 1))], dtypes=DTYPES),
    Case("alloc_sym", lambda x, n: alloc(x, n, 3), lambda a, n: np.broadcast_to(a, (n, 3)).copy(),
         [arr((3,)), _n(4)], dtypes=DTYPES),
    Case("alloc_zero_len", lambda x, n: alloc(x, n, 3), lambda a, n: np.broadcast_to(a, (n, 3)).copy(),
         [arr((3,)), _n(0)]),
    Case("alloc_tuple", lambda x, n: alloc(x, (n, 2, 3)),
         lambda a, n: np.broadcast_to(a, (n, 2, 3)).copy(), [arr((2, 1)), _n(2)]),
    Case("alloc_vector_shape", lambda x, s: alloc(x, s), lambda a, s: np.broadcast_to(a, tuple(s)).copy(),
         [arr((3,)), arr((2,), "int64", values=[5, 3], static=True)], zero_size=False),
    Case("alloc_bad_broadcast", lambda x, n: alloc(x, n, 2), lambda a, n: np.broadcast_to(a, (n, 2)),
         [arr((3,)), _n(4)]),
    Case("alloc_negative", lambda x, n: alloc(x, n), lambda a, n: np.broadcast_to(a, (n,)),
         [arr(()), _n(-1)]),
    Case("alloc_model_length", lambda x: alloc(x, gt.shape_i(x, 0), 2),
         lambda a: np.broadcast_to(a, (a.shape[0], 2)).copy(), [arr((4, 1))]),
    Case("zeros", lambda n: zeros((n, 3)), lambda n: np.zeros((n, 3)), [_n(2)]),
    Case("zeros_int", lambda n: zeros(n, dtype="int32"), lambda n: np.zeros(n, "int32"), [_n(5)]),
    Case("ones", lambda n: ones((2, n), "float32"), lambda n: np.ones((2, n), "float32"), [_n(3)]),
    Case("full", lambda n: full((n,), 7), lambda n: np.full((n,), 7), [_n(3)]),
    Case("full_sym_value", lambda v, n: full((n, 2), v), lambda v, n: np.full((n, 2), v), [arr(()), _n(3)],
         dtypes=DTYPES),
    Case("full_dtype", lambda n: full((n,), 2.5, "float32"), lambda n: np.full((n,), 2.5, "float32"),
         [_n(3)]),
    Case("zeros_like", zeros_like, np.zeros_like, [arr((3, 4))], dtypes=DTYPES),
    Case("ones_like", lambda x: ones_like(x, "int32"), lambda a: np.ones_like(a, "int32"), [arr((3, 4))]),
    Case("full_like", lambda x: full_like(x, 2.5), lambda a: np.full_like(a, 2.5), [arr((3, 4))],
         dtypes=DTYPES),
    Case("full_like_sym", lambda x, v: full_like(x, v), lambda a, v: np.full_like(a, v),
         [arr((3, 4)), arr((4,))], dtypes=DTYPES),
    Case("fill", lambda x, v: fill(x, v), _fill_ref, [arr((3, 4)), arr((4,))], dtypes=DTYPES),
    Case("fill_value_bigger", lambda x, v: second(x, v), _fill_ref, [arr((4,)), arr((3, 4))]),
    Case("fill_broadcast_both", lambda x, v: second(x, v), _fill_ref, [arr((3, 1)), arr((1, 4))]),
    Case("fill_0d_model", lambda x, v: second(x, v), _fill_ref, [arr(()), arr((3,))], dtypes=DTYPES),
    Case("fill_0d_both", lambda x, v: second(x, v), _fill_ref, [arr(()), arr(())], dtypes=DTYPES),
    Case("arange_stop", lambda n: arange(n), np.arange, [_n(5, None)], dtypes=INT_FLOAT),
    Case("arange_start_stop_step", lambda a, b, c: arange(a, b, c), np.arange,
         [_n(1, None), _n(10, None), _n(3, None)], dtypes=INT_FLOAT),
    Case("arange_float_step", lambda a, b, c: arange(a, b, c), np.arange,
         [_n(0.1, None), _n(1.0, None), _n(0.1, None)], dtypes=("float64", "float32")),
    Case("arange_negative_step", lambda a, b, c: arange(a, b, c), np.arange,
         [_n(5, None), _n(-4, None), _n(-2, None)], dtypes=INT_FLOAT),
    Case("arange_empty", lambda a, b: arange(a, b), np.arange, [_n(5, None), _n(2, None)],
         dtypes=INT_FLOAT),
    Case("arange_mixed", lambda a, b: arange(a, b), np.arange, [_n(1, "int32"), _n(4.5, "float32")],
         dtypes=("float64",)),
    Case("arange_python_bounds", lambda n: arange(2, n, 2), lambda n: np.arange(2, n, 2), [_n(9, None)],
         dtypes=INT_FLOAT),
    Case("arange_dtype", lambda n: arange(n, dtype="float32"), lambda n: np.arange(n, dtype="float32"),
         [_n(4)]),
    Case("arange_zero_step", lambda a, b, c: arange(a, b, c), np.arange, [_n(0), _n(5), _n(0)]),
    Case("eye", lambda n: eye(n), lambda n: np.eye(n), [_n(3)]),
    Case("eye_rect_k", lambda n, m, k: eye(n, m, k), lambda n, m, k: np.eye(n, m, k),
         [_n(3), _n(5), _n(1)]),
    Case("eye_neg_k", lambda n, k: eye(n, 4, k, dtype="int32"), lambda n, k: np.eye(n, 4, k, "int32"),
         [_n(5), _n(-2)]),
    Case("eye_empty", lambda n: eye(n, 3), lambda n: np.eye(n, 3), [_n(0)]),
    Case("eye_negative", lambda n: eye(n), lambda n: np.eye(n), [_n(-1)]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_alloc_ops(case):
    check_case(case)


INFER = [
    ("alloc", lambda x, n: alloc(x, n, 3), [arr((3,)), _n(4)]),
    ("alloc_value_static", lambda x, n: alloc(x, n, n), [arr((3,), static=True), _n(3)]),
    ("zeros_like", zeros_like, [arr((3, 4))]),
    ("fill", lambda x, v: fill(x, v), [arr((3, 1)), arr((1, 4))]),
    ("arange", lambda a, b, c: arange(a, b, c), [_n(1), _n(10), _n(3)]),
    ("arange_negative", lambda a, b, c: arange(a, b, c), [_n(5), _n(-4), _n(-2)]),
    ("arange_empty", lambda a, b: arange(a, b), [_n(5), _n(2)]),
    ("arange_float32", lambda a, b, c: arange(a, b, c),
     [_n(0.1, "float32"), _n(1.0, "float32"), _n(0.1, "float32")]),
    ("eye", lambda n, m, k: eye(n, m, k), [_n(3), _n(5), _n(1)]),
]


@pytest.mark.parametrize("name,build,inputs", INFER, ids=[c[0] for c in INFER])
def test_infer_shape(name, build, inputs):
    check_infer_shape(build, inputs)


def test_contracts():
    check_op_contract(Alloc(), lambda: [gt.dvector("v"), gt.lscalar("n"), constant(3, dtype="int64")])
    check_op_contract(ARange("int64"), lambda: [gt.lscalar("a"), gt.lscalar("b"), gt.lscalar("c")])
    check_op_contract(ARange("float64"), lambda: [constant(0.5), gt.dscalar("b"), constant(1)])
    check_op_contract(Eye("float32"), lambda: [gt.lscalar("n"), gt.lscalar("m"), constant(0)])


def test_static_shapes_and_dtypes():
    n = gt.lscalar("n")
    assert zeros((2, 3)).type == gt.TensorType("float64", (2, 3))
    assert zeros((n, 3)).type.shape == (None, 3)
    assert ones(4, "int8").type == gt.TensorType("int8", (4,))
    assert full((2,), 7).dtype == "int64"
    assert full((2,), True).dtype == "bool"
    assert alloc(gt.TensorType("float64", (3,))("v"), n, n).type.shape == (None, 3)
    assert alloc(gt.dcol("c"), 4, n).type.shape == (4, None)
    assert zeros_like(gt.TensorType("float32", (2, None))("x")).type.shape == (2, None)
    assert fill(gt.TensorType("float64", (3, 1))("m"), gt.TensorType("int32", (1, 4))("v")).type == \
        gt.TensorType("int32", (3, 4))
    assert arange(5).type == gt.TensorType("int64", (5,))
    assert arange(0.0, 1.0, 0.25).type == gt.TensorType("float64", (4,))
    assert arange(n).type.shape == (None,)
    assert arange(gt.fscalar("f")).dtype == "float64"   # numpy.arange widens to 64 bits
    assert arange(gt.iscalar("i")).dtype == "int64"
    assert arange(gt.TensorType("uint64", ())("u")).dtype == "float64"
    assert eye(3, 4).type == gt.TensorType("float64", (3, 4))
    assert eye(n).type.shape == (None, None)


def test_build_errors():
    v, n = gt.dmatrix("vm"), gt.lscalar("n")
    with pytest.raises(ValueError, match="'vm'"):
        alloc(v, 3)
    with pytest.raises(ValueError, match="cannot broadcast"):
        alloc(gt.TensorType("float64", (3,))("v3"), 2, 4)
    with pytest.raises(ValueError, match="negative"):
        alloc(1.0, -2)
    with pytest.raises(TypeError, match="'f'"):
        alloc(1.0, gt.dscalar("f"))
    with pytest.raises(TypeError, match="'lv'"):
        arange(gt.lvector("lv"))
    with pytest.raises(ZeroDivisionError):
        arange(0, 5, 0)
    with pytest.raises(TypeError, match="'f'"):
        eye(gt.dscalar("f"))
    with pytest.raises(ValueError, match="negative"):
        eye(-1)
    with pytest.raises(ValueError, match="not known statically"):
        alloc(1.0, gt.lvector("s"))
    with pytest.raises(ValueError, match="broadcast"):
        fill(gt.TensorType("float64", (3,))("m"), gt.TensorType("float64", (4,))("w"))


def test_runtime_error_names_op():
    x, n = gt.dvector("x"), gt.lscalar("n")
    f = gj.function([x, n], alloc(x, n, 2), mode="PY")
    with pytest.raises(ValueError, match=r"Alloc.*\(3,\).*\(4, 2\)"):
        f(np.ones(3), 4)


def test_do_constant_folding():
    small = alloc(constant(1.0), 3, 4)
    fg = FunctionGraph([], [small], clone=False)
    assert not small.owner.op.do_constant_folding(fg, small.owner)   # a graph output
    x = gt.dmatrix("x")
    used = alloc(constant(1.0), 3, 4)
    fg = FunctionGraph([x], [x + used], clone=False)
    assert used.owner.op.do_constant_folding(fg, used.owner)
    side = int(np.sqrt(ALLOC_FOLD_MAX_SIZE)) + 1
    big = alloc(constant(1.0), side, side)
    fg = FunctionGraph([x], [x + big], clone=False)
    assert not big.owner.op.do_constant_folding(fg, big.owner)
    n = gt.lscalar("n")
    sym = alloc(constant(1.0), n, 2)
    fg = FunctionGraph([x, n], [x + sym], clone=False)
    assert not sym.owner.op.do_constant_folding(fg, sym.owner)


@pytest.mark.parametrize("mode", ["PY", "FAST_COMPILE", "FAST_RUN"])
def test_fill_keeps_a_0d_model_in_the_graph(mode):
    """second/fill reads only the model's shape, but the model stays an input (as Theano's fill)."""
    m, v = gt.dscalar("m"), gt.dvector("v")
    np.testing.assert_array_equal(gj.function([m], fill(m, 2.5), mode=mode)(7.0), 2.5)
    np.testing.assert_array_equal(gj.function([m, v], fill(m, v), mode=mode)(7.0, np.arange(3.0)),
                                  np.arange(3.0))
    mat = gt.dmatrix("mat")
    got = gj.function([mat], fill(mat, np.float32(1.5)), mode=mode)(np.zeros((2, 3)))
    assert got.dtype == np.float32 and got.shape == (2, 3)


@pytest.mark.parametrize("mode", ["PY", "FAST_COMPILE", "FAST_RUN"])
@pytest.mark.parametrize("shape", [(), (3,), (None, 2)], ids=str)
def test_like_functions_keep_their_model_as_an_input(mode, shape):
    """zeros_like(x) of a 0-d or statically shaped x takes x (it raised UnusedInputError: the lengths were
    constants, so x left the graph); the dtype argument is honoured."""
    x = gt.TensorType("float64", shape)("x")
    f = gj.function([x], [gt.zeros_like(x), gt.ones_like(x, dtype="int8"), gt.full_like(x, 2.5, "float32")],
                    mode=mode)
    concrete = tuple(s or 3 for s in shape)
    value = np.arange(float(np.prod(concrete))).reshape(concrete)
    for got, want in zip(f(value), [np.zeros_like(value), np.ones_like(value, dtype="int8"),
                                    np.full_like(value, 2.5, dtype="float32")]):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
