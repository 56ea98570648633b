"""Advanced indexing: AdvancedSubtensor1 / AdvancedSubtensor and their writes, take, against numpy."""

import pickle

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.advanced_subtensor import (AdvancedIncSubtensor, AdvancedIncSubtensor1,
                                                AdvancedSubtensor, AdvancedSubtensor1, take)
from graphjit.tensor.along_axis import put_along_axis, take_along_axis
from graphjit.tensor.shape import shape_i
from graphjit.tensor.subtensor import SCALAR, ArrayIndex, Slice, inc_subtensor, set_subtensor
from op_check import Case, arr, check_case, check_infer_shape, check_op_contract

DTYPES = ("float64", "float32", "int64")
X3 = (5, 6, 4)


def _ints(values, shape=None):
    """A symbolic int64 index input with fixed values."""
    values = np.asarray(values)
    return arr(values.shape if shape is None else shape, "int64", values=values)


def _mask(shape):
    return arr(shape, "bool")


# (name, index function usable on numpy arrays and symbolic tensors alike, extra input specs)
ADVANCED_INDICES = [
    ("list", lambda x: x[[0, 2, -1, 2]], []),
    ("empty_list", lambda x: x[[]], []),
    ("vector", lambda x, i: x[i], [_ints([4, 0, -2, 0])]),
    ("matrix", lambda x, i: x[i], [_ints([[1, 2], [3, -1], [0, 0]])]),
    ("vector_out_of_range", lambda x, i: x[i], [_ints([0, 7])]),
    ("vector_neg_out_of_range", lambda x, i: x[:, i], [_ints([0, -7])]),
    ("axis1", lambda x, i: x[:, i], [_ints([3, -1, 0])]),
    ("axis2_ellipsis", lambda x, i: x[..., i], [_ints([1, 1])]),
    ("two_adjacent", lambda x, i, j: x[i, j], [_ints([0, 4, 1]), _ints([2, -1, 3])]),
    ("two_apart", lambda x, i, j: x[i, :, j], [_ints([0, 4, 1]), _ints([2, -1, 3])]),
    ("two_in_middle", lambda x, i, j: x[:, i, j], [_ints([0, 3]), _ints([2, -1])]),
    ("broadcast_col_row", lambda x, i, j: x[i, j],
     [_ints([[0], [2], [3]]), _ints([1, 5])]),
    ("broadcast_mismatch", lambda x, i, j: x[i, j], [_ints([0, 1, 2]), _ints([1, 3])]),
    ("int_and_array_apart", lambda x, i: x[1, :, i], [_ints([3, 0])]),
    ("slice_before_apart", lambda x, i, j: x[1:, i, None, j], [_ints([0, 5, 2]), _ints([1, 1, 3])]),
    ("slice_before_int_apart", lambda x, i: x[::-2, 1, ..., i], [_ints([3, 0])]),
    ("int_and_array_adjacent", lambda x, i: x[:, 1, i], [_ints([3, 0])]),
    ("newaxis_first", lambda x, i: x[None, i], [_ints([1, 2])]),
    ("newaxis_between", lambda x, i, j: x[i, None, j], [_ints([1, 2]), _ints([0, 5])]),
    ("slice_then_array", lambda x, i: x[1:, ::-2, i], [_ints([0, -1, 2])]),
    ("sym_int_and_array", lambda x, k, i: x[k, i], [_ints(-1, ()), _ints([5, 0])]),
    ("sym_slice_and_array", lambda x, i, a: x[i, a::-1], [_ints([3, 1, 3]), _ints(4, ())]),
    ("rows_and_targets", lambda x, r, t: x[r, t], [_ints([0, 1, 2, 3, 4]), _ints([5, 0, 2, 2, 1])]),
    ("mask_full", lambda x, m: x[m], [_mask(X3)]),
    ("mask_leading", lambda x, m: x[m], [_mask((5, 6))]),
    ("mask_then_slice", lambda x, m: x[m, 1:], [_mask((5,))]),
    ("slice_then_mask", lambda x, m: x[::-1, m], [_mask((6,))]),
    ("mask_and_array", lambda x, m, i: x[m, :, i], [_mask((5,)), _ints([0])]),
    ("mask_wrong_length", lambda x, m: x[m], [_mask((4,))]),
    ("constant_mask", lambda x: x[np.array([True, False, True, False, True])], []),
    ("true_scalar", lambda x: x[np.True_], []),
    ("false_scalar_ellipsis", lambda x: x[..., np.False_], []),
]

# every dtype only where the kernels differ by dtype (a gather, a mask, indices apart); float64 elsewhere
ALL_DTYPES = {"vector", "two_apart", "mask_full", "vector_repeats", "mask"}
ADV_CASES = [Case(f"getitem_{name}", fn, fn, [arr(X3)] + extra, DTYPES if name in ALL_DTYPES else ("float64",))
             for name, fn, extra in ADVANCED_INDICES]
ADV_CASES += [
    Case("vector_take_rows", lambda v, i: v[i], lambda v, i: v[i], [arr((7,)), _ints([6, -7, 3])], DTYPES),
    Case("matrix_arange_targets", lambda m, t: m[gt.constant(np.arange(3)), t],
         lambda m, t: m[np.arange(3), t], [arr((3, 4)), _ints([3, 0, 1])], DTYPES),
    Case("bool_data", lambda x, i: x[i], lambda x, i: x[i], [arr((3, 4)), _ints([2, 0])], ("bool",)),
]


@pytest.mark.parametrize("case", ADV_CASES, ids=str)
def test_advanced_subtensor(case):
    check_case(case)


def test_dispatch():
    x, v, m = gt.dtensor3("x"), gt.lvector("v"), gt.lmatrix("m")
    assert isinstance(x[v].owner.op, AdvancedSubtensor1)
    assert isinstance(x[[0, 1]].owner.op, AdvancedSubtensor1)
    assert isinstance(x[v, :].owner.op, AdvancedSubtensor1)
    assert isinstance(x[v, ...].owner.op, AdvancedSubtensor1)
    assert x[m].owner.op == AdvancedSubtensor((ArrayIndex(2),))
    assert x[:, v].owner.op == AdvancedSubtensor((Slice(), ArrayIndex(1)))
    assert x[x > 0].owner.op == AdvancedSubtensor((ArrayIndex(3, mask=True),))
    assert str(x[1, v].owner.op) == "AdvancedSubtensor{1, int[1d]}"
    sep = (Slice(), ArrayIndex(1), Ellipsis, ArrayIndex(1))
    assert x[:, [0], ..., [1]].owner.op == AdvancedSubtensor(sep)
    assert x[:, [0], ...].owner.op == AdvancedSubtensor((Slice(), ArrayIndex(1), Slice()))


def test_list_of_symbolic_scalars():
    x, i, j = gt.dmatrix("x"), gt.lscalar("i"), gt.lscalar("j")
    out = x[[i, j]]
    assert isinstance(out.owner.op, AdvancedSubtensor1)
    value = np.arange(6.0).reshape(3, 2)
    assert np.array_equal(gj.function([x, i, j], out, mode="PY")(value, 2, -3), value[[2, -3]])


# --- writes ---------------------------------------------------------------------------------------

def np_set(x, index, y):
    out = x.copy()
    out[index] = y
    return out


def np_inc(x, index, y):
    out = x.copy()
    np.add.at(out, index, y)
    return out


def _writes(name, index, extra, y_shape, **kw):
    """A set case and an inc case writing y (of y_shape) into x[index(*extra)]."""
    dtypes = DTYPES if name in ALL_DTYPES else ("float64",)
    cases = []
    for kind, np_fn, gj_fn in (("set", np_set, set_subtensor), ("inc", np_inc, inc_subtensor)):
        cases.append(Case(f"{kind}_{name}",
                          lambda x, *a, f=gj_fn: f(x[index(*a[:-1])], a[-1]),
                          lambda x, *a, f=np_fn: f(x, index(*a[:-1]), a[-1]),
                          [arr(X3)] + extra + [arr(y_shape)], dtypes, **kw))
    return cases


WRITE_CASES = (
    _writes("vector_repeats", lambda i: i, [_ints([0, 2, 0, 0])], (4, 6, 4))
    + _writes("vector_broadcast_row", lambda i: i, [_ints([3, -1, 3])], (4,))
    + _writes("vector_scalar_value", lambda i: i, [_ints([1, 1])], ())
    + _writes("vector_out_of_range", lambda i: i, [_ints([1, 5])], (4,))
    + _writes("empty_index", lambda i: i, [_ints([], (0,))], (4,))
    + _writes("matrix_index", lambda i: i, [_ints([[0, 1], [1, 1]])], (2, 2, 6, 4))
    + _writes("axis1_repeats", lambda i: (slice(None), i), [_ints([2, 2, -4])], (5, 3, 4))
    + _writes("two_apart", lambda i, j: (i, slice(None), j), [_ints([0, 0, 1]), _ints([3, 3, 3])], (3, 6))
    + _writes("two_adjacent_broadcast", lambda i, j: (i, j), [_ints([[0], [0]]), _ints([1, 1, 5])], (4,))
    + _writes("slice_before_apart", lambda i, j: (slice(1, None), i, None, j),
              [_ints([0, 0, 2]), _ints([1, 1, 3])], (3, 4, 1))
    + _writes("zero_width_ellipsis", lambda i: (slice(None, None, -1), 1, Ellipsis, i), [_ints([3, 3])],
              (2, 5))
    + _writes("int_and_array", lambda i: (2, slice(None, None, -1), i), [_ints([0, 0])], (6, 2))
    + _writes("mask", lambda m: m, [_mask((5, 6))], (4,))
    + _writes("mask_then_slice", lambda m: (m, slice(1, None)), [_mask((5,))], (5, 4))
    + _writes("bad_value_shape", lambda i: i, [_ints([0, 1])], (3, 6, 4), zero_size=False)
)


@pytest.mark.parametrize("case", WRITE_CASES, ids=str)
def test_advanced_inc_subtensor(case):
    check_case(case)


def test_python_scalar_writes():
    x, i = gt.dmatrix("x"), gt.lvector("i")
    fn = gj.function([x, i], [set_subtensor(x[i], 2), inc_subtensor(x[i, 0], 1)], mode="PY")
    value, idx = np.zeros((3, 2)), np.array([0, 0, 2])
    got_set, got_inc = fn(value, idx)
    assert np.array_equal(got_set, np_set(value, idx, 2))
    assert np.array_equal(got_inc, np_inc(value, (idx, 0), 1))
    assert got_inc[0, 0] == 2  # repeated indices accumulate
    assert np.array_equal(value, np.zeros((3, 2)))


@pytest.mark.parametrize("set_", [True, False])
def test_inplace(set_):
    x, i = gt.dmatrix("x"), gt.lvector("i")
    write = set_subtensor if set_ else inc_subtensor
    for expr in (x[i], x[i, ::-1]):
        node = write(expr, 1.0, inplace=True).owner
        assert node.op.destroy_map == {0: [0]} and node.op.inplace
        value = np.zeros((3, 2))
        cell = [None]
        node.op.perform(node, [value, np.float64(1.0), np.array([2, 2])], [cell])
        assert cell[0] is value and value[2, 0] == (1.0 if set_ else 2.0)
        node = write(expr, 1.0).owner
        assert node.op.destroy_map == {}


# --- take -----------------------------------------------------------------------------------------

TAKE_CASES = [
    Case("take_axis0_vector", lambda x, i: take(x, i, axis=0), lambda x, i: np.take(x, i, axis=0),
         [arr(X3), _ints([4, -1, 0])], DTYPES),
    Case("take_axis1_matrix", lambda x, i: take(x, i, axis=1), lambda x, i: np.take(x, i, axis=1),
         [arr(X3), _ints([[0, 1], [5, -6]])], DTYPES),
    Case("take_neg_axis_scalar", lambda x, i: take(x, i, axis=-1), lambda x, i: np.take(x, i, axis=-1),
         [arr(X3), _ints(-2, ())], DTYPES),
    Case("take_flat", lambda x: take(x, [0, 7, -1]), lambda x: np.take(x, [0, 7, -1]), [arr((3, 4))],
         DTYPES),
    Case("take_vector_default_axis", lambda v, i: take(v, i), lambda v, i: np.take(v, i),
         [arr((7,)), _ints([1, 1, 6])], DTYPES),
    Case("take_out_of_range", lambda x, i: take(x, i, axis=2), lambda x, i: np.take(x, i, axis=2),
         [arr(X3), _ints([4])], DTYPES),
    # zero-size: the indexed axis empty, where numpy refuses a non-empty take in every mode
    Case("take_clip", lambda x, i: take(x, i, axis=1, mode="clip"),
         lambda x, i: np.take(x, i, axis=1, mode="clip"), [arr(X3), _ints([[-9, 6], [2, 0]])], ("float64",),
         zero_len=6),
    Case("take_wrap_flat", lambda x, i: take(x, i, mode="wrap"), lambda x, i: np.take(x, i, mode="wrap"),
         [arr(X3), _ints([-121, 130, 7])], ("float64",)),
    Case("take_clip_wrap_uint", lambda x, i: [take(x, i, axis=0, mode="clip"), take(x, i, axis=2, mode="wrap")],
         lambda x, i: [np.take(x, i, axis=0, mode="clip"), np.take(x, i, axis=2, mode="wrap")],
         [arr(X3), arr((3,), "uint8", values=[255, 3, 9])], ("float32",)),
]

ALONG_CASES = [
    Case("take_along_axis", lambda a, i: [take_along_axis(a, i, 1), take_along_axis(a, i[:1], -2)],
         lambda a, i: [np.take_along_axis(a, i, 1), np.take_along_axis(a, i[:1], -2)],
         [arr((3, 4)), _ints([[0, 3, -1], [1, 0, 2], [3, 3, -4]])], ("float64", "int64")),
    Case("take_along_none", lambda a, i: take_along_axis(a, i, None),
         lambda a, i: np.take_along_axis(a, i, None), [arr(X3), _ints([0, 119, -1, 50])], ("float64",)),
    Case("take_along_out_of_range", lambda a, i: take_along_axis(a, i, 0),
         lambda a, i: np.take_along_axis(a, i, 0), [arr((3, 4)), _ints([[0, 3, 1, 1]])], ("float64",)),
    Case("put_along_axis", lambda a, i, v: [put_along_axis(a, i, v, 1), put_along_axis(a, i[:, :1], 7.0, 1)],
         lambda a, i, v: [_put_along(a, i, v, 1), _put_along(a, i[:, :1], 7.0, 1)],
         [arr((3, 4)), _ints([[0, 3, 2], [1, 0, 2], [-1, 0, 1]]), arr((3, 3))], ("float64",)),
    Case("put_along_none", lambda a, i, v: put_along_axis(a, i, v, None),
         lambda a, i, v: _put_along(a, i, v, None), [arr((3, 4)), _ints([0, 11, 11, -2]), arr((4,))],
         ("float64",)),
    Case("put_along_bad_shape", lambda a, i, v: put_along_axis(a, i, v, 0),
         lambda a, i, v: _put_along(a, i, v, 0), [arr((3, 4)), _ints([[0, 1, 2, 0]]), arr((2, 4))],
         ("float64",), zero_size=False),
]


def _put_along(a, i, v, axis):
    out = a.copy()
    np.put_along_axis(out, i, v, axis)
    return out


@pytest.mark.parametrize("case", TAKE_CASES + ALONG_CASES, ids=str)
def test_take(case):
    check_case(case)


def test_take_and_along_axis_arguments():
    x, i = gt.dmatrix("x"), gt.lmatrix("i")
    with pytest.raises(ValueError, match="mode must be one of"):
        take(x, i, 0, mode="nearest")
    with pytest.raises(TypeError, match="indices must be integers"):
        take(x, gt.dvector("f"), 0, mode="clip")
    with pytest.raises(IndexError, match="must be an integer array"):
        take_along_axis(x, gt.dmatrix("f"), 1)
    with pytest.raises(ValueError, match="same number of dimensions"):
        take_along_axis(x, gt.lvector("v"), 1)
    with pytest.raises(ValueError, match="single dimension"):
        put_along_axis(x, i, 1.0, None)


# --- shapes ---------------------------------------------------------------------------------------

def _runs(case):
    rng = np.random.default_rng(0)
    try:
        return not isinstance(case.reference(*[s.value(s.dtype or "float64", rng) for s in case.inputs]), list)
    except (IndexError, ValueError):
        return False


SHAPE_CASES = [c for c in ADV_CASES + WRITE_CASES + TAKE_CASES if _runs(c)]


def _direct_infer_shape(case):
    """The op's infer_shape, fed with Shape_i of its inputs, equals the real output shape."""
    rng = np.random.default_rng(0)
    sym = [s.variable(s.dtype or "float64", f"x{k}") for k, s in enumerate(case.inputs)]
    vals = [s.value(s.dtype or "float64", rng) for s in case.inputs]
    out = case.build(*sym)
    node = out.owner
    shapes = [tuple(shape_i(v, d) for d in range(v.ndim)) for v in node.inputs]
    inferred = node.op.infer_shape(None, node, shapes)[0]
    assert len(inferred) == out.ndim
    got = gj.function(sym, list(inferred), mode="PY", on_unused_input="ignore")(*vals) if inferred else []
    assert tuple(int(s) for s in got) == np.shape(case.reference(*vals))


@pytest.mark.parametrize("case", SHAPE_CASES, ids=str)
def test_infer_shape(case):
    _direct_infer_shape(case)
    try:
        import graphjit.tensor.shape_feature  # noqa: F401
    except ImportError:
        return
    check_infer_shape(case.build, case.inputs)


STATIC_SHAPE_INDICES = [
    lambda x: x[[0, 2, -1, 2]],
    lambda x: x[:, [[1], [2]], [0, 1, 3]],
    lambda x: x[[1, 2], :, [0, 1]],
    lambda x: x[None, [1, 2], None],
    lambda x: x[1, :, [0, 0, 0]],
    lambda x: x[2:, [0, 1], None, [1, 2]],
    lambda x: x[:, [0], ..., [1]],
    lambda x: x[:, [0], ..., 1:],
    lambda x: x[2:, [0], ::-1],
    lambda x: x[np.array([True, False, True, False, True]), 1],
    lambda x: x[np.zeros((5, 6), bool)],
    lambda x: x[..., np.True_],
]


@pytest.mark.parametrize("fn", STATIC_SHAPE_INDICES)
def test_static_shape(fn):
    x = gt.TensorType("float64", X3)("x")
    assert fn(x).type.shape == fn(np.zeros(X3)).shape
    unknown = fn(gt.dtensor3("y")).type.shape
    assert all(u is None or u == w for u, w in zip(unknown, fn(np.zeros(X3)).shape))


def test_static_shape_of_symbolic_arrays():
    x, i = gt.dtensor3("x"), gt.TensorType("int64", (3, 1))("i")
    assert x[i, :, gt.TensorType("int64", (2,))("j")].type.shape == (3, 2, None)
    assert x[gt.bmatrix("m").astype("bool")].type.shape == (None, None)


# --- errors and contract --------------------------------------------------------------------------

def test_build_time_errors():
    x = gt.TensorType("float64", (3, 4))("x")
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[[0, 3]]
    with pytest.raises(IndexError, match="index -5 is out of bounds for axis 1 with size 4"):
        x[:, [-5]]
    with pytest.raises(IndexError, match="boolean index did not match.*axis 1"):
        x[np.ones((3, 5), bool)]
    with pytest.raises(IndexError, match="could not be broadcast"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="integer"):
        x[gt.dvector("f")]
    with pytest.raises(IndexError, match="too many indices"):
        x[[0], [0], [0]]
    with pytest.raises(TypeError, match=r"AdvancedSubtensor1: index input 0 must be a 1-d integer "
                                        r"tensor, got 'm'"):
        AdvancedSubtensor1().make_node(x, gt.lmatrix("m"))
    with pytest.raises(TypeError, match="must be a 2-d boolean tensor"):
        AdvancedSubtensor((ArrayIndex(2, True),)).make_node(x, gt.lmatrix("m"))
    with pytest.raises(ValueError, match="cannot broadcast"):
        set_subtensor(x[[0, 1]], gt.TensorType("float64", (3, 4))("y"))


def test_run_time_error_names_op_and_input():
    x, i = gt.dmatrix("x"), gt.lvector("i")
    fn = gj.function([x, i], x[i], mode="PY")
    with pytest.raises(IndexError, match=r"AdvancedSubtensor1: index 9 is out of bounds for axis 0 "
                                         r"with size 3.*'x'"):
        fn(np.zeros((3, 2)), np.array([0, 9]))
    fn = gj.function([x, i], inc_subtensor(x[:, i], 1.0), mode="PY")
    with pytest.raises(IndexError, match=r"AdvancedIncSubtensor\{:, int\[1d\]\}: index -3"):
        fn(np.zeros((3, 2)), np.array([-3]))


def test_output_never_aliases_input():
    x = gt.dmatrix("x")
    node = x[np.True_].owner
    value = np.ones((2, 2))
    cell = [None]
    node.op.perform(node, [value, np.True_], [cell])
    assert not np.shares_memory(cell[0], value)


CONTRACT_OPS = [
    (AdvancedSubtensor1(), lambda: [gt.dmatrix(), gt.lvector()]),
    (AdvancedIncSubtensor1(), lambda: [gt.dmatrix(), gt.dvector(), gt.ivector()]),
    (AdvancedIncSubtensor1(True, True), lambda: [gt.fmatrix(), gt.fscalar(), gt.lvector()]),
    (AdvancedSubtensor((SCALAR, Slice(SCALAR, None, -1), ArrayIndex(2))),
     lambda: [gt.dtensor3(), gt.lscalar(), gt.lscalar(), gt.lmatrix()]),
    (AdvancedSubtensor((ArrayIndex(2, True), None)),
     lambda: [gt.dmatrix(), gt.TensorType("bool", (None, None))()]),
    (AdvancedIncSubtensor((Slice(), ArrayIndex(1)), True),
     lambda: [gt.dmatrix(), gt.dscalar(), gt.lvector()]),
]


@pytest.mark.parametrize("op,make_inputs", CONTRACT_OPS, ids=[str(o) for o, _ in CONTRACT_OPS])
def test_op_contract(op, make_inputs):
    check_op_contract(op, make_inputs)
    assert pickle.loads(pickle.dumps(op)) == op


# --- gradients ------------------------------------------------------------------------------------

GRAD_CASES = [
    ("vector_repeats", lambda x: x[[0, 2, 0]] ** 2, [(4, 5)]),
    ("two_arrays", lambda x: x[[0, 1, 1], [2, 0, 0]] ** 2, [(4, 5)]),
    ("mask", lambda x: x[np.array([True, False, True, True])] ** 2, [(4, 5)]),
    ("rows_targets", lambda x: gt.log(x[gt.constant(np.arange(4)), gt.constant([1, 0, 4, 4])] ** 2),
     [(4, 5)]),
    ("inc1_repeats", lambda x, y: inc_subtensor(x[[0, 0, 3]], y) ** 2, [(4, 5), (3, 5)]),
    ("set1_broadcast", lambda x, y: set_subtensor(x[[1, 2]], y) ** 2, [(4, 5), (5,)]),
    ("inc_general", lambda x, y: inc_subtensor(x[:, [1, 1]], y) ** 2, [(4, 5), (4, 2)]),
    ("set_general", lambda x, y: set_subtensor(x[[0, 3], 1:], y) ** 2, [(4, 5), (4,)]),
    ("apart_and_mask", lambda x: x[[0, 1, 0], :, [1, 1, 0]] * x[np.arange(24).reshape(2, 3, 4) % 3 == 0].sum(),
     [(2, 3, 4)]),
    ("take_clip_wrap", lambda x: take(x, [-1, 7, 7], 1, mode="clip") * take(x, [-6, 9, 2], 1, mode="wrap"),
     [(4, 5)]),
    ("along_axis", lambda x, y: take_along_axis(x, np.array([[0, 4], [1, 1], [2, 0], [3, 3]]), 1)
     * put_along_axis(x, np.array([[1], [0], [4], [2]]), y, 1)[:, :2], [(4, 5), (4, 1)]),
]


@pytest.mark.parametrize("name,fn,shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grad(name, fn, shapes):
    from graphjit.gradient import verify_grad
    rng = np.random.default_rng(0)
    verify_grad(fn, [rng.normal(size=s) for s in shapes], rng=rng)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
def test_uint64_index_arrays_above_int64_raise(mode):
    # numpy wraps such values to negatives (2**64-1 reads the last row); graphjit refuses them
    x = gt.dmatrix("x")
    iv = gt.TensorType("uint64", (None,))("iv")
    v = np.arange(12.0).reshape(3, 4)
    graphs = {"read": x[iv], "set": gt.set_subtensor(x[iv], 7.0), "inc": gt.inc_subtensor(x[iv], 7.0),
              "read 2d": x[iv, 1:], "read axis 1": x[1:, iv], "set axis 1": gt.set_subtensor(x[:, iv], 1.0)}
    ok = np.array([2, 0, 2], dtype="uint64")
    for name, out in graphs.items():
        f = gj.function([x, iv], out, mode=mode)
        f(v, ok)
        for bad in (2 ** 64 - 1, 2 ** 63, 2 ** 64 - 3):
            with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
                f(v, np.array([0, bad], dtype="uint64"))
    np.testing.assert_array_equal(gj.function([x, iv], x[iv], mode=mode)(v, ok), v[ok])


# --- native lowering ------------------------------------------------------------------------------

def _native_forms(x, i, j, m, y):
    """Every index form (reads, writes, gradients, take modes, along-axis), for x of shape X3."""
    reads = [x[:, i], x[i, j], x[i, :, j], x[m], x[:, m[0]], x[m, 1:], x[None, i, ..., j], x[1, :, i],
             x[::-1, gt.cast(abs(i), "uint64")], x[..., np.True_], take(x, i, 1, mode="wrap"),
             take_along_axis(x, i[:, None, None], 0)]
    writes = [gt.inc_subtensor(x[i, :, j], y[:, None]), gt.set_subtensor(x[i, :, j], y[:, None]),
              gt.inc_subtensor(x[m], 1.0), gt.set_subtensor(x[:, i], 2.0), gt.inc_subtensor(x[i], 1.0)]
    grads = [gt.grad((x[i, :, j] ** 2).sum(), x), gt.grad((x[m] * x[m]).sum(), x),
             gt.grad(gt.set_subtensor(x[i, 1:, j], y[:, None]).sum() + (x[i, j] ** 3).sum(), [x, y])[1]]
    return reads + writes + grads


def test_every_index_form_is_native():
    x, i, j, y = gt.dtensor3("x"), gt.lvector("i"), gt.lvector("j"), gt.dvector("y")
    m = gt.TensorType("bool", (None, None))("m")
    rng = np.random.default_rng(3)
    values = [rng.normal(size=X3), np.array([0, 3, -1]), np.array([2, -1, 2]), rng.random((5, 6)) < 0.5,
              rng.normal(size=3)]
    outs = _native_forms(x, i, j, m, y)
    fast = gj.function([x, i, j, m, y], outs, mode="FAST_RUN")
    assert fast.native.fallback_nodes == []
    want = gj.function([x, i, j, m, y], outs, mode="PY")(*values)
    for k, (got, ref) in enumerate(zip(fast(*values), want)):
        np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=f"form {k}")


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_inplace_advanced_writes_check_every_index_first(mode):
    x, i = gt.dmatrix("x"), gt.lvector("i")
    for write in (gt.inc_subtensor(x[:, i], 1.0), gt.set_subtensor(x[i], 1.0)):
        f = gj.function([gj.In(x, mutable=True), i], write, mode=mode)
        assert any(getattr(n.op, "inplace", False) for n in f.maker.fgraph.apply_nodes)
        value = np.zeros((3, 4))
        with pytest.raises(IndexError, match="out of bounds"):
            f(value, np.array([0, 1, 2, 7]))
        assert not value.any()                  # nothing written before the bad index was found
        got = f(value, np.array([1, 1, 2]))
        assert got.sum() > 0 and np.array_equal(value, got)
