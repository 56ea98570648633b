"""Test values: config.compute_test_value, var.tag.test_value, values computed as the graph is built."""

import pickle
import warnings

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.tag import Tag, VariableTag
from graphjit.graph.test_value import TestValueError, TestValueWarning, get_test_value, has_test_value
from graphjit.printing import debugprint, print_test_value


@pytest.fixture
def raising():
    with gj.change_flags(compute_test_value="raise"):
        yield


def test_tag_is_an_object_and_still_answers_dict_calls():
    x = gt.dvector("x")
    assert x.tag.trace == x.trace and __file__ in x.trace
    x.tag.note = "n"
    assert x.tag["note"] == "n" and x.tag.get("note") == "n" and "note" in x.tag
    x.tag["other"] = 1
    assert x.tag.other == 1 and x.tag.setdefault("other", 5) == 1 and x.tag.setdefault("new", 5) == 5
    assert x.tag.pop("new") == 5 and "new" not in x.tag and set(dict(x.tag)) == {"trace", "note", "other"}
    with pytest.raises(KeyError):
        x.tag["missing"]
    with pytest.raises(AttributeError):
        x.tag.missing
    node = (x + 1).owner
    assert isinstance(node.tag, Tag) and node.clone().tag is not node.tag


def test_test_value_is_filtered_by_the_type_on_assignment():
    x = gt.dmatrix("x")
    x.tag.test_value = [[1, 2], [3, 4]]
    assert isinstance(x.tag.test_value, np.ndarray) and x.tag.test_value.dtype == np.float64
    with pytest.raises(TypeError, match="bad test value.*dmatrix|bad test value.*float64"):
        x.tag.test_value = np.ones(3)
    f = gt.fvector("f")
    with pytest.raises(TypeError, match="bad test value"):
        f.tag.test_value = np.ones(3)            # float64 -> float32 would lose precision
    assert x.get_test_value().shape == (2, 2)


def test_clone_and_pickle_keep_test_value_and_drop_compiled_cache():
    x = gt.dvector("x")
    x.tag.test_value = np.arange(3.0)
    e = x * 2
    e.eval({x: np.ones(3)})
    assert hasattr(e.tag, "_eval_fns")
    cp = x.clone()
    assert np.array_equal(cp.tag.test_value, np.arange(3.0)) and cp.tag is not x.tag
    assert not hasattr(e.clone().tag, "_eval_fns")
    back = pickle.loads(pickle.dumps(e))
    assert not hasattr(back.tag, "_eval_fns") and back.trace == e.trace
    t = pickle.loads(pickle.dumps(x.tag))
    assert isinstance(t, VariableTag) and np.array_equal(t.test_value, np.arange(3.0))
    with pytest.raises(TypeError, match="bad test value"):
        t.test_value = "text"                   # the Type came back with the tag


def test_off_by_default_computes_nothing():
    assert gj.config.compute_test_value == "off"
    x = gt.dvector("x")
    x.tag.test_value = np.ones(3)
    assert not has_test_value(gt.exp(x))


def test_values_and_shapes_follow_the_graph(raising):
    x, w = gt.dmatrix("x"), gt.dvector("w")
    xv, wv = np.arange(12.0).reshape(3, 4), np.linspace(0, 1, 4)
    x.tag.test_value, w.tag.test_value = xv, wv
    b = gj.shared(np.ones(3), name="b")
    h = gt.tanh(gt.dot(x, w) + b)
    np.testing.assert_allclose(h.tag.test_value, np.tanh(xv @ wv + 1))
    assert tuple(x.shape.tag.test_value) == (3, 4)
    np.testing.assert_array_equal(x[1:3, ::-1].tag.test_value, xv[1:3, ::-1])
    np.testing.assert_allclose(x.sum(axis=0).tag.test_value, xv.sum(axis=0))
    np.testing.assert_allclose(x.T.tag.test_value, xv.T)
    g = gj.grad(h.sum(), w)
    np.testing.assert_allclose(g.tag.test_value, xv.T @ (1 - np.tanh(xv @ wv + 1) ** 2))
    np.testing.assert_allclose(h.eval({x: xv, w: wv}), h.tag.test_value)   # the compiled graph agrees
    assert np.asarray((x + 2).tag.test_value).dtype == np.float64


def test_random_samples_get_test_values_without_advancing_the_stream(raising):
    srng = gt.RandomStream(7)
    u = srng.uniform(0.0, 1.0, size=(2, 3))
    assert u.tag.test_value.shape == (2, 3) and ((0 <= u.tag.test_value) & (u.tag.test_value < 1)).all()
    first = gj.function([], u, mode="PY")()
    other = gt.RandomStream(7).uniform(0.0, 1.0, size=(2, 3))
    with gj.change_flags(compute_test_value="off"):
        np.testing.assert_array_equal(first, gj.function([], other, mode="PY")())


def test_shape_error_is_raised_at_the_users_line(raising):
    x, w = gt.dmatrix("x"), gt.dmatrix("w")
    x.tag.test_value, w.tag.test_value = np.ones((3, 4)), np.ones((5, 2))
    with pytest.raises(ValueError) as info:
        gt.dot(x, w)                                     # THE LINE
    message = str(info.value)
    assert "test value of Dot" in message and "(3, 4)" in message and "(5, 2)" in message
    assert f"{__file__}:" in message
    line = int(message.split(f"{__file__}:")[1].split()[0])
    with open(__file__) as src:
        assert "# THE LINE" in src.readlines()[line - 1]
    tb_files = [str(entry.path) for entry in info.traceback]
    assert tb_files[0] == __file__                      # raised through the user's frame


def test_missing_input_value_modes():
    x, y = gt.dvector("x"), gt.dvector("y")
    x.tag.test_value = np.ones(2)
    with gj.change_flags(compute_test_value="ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert not has_test_value(x + y)
    with gj.change_flags(compute_test_value="warn"):
        with pytest.warns(TestValueWarning, match="input 1, 'y'.*has no test value") as rec:
            e = x + y
        assert not has_test_value(e) and rec[0].filename == __file__
    with gj.change_flags(compute_test_value="raise"):
        with pytest.raises(TestValueError, match="'y' of type .* has no test value"):
            x + y
    with pytest.raises(TestValueError, match="no test value"):
        get_test_value(y)
    with pytest.raises(ValueError, match="compute_test_value"):
        gj.config.compute_test_value = "sometimes"


def test_inplace_op_does_not_destroy_the_input_test_value(raising):
    x = gt.dvector("x")
    x.tag.test_value = np.zeros(4)
    e = gt.inc_subtensor(x[0:2], 1.0, inplace=True)
    assert e.owner.op.destroy_map == {0: [0]}
    np.testing.assert_array_equal(e.tag.test_value, [1, 1, 0, 0])
    np.testing.assert_array_equal(x.tag.test_value, np.zeros(4))


def test_printing_helpers_show_test_values(raising):
    x = gt.dvector("x")
    x.tag.test_value = np.array([1.0, 2.0])
    e = gt.exp(x) * 2
    text = debugprint(e, file="str", print_test_value=True)
    assert "x [@C] test_value=array([1., 2.])" in text and "test_value=array([2.71828183, 7.3890561 ])" in text
    assert "float64 (2,)" in print_test_value([x, e], file="str")
    assert print_test_value(gt.dvector("nothing"), file="str").rstrip().endswith("no test value")


def test_config_print_test_value_as_theano():
    """Theano's flag: repr() of a variable with a test value shows the value on a second line; debugprint too."""
    import graphjit as theano
    import graphjit.tensor as T
    x = T.scalar("x")
    x.tag.test_value = 42
    y = T.dvector("y")                                  # no test value: printed as before
    assert theano.config.print_test_value is False and repr(x) == "x"
    theano.config.print_test_value = True
    try:
        assert repr(x) == "x\narray(42.)"
        assert repr(y) == "y" and repr(T.constant(2.0)) == "TensorConstant{2.0}\narray(2.)"
        assert "x [@A] test_value=array(42.)" in debugprint(x, file="str")
        assert "test_value" not in debugprint(x, file="str", print_test_value=False)
    finally:
        theano.config.print_test_value = False
    assert repr(x) == "x" and "test_value" not in debugprint(x, file="str")
    with theano.change_flags(print_test_value=True):
        assert str(x) == "x" and repr([x]) == "[x\narray(42.)]"


def test_a_pickle_from_when_tags_were_dicts_loads():
    from graphjit.graph.basic import Variable
    x = gt.dvector("x")
    state = dict(x.__dict__, tag={"trace": "old.py:3", "note": 1})
    old = Variable.__new__(type(x))
    old.__setstate__(state)
    assert isinstance(old.tag, VariableTag) and old.trace == "old.py:3" and old.tag.note == 1
    with pytest.raises(TypeError, match="bad test value"):
        old.tag.test_value = "text"


def test_compiling_computes_no_test_values(monkeypatch):
    from graphjit.graph import test_value
    x, w = gt.dmatrix("x"), gt.dvector("w")
    with gj.change_flags(compute_test_value="raise"):
        x.tag.test_value, w.tag.test_value = np.ones((3, 4)), np.ones(4)
        cost = ((gt.dot(x, w) - 1) ** 2).mean() + gt.log(gt.exp(x).sum())
        g = gj.grad(cost, w)
        calls = []
        real = test_value.compute_test_values
        monkeypatch.setattr(test_value, "compute_test_values", lambda node: calls.append(node) or real(node))
        z = gt.dmatrix("z")                                    # no test value: givens would need one
        for mode in ["FAST_RUN", "FAST_COMPILE", "PY"]:
            f = gj.function([z, w], [cost, g], mode=mode, givens={x: z})
            np.testing.assert_allclose(f(np.ones((3, 4)), np.ones(4))[0], cost.tag.test_value)
        assert calls == [] and gj.config.compute_test_value == "raise"
