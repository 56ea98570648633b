"""GraphjitFunction: the GRAPHJIT mode's PyTensor Function and its direct call into graphjit's native function."""

import pickle

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.function.types import Function
from pytensor.compile.mode import Mode

import graphjit.pytensor as gjp

PY = Mode("py", "fast_run")


def both(inputs, outputs, **kwargs):
    """The function in the GRAPHJIT mode and in PyTensor's Python mode (the reference)."""
    return (pytensor.function(inputs, outputs, mode="GRAPHJIT", **kwargs),
            pytensor.function(inputs, outputs, mode=PY, **kwargs))


def calls_native(f, monkeypatch):
    """Count the function's direct native calls (PyTensor's own call path never goes through it)."""
    count = []
    native, checks, implicit, updates = f._native
    def counted(*args):
        count.append(1)
        return native(*args)
    monkeypatch.setattr(f, "_native", (counted, checks, implicit, updates))
    return count


def assert_same(got, want):
    """Same structure (list / single output / None) and values."""
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-13)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_plain_ndarray_arguments_call_graphjit_directly(monkeypatch):
    x, m = pt.dvector("x"), pt.dmatrix("m")
    f, ref = both([x, m], [pt.sum(pt.exp(x)), pt.dot(m, x)])
    assert isinstance(f, gjp.GraphjitFunction) and not isinstance(ref, gjp.GraphjitFunction)
    count = calls_native(f, monkeypatch)
    xv, mv = np.array([0.5, -1.0]), np.arange(6.0).reshape(3, 2)[::-1]
    for trust in (False, True):
        f.trust_input = trust
        assert_same(f(xv, mv), ref(xv, mv))
    assert len(count) == 2


def test_single_output_and_no_output_shapes_of_the_result(monkeypatch):
    x = pt.dvector("x")
    f, ref = both([x], 2.0 * x)
    count = calls_native(f, monkeypatch)
    assert_same(f(np.ones(3)), ref(np.ones(3)))
    assert len(count) == 1


def test_arguments_pytensor_converts_take_its_call(monkeypatch):
    x = pt.dvector("x")
    f, ref = both([x], [pt.sum(x), x * 2.0])
    count = calls_native(f, monkeypatch)
    for arg in ([1.0, 2.0], np.array([1.0, 2.0], dtype="float32"), np.array([1, 2])):
        assert_same(f(arg), ref(arg))
    assert_same(f(x=np.array([3.0])), ref(x=np.array([3.0])))
    assert count == []


def test_bad_arguments_raise_pytensor_s_errors():
    x = pt.dvector("x")
    f, ref = both([x], pt.sum(x))
    for bad in (np.ones((2, 2)), "abc", np.ones(2, dtype=complex)):
        with pytest.raises(Exception) as want:
            ref(bad)
        with pytest.raises(want.type):
            f(bad)
    with pytest.raises(TypeError):
        f()
    with pytest.raises(TypeError):
        f(np.ones(2), np.ones(2))


def test_static_shapes_are_checked_before_the_direct_call(monkeypatch):
    x = pt.tensor("x", shape=(3,), dtype="float64")
    f, _ = both([x], pt.sum(x))
    count = calls_native(f, monkeypatch)
    assert float(f(np.ones(3))) == 3.0 and len(count) == 1
    with pytest.raises((TypeError, ValueError)):
        f(np.ones(4))
    assert len(count) == 1


def test_shared_variables_and_updates(monkeypatch):
    x = pt.dvector("x")
    acc = pytensor.shared(np.zeros(2), name="acc")
    scale = pytensor.shared(2.0, name="scale")
    f = pytensor.function([x], [pt.sum(acc)], updates={acc: acc + scale * x}, mode="GRAPHJIT")
    count = calls_native(f, monkeypatch)
    outs = [f(np.array([1.0, 2.0]))[0] for _ in range(3)]
    assert [float(o) for o in outs] == [0.0, 6.0, 12.0]
    scale.set_value(1.0)
    f(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(acc.get_value(), [7.0, 13.0])
    assert len(count) == 4


def test_other_modes_keep_pytensor_s_function():
    x = pt.dvector("x")
    for mode in ("FAST_COMPILE", PY, Mode(linker="py", optimizer=None)):
        assert type(pytensor.function([x], x + 1.0, mode=mode)) is Function


def test_a_mode_rebuilt_around_the_linker_still_calls_directly():
    """PyMC compiles with ``Mode(linker=mode.linker, optimizer=...)``."""
    x = pt.dvector("x")
    mode = Mode(linker=gjp.mode().linker, optimizer=gjp.mode().provided_optimizer)
    assert isinstance(pytensor.function([x], x + 1.0, mode=mode), gjp.GraphjitFunction)


def test_pymc_s_sampler_function_is_a_graphjit_function_and_pickles():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[0.1, -0.3])
    f = model.logp_dlogp_function(ravel_inputs=True, mode="GRAPHJIT")
    f.set_extra_values({})
    fn = f._pytensor_function
    assert isinstance(fn, gjp.GraphjitFunction) and fn._native is not None
    logp, dlogp = fn(np.array([0.2]))
    np.testing.assert_allclose(dlogp, [-0.2 + (0.1 - 0.2) + (-0.3 - 0.2)], rtol=1e-12)
    clone = pickle.loads(pickle.dumps(fn))
    assert isinstance(clone, gjp.GraphjitFunction)
    np.testing.assert_allclose(clone(np.array([0.2]))[0], logp, rtol=1e-14)
    copy = fn.copy()
    assert isinstance(copy, gjp.GraphjitFunction)
    np.testing.assert_allclose(copy(np.array([0.2]))[1], dlogp, rtol=1e-14)
