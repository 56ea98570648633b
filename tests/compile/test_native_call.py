"""The compiled function-call wrapper (link/llvm/cpython/fncall.py) serving Functions with no Python frame.

Every case is compared with mode PY (the reference) and, where it matters, with the Python call path of the
same Function (``f.__call__``); a spy on ``_fallback`` (what the wrapper calls for what it refuses) shows
which path served each call.
"""

import threading

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.io import In, Out
from graphjit.link.llvm.ir.fallback import FallbackWarning
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op


class _Spy:
    """Counts the calls the wrapper hands to the Python path (then runs it)."""

    def __init__(self, f):
        self.f, self.calls = f, 0
        self.real = type(f).__call__

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.real(self.f, *args, **kwargs)


def _spied(f):
    spy = _Spy(f)
    f._fallback = spy            # the wrapper looks the attribute up on the Function: the instance's wins
    return spy


def _both(inputs, outputs, **kw):
    return gj.function(inputs, outputs, **kw), gj.function(inputs, outputs, mode="PY", **kw)


def _same(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _raises_like(f, ref, *args, **kwargs):
    """f and the reference raise the same exception type, with f's message naming the same input."""
    with pytest.raises(Exception) as want:
        ref(*args, **kwargs)
    with pytest.raises(want.type) as got:
        f(*args, **kwargs)
    return str(got.value)


# ---------------------------------------------------------------- several outputs, lists, scalars

def test_several_outputs_are_served_natively():
    x, y = gt.dvector("x"), gt.dscalar("y")
    f, ref = _both([x, y], [(x * y).sum(), x + y, gt.exp(y)])
    assert f.call_path == "native"
    spy = _spied(f)
    v = np.linspace(0, 1, 7)
    for args in [(v, np.array(2.0)), (v[::-2], np.array(-1.5))]:
        _same(f(*args), ref(*args))
    assert spy.calls == 0


def test_single_output_in_a_list_and_no_output():
    x = gt.dvector("x")
    s = gj.shared(np.zeros(3), name="s")
    as_list, ref = _both([x], [x * 2])
    nothing = gj.function([x], [], updates=[(s, s + x)])
    spy_a, spy_n = _spied(as_list), _spied(nothing)
    v = np.arange(3.0)
    _same(as_list(v), ref(v))
    assert nothing(v) == [] and nothing(v) == []
    np.testing.assert_array_equal(s.get_value(), 2 * v)
    assert spy_a.calls == spy_n.calls == 0


def test_outputs_do_not_alias_inputs_or_each_other_unless_borrowed():
    x = gt.dvector("x")
    f = gj.function([x], [x, x, x + 1])
    spy = _spied(f)
    v = np.arange(4.0)
    a, b, c = f(v)
    assert not np.shares_memory(a, v) and not np.shares_memory(a, b)
    np.testing.assert_array_equal(a, v)
    np.testing.assert_array_equal(c, v + 1)
    borrowed = gj.function([In(x, borrow=True)], Out(x, borrow=True))
    assert borrowed.call_path == "native"
    assert borrowed(v) is v
    first = f(v)[2]
    second = f(v)[2]
    assert first is not second            # not borrowed: fresh storage every call
    held = gj.function([x], Out(x + 1, borrow=True))
    np.testing.assert_array_equal(held(v), v + 1)
    assert spy.calls == 0


# ---------------------------------------------------------------- keywords and defaults

def test_keywords_and_defaults_are_served_natively():
    x, y, z = gt.dvector("x"), gt.dvector("y"), gt.dscalar("z")
    inputs = [x, In(y, value=np.ones(2)), In(z, value=3.0)]
    f, ref = _both(inputs, [x + y * z, x.sum()])
    spy = _spied(f)
    a, b = np.array([1.0, 2.0]), np.array([5.0, -1.0])
    for args, kw in [((a,), {}), ((a, b), {}), ((a,), {"z": 2.0}), ((), {"x": a, "y": b}),
                     ((a,), {"z": np.array(0.5), "y": b}), ((a, b, 4.0), {})]:
        _same(f(*args, **kw), ref(*args, **kw))
    assert spy.calls == 0
    assert "two values" in _raises_like(f, ref, a, x=a)
    assert "unexpected keyword" in _raises_like(f, ref, a, w=a)
    assert "missing" in _raises_like(f, ref, y=b)
    assert "takes 3 arguments" in _raises_like(f, ref, a, b, 1.0, 2.0)
    assert spy.calls == 4                 # the errors were worded by the Python path


def test_a_mutable_default_or_duplicate_names_use_the_python_path():
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([x, In(y, value=np.ones(2), mutable=True)], x + y)
    assert f.call_path == "python"
    np.testing.assert_array_equal(f(np.zeros(2)), np.ones(2))
    a, b = gt.dvector("same"), gt.dvector("same")
    g = gj.function([a, b], a - b)
    assert g.call_path == "native"
    spy = _spied(g)
    np.testing.assert_array_equal(g(np.ones(2), np.zeros(2)), np.ones(2))
    assert spy.calls == 0
    with pytest.raises(TypeError, match="several inputs are named 'same'"):
        g(np.ones(2), same=np.zeros(2))


# ---------------------------------------------------------------- Python scalars for 0-d inputs

@pytest.mark.parametrize("dtype,values", [
    ("float64", [1.5, -0.0, 3, -(2 ** 62), float("inf"), float("nan")]),
    ("float32", [1.5, 1e-3, -2.5e30, float("inf")]),
    ("int64", [0, -7, 2 ** 63 - 1, -(2 ** 63)]),
    ("int8", [127, -128, 5]),
    ("uint8", [0, 255]),
    ("uint64", [0, 2 ** 62]),
    ("int32", [2 ** 31 - 1, -(2 ** 31)]),
    ("bool", [True, False]),
])
def test_python_scalars_are_taken_natively(dtype, values):
    a = gt.scalar("a", dtype=dtype)
    b = gt.scalar("b", dtype=dtype)
    f, ref = _both([a, b], [a, gt.eq(a, b)])
    spy = _spied(f)
    for v in values:
        got, want = f(v, v), ref(v, v)
        assert got[0].dtype == want[0].dtype and got[0].shape == ()
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    assert spy.calls == 0


@pytest.mark.parametrize("dtype,value", [
    ("int8", 128), ("int8", -129), ("uint8", -1), ("uint64", -1), ("int64", 2 ** 63), ("int32", 2 ** 40),
    ("int64", 1.5), ("int8", 2.0), ("bool", 1), ("bool", 0.0), ("float32", 1e300), ("float32", 3),
    ("float64", 2 ** 70), ("float64", None), ("int64", None), ("float64", "1.0"), ("float64", [1.0]),
])
def test_python_scalars_the_checks_refuse_raise_as_the_reference(dtype, value):
    """Overflow, lossy casts, None and strings raise (or are converted) exactly as mode PY does, naming the input."""
    a, b = gt.scalar("a", dtype=dtype), gt.scalar("b", dtype=dtype)
    f, ref = _both([a, b], a + b)
    spy = _spied(f)
    ok = np.ones((), dtype=dtype)
    for args in [(value, ok), (ok, value)]:
        try:
            want = ref(*args)
        except Exception as e:
            with pytest.raises(type(e)) as got:
                f(*args)
            position = "argument 0" if args[0] is value else "argument 1"
            assert position in str(got.value) and ("'a'" in str(got.value) or "'b'" in str(got.value))
        else:
            _same(f(*args), want)
    assert spy.calls == 2                 # every refused value went to the Python path


def test_strict_inputs_refuse_python_scalars_and_downcasts_follow_allow_input_downcast():
    a = gt.dscalar("a")
    strict = gj.function([In(a, strict=True)], a * 2)
    with pytest.raises(TypeError, match="strict"):
        strict(1.5)
    assert strict(np.array(1.5)) == 3.0
    f32 = gt.fscalar("f")
    exact = gj.function([In(f32, allow_downcast=False)], f32 + 1)
    with pytest.raises(TypeError):
        exact(0.1)
    assert exact(0.5) == np.float32(1.5)
    loose = gj.function([f32], f32 + 1)
    spy = _spied(loose)
    assert loose(0.1) == np.float32(0.1) + 1 and spy.calls == 0


def test_a_python_scalar_returned_as_a_borrowed_output_is_a_fresh_array():
    a = gt.dscalar("a")
    f = gj.function([In(a, borrow=True)], [Out(a, borrow=True), Out(a * 2, borrow=True)])
    spy = _spied(f)
    got = f(2.5)
    assert isinstance(got[0], np.ndarray) and got[0].shape == () and got[0] == 2.5 and got[1] == 5.0
    arr = np.array(4.0)
    assert f(arr)[0] is arr
    assert spy.calls == 0


def test_a_python_scalar_through_a_fallback_node_takes_the_python_path():
    class Thrice(Op):
        __props__ = ()

        def make_node(self, x):
            x = gt.as_tensor_variable(x)
            return Apply(self, [x], [x.type()])

        def perform(self, node, inputs, out):
            out[0][0] = inputs[0] * 3

    a = gt.dscalar("a")
    with pytest.warns(FallbackWarning):
        f = gj.function([a], [Thrice()(a) + 1, a * 2])
    assert f.call_path == "native"
    spy = _spied(f)
    _same(f(np.array(2.0)), [np.array(7.0), np.array(4.0)])
    assert spy.calls == 0
    _same(f(2.0), [np.array(7.0), np.array(4.0)])
    assert spy.calls == 1


# ---------------------------------------------------------------- array checks at every position

def test_array_checks_at_every_position():
    x, y, z = gt.dvector("x"), gt.TensorType("float64", (3,))("y"), gt.lscalar("z")
    f, ref = _both([x, y, z], [x * z, y + z])
    spy = _spied(f)
    good = [np.ones(3), np.ones(3), np.array(2)]
    bad = {0: [np.ones((3, 1)), np.ones(3, dtype=np.float32) * np.nan, None, "x"],
           1: [np.ones(4), np.ones((3, 3)), None],
           2: [np.ones(2), 2.5, None, 2 ** 64]}
    for k, values in bad.items():
        for value in values:
            args = list(good)
            args[k] = value
            try:
                want = ref(*args)
            except Exception as e:
                with pytest.raises(type(e), match=f"argument {k}"):
                    f(*args)
            else:
                _same(f(*args), want)
    calls = spy.calls
    _same(f(*good), ref(*good))
    assert spy.calls == calls


def test_a_native_error_changes_no_state():
    x = gt.dvector("x")
    s = gj.shared(np.zeros(3), name="s")
    f = gj.function([x], [s.sum(), (s + x).sum()], updates=[(s, s + x)])
    assert f.call_path == "native"
    with pytest.raises(ValueError):
        f(np.ones(4))
    np.testing.assert_array_equal(s.get_value(), np.zeros(3))
    assert f(np.ones(3)) == [0.0, 3.0]
    np.testing.assert_array_equal(s.get_value(), np.ones(3))


# ---------------------------------------------------------------- updates and atomicity

def test_updates_equal_the_reference():
    x = gt.dvector("x")
    w = gj.shared(np.arange(3.0), name="w")
    c = gj.shared(np.array(0, dtype="int64"), name="c")
    f = gj.function([x], (w * x).sum(), updates=[(w, w + x), (c, c + 1)])
    w_ref = gj.shared(np.arange(3.0), name="w")
    c_ref = gj.shared(np.array(0, dtype="int64"), name="c")
    ref = gj.function([x], (w_ref * x).sum(), updates=[(w_ref, w_ref + x), (c_ref, c_ref + 1)], mode="PY")
    spy = _spied(f)
    for k in range(4):
        v = np.full(3, k + 0.5)
        _same(f(v), ref(v))
        np.testing.assert_array_equal(w.get_value(), w_ref.get_value())
        assert c.get_value() == c_ref.get_value() == k + 1
    assert spy.calls == 0
    w.set_value(np.zeros(3))              # set between calls: the next call reads it
    assert f(np.ones(3)) == 0.0


def test_updates_are_atomic_across_functions_sharing_state():
    """Big enough that the native call releases the GIL: without the locks, increments would be lost."""
    n = 1 << 15
    s = gj.shared(np.zeros(n), name="s")
    one = gj.function([], [], updates=[(s, s + 1)])
    two = gj.function([], (s * 0).sum(), updates=[(s, s + 2)])
    assert one.call_path == two.call_path == "native"
    spies = [_spied(one), _spied(two)]

    def work(f):
        for _ in range(60):
            f()

    threads = [threading.Thread(target=work, args=(f,)) for f in (one, two, one, two)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(s.get_value(), np.full(n, 2 * 60 * 3.0))
    assert [sp.calls for sp in spies] == [0, 0]


def test_copies_share_state_and_locks():
    x = gt.dscalar("x")
    s = gj.shared(np.array(0.0), name="s")
    f = gj.function([x], s, updates=[(s, s + x)])
    g = f.copy(share_memory=True)
    h = f.copy()
    for fn in (f, g, h):
        assert fn.call_path == "native"
    f(1.0)
    g(2.0)
    h(4.0)
    assert s.get_value() == 7.0
