"""flip, fliplr, flipud, swapaxes, moveaxis, rot90, roll, atleast_1d/2d/3d against numpy in every mode (every
layout, zero-size inputs, float32 and float64), their gradients, native lowering and bad arguments."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import verify_grad
from op_check import OP_TEST_MODES, Case, arr, check_case

X3 = (2, 3, 4)

CASES = [
    Case("flip_all", gt.flip, np.flip, [arr(X3)]),
    Case("flip_axis", lambda x: gt.flip(x, 1), lambda a: np.flip(a, 1), [arr(X3)]),
    Case("flip_axes_negative", lambda x: gt.flip(x, (0, -1)), lambda a: np.flip(a, (0, -1)), [arr(X3)]),
    Case("flip_0d", gt.flip, np.flip, [arr(())]),
    Case("fliplr", gt.fliplr, np.fliplr, [arr((3, 5))]),
    Case("flipud", gt.flipud, np.flipud, [arr((3, 5))]),
    Case("swapaxes", lambda x: gt.swapaxes(x, 0, -1), lambda a: np.swapaxes(a, 0, -1), [arr(X3)]),
    Case("moveaxis", lambda x: gt.moveaxis(x, 0, -1), lambda a: np.moveaxis(a, 0, -1), [arr(X3)]),
    Case("moveaxis_many", lambda x: gt.moveaxis(x, (0, 2), (2, 0)), lambda a: np.moveaxis(a, (0, 2), (2, 0)),
         [arr(X3)]),
    Case("moveaxis_two_to_front", lambda x: gt.moveaxis(x, [-1, 1], [0, 1]),
         lambda a: np.moveaxis(a, [-1, 1], [0, 1]), [arr(X3)]),
    *[Case(f"rot90_k{k}", lambda x, k=k: gt.rot90(x, k), lambda a, k=k: np.rot90(a, k), [arr((3, 5))])
      for k in (1, 2, 3, 4, -1)],
    Case("rot90_axes", lambda x: gt.rot90(x, 1, (2, 0)), lambda a: np.rot90(a, 1, (2, 0)), [arr(X3)]),
    Case("roll_flat", lambda x: gt.roll(x, 5), lambda a: np.roll(a, 5), [arr(X3)]),
    Case("roll_axis_negative_shift", lambda x: gt.roll(x, -2, 1), lambda a: np.roll(a, -2, 1), [arr(X3)]),
    Case("roll_shift_past_length", lambda x: gt.roll(x, 7, -1), lambda a: np.roll(a, 7, -1), [arr(X3)]),
    Case("roll_two_axes", lambda x: gt.roll(x, (1, -3), (0, 2)), lambda a: np.roll(a, (1, -3), (0, 2)),
         [arr(X3)]),
    Case("roll_symbolic_shift", lambda x, s: gt.roll(x, s, 0), lambda a, s: np.roll(a, int(s), 0),
         [arr((5, 3)), arr((), "int64", values=-7)], zero_size=False),
    Case("atleast_1d", gt.atleast_1d, np.atleast_1d, [arr(())]),
    Case("atleast_2d", gt.atleast_2d, np.atleast_2d, [arr((4,))]),
    Case("atleast_3d_vector", gt.atleast_3d, np.atleast_3d, [arr((4,))]),
    Case("atleast_3d_matrix", gt.atleast_3d, np.atleast_3d, [arr((2, 4))]),
    Case("atleast_2d_many", lambda x, y: gt.atleast_2d(x, y), lambda a, b: np.atleast_2d(a, b),
         [arr(()), arr((2, 3, 4))]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_against_numpy(case):
    check_case(case)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_gradients(mode):
    rng = np.random.default_rng(0)
    m, t = rng.normal(size=(3, 4)), rng.normal(size=(2, 3, 4))
    for fn, pt in [(lambda x: gt.rot90(x, 1) * np.arange(12.0).reshape(4, 3), m),
                   (lambda x: gt.roll(x, (1, -2), (0, 2)) ** 2, t),
                   (lambda x: gt.moveaxis(x, 0, -1) * np.arange(24.0).reshape(3, 4, 2), t),
                   (lambda x: gt.flip(x, (0, 1)).cumsum(axis=0), m)]:
        verify_grad(fn, [pt], mode=mode)


def test_native_lowering():
    x, s = gt.dtensor3("x"), gt.lscalar("s")
    outs = [gt.flip(x, 1), gt.swapaxes(x, 0, 2), gt.moveaxis(x, 0, -1), gt.rot90(x, 3), gt.roll(x, s, 1),
            gt.roll(x, 2), gt.atleast_3d(x[0])]
    f = gj.function([x, s], outs, mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    a = np.random.default_rng(1).normal(size=X3)
    want = [np.flip(a, 1), np.swapaxes(a, 0, 2), np.moveaxis(a, 0, -1), np.rot90(a, 3), np.roll(a, -4, 1),
            np.roll(a, 2), np.atleast_3d(a[0])]
    for got, w in zip(f(a, -4), want):
        np.testing.assert_array_equal(got, w)


@pytest.mark.parametrize("call, error", [
    (lambda x: gt.flip(x, 3), np.exceptions.AxisError),
    (lambda x: gt.flip(x, (0, 0)), ValueError),
    (lambda x: gt.fliplr(x[0, 0]), ValueError),
    (lambda x: gt.flipud(x[0, 0, 0]), ValueError),
    (lambda x: gt.swapaxes(x, 0, -4), np.exceptions.AxisError),
    (lambda x: gt.moveaxis(x, (0, 1), 2), ValueError),
    (lambda x: gt.moveaxis(x, 0, 1.0), TypeError),
    (lambda x: gt.rot90(x, 1, (0, 0)), ValueError),
    (lambda x: gt.rot90(x, 1, (0,)), ValueError),
    (lambda x: gt.roll(x, (1, 2), 0), ValueError),
    (lambda x: gt.roll(x, 1.5, 0), TypeError),
], ids=["flip_axis", "flip_repeated", "fliplr_1d", "flipud_0d", "swapaxes_axis", "moveaxis_lengths",
        "moveaxis_float", "rot90_same_axes", "rot90_one_axis", "roll_lengths", "roll_float_shift"])
def test_bad_arguments(call, error):
    with pytest.raises(error):
        call(gt.dtensor3("x"))
