"""Subtensor rewrites (tensor/rewriting/subtensor.py, subtensor_merge.py): each fires where it should,
gives numpy's values (and errors), and stays off where it must."""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.mode import Mode
from graphjit.tensor.rewriting.subtensor_merge import compose, merge_indices

PY = Mode(linker="py", rewriter="fast_run")
x, v = gt.dmatrix("x"), gt.dvector("v")
i, n = gt.lscalar("i"), gt.lscalar("n")
X = np.arange(30.0).reshape(6, 5)


def names(f):
    return [str(node.op) for node in f.maker.fgraph.toposort()]


def n_subtensors(f):
    return sum(name.startswith("Subtensor") for name in names(f))


def check(inputs, out, vals, want, modes=(PY, "FAST_RUN")):
    """Run in each mode against numpy; return the PY function."""
    fns = [gj.function(inputs, out, mode=m) for m in modes]
    for f in fns:
        got = f(*vals)
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got, want)
    return fns[0]


# --- useless -------------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [lambda: x[:], lambda: x[::1], lambda: x[0:, :], lambda: x[:, 0::1],
                                   lambda: x[:9223372036854775807]], ids=["colon", "step1", "zero_start",
                                                                           "two_dims", "huge_stop"])
def test_useless_subtensor_removed(build):
    f = check([x], build(), [X], X)
    assert n_subtensors(f) == 0


@pytest.mark.parametrize("build, want", [
    (lambda: x[1:], X[1:]), (lambda: x[::-1], X[::-1]), (lambda: x[None], X[None]), (lambda: x[:6], X[:6]),
    (lambda: x[0::-1], X[0::-1]),
], ids=["start1", "reversed", "newaxis", "stop_equal_to_an_unknown_length", "zero_start_backwards"])
def test_useful_subtensor_kept(build, want):
    f = check([x], build(), [X], want)
    assert n_subtensors(f) == 1
    g = gj.function([x], x[:], mode=PY.excluding("local_useless_subtensor"))
    assert n_subtensors(g) == 1


# --- merge ---------------------------------------------------------------------------------------
xs = gt.TensorType("float64", (6, 5))("xs")


@pytest.mark.parametrize("inputs, build, vals, want", [
    ([x], lambda: x[1:][2], [X], X[1:][2]),
    ([x], lambda: x[::-1][1:3], [X], X[::-1][1:3]),
    ([x], lambda: x[2:][::-1], [X], X[2:][::-1]),
    ([x], lambda: x[-2::-1][::-1], [X], X[-2::-1][::-1]),
    ([x], lambda: x[1:5:2][1:], [X], X[1:5:2][1:]),
    ([x], lambda: x[-1:-6:-2][1], [X], X[-1:-6:-2][1]),
    ([xs], lambda: xs[1::2][::-1], [X], X[1::2][::-1]),
    ([xs], lambda: xs[::-2][-1], [X], X[::-2][-1]),
    ([xs], lambda: xs[4:0:-3, ::2][:, ::-1], [X], X[4:0:-3, ::2][:, ::-1]),
    ([x, i], lambda: x[:, 1:][i], [X, 2], X[:, 1:][2]),
    ([x, i], lambda: x[i:][:, 1], [X, 2], X[2:][:, 1]),
    ([x], lambda: x[None][0, 1:], [X], X[None][0, 1:]),
    ([x], lambda: x[:, None][2:4, :, 1], [X], X[:, None][2:4, :, 1]),
], ids=["slice_int", "reverse_slice", "slice_reverse", "neg_reverse", "steps", "neg_steps_int",
        "static_steps", "static_neg_int", "static_2d", "symbolic_int", "symbolic_slice", "newaxis_int",
        "newaxis_kept"])
def test_merge(inputs, build, vals, want):
    f = check(inputs, build(), vals, want)
    assert n_subtensors(f) == 1
    g = gj.function(inputs, build(), mode=PY.excluding("local_subtensor_merge"))
    assert n_subtensors(g) == 2


@pytest.mark.parametrize("inputs, build, vals", [
    ([x], lambda: x[1:3][2], [X]),          # 2 is past the slice's end but inside x: IndexError must stay
    ([x], lambda: x[2:][-1], [np.ones((2, 3))]),   # negative index into an open slice of unknown length
    ([x], lambda: x[::2][::-1], [X]),       # where the reversal starts depends on the length's parity
    ([x, i], lambda: x[1:][i], [X, 1]),     # a symbolic index into a partial slice
    ([x, i], lambda: x[i:][1:], [X, 1]),    # symbolic bounds on both sides
    ([x], lambda: x[1:-1][1:], [X]),        # mixed signs with an unknown length
], ids=["int_past_slice", "negative_int", "parity", "symbolic_int", "symbolic_both", "mixed_signs"])
def test_merge_left_alone(inputs, build, vals):
    out = build()
    f = gj.function(inputs, out, mode=PY)
    assert n_subtensors(f) == 2
    raw = gj.function(inputs, out, mode=Mode(linker="py", rewriter=None))
    try:
        want = raw(*vals)
    except IndexError:
        with pytest.raises(IndexError):
            f(*vals)
        return
    np.testing.assert_allclose(f(*vals), want)


def test_compose_units():
    assert compose(("s", 1, None, None), ("i", 2), None) == ("i", 3)
    assert compose(("s", None, None, -1), ("s", 1, 3, None), None) == ("s", -2, -4, -1)
    assert compose(("s", 1, 3, None), ("i", 2), None) is None
    assert compose(("s", 1, 3, None), ("i", 5), 6) is None        # out of the slice: keep the error
    assert compose(("s", 4, 0, -3), ("s", None, None, -1), 6) == ("s", 1, 7, 3)
    assert merge_indices((None,), [("n",)], [("s", 1, None, None)]) is None   # an empty new axis


def _index(draw, ndim, allow_none):
    entries = []
    for _ in range(draw(st.integers(0, ndim))):
        if draw(st.booleans()):
            entries.append(draw(st.integers(-7, 7)))
        else:
            bound = st.one_of(st.none(), st.integers(-8, 8))
            step = st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))
            entries.append(slice(draw(bound), draw(bound), draw(step)))
    if allow_none and entries and draw(st.booleans()):
        entries.insert(draw(st.integers(0, len(entries))), None)
    return tuple(entries)


@st.composite
def two_indices(draw):
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=1, max_size=2)))
    idx1 = _index(draw, len(shape), True)
    try:
        y_ndim = np.empty(shape)[idx1].ndim
    except IndexError:
        y_ndim = None
    idx2 = _index(draw, y_ndim or 0, True)
    return shape, draw(st.booleans()), idx1, idx2, y_ndim


@settings(max_examples=200, deadline=None)
@given(two_indices())
def test_merge_matches_numpy(case):
    shape, static, idx1, idx2, y_ndim = case
    assume(y_ndim is not None)
    value = np.arange(float(np.prod(shape))).reshape(shape)
    try:
        want = value[idx1][idx2]
    except IndexError:
        want = None
    sym = gt.TensorType("float64", shape if static else (None,) * len(shape))("s")
    try:
        out = sym[idx1][idx2]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = gj.function([sym], out, mode=PY)
            got = f(value)
    except IndexError:
        assert want is None, f"graphjit raised for {idx1} then {idx2} on {shape}"
        return
    assert want is not None, f"numpy raised for {idx1} then {idx2} on {shape}, graphjit gave {got}"
    assert got.shape == want.shape and np.array_equal(got, want)
    if static and None not in idx1:
        assert n_subtensors(f) <= 1, (idx1, idx2, names(f))


@st.composite
def length_free_pairs(draw):
    """A slice counted from the start or from the end, then a forward slice, an integer or a reversal."""
    small = st.integers(0, 8)
    if draw(st.booleans()):
        s1 = slice(draw(st.one_of(st.none(), small)), draw(st.one_of(st.none(), small)),
                   draw(st.one_of(st.none(), st.integers(1, 3))))
    else:
        neg = st.integers(-8, -1)
        s1 = slice(draw(st.one_of(st.none(), neg)), draw(st.one_of(st.none(), neg)), draw(st.integers(-3, -1)))
    kind = draw(st.sampled_from(["int", "slice", "reverse"]))
    if kind == "int":
        return s1, draw(st.integers(0, 6))
    if kind == "reverse":
        return s1, slice(None, None, -1)
    return s1, slice(draw(st.one_of(st.none(), small)), draw(st.one_of(st.none(), small)),
                     draw(st.one_of(st.none(), st.integers(1, 3))))


@settings(max_examples=150, deadline=None)
@given(length_free_pairs())
def test_merge_without_a_static_length_holds_for_every_length(pair):
    """One compiled graph (merged or not) gives numpy's values and IndexErrors for every length 0..12."""
    s1, e2 = pair
    f = gj.function([v], v[s1][e2], mode=PY)
    for length in range(13):
        value = np.arange(float(length))
        try:
            want = value[s1][e2]
        except IndexError:
            with pytest.raises(IndexError):
                f(value)
            continue
        got = f(value)
        assert got.shape == np.shape(want) and np.array_equal(got, want), (s1, e2, length)


def test_merge_without_a_static_length_fires_on_the_length_free_forms():
    for s1, e2 in [(slice(2, None), 3), (slice(1, 7, 2), slice(1, None)), (slice(-2, None, -1), slice(1, 3)),
                   (slice(-1, -7, -2), 1), (slice(3, None), slice(None, None, -1))]:
        assert n_subtensors(gj.function([v], v[s1][e2], mode=PY)) == 1, (s1, e2)


# --- alloc and shape -----------------------------------------------------------------------------
@pytest.mark.parametrize("inputs, build, vals, want", [
    ([n], lambda: gt.zeros((n, 4))[1:], [5], np.zeros((5, 4))[1:]),
    ([n], lambda: gt.zeros((n, 4))[:, 2], [5], np.zeros((5, 4))[:, 2]),
    ([v, n], lambda: gt.alloc(gt.specify_shape(v, (5,)), n, 5)[1:, ::-2],
     [np.arange(5.0), 3], np.broadcast_to(np.arange(5.0), (3, 5))[1:, ::-2]),
    ([v, n, i], lambda: gt.alloc(gt.specify_shape(v, (5,)), n, 5)[:, i], [np.arange(5.0), 3, -2],
     np.broadcast_to(np.arange(5.0), (3, 5))[:, -2]),
    ([n], lambda: gt.ones((n, 3))[None, 1:, None], [4], np.ones((4, 3))[None, 1:, None]),
], ids=["rows", "static_int", "slice_both", "int_through_value", "newaxes"])
def test_subtensor_of_alloc(inputs, build, vals, want):
    f = check(inputs, build(), vals, want)
    assert n_subtensors(f) <= 1 and not any(nm.startswith("Subtensor") and nm != "Subtensor" and
                                            names(f).index(nm) > names(f).index("Alloc") for nm in names(f))
    g = gj.function(inputs, build(), mode=PY.excluding("local_subtensor_of_alloc"))
    assert names(g)[-1].startswith("Subtensor")


def test_subtensor_of_alloc_left_alone():
    f = gj.function([v, n], gt.alloc(v, n, 5)[:, 1:], mode=PY)        # v may be length 1 or 5
    assert names(f)[-1].startswith("Subtensor")
    g = gj.function([n, i], gt.zeros((n, 4))[i], mode=PY)            # the IndexError must stay
    assert names(g)[-1].startswith("Subtensor")
    with pytest.raises(IndexError):
        g(3, 3)


def test_subtensor_of_shape_slice():
    t = gt.dtensor3("t")
    tv = np.zeros((2, 3, 4))
    f = check([t], t.shape[1:], [tv], np.array([3, 4]))
    assert not any("Subtensor" in nm or nm == "Shape" for nm in names(f))
    g = check([t], t.shape[::-2], [tv], np.array([4, 2]))
    assert not any("Subtensor" in nm for nm in names(g))
    h = gj.function([t, i], t.shape[i:], mode=PY)                    # symbolic bounds: kept
    assert any("Subtensor" in nm for nm in names(h))


# --- lift ----------------------------------------------------------------------------------------
x5 = gt.TensorType("float64", (None, 5))("x5")


@pytest.mark.parametrize("inputs, build, vals, want", [
    ([x], lambda: gt.exp(x)[2], [X / 10], np.exp(X / 10)[2]),
    ([x, i], lambda: gt.exp(x)[i, 1:], [X / 10, -1], np.exp(X / 10)[-1, 1:]),
    ([x], lambda: (x * 2.0 + 1.0)[::2], [X], (X * 2 + 1)[::2]),
    ([x5, v], lambda: (x5 + gt.specify_shape(v, (5,)))[1:3, 2], [X, np.arange(5.0)], (X + np.arange(5.0))[1:3, 2]),
    ([xs, v], lambda: (xs + gt.specify_shape(v, (6,)).dimshuffle(0, "x"))[2:, 1], [X, np.arange(6.0)],
     (X + np.arange(6.0)[:, None])[2:, 1]),
], ids=["unary_int", "symbolic", "chain", "static_operand", "broadcast_operand"])
def test_lift(inputs, build, vals, want):
    f = check(inputs, build(), vals, want)
    order = names(f)
    first_elemwise = min(k for k, nm in enumerate(order) if nm.startswith("Elemwise"))
    assert all(k < first_elemwise for k, nm in enumerate(order) if nm.startswith("Subtensor"))
    g = gj.function(inputs, build(), mode=PY.excluding("local_subtensor_lift"))
    assert names(g)[-1].startswith("Subtensor")


def test_lift_left_alone():
    e = gt.exp(x)
    f = gj.function([x], [e[1], e * 2], mode=PY)                      # exp(x) is needed whole anyway
    assert sum(nm.startswith("Elemwise{exp") for nm in names(f)) == 1
    g = gj.function([x, v], (x + v)[1, 2], mode=PY)                   # x or v may broadcast at run time
    assert names(g)[-1].startswith("Subtensor")
    h5 = gj.function([x, v], (x + gt.specify_shape(v, (5,)))[1:3, 2], mode=PY)   # x may still be 1 wide
    assert names(h5)[-1].startswith("Subtensor")
    h = gj.function([x], gt.exp(x)[:, None], mode=PY)                 # selects everything: nothing saved
    assert names(h)[-1].startswith("Subtensor")
    with pytest.raises(IndexError):                                    # the IndexError survives the lift
        gj.function([x, i], gt.exp(x)[i], mode=PY)(X, 6)
