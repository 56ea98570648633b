"""Basic indexing: Subtensor / IncSubtensor, getitem, set_subtensor, inc_subtensor against numpy."""

import pickle

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import Constant
from graphjit.tensor.shape import shape_i
from graphjit.tensor.slice_length import slice_length
from graphjit.tensor.subtensor import (SCALAR, IncSubtensor, Slice, Subtensor, inc_subtensor,
                                       set_subtensor)
from op_check import Case, arr, check_case, check_infer_shape, check_op_contract

DTYPES = ("float64", "float32", "int64")
X3 = (5, 6, 4)


def _i(value):
    """A symbolic int64 scalar index input with a fixed value."""
    return arr((), "int64", values=value)


# (name, index function usable on numpy arrays and on symbolic tensors alike, extra input specs)
BASIC_INDICES = [
    ("int", lambda x: x[1], []),
    ("neg_int", lambda x: x[-1], []),
    ("start", lambda x: x[1:], []),
    ("neg_stop", lambda x: x[:-2], []),
    ("reverse", lambda x: x[::-1], []),
    ("start_reverse", lambda x: x[1:, ::-1], []),
    ("steps", lambda x: x[::2, 1::3], []),
    ("slice_slice_int", lambda x: x[-2:, :, 1], []),
    ("neg_step_bounds", lambda x: x[4:1:-1], []),
    ("neg_step_neg_bounds", lambda x: x[-1:-4:-2, ::-3], []),
    ("start_past_end", lambda x: x[10:], []),
    ("stop_before_start", lambda x: x[-10:3], []),
    ("wide_bounds", lambda x: x[:, -100:100:3], []),
    ("reverse_wide_bounds", lambda x: x[100:-100:-2], []),
    ("empty_slice", lambda x: x[3:1], []),
    ("all_ints", lambda x: x[1, 2, 3], []),
    ("all_neg_ints", lambda x: x[-5, -6, -4], []),
    ("newaxis", lambda x: x[None], []),
    ("newaxis_middle", lambda x: x[:, None, 1], []),
    ("newaxis_both_ends", lambda x: x[None, ..., None], []),
    ("ellipsis_int", lambda x: x[..., 0], []),
    ("ellipsis_only", lambda x: x[...], []),
    ("int_ellipsis_step", lambda x: x[1, ..., ::-2], []),
    ("empty_tuple", lambda x: x[()], []),
    ("mixed_steps", lambda x: x[::-3, 2:-1:2], []),
    ("int_out_of_range", lambda x: x[5], []),
    ("neg_int_out_of_range", lambda x: x[:, -7], []),
    ("sym_int", lambda x, i: x[i], [_i(2)]),
    ("sym_neg_int", lambda x, i: x[i], [_i(-1)]),
    ("sym_int_out_of_range", lambda x, i: x[:, i], [_i(6)]),
    ("sym_neg_int_out_of_range", lambda x, i: x[i], [_i(-6)]),
    ("sym_start", lambda x, i: x[i:], [_i(-2)]),
    ("sym_stop_neg_step", lambda x, i: x[:i:-1], [_i(1)]),
    ("sym_neg_step", lambda x, s: x[::s], [_i(-2)]),
    ("sym_pos_step", lambda x, s: x[:, 1::s], [_i(4)]),
    ("sym_all_bounds", lambda x, a, b, s: x[a:b:s], [_i(4), _i(0), _i(-1)]),
    ("sym_bounds_out_of_range", lambda x, a, b: x[:, a:b], [_i(-100), _i(100)]),
    ("sym_zero_step", lambda x, s: x[::s], [_i(0)]),
    ("sym_two_ints", lambda x, i, j: x[i, :, j], [_i(1), _i(-1)]),
    ("sym_expression_bound", lambda x, i: x[i:i + 2], [_i(1)]),
    ("sym_int_and_newaxis", lambda x, i: x[None, 1:, i], [_i(3)]),
]

SUBTENSOR_CASES = [Case(f"getitem_{name}", fn, fn, [arr(X3)] + extra, DTYPES)
                   for name, fn, extra in BASIC_INDICES]
SUBTENSOR_CASES += [
    Case("vector_reverse", lambda v: v[::-1], lambda v: v[::-1], [arr((7,))], DTYPES),
    Case("vector_int", lambda v: v[3], lambda v: v[3], [arr((7,))], DTYPES),
    Case("vector_sym_slice", lambda v, a, s: v[a::s], lambda v, a, s: v[a::s],
         [arr((7,)), _i(-2), _i(-3)], DTYPES),
    Case("scalar_ellipsis", lambda x: x[...], lambda x: x[...], [arr(())], DTYPES),
    Case("scalar_newaxis", lambda x: x[None, ..., None], lambda x: x[None, ..., None], [arr(())], DTYPES),
    Case("bool_data", lambda x: x[1:, ::-1], lambda x: x[1:, ::-1], [arr((3, 4))], ("bool",)),
]


@pytest.mark.parametrize("case", SUBTENSOR_CASES, ids=str)
def test_subtensor(case):
    check_case(case)


def np_set(x, index, y):
    out = x.copy()
    out[index] = y
    return out


def np_inc(x, index, y):
    out = x.copy()
    np.add.at(out, index, y)
    return out


INC_CASES = []
for _name, _np_fn, _gj_fn in (("set", np_set, set_subtensor), ("inc", np_inc, inc_subtensor)):
    INC_CASES += [
        Case(f"{_name}_slices", lambda x, y, f=_gj_fn: f(x[1:, ::-1], y),
             lambda x, y, f=_np_fn: f(x, (slice(1, None), slice(None, None, -1)), y),
             [arr(X3), arr((4, 6, 4))], DTYPES),
        Case(f"{_name}_int_broadcast_row", lambda x, y, f=_gj_fn: f(x[1], y),
             lambda x, y, f=_np_fn: f(x, 1, y), [arr(X3), arr((4,))], DTYPES),
        Case(f"{_name}_python_scalar", lambda x, f=_gj_fn: f(x[:, 2], 5),
             lambda x, f=_np_fn: f(x, (slice(None), 2), 5), [arr(X3)], DTYPES),
        Case(f"{_name}_sym_int", lambda x, i, y, f=_gj_fn: f(x[i, ::2], y),
             lambda x, i, y, f=_np_fn: f(x, (int(i), slice(None, None, 2)), y),
             [arr(X3), _i(-2), arr((3, 1))], DTYPES),
        Case(f"{_name}_sym_slice", lambda x, a, s, y, f=_gj_fn: f(x[a::s], y),
             lambda x, a, s, y, f=_np_fn: f(x, slice(int(a), None, int(s)), y),
             [arr(X3), _i(3), _i(-2), arr((6, 4))], DTYPES),
        Case(f"{_name}_newaxis", lambda x, y, f=_gj_fn: f(x[None, 2, :, 1], y),
             lambda x, y, f=_np_fn: f(x, (None, 2, slice(None), 1), y), [arr(X3), arr((1, 6))], DTYPES),
        Case(f"{_name}_all_ints", lambda x, y, f=_gj_fn: f(x[1, 2, 3], y),
             lambda x, y, f=_np_fn: f(x, (1, 2, 3), y), [arr(X3), arr(())], DTYPES),
        Case(f"{_name}_out_of_range", lambda x, i, y, f=_gj_fn: f(x[i], y),
             lambda x, i, y, f=_np_fn: f(x, int(i), y), [arr(X3), _i(9), arr((4,))], DTYPES),
        Case(f"{_name}_bad_broadcast", lambda x, y, f=_gj_fn: f(x[1:], y),
             lambda x, y, f=_np_fn: f(x, slice(1, None), y), [arr(X3), arr((3,))], DTYPES,
             zero_size=False),
    ]


@pytest.mark.parametrize("case", INC_CASES, ids=str)
def test_inc_subtensor(case):
    check_case(case)


# --- shapes -------------------------------------------------------------------------------------

def _runs(case, rng=np.random.default_rng(0)):
    try:
        case.reference(*[s.value(s.dtype or "float64", rng) for s in case.inputs])
        return True
    except (IndexError, ValueError):
        return False


SHAPE_CASES = [c for c in SUBTENSOR_CASES + INC_CASES if _runs(c)]


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


@pytest.mark.parametrize("name,fn,extra", BASIC_INDICES, ids=[b[0] for b in BASIC_INDICES])
def test_static_shape(name, fn, extra):
    """With a static input shape and constant indices, the output's static shape is numpy's."""
    if extra:
        return
    x = gt.TensorType("float64", X3)("x")
    try:
        want = fn(np.zeros(X3)).shape
    except IndexError:
        with pytest.raises(IndexError, match="out of bounds"):
            fn(x)
        return
    assert fn(x).type.shape == want
    unknown = fn(gt.dtensor3("y")).type.shape
    assert all(u is None or u == w for u, w in zip(unknown, want))


@pytest.mark.parametrize("n", [0, 1, 2, 5, 7])
def test_slice_length_exhaustive(n):
    """slice_length (the infer_shape arithmetic) equals len(range(n)[s]) for many bounds and steps."""
    bounds = [None, -9, -n - 1, -n, -2, -1, 0, 1, 2, n - 1, n, n + 3]
    for step in [None, 1, 2, 3, -1, -2, -4]:
        for start in bounds:
            for stop in bounds:
                want = len(range(n)[start:stop:step])
                assert slice_length(start, stop, step, n) == want, (start, stop, step, n)


def test_symbolic_slice_length_matches_python():
    """The symbolic version, all arguments graph inputs, on a grid of values."""
    names = ("start", "stop", "step", "n")
    a, b, s, n = [gt.lscalar(nm) for nm in names]
    fn = gj.function([a, b, s, n], slice_length(a, b, s, n), mode="PY")
    for length in (0, 3, 6):
        for start in (-8, -3, -1, 0, 2, 7):
            for stop in (-8, -2, 0, 1, 4, 9):
                for step in (-3, -1, 1, 2):
                    want = len(range(length)[start:stop:step])
                    assert int(fn(start, stop, step, length)) == want


# --- build-time errors and types -----------------------------------------------------------------

def test_build_time_index_errors():
    x = gt.TensorType("float64", (3, 4))("x")
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[3]
    with pytest.raises(IndexError, match=r"index -5 is out of bounds for axis 1 with size 4.*'x'"):
        x[:, -5]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]
    with pytest.raises(IndexError, match="too many indices"):
        x[1, 2, 3]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(IndexError, match="valid indices"):
        x[1.5]
    with pytest.raises(IndexError, match="integer"):
        x[gt.dscalar("f")]
    with pytest.raises(TypeError, match="slice indices"):
        x[gt.dscalar("f"):]
    assert x[2].type.shape == (4,) and x[-3, -4].type.shape == ()


def test_run_time_error_names_op_and_input():
    x, i = gt.dmatrix("x"), gt.lscalar("i")
    fn = gj.function([x, i], x[1:, i], mode="PY")
    with pytest.raises(IndexError, match=r"Subtensor\{1:, i\}: index 7 is out of bounds for axis 1 "
                                         r"with size 4.*'x'"):
        fn(np.zeros((3, 4)), 7)
    step = gt.lscalar("s")
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        gj.function([x, step], x[::step], mode="PY")(np.zeros((3, 4)), 0)


def test_make_node_type_errors():
    x = gt.dmatrix("x")
    op = Subtensor((SCALAR, Slice(1, None, None)))
    with pytest.raises(TypeError, match=r"Subtensor\{i, 1:\}: expected 1 index input"):
        op.make_node(x)
    with pytest.raises(TypeError, match="0-d integer tensor, got 'f'"):
        op.make_node(x, gt.dscalar("f"))
    with pytest.raises(TypeError, match="invalid index entry"):
        Subtensor((1.5,))
    with pytest.raises(TypeError, match="first argument must be an indexed tensor"):
        set_subtensor(x, 1.0)
    with pytest.raises(TypeError, match="same-kind"):
        inc_subtensor(gt.lmatrix("m")[0], gt.dvector("v"))
    with pytest.raises(TypeError, match="more dimensions"):
        set_subtensor(x[0], gt.dmatrix("y"))
    with pytest.raises(ValueError, match="cannot broadcast"):
        set_subtensor(gt.TensorType("float64", (3, 4))("s")[1:], gt.TensorType("float64", (3,))("y"))
    # set casts like numpy's assignment
    out = set_subtensor(gt.lmatrix("m")[0], gt.dvector("v"))
    assert out.dtype == "int64"


def test_constant_index_tensors_are_static():
    x = gt.dmatrix("x")
    assert x[gt.constant(1)].owner.op == Subtensor((1,))
    assert x[np.int64(1):np.array(3)].owner.op == Subtensor((Slice(1, 3, None),))
    i = gt.iscalar("i")
    node = x[i].owner
    assert node.op == Subtensor((SCALAR,)) and node.inputs[1] is i


def test_view_and_props():
    x, i = gt.dmatrix("x"), gt.lscalar("i")
    sub = x[i, ::-1].owner.op
    assert sub.view_map == {0: [0]} and str(sub) == "Subtensor{i, ::-1}"
    inc = inc_subtensor(x[i, ::-1], 1.0).owner.op
    assert inc == IncSubtensor(sub.idx_list) and inc.destroy_map == {} and not inc.inplace
    assert str(set_subtensor(x[1:], 0.0, inplace=True).owner.op) == "SetSubtensor{1:, inplace}"
    for op in (sub, inc, IncSubtensor((None, Slice(None, SCALAR, -1)), True, True)):
        assert pickle.loads(pickle.dumps(op)) == op


def test_perform_output_is_a_view():
    x = gt.dmatrix("x")
    node = x[1, ::2].owner
    value = np.arange(12.0).reshape(3, 4)
    cell = [None]
    node.op.perform(node, [value], [cell])
    assert isinstance(cell[0], np.ndarray) and np.shares_memory(cell[0], value)


@pytest.mark.parametrize("set_", [True, False])
def test_inplace_writes_into_x(set_):
    x, y = gt.dmatrix("x"), gt.dvector("y")
    write = set_subtensor if set_ else inc_subtensor
    node = write(x[1, ::-1], y, inplace=True).owner
    assert node.op.destroy_map == {0: [0]}
    value = np.ones((3, 4))
    cell = [None]
    node.op.perform(node, [value, np.arange(4.0)], [cell])
    assert cell[0] is value
    assert np.array_equal(value[1], np.arange(4.0)[::-1] + (0 if set_ else 1))


def test_not_inplace_leaves_x_alone():
    x, y = gt.dmatrix("x"), gt.dvector("y")
    node = inc_subtensor(x[1], y).owner
    value = np.ones((3, 4))
    cell = [None]
    node.op.perform(node, [value, np.arange(4.0)], [cell])
    assert cell[0] is not value and np.array_equal(value, np.ones((3, 4)))


CONTRACT_OPS = [
    (Subtensor((1, Slice(None, None, -1))), lambda: [gt.dmatrix()]),
    (Subtensor((SCALAR, None, Slice(SCALAR, None, SCALAR))), lambda: [gt.dmatrix(), gt.lscalar(),
                                                                      gt.iscalar(), gt.lscalar()]),
    (IncSubtensor((Slice(1, None, None),)), lambda: [gt.dmatrix(), gt.dvector()]),
    (IncSubtensor((SCALAR,), set_instead_of_inc=True, inplace=True),
     lambda: [gt.fmatrix(), gt.fvector(), gt.lscalar()]),
]


@pytest.mark.parametrize("op,make_inputs", CONTRACT_OPS, ids=lambda v: str(v) if not callable(v) else "")
def test_op_contract(op, make_inputs):
    check_op_contract(op, make_inputs)


def test_infer_shape_folds_constant_lengths():
    x = gt.TensorType("float64", (None, 6))("x")
    node = x[1:, ::-2].owner
    shapes = [(shape_i(x, 0), gt.constant(6, dtype="int64"))]
    rows, cols = node.op.infer_shape(None, node, shapes)[0]
    assert isinstance(cols, Constant) and int(cols.data) == 3
    assert not isinstance(rows, Constant)


# --- gradients ------------------------------------------------------------------------------------

GRAD_CASES = [
    ("slices", lambda x: x[1:, ::-1] ** 2, [(4, 5)]),
    ("int_and_step", lambda x: x[-2, ::2] ** 2, [(4, 5)]),
    ("newaxis", lambda x: x[None, :, 1] * x[None, :, 1], [(4, 5)]),
    ("set", lambda x, y: set_subtensor(x[1:, ::2], y) ** 2, [(4, 5), (3, 3)]),
    ("inc_broadcast_leading", lambda x, y: inc_subtensor(x[1], y) ** 2, [(4, 5), (5,)]),
    ("inc_broadcast_static_one", lambda x, y: inc_subtensor(x[1:], y.dimshuffle("x", 0)) ** 2,
     [(4, 5), (5,)]),
]


@pytest.mark.parametrize("name,fn,shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grad(name, fn, shapes):
    from graphjit.gradient import verify_grad
    rng = np.random.default_rng(0)
    verify_grad(fn, [rng.normal(size=s) for s in shapes], rng=rng)


def test_grad_index_inputs_disconnected():
    from graphjit.gradient import grad
    x, i = gt.dvector("x"), gt.lscalar("i")
    gx = grad(gt.sum(x[i:] ** 2), x)
    fn = gj.function([x, i], gx, mode="PY")
    assert np.allclose(fn(np.arange(4.0), 2), [0, 0, 4, 6])


# ------------------------------------------------------------------------------------------------
# Integer indices at the ends of int64/uint64: no wrap-around, no overflow in the slice arithmetic
# ------------------------------------------------------------------------------------------------

_MODES = ("PY", "FAST_RUN", "FAST_COMPILE")
_I64_MIN, _I64_MAX, _U64_MAX = -2 ** 63, 2 ** 63 - 1, 2 ** 64 - 1


def _numpy_or_index_error(fn):
    try:
        return fn()
    except (IndexError, OverflowError):  # numpy: OverflowError for a scalar index outside int64
        return IndexError


def _extreme_values(dtype):
    info = np.iinfo(dtype)
    return sorted({v for v in (0, 1, 4, 5, -1, -5, -6, info.max, info.max - 1, info.min, info.min + 1)
                   if info.min <= v <= info.max})


@pytest.mark.parametrize("mode", _MODES)
@pytest.mark.parametrize("dtype", ["uint64", "int64", "uint32", "int8"])
def test_scalar_index_at_the_ends_of_the_dtype(mode, dtype):
    x, i = gt.dvector("x"), gt.TensorType(dtype, ())("i")
    v = np.arange(5.0)
    fns = {"read": (gj.function([x, i], x[i], mode=mode), lambda k: v[k]),
           "set": (gj.function([x, i], set_subtensor(x[i], 7.0), mode=mode), lambda k: _np_set(v, k, False)),
           "inc": (gj.function([x, i], inc_subtensor(x[i], 7.0), mode=mode), lambda k: _np_set(v, k, True))}
    for k in _extreme_values(dtype):
        k = np.array(k, dtype)
        for name, (f, ref) in fns.items():
            want = _numpy_or_index_error(lambda: ref(k))
            if want is IndexError:
                with pytest.raises(IndexError, match="out of bounds"):
                    f(v, k)
            else:
                np.testing.assert_array_equal(f(v, k), want, err_msg=f"{name} x[{k!r}]")


def _np_set(v, k, inc):
    y = v.copy()
    if inc:
        y[k] += 7.0
    else:
        y[k] = 7.0
    return y


@pytest.mark.parametrize("mode", _MODES)
@pytest.mark.parametrize("dtype", ["uint64", "int64", "uint8", "int8"])
@pytest.mark.parametrize("position", [0, 1, 2])
def test_symbolic_slice_bound_at_the_ends_of_the_dtype(mode, dtype, position):
    x, a = gt.dvector("x"), gt.TensorType(dtype, ())("a")
    bounds = [None, None, None]
    bounds[position] = a
    out = x[slice(*bounds)]
    f = gj.function([x, a], [out, out.shape], mode=mode)
    v = np.arange(5.0)
    for k in _extreme_values(dtype):
        if position == 2 and k == 0:
            continue
        bounds[position] = np.array(k, dtype)
        want = v[slice(*bounds)]
        got, shape = f(v, np.array(k, dtype))
        np.testing.assert_array_equal(got, want, err_msg=f"x[{slice(*bounds)}]")
        assert tuple(shape) == want.shape


@pytest.mark.parametrize("mode", _MODES)
def test_constant_slices_and_indices_beyond_int64(mode):
    x = gt.dvector("x")
    v = np.arange(5.0)
    for sl in [slice(None, None, _I64_MIN), slice(None, None, _I64_MAX), slice(None, None, -_I64_MAX),
               slice(_I64_MIN, None), slice(None, _I64_MIN, -1), slice(_I64_MAX, None, -1),
               slice(_U64_MAX, None, -1), slice(None, _U64_MAX), slice(None, None, -2 ** 64),
               slice(2 ** 70, -2 ** 70, -3)]:
        np.testing.assert_array_equal(gj.function([x], x[sl], mode=mode)(v), v[sl], err_msg=str(sl))
    with pytest.raises(IndexError, match="out of bounds"):
        x[_U64_MAX]
    with pytest.raises(IndexError, match="out of bounds"):
        x[np.uint64(_U64_MAX)]
    with pytest.raises(IndexError, match="out of bounds"):
        gj.function([x], x[_I64_MIN], mode=mode)(v)


@pytest.mark.parametrize("mode", _MODES)
def test_slice_step_of_minus_2_63_gives_the_last_element(mode):
    x, s = gt.dmatrix("x"), gt.lscalar("s")
    v = np.arange(12.0).reshape(3, 4)
    f = gj.function([x, s], [x[::s, ::s], x[::s].shape, x[s::s]], mode=mode)
    got, shape, empty = f(v, _I64_MIN)
    np.testing.assert_array_equal(got, v[::_I64_MIN, ::_I64_MIN])
    assert tuple(shape) == (1, 4)
    assert empty.shape == v[_I64_MIN::_I64_MIN].shape
