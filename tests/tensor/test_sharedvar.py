"""Tensor shared variables: shared() on ndarrays and numbers, their types, values, updates and operators."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.sharedvalue import SharedVariable
from graphjit.tensor.sharedvar import TensorSharedVariable
from graphjit.tensor.variable import TensorVariable


@pytest.mark.parametrize("value, dtype", [
    (np.zeros(3), "float64"), (np.zeros((2, 3), "float32"), "float32"), (np.arange(4), "int64"),
    (np.zeros(2, "uint8"), "uint8"), (np.ones(2, bool), "bool"), (np.zeros(2, "complex64"), "complex64"),
])
def test_arrays_give_tensor_shared_variables(value, dtype):
    w = gj.shared(value, name="w")
    assert isinstance(w, TensorSharedVariable) and isinstance(w, SharedVariable)
    assert w.type == gt.TensorType(dtype, (None,) * value.ndim) and w.name == "w"
    np.testing.assert_array_equal(w.get_value(), value)


@pytest.mark.parametrize("value, dtype", [
    (0.5, "float64"), (3, "int64"), (True, "bool"), (1j, "complex128"),
    (np.float32(2), "float32"), (np.int16(2), "int16"),
])
def test_numbers_give_0d_tensors(value, dtype):
    s = gj.shared(value)
    assert isinstance(s, TensorSharedVariable) and s.type == gt.TensorType(dtype, ())
    got = s.get_value()
    assert isinstance(got, np.ndarray) and got.shape == () and got == value


def test_other_values_fall_back_to_generic():
    for value in ([1, 2], "text", {"a": 1}, np.array(["a"]), np.array([None])):
        var = gj.shared(value)
        assert not isinstance(var, TensorSharedVariable)


def test_unsupported_numeric_dtype_raises():
    with pytest.raises(ValueError, match="float16"):
        gj.shared(np.zeros(2, "float16"))


def test_copy_and_borrow():
    a = np.zeros(3)
    w = gj.shared(a)
    a[0] = 5
    assert w.get_value()[0] == 0
    w.get_value()[1] = 7
    assert w.get_value()[1] == 0
    b = np.zeros(3)
    wb = gj.shared(b, borrow=True)
    b[0] = 5
    assert wb.get_value(borrow=True) is b and wb.get_value()[0] == 5


def test_operators_build_tensor_expressions():
    w = gj.shared(np.zeros(3), name="w")
    g = gt.dvector("g")
    for expr in (w - 0.1 * g, w * 2, -w, w @ g, w[0], w.sum(), abs(w), 1 - w, w ** 2):
        assert isinstance(expr, TensorVariable)
    assert gj.shared(np.zeros((2, 3))).T.type.shape == (None, None)
    assert (w - 0.1 * g).dtype == "float64"
    assert w.ndim == 1 and w.dtype == "float64" and w.broadcastable == (False,)


def test_sgd_update_through_function():
    w = gj.shared(np.zeros(3), name="w")
    x = gt.dmatrix("x")
    cost = ((gt.dot(x, w) - 1) ** 2).mean()
    g = gt.mean(2 * (gt.dot(x, w) - 1).dimshuffle(0, "x") * x, axis=0)  # d cost / d w, by hand
    train = gj.function([x], cost, updates=[(w, w - 0.5 * g)], mode="PY")
    data = np.eye(3)
    costs = [float(train(data)) for _ in range(50)]
    assert costs[0] == pytest.approx(1.0) and costs[-1] < 1e-3
    np.testing.assert_allclose(w.get_value(), np.ones(3), atol=1e-3)


def test_float32_update_keeps_dtype():
    w = gj.shared(np.ones(4, "float32"))
    f = gj.function([], [], updates=[(w, w - 0.1 * w)], mode="PY")
    f()
    assert w.get_value().dtype == np.float32
    np.testing.assert_allclose(w.get_value(), 0.9, rtol=1e-6)


def test_scalar_shared_in_graph():
    lr = gj.shared(0.5, name="lr")
    x = gt.dvector("x")
    f = gj.function([x], lr * x, mode="PY")
    np.testing.assert_allclose(f(np.ones(2)), [0.5, 0.5])
    lr.set_value(2.0)
    np.testing.assert_allclose(f(np.ones(2)), [2.0, 2.0])


def test_set_value_may_change_shape_unless_static():
    w = gj.shared(np.zeros(3))
    w.set_value(np.ones(5))
    assert w.get_value().shape == (5,)
    fixed = gj.shared(np.zeros((2, 3)), shape=(2, None))
    assert fixed.type.shape == (2, None)
    fixed.set_value(np.zeros((2, 7)))
    with pytest.raises(TypeError):
        fixed.set_value(np.zeros((3, 3)))
    with pytest.raises(TypeError):
        w.set_value(np.zeros((2, 2)))
    assert gj.shared(np.zeros((1, 3)), broadcastable=(True, False)).type.shape == (1, None)
    with pytest.raises(ValueError):
        gj.shared(np.zeros(3), shape=(4,))


def test_set_value_filters_dtype_and_strict():
    w = gj.shared(np.zeros(3))
    w.set_value(np.arange(3, dtype="int32"))  # safe upcast
    assert w.get_value().dtype == np.float64
    wi = gj.shared(np.zeros(3, "int32"))
    with pytest.raises(TypeError):
        wi.set_value(np.full(3, 0.5))
    ws = gj.shared(np.zeros(3), strict=True)
    with pytest.raises(TypeError):
        ws.set_value(np.zeros(3, "float32"))


def test_clone_shares_the_container():
    w = gj.shared(np.zeros(2), name="w")
    c = w.clone()
    assert isinstance(c, TensorSharedVariable) and c.type == w.type and c is not w
    c.set_value(np.ones(2))
    np.testing.assert_array_equal(w.get_value(), np.ones(2))
