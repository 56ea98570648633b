"""function(): arguments, defaults, errors, givens, updates, aliasing rules, copies, node errors."""

import warnings

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.maker import UnusedInputError
from graphjit.compile.ops import DeepCopyOp
from graphjit.graph.basic import Constant
from graphjit.graph.fg import InconsistencyError, MissingInputError
from graphjit.graph.type import generic
from graphjit.tensor.type import TensorType
from toy_ops import add, append, append_inplace, div, divmod_op, double, dshared, length, mul, sub, view_of

# The toy ops of these tests have only a Python perform:
# their FallbackWarning is expected here (the warning itself is tested in tests/link/llvm/test_linker.py).
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


@pytest.fixture
def xyz():
    return double("x"), double("y"), double("z")


def test_seed_mul(xyz):
    x, y, _ = xyz
    f = gj.function([x, y], mul(x, y))
    assert f(5, 6) == 30.0
    assert f(5.6, 6.7) == pytest.approx(37.52)


def test_single_list_and_empty_outputs(xyz):
    x, y, _ = xyz
    assert gj.function([x, y], [mul(x, y)])(2.0, 3.0) == [6.0]
    assert gj.function([x, y], [mul(x, y), add(x, y)])(2.0, 3.0) == [6.0, 5.0]
    assert gj.function([x, y], gj.Out(add(x, y)))(2.0, 3.0) == 5.0
    assert gj.function([x], [], on_unused_input="ignore")(1.0) == []
    assert gj.function([x], None, on_unused_input="ignore")(1.0) == []


def test_positional_and_keyword_arguments(xyz):
    x, y, z = xyz
    f = gj.function([x, y, z], sub(mul(x, y), z))
    assert f(2.0, 3.0, 1.0) == 5.0
    assert f(2.0, z=1.0, y=3.0) == 5.0
    assert f(z=1.0, y=3.0, x=2.0) == 5.0
    named = gj.function([gj.In(x, name="first"), y], sub(x, y))
    assert named(first=5.0, y=1.0) == 4.0


def test_argument_errors(xyz):
    x, y, _ = xyz
    f = gj.function([x, y], add(x, y), name="f")
    with pytest.raises(TypeError, match="takes 2 arguments, got 3"):
        f(1.0, 2.0, 3.0)
    with pytest.raises(TypeError, match="missing argument 1, 'y'") as info:
        f(1.0)
    assert __file__ in str(info.value)
    with pytest.raises(TypeError, match="unexpected keyword argument 'w'"):
        f(1.0, w=2.0)
    with pytest.raises(TypeError, match="two values for argument 'x'"):
        f(1.0, x=2.0)
    with pytest.raises(TypeError, match="argument 0") as info:
        f("abc", 1.0)
    assert "'x'" in str(info.value) and "function 'f'" in str(info.value)


def test_ambiguous_names_must_be_positional():
    a, b = double("v"), double("v")
    f = gj.function([a, b], sub(a, b))
    assert f(3.0, 1.0) == 2.0
    with pytest.raises(TypeError, match="several inputs are named 'v'"):
        f(3.0, v=1.0)


def test_defaults_are_used_when_arguments_are_omitted(xyz):
    x, y, _ = xyz
    f = gj.function([x, gj.In(y, value=10)], add(x, y))
    assert f(1.0) == 11.0
    assert f(1.0, 2.0) == 3.0
    assert f(1.0) == 11.0  # the default comes back, the last argument is not kept
    assert f(x=1.0, y=5.0) == 6.0


def test_in_with_update_is_state(xyz):
    x, acc = double("x"), double("acc")
    f = gj.function([x, gj.In(acc, value=0.0, update=add(acc, x))], acc)
    assert [f(1.0), f(2.0), f(3.0)] == [0.0, 1.0, 3.0]
    assert f["acc"] == 6.0
    f["acc"] = 100
    assert f(1.0) == 100.0 and f[acc] == 101.0 and f[1] == 101.0
    with pytest.raises(KeyError):
        f[double("other")]


def test_strict_inputs_and_downcast(xyz):
    x, y, _ = xyz
    f = gj.function([gj.In(x, strict=True)], add(x, 1.0))
    assert f(1.0) == 2.0
    with pytest.raises(TypeError, match="strict"):
        f(1)
    g = gj.function([x], add(x, 1.0))
    with pytest.raises(TypeError, match="exactly"):
        g("2.5")
    h = gj.function([x], add(x, 1.0), allow_input_downcast=True)
    assert h("2.5") == 3.5


def test_trust_input_skips_filtering(xyz):
    x, _, _ = xyz
    f = gj.function([x], add(x, 1.0))
    f.trust_input = True
    assert f(1) == 2.0 and type(f.input_storage[0].data) is int
    f.trust_input = False
    f(1)
    assert type(f.input_storage[0].data) is float


def test_constant_input_is_a_type_error(xyz):
    x, _, _ = xyz
    c = Constant(double, 2.0)
    with pytest.raises(TypeError, match="Constant cannot be a function input"):
        gj.function([c, x], add(c, x))
    with pytest.raises(TypeError, match="list or tuple"):
        gj.function(x, add(x, 1.0))
    with pytest.raises(TypeError, match="outputs must be"):
        gj.function([x], [1.0])


def test_missing_input_names_variable_and_line(xyz):
    x, y, _ = xyz
    with pytest.raises(MissingInputError) as info:
        gj.function([x], add(x, y))
    assert "'y'" in str(info.value) and __file__ in str(info.value)


def test_on_unused_input(xyz):
    x, y, _ = xyz
    with pytest.raises(UnusedInputError, match="input 1, 'y'"):
        gj.function([x, y], add(x, 1.0))
    with pytest.warns(UserWarning, match="not needed"):
        f = gj.function([x, y], add(x, 1.0), on_unused_input="warn")
    assert f(1.0, 2.0) == 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gj.function([x, y], add(x, 1.0), on_unused_input="ignore")
    with gj.change_flags(on_unused_input="ignore"):
        gj.function([x, y], add(x, 1.0))
    with pytest.raises(ValueError, match="on_unused_input"):
        gj.function([x], x, on_unused_input="maybe")


def test_givens_substitute_variables(xyz):
    x, y, z = xyz
    e = mul(add(x, y), 2.0)
    f = gj.function([x, z], e, givens={y: sub(z, 1.0)})
    assert f(1.0, 3.0) == 6.0
    g = gj.function([x], e, givens=[(y, 4.0)])
    assert g(1.0) == 10.0
    assert e.owner.inputs[0].owner.inputs[1] is y  # the user graph is unchanged
    with pytest.raises(TypeError, match="givens"):
        gj.function([x], e, givens={y: generic("g")})
    with pytest.raises(TypeError, match="pairs"):
        gj.function([x], e, givens=[y])


def test_updates_are_computed_from_old_values():
    a, b = dshared(1.0, "a"), dshared(10.0, "b")
    f = gj.function([], [a, b], updates=[(a, b), (b, a)])
    assert f() == [1.0, 10.0]
    assert (a.get_value(), b.get_value()) == (10.0, 1.0)
    assert f() == [10.0, 1.0]
    assert (a.get_value(), b.get_value()) == (1.0, 10.0)


def test_updates_as_dict_and_with_inputs():
    x = double("x")
    w = dshared(0.0, "w")
    f = gj.function([x], mul(w, 2.0), updates={w: add(w, x)})
    assert f(1.0) == 0.0 and f(2.0) == 2.0 and w.get_value() == 3.0
    assert f.maker.fgraph.update_mapping == {1: 1}


def test_update_errors():
    x = double("x")
    w = dshared(0.0, "w")
    with pytest.raises(TypeError, match="not a shared variable"):
        gj.function([x], x, updates=[(x, add(x, 1.0))])
    with pytest.raises(TypeError, match="new value of 'w'"):
        gj.function([], w, updates=[(w, generic("g"))])
    with pytest.raises(ValueError, match="more than once"):
        gj.function([], w, updates=[(w, add(w, 1.0)), (w, add(w, 2.0))])
    assert gj.function([], w, updates=[(w, 5)])() == 0.0 and w.get_value() == 5.0


def test_shared_variables_are_implicit_inputs():
    x = double("x")
    w = dshared(2.0, "w")
    f = gj.function([x], mul(x, w))
    assert f(3.0) == 6.0
    w.set_value(5.0)
    assert f(3.0) == 15.0
    assert [spec.implicit for spec in f.maker.inputs] == [False, True]
    with pytest.raises(TypeError, match="shared variable"):
        gj.function([w], w)


def test_default_updates_and_no_default_updates():
    w = dshared(0.0, "w")
    w.default_update = add(w, 1.0)
    f = gj.function([], w)
    f()
    f()
    assert w.get_value() == 2.0
    gj.function([], w, no_default_updates=True)()
    gj.function([], w, no_default_updates=[w])()
    assert w.get_value() == 2.0
    g = gj.function([], w, updates=[(w, mul(w, 10.0))])
    g()
    assert w.get_value() == 20.0


def test_default_update_pulls_in_other_shared_variables():
    step, w = dshared(0.5, "step"), dshared(0.0, "w")
    w.default_update = add(w, step)
    f = gj.function([], mul(w, 1.0))
    f()
    f()
    assert w.get_value() == 1.0


def test_outputs_do_not_alias_inputs_unless_borrowed():
    g = generic("g")
    data = [1, 2]
    f = gj.function([g], g)
    assert f(data) == data and f(data) is not data
    assert any(isinstance(n.op, DeepCopyOp) for n in f.maker.fgraph.toposort())
    borrowed = gj.function([gj.In(g, borrow=True)], gj.Out(g, borrow=True))
    assert borrowed(data) is data
    viewed = gj.function([g], view_of(g))
    assert viewed(data) is not data


def test_outputs_do_not_alias_each_other():
    g = generic("g")
    a = append(g, 3)
    f = gj.function([g], [a, a])
    r1, r2 = f([1])
    assert r1 == r2 == [1, 3] and r1 is not r2
    same = gj.function([g], [gj.Out(a, borrow=True), gj.Out(a, borrow=True)])
    s1, s2 = same([1])
    assert s1 is s2


def test_non_borrowed_outputs_are_fresh_every_call():
    g = generic("g")
    f = gj.function([g], append(g, 0))
    first = f([1])
    second = f([1])
    assert first == second and first is not second


def test_constant_output_is_copied():
    c = Constant(generic, [1, 2])
    f = gj.function([], c)
    out = f()
    out.append(3)
    assert f() == [1, 2]


def test_shared_output_is_a_copy_of_the_state():
    s = gj.shared([1, 2], name="s")
    f = gj.function([], s)
    out = f()
    out.append(3)
    assert s.get_value() == [1, 2]


def test_update_does_not_alias_the_returned_value():
    s = gj.shared([1], name="s")
    new = append(s, 2)
    f = gj.function([], new, updates=[(s, new)])
    out = f()
    assert out == [1, 2] and out is not s.get_value(borrow=True)


def test_inplace_graphs_need_accept_inplace_and_mutable_inputs():
    g = generic("g")
    out = length(append_inplace(g, 9))
    with pytest.raises(TypeError, match="accept_inplace"):
        gj.function([g], out)
    with pytest.raises(InconsistencyError, match="protected"):
        gj.function([g], out, accept_inplace=True)
    f = gj.function([gj.In(g, mutable=True)], out, accept_inplace=True)
    data = [1]
    assert f(data) == 2.0 and data == [1, 9]


def test_mutable_defaults_are_copied_for_each_call():
    g = generic("g")
    f = gj.function([gj.In(g, value=[0], mutable=True)], length(append_inplace(g, 1)),
                    accept_inplace=True)
    assert f() == 2.0 and f() == 2.0


def test_output_subset(xyz):
    x, y, _ = xyz
    f = gj.function([x, y], [add(x, y), sub(x, y), mul(x, y)])
    assert f(3.0, 2.0, output_subset=[2, 0]) == [6.0, 5.0]
    with pytest.raises(ValueError, match="output_subset"):
        f(3.0, 2.0, output_subset=[3])


def test_multiple_output_op(xyz):
    x, y, _ = xyz
    q, r = divmod_op(x, y)
    assert gj.function([x, y], [q, r])(7.0, 2.0) == [3.0, 1.0]


def test_node_error_names_op_and_line(xyz):
    x, y, _ = xyz
    q = div(x, y)
    f = gj.function([x, y], add(q, 1.0))
    with pytest.raises(ZeroDivisionError) as info:
        f(1.0, 0.0)
    assert "div(x, y)" in str(info.value) and f"Created at: {q.trace}" in str(info.value)


def test_copy_shares_shared_state_by_default():
    x = double("x")
    w = dshared(0.0, "w")
    f = gj.function([x], w, updates=[(w, add(w, x))], name="f")
    g = f.copy()
    assert g.maker.fgraph is not f.maker.fgraph and g.name == "f"
    f(1.0)
    g(2.0)
    assert w.get_value() == 3.0
    assert g.input_storage[1] is w.container


def test_copy_with_swap_and_share_memory():
    x = double("x")
    w, v = dshared(0.0, "w"), dshared(100.0, "v")
    f = gj.function([x], mul(w, 2.0), updates=[(w, add(w, x))])
    g = f.copy(swap={w: v}, name="g")
    assert g(1.0) == 200.0 and v.get_value() == 101.0 and w.get_value() == 0.0
    with pytest.raises(ValueError, match="swap"):
        f.copy(swap={x: v})
    with pytest.raises(TypeError, match="type"):
        f.copy(swap={w: gj.shared([1])})
    h = f.copy(share_memory=True)
    assert h.maker.fgraph is f.maker.fgraph
    assert h(2.0) == 0.0 and w.get_value() == 2.0


def test_copy_keeps_in_state_separate():
    x, acc = double("x"), double("acc")
    f = gj.function([x, gj.In(acc, value=0.0, update=add(acc, x))], acc)
    f(5.0)
    g = f.copy()
    g(1.0)
    assert f["acc"] == 5.0 and g["acc"] == 6.0


def test_maker_attributes(xyz):
    x, y, _ = xyz
    f = gj.function([x, y], add(x, y), mode="PY")
    assert f.maker.mode is gj.get_mode("PY")
    assert [spec.variable for spec in f.maker.inputs] == [x, y]
    assert f.maker.fgraph.inputs[0] is not x
    assert callable(f.fn) and len(f.input_storage) == 2 and len(f.output_storage) == 1
    assert "FunctionGraph" in str(f) and "FunctionMaker" in str(f.maker)


def test_numpy_values_through_generic():
    g = generic("g")
    f = gj.function([g], view_of(g))
    a = np.arange(3)
    out = f(a)
    assert np.array_equal(out, a) and not np.shares_memory(out, a)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
def test_update_of_another_shape_is_refused(mode):
    w = gj.shared(np.arange(3.0), name="w", shape=(3,))
    m = gj.shared(np.zeros((1, 3)), name="m", broadcastable=(True, False))
    x, xm = gt.dvector("x"), gt.dmatrix("xm")
    x5 = TensorType("float64", shape=(5,))("x5")
    for bad in (x5, x5 * 2, gt.dmatrix("mm"), np.ones(4)):          # known when function() is called
        with pytest.raises(TypeError, match="updates: the new value of 'w'"):
            gj.function([], [], updates=[(w, bad)], mode=mode, on_unused_input="ignore")
    with pytest.raises(TypeError, match="new value of 'x5'"):       # In(update=): the same rule
        gj.function([gj.In(x5, value=np.ones(5), update=w)], [], mode=mode)
    f = gj.function([x], [], updates=[(w, x * 2)], mode=mode)       # known when called
    for bad in (np.ones(5), np.ones(2), np.ones(0)):
        with pytest.raises(ValueError, match="new value of 'w'"):
            f(bad)
        assert w.get_value().tolist() == [0.0, 1.0, 2.0]
    f(np.ones(3))
    assert w.get_value().tolist() == [2.0, 2.0, 2.0]
    g = gj.function([xm], [], updates=[(m, xm + 1)], mode=mode)
    with pytest.raises(ValueError, match="new value of 'm'"):
        g(np.ones((2, 3)))
    assert m.get_value().tolist() == [[0.0, 0.0, 0.0]]
    g(np.ones((1, 3)))
    assert m.get_value().tolist() == [[2.0, 2.0, 2.0]]


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
@pytest.mark.parametrize("order", [0, 1])
def test_failed_call_leaves_every_shared_value(mode, order):
    w1 = gj.shared(np.ones(3), name="w1", shape=(3,))
    w2 = gj.shared(np.ones(3), name="w2", shape=(3,))
    x = gt.dvector("x")
    ups = [(w1, w1 + 1), (w2, w2 * 2 + x)]
    f = gj.function([x], [], updates=ups[::-1] if order else ups, mode=mode)
    with pytest.raises(ValueError):
        f(np.ones(5))
    assert w1.get_value().tolist() == [1.0] * 3 and w2.get_value().tolist() == [1.0] * 3
    f(np.ones(3))
    assert w1.get_value().tolist() == [2.0] * 3 and w2.get_value().tolist() == [3.0] * 3
