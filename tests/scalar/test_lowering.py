"""The generic scalar lowering on edge values: shifts by counts outside [0, width)."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from op_check import Case, arr, check_case

MODES = ["PY", "FAST_RUN", "FAST_COMPILE"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _shift_table(dtype: str):
    info = np.iinfo(dtype)
    w = info.bits
    xs = [0, 1, 5, info.max, info.min, info.min + 1, -1 if info.min < 0 else 3]
    counts = [0, 1, w - 1, w, w + 1, 2 * w, info.max] + ([-1, -w, info.min] if info.min < 0 else [])
    x, c = np.meshgrid(np.array(xs, dtype), np.array(counts, dtype))
    return x.ravel(), c.ravel()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", INTS)
def test_shift_by_any_count_matches_numpy(mode, dtype):
    x, c = _shift_table(dtype)
    xv, cv = gt.TensorType(dtype, (None,))("x"), gt.TensorType(dtype, (None,))("c")
    f = gj.function([xv, cv], [gt.left_shift(xv, cv), gt.right_shift(xv, cv)], mode=mode)
    # the result must not depend on the array length (vector body against scalar tail)
    for n in (1, 3, len(x)):
        for i in range(0, len(x), n):
            sl = slice(i, i + n)
            left, right = f(x[sl], c[sl])
            np.testing.assert_array_equal(left, np.left_shift(x[sl], c[sl]), err_msg=f"{x[sl]} << {c[sl]}")
            np.testing.assert_array_equal(right, np.right_shift(x[sl], c[sl]), err_msg=f"{x[sl]} >> {c[sl]}")


@pytest.mark.parametrize("mode", MODES)
def test_shift_with_mixed_dtypes_and_broadcast_count(mode):
    x = gt.bvector("x")
    n = gt.lscalar("n")
    f = gj.function([x, n], [gt.left_shift(x, n), gt.right_shift(x, n)], mode=mode)
    v = np.array([-128, -3, 0, 7, 127], dtype="int8")
    for k in (-70, -1, 0, 7, 8, 63, 64, 65, 2 ** 62):
        left, right = f(v, k)
        np.testing.assert_array_equal(left, np.left_shift(v, np.int64(k)))
        np.testing.assert_array_equal(right, np.right_shift(v, np.int64(k)))


def _shift_case(name, dtype):
    x, c = _shift_table(dtype)
    return Case(f"{name}_{dtype}", getattr(gt, name), getattr(np, name),
                [arr((len(x),), values=x), arr((len(c),), values=c)], dtypes=(dtype,))


SHIFT_CASES = [_shift_case(n, d) for d in INTS for n in ("left_shift", "right_shift")]


@pytest.mark.parametrize("case", SHIFT_CASES, ids=str)
def test_shifts_through_op_check(case):
    check_case(case)
