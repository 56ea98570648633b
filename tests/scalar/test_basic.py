"""ScalarOp's numpy implementation: never computes in float16."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt

MODES = ["PY", "FAST_RUN", "FAST_COMPILE"]
UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan", "arcsin",
         "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh"]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "bool"])
@pytest.mark.parametrize("name", UNARY)
def test_transcendental_of_small_ints_is_computed_in_float32(name, dtype):
    info = np.iinfo(dtype) if dtype != "bool" else None
    values = (np.array([False, True]) if info is None
              else np.arange(info.min, info.max + 1).astype(dtype))
    x = gt.TensorType(dtype, (None,))("x")
    fn = getattr(gt, name)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(values.astype("float32"))
    assert want.dtype == np.float32
    for mode in MODES:
        got = gj.function([x], fn(x), mode=mode)(values)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=3e-7 if mode == "PY" else 2e-6, equal_nan=True,
                                   err_msg=f"{name}({dtype}) {mode}")


def test_exp2_and_cosh_of_int8_are_finite():
    x = gt.bvector("x")
    for mode in MODES:
        f = gj.function([x], [gt.exp2(x), gt.cosh(x)], mode=mode)
        e, c = f(np.array([16, 89], dtype="int8"))
        assert np.isfinite(e).all() and np.isfinite(c).all(), mode
        np.testing.assert_allclose(e, [65536.0, 2.0 ** 89], rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_binary_transcendental_of_small_ints(mode):
    x, y = gt.bvector("x"), gt.TensorType("uint8", (None,))("y")
    a = np.array([-128, -1, 0, 5, 127], dtype="int8")
    b = np.array([255, 3, 0, 200, 1], dtype="uint8")
    got = gj.function([x, y], gt.arctan2(x, y), mode=mode)(a, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.arctan2(a.astype("float32"), b.astype("float32")), rtol=2e-6)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "bool"])
def test_softplus_of_small_ints_is_computed_in_float32(dtype):
    values = np.array([False, True]) if dtype == "bool" else np.arange(np.iinfo(dtype).min,
                                                                        np.iinfo(dtype).max + 1).astype(dtype)
    x = gt.TensorType(dtype, (None,))("x")
    want = np.logaddexp(np.float32(0), values.astype("float32"))
    for mode in MODES:
        got = gj.function([x], gt.softplus(x), mode=mode)(values)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-6, err_msg=mode)
