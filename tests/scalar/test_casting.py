"""float -> integer casts of NaN, inf and out-of-range values: numpy's x86-64 results in every mode."""

import warnings

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.scalar.casting import astype
from op_check import Case, arr, check_case

MODES = ["PY", "FAST_RUN", "FAST_COMPILE"]
INT_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
EDGE = [np.nan, np.inf, -np.inf, 1e20, -1e20, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 2.0 ** 64 - 2048,
        2.0 ** 63 + 2048, -2.0 ** 63 - 2048, 2.0 ** 32, 2.0 ** 32 - 0.5, 2.0 ** 31, 2.0 ** 31 - 0.5,
        -2.0 ** 31, -2.0 ** 31 - 0.5, -2.0 ** 31 - 1, 4e9, -4e9, 65536.5, 300.7, -300.7, 255.9, 256.0,
        -129.0, -1.5, -0.5, -0.0, 0.0, 0.5, 1.0]


def _edge_values(src: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    wide = rng.uniform(-1, 1, 500) * 10.0 ** rng.integers(0, 21, 500)
    return np.concatenate([np.array(EDGE), wide]).astype(src)


def _numpy_contiguous(a: np.ndarray, dtype: str) -> np.ndarray:
    # numpy's contiguous loop (its strided and 0-d loops differ for uint32, see docs/dtypes.md)
    with np.errstate(invalid="ignore"):
        return np.ascontiguousarray(a).astype(dtype)


@pytest.mark.parametrize("src", ["float64", "float32"])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_astype_reference_matches_numpy_without_warning(src, dtype):
    a = _edge_values(src)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = astype(a, dtype)
        zero_d = [astype(a[i], dtype) for i in range(len(EDGE))]
    want = _numpy_contiguous(a, dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert all(z.shape == () and z == w for z, w in zip(zero_d, want))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src", ["float64", "float32"])
def test_cast_edge_values_in_every_mode(mode, src):
    a = _edge_values(src)
    x = gt.TensorType(src, (None,))("x")
    outs = [gt.cast(x, d) for d in INT_DTYPES]
    f = gj.function([x], outs, mode=mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the whole table, one element at a time (scalar loop tails) and a strided view
        results = [f(a), *zip(*[f(a[i:i + 1]) for i in range(len(EDGE))])]
        strided = f(np.repeat(a, 2)[::2])
    for k, d in enumerate(INT_DTYPES):
        want = _numpy_contiguous(a, d)
        np.testing.assert_array_equal(results[0][k], want, err_msg=f"{src}->{d} {mode}")
        np.testing.assert_array_equal(np.concatenate(results[1 + k]), want[:len(EDGE)],
                                      err_msg=f"{src}->{d} {mode}, length 1")
        np.testing.assert_array_equal(strided[k], want, err_msg=f"{src}->{d} {mode}, strided")


@pytest.mark.parametrize("mode", MODES)
def test_cast_of_a_float_scalar_and_in_an_expression(mode):
    s = gt.dscalar("s")
    x = gt.dvector("x")
    f = gj.function([s, x], [gt.cast(s, "int32"), gt.cast(x * 2, "uint64") + 1, gt.cast(x, "int16").sum()],
                    mode=mode)
    v = np.array([np.nan, 1e30, -3.7, 7e18])
    a, b, c = f(np.nan, v)
    with np.errstate(invalid="ignore"):
        assert a == np.array([np.nan]).astype("int32")[0]
        np.testing.assert_array_equal(b, (v * 2).astype("uint64") + 1)
        assert c == v.astype("int16").sum()


CAST_CASES = [Case(f"cast_to_{d}", lambda x, _d=d: gt.cast(x, _d), lambda x, _d=d: _numpy_contiguous(x, _d),
                   [arr((4, len(EDGE)), values=np.tile(EDGE, (4, 1)))], dtypes=("float64", "float32"))
              for d in INT_DTYPES]


@pytest.mark.parametrize("case", CAST_CASES, ids=str)
def test_cast_edge_values_through_op_check(case):
    with np.errstate(invalid="ignore"):  # the float32 table holds values that overflow to inf
        check_case(case)
