"""Python values converted to a dtype (scalar/convert.py) and ScalarType's filter built on it."""

import numpy as np
import pytest

from graphjit.scalar.basic import get_scalar_type
from graphjit.scalar.convert import check_int_range, value_to_array

F32, I64, U8 = np.dtype("float32"), np.dtype("int64"), np.dtype("uint8")


@pytest.mark.parametrize("value,dtype", [(2**63, I64), (-2**63 - 1, I64), (np.uint64(2**63), I64),
                                         ([1, 2**63], I64), ([-1, 2**63], I64), (2**70, I64), (300, U8),
                                         (-1, U8), ([[1], [256]], U8), (np.int16(-5), U8), (300.0, U8)])
@pytest.mark.parametrize("downcast", [None, False, True])
def test_out_of_range_integers(value, dtype, downcast):
    with pytest.raises(OverflowError):
        value_to_array(value, dtype, downcast)


@pytest.mark.parametrize("value", [None, "1", b"1", object(), {}, [None], [1, None], ["x"], [[1], [1, 2]]])
@pytest.mark.parametrize("downcast", [None, False, True])
def test_non_numeric(value, downcast):
    with pytest.raises(TypeError):
        value_to_array(value, F32, downcast)


def test_exactness():
    assert value_to_array(0, F32, False).dtype == F32
    assert value_to_array([6], np.dtype("int8"), False).tolist() == [6]
    assert value_to_array(2**64, np.dtype("float64"), False) == 2.0**64          # beyond int64, exact
    for value in (0.1, 2**24 + 1, [0.5, 0.1], 2**64 + 1, 1e39):
        with pytest.raises(TypeError, match="losing precision"):
            value_to_array(value, F32, False)
    assert value_to_array(0.1, F32, None) == np.float32(0.1)                      # rounding allowed
    with pytest.raises(TypeError):
        value_to_array(1e39, F32, None)                                           # but not to inf
    with pytest.raises(TypeError):
        value_to_array(0.1, F32, None, round_floats=False)
    assert value_to_array(0.1, F32, True) == np.float32(0.1)
    assert value_to_array(1.5, I64, True) == 1
    with pytest.raises(TypeError):
        value_to_array(1.5, I64, None)
    assert np.isnan(value_to_array(float("nan"), F32, False))


def test_check_int_range():
    check_int_range(np.array([0, 255]), U8)
    check_int_range(np.array([], dtype=np.int64), U8)
    with pytest.raises(OverflowError, match="256 out of bounds for uint8"):
        check_int_range(np.array([0, 256]), U8)


def test_scalar_type_filter():
    i64, f32 = get_scalar_type("int64"), get_scalar_type("float32")
    assert i64.filter(5) == 5 and type(i64.filter(5)) is np.int64
    assert i64.filter(np.array(7)) == 7
    with pytest.raises(OverflowError):
        i64.filter(2**63)
    with pytest.raises(OverflowError):
        i64.filter(np.uint64(2**63))
    with pytest.raises(TypeError):
        i64.filter(None)
    with pytest.raises(TypeError):
        i64.filter("5")
    with pytest.raises(TypeError, match="array of shape"):
        i64.filter([5])
    assert f32.filter(0) == 0 and f32.filter(0.5, allow_downcast=False) == 0.5
    with pytest.raises(TypeError):
        f32.filter(0.1)
    assert f32.filter(0.1, allow_downcast=True) == np.float32(0.1)


@pytest.mark.filterwarnings("ignore:graphjit LLVM linker")      # TensorFromScalar runs its perform
@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
@pytest.mark.parametrize("trust", [False, True])
def test_scalar_inputs_of_a_function(mode, trust):
    import graphjit as gj
    from graphjit.tensor.scalar_conversion import tensor_from_scalar
    s = get_scalar_type("float64")("s")
    i = get_scalar_type("uint8")("i")
    f = gj.function([s, i], tensor_from_scalar(s) * tensor_from_scalar(i), mode=mode)
    f.trust_input = trust
    assert f(1.5, 2) == 3.0 and f(s=2**70, i=1) == 2.0**70
    for bad in (None, "abc", [1.0], object()):
        with pytest.raises(TypeError, match="'s'"):
            f(bad, 1)
    with pytest.raises(OverflowError, match="'i'"):
        f(1.0, 256)


def test_numbers_beyond_64_bits():
    f64 = np.dtype("float64")
    assert value_to_array([2**64, 1.5], f64, False).tolist() == [2.0**64, 1.5]
    assert value_to_array([[2**64], [1]], f64, False).shape == (2, 1)
    for value in ([2**64 + 1, 1.5], 2**64 + 1):
        with pytest.raises(TypeError, match="losing precision"):
            value_to_array(value, f64, False)
    with pytest.raises(OverflowError):
        value_to_array(2**1024, f64, True)
