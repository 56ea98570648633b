"""TensorType at the boundary: what a Function accepts for a tensor input, the same in every mode.

Declared static lengths, non-numeric values (None, strings, objects), integers out of range, exact Python
values without allow_input_downcast; positional and keyword, with and without trust_input.
"""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.type import TensorType

MODES = ["PY", "FAST_RUN", "FAST_COMPILE"]


def _fn(inputs, output, mode, **kw):
    return gj.function(inputs, output, mode=mode, **kw)


@pytest.mark.parametrize("mode", MODES)
def test_declared_length_checked(mode):
    x = TensorType("float64", shape=(1000,))("x")
    f = _fn([x], x.mean(), mode)
    assert float(f(np.ones(1000))) == 1.0
    for bad in (np.array([0.0, 1.0]), np.ones(1001), np.ones(0)):
        with pytest.raises(TypeError, match=r"'x'.*expected length 1000 in dimension 0"):
            f(bad)
    with pytest.raises(TypeError, match="'x'"):
        f(x=np.ones(3))
    f.trust_input = True                # the declared lengths are checked even then
    with pytest.raises(TypeError, match="'x'.*length 1000"):
        f(np.ones(2))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,bad", [((1, None), (2, 3)), ((None, 1), (3, 2)), ((2, 3), (3, 2)),
                                       ((1, 1), (1, 0))])
def test_static_lengths_and_broadcast_patterns(mode, shape, bad):
    m = TensorType("float64", shape=shape)("m")
    y = gt.dmatrix("y")
    f = _fn([m, y], m + y, mode)
    good = tuple(1 if n is None else n for n in shape)
    np.testing.assert_array_equal(f(np.ones(good), np.ones(good)), np.full(good, 2.0))
    with pytest.raises(TypeError, match="'m'"):
        f(np.ones(bad), np.ones(good))
    with pytest.raises(TypeError, match="'m'"):
        f(np.ones(bad)[::-1], np.ones(good))            # a view takes the same check


GARBAGE = [None, "abc", "1.5", b"1", object(), {}, {"a": 1}, [None], [None, None], [1.0, None], ["a"],
           [[1.0], [2.0, 3.0]], np.array(["a", "b"]), np.array([1.0, None], dtype=object)]


def _garbage_id(value):
    """A test id that is the same in every xdist worker (an object's repr holds its address)."""
    return type(value).__name__ if type(value) is object else repr(value)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("trust", [False, True])
@pytest.mark.parametrize("value", GARBAGE, ids=_garbage_id)
def test_non_numeric_values_are_type_errors(mode, trust, value):
    s, v = gt.dscalar("s"), gt.dvector("v")
    fs, fv = _fn([s], s * 2, mode), _fn([v], v * 2, mode)
    fs.trust_input = fv.trust_input = trust
    for f, name in ((fs, "s"), (fv, "v")):
        with pytest.raises(TypeError, match=f"'{name}'"):
            f(value)
        with pytest.raises(TypeError, match=f"'{name}'"):
            f(**{name: value})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,value", [
    ("int64", 2**63), ("int64", -2**63 - 1), ("int64", np.uint64(2**63)), ("int64", [2**63]),
    ("int64", [1, 2**63]), ("int64", [-1, 2**63]), ("int64", 2**64), ("int64", 1e19),
    ("uint8", 300), ("uint8", -1), ("uint8", [1, 256]), ("uint8", [[0], [-1]]), ("uint8", np.int64(300)),
    ("int8", 128), ("int32", 2**31), ("uint64", -1), ("uint64", 2**64), ("uint16", 300.0 * 300),
])
@pytest.mark.parametrize("downcast", [None, False, True])
def test_integers_out_of_range_overflow(mode, dtype, value, downcast):
    ndim = np.ndim(value)
    x = TensorType(dtype, shape=(None,) * ndim)("x")
    f = _fn([x], x + np.zeros((), dtype=dtype), mode, allow_input_downcast=downcast)
    with pytest.raises(OverflowError, match="'x'"):
        f(value)
    with pytest.raises(OverflowError):
        np.asarray(int(value) if isinstance(value, np.integer) else value, dtype=dtype)   # numpy agrees


@pytest.mark.parametrize("mode", MODES)
def test_integers_in_range_are_exact(mode):
    for dtype, value in [("int64", 2**63 - 1), ("int64", -2**63), ("uint64", 2**64 - 1), ("uint8", 255),
                         ("int8", [-128, 127]), ("int64", np.uint64(5)), ("uint8", np.int64(255))]:
        x = TensorType(dtype, shape=(None,) * np.ndim(value))("x")
        f = _fn([x], x + np.zeros((), dtype=dtype), mode)
        out = f(value)
        assert out.dtype == dtype and out.tolist() == (int(value) if np.ndim(value) == 0 else value)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("downcast", [False, None])
def test_exact_python_values_without_downcast(mode, downcast):
    f32, i8 = gt.fscalar("f"), gt.bvector("b")
    ff = _fn([f32], f32 * 1, mode, allow_input_downcast=downcast)
    fb = _fn([i8], i8 + 0, mode, allow_input_downcast=downcast)
    for value in (0, 1, -3, 0.5, 0.25, 16777216, 2**100, 2.0**-20, 3e38 // 2**104 * 2**104, float("inf"), True):
        out = ff(value)
        assert out.dtype == np.float32 and out == np.float32(value)
    assert np.isnan(ff(float("nan")))
    assert fb([6]).tolist() == [6] and fb([-128, 0, 127, True]).tolist() == [-128, 0, 127, 1]
    assert fb([]).tolist() == []
    for value in (0.1, 16777217, 1e39):    # not exact in float32
        if downcast is None and isinstance(value, float) and value != 1e39:
            assert ff(value) == np.float32(value)   # None: a Python float may round to a float dtype
        else:
            with pytest.raises(TypeError, match="'f'.*losing precision"):
                ff(value)
    for value in ([1.5], [6.0, 0.5]):
        with pytest.raises(TypeError, match="'b'"):
            fb(value)
    assert fb([6.0]).tolist() == [6]
    for arr in (np.array([6]), np.array([6.0])):   # arrays: only safe casts without allow_input_downcast
        with pytest.raises(TypeError, match="'b'"):
            fb(arr)


@pytest.mark.parametrize("mode", MODES)
def test_downcast_true_casts_arrays_as_numpy(mode):
    i8 = gt.bvector("b")
    f = _fn([i8], i8 + 0, mode, allow_input_downcast=True)
    assert f(np.array([300, 6])).tolist() == np.array([300, 6]).astype(np.int8).tolist()
    assert f([6.7, -1.2]).tolist() == [6, -1]


def test_filter_rules_directly():
    t = TensorType("float32", shape=(None,))
    assert t.filter([1, 2]).dtype == np.float32
    with pytest.raises(TypeError):
        t.filter(None)
    with pytest.raises(TypeError):
        t.filter(np.array([1.0, 2.0]))                 # float64 array: not a safe cast
    with pytest.raises(TypeError):
        t.filter(np.array(["1"]), allow_downcast=True)  # strings are never numbers here
    assert t.filter(np.array([1.0, 2.0]), allow_downcast=True).dtype == np.float32
    u = TensorType("uint8", shape=())
    with pytest.raises(OverflowError):
        u.filter(256, allow_downcast=True)
    assert u.filter(np.array(256), allow_downcast=True) == 0     # an array's cast is numpy's
