"""Tensor rewrites: each one's graph before/after and its numbers in PY mode, stability, shapes, inplace."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.mode import Mode

PY = Mode(linker="py", rewriter="fast_run")
RAW = Mode(linker="py", rewriter=None)
NO_STAB = Mode(linker="py", rewriter="fast_run", exclude=["stabilize"])
COMPILE = Mode(linker="py", rewriter="fast_compile")


def op_names(f):
    return [str(n.op) for n in f.maker.fgraph.toposort()]


def compiled(inputs, out, mode=PY):
    return gj.function(inputs, out, mode=mode, on_unused_input="ignore")


def check_same(inputs, out, values, mode=PY):
    """Rewritten and raw graphs give the same numbers; returns the rewritten function."""
    f, g = compiled(inputs, out, mode), compiled(inputs, out, RAW)
    np.testing.assert_allclose(f(*values), g(*values), rtol=1e-12)
    return f


x, y = gt.dmatrix("x"), gt.dmatrix("y")
v = gt.dvector("v")
A = np.arange(1.0, 7.0).reshape(2, 3)
B = np.linspace(-1, 1, 6).reshape(2, 3)


# --- canonicalize ------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [lambda: x * 1, lambda: 1 * x, lambda: x + 0, lambda: 0 + x,
                                   lambda: x - 0, lambda: x / 1, lambda: x ** 1, lambda: -(-x)],
                         ids=["mul1", "1mul", "add0", "0add", "sub0", "div1", "pow1", "negneg"])
def test_identities_disappear(build):
    f = check_same([x], build(), [A])
    assert op_names(f) in ([], ["DeepCopyOp"])


def test_identity_that_broadcasts_is_kept():
    f = check_same([v], v * np.ones((2, 3)), [np.arange(3.0)])
    assert f(np.arange(3.0)).shape == (2, 3)
    r = check_same([v], v + np.zeros(3), [np.array([5.0])])  # v may be length 1 at run time
    assert r(np.array([5.0])).shape == (3,)


def test_identity_with_a_dtype_change_casts():
    i = gt.ivector("i")
    f = check_same([i], i * 1.0, [np.arange(3, dtype="int32")])
    assert f(np.arange(3, dtype="int32")).dtype == np.float64


def test_sub_self_and_constant_collection():
    f = check_same([x], x - x, [A])
    assert not any("sub" in n for n in op_names(f))
    g = check_same([x], (x * 2) * 3 + 1 + 2, [A])
    assert op_names(g).count("Elemwise{mul}") + op_names(g).count("Elemwise{mul,inplace}") == 1


def test_div_by_power_of_two_becomes_mul():
    f = check_same([x], x / 4.0, [A])
    assert any("mul" in n for n in op_names(f)) and not any("true_div" in n for n in op_names(f))
    g = check_same([x], x / 3.0, [A])
    assert any("true_div" in n for n in op_names(g))


def test_dimshuffle_merge_and_useless_cast():
    f = check_same([x], x.T.T + 1, [A])
    assert "Transpose" not in " ".join(op_names(f)) and not any("DimShuffle" in n for n in op_names(f))
    g = check_same([x], gt.DimShuffle(2, ("x", 1, 0))(x.T), [A])
    assert sum("DimShuffle" in n for n in op_names(g)) == 1
    assert op_names(check_same([x], gt.cast(x, "float64") * 2, [A])) == ["Elemwise{mul}"]


def test_elementwise_of_transposed_operands_is_transposed_once():
    """f(a.T, b.T, c) -> f(a, b, c.T).T (constants transposed, length-1 operands kept); a consumer's transpose
    cancels the one on top; a mix with an untransposed operand is left alone."""
    c = np.tril(np.arange(6.0).reshape(2, 3)).T
    B = A[::-1] / 7
    f = check_same([x, y], (x.T * c) - y.T + gt.constant(np.ones((1, 1))), [A, B])
    nodes = f.maker.fgraph.toposort()
    assert str(nodes[-1].op) == "Transpose"
    assert all(not isinstance(i.owner.op, gt.DimShuffle) for n in nodes[:-1] for i in n.inputs if i.owner)
    g = check_same([x, y], ((x.T * 2) - y.T).T.sum(axis=0), [A, B])
    assert not any("Transpose" in n for n in op_names(g))
    h = check_same([x, y], x.T * y.T.T.T + x.T, [A, B])     # y.T.T.T is y.T: one transpose, on top
    assert op_names(h).count("Transpose") == 1 and op_names(h)[-1] == "Transpose"
    k = check_same([x, v], x.T * v[:2], [A, np.ones(3)])    # an untransposed operand: not lifted
    assert op_names(k)[0] == "Transpose" and str(k.maker.fgraph.toposort()[-1].op) != "Transpose"


def test_constant_folding_and_merge():
    c = gt.constant(np.arange(3.0))
    f = check_same([v], v + gt.exp(c) * 2, [np.ones(3)])
    assert op_names(f) == ["Elemwise{add}"]
    g = check_same([x], gt.exp(x) + gt.exp(x), [A], mode=COMPILE)
    assert op_names(g).count("Elemwise{exp}") == 1


def test_folding_respects_do_constant_folding():
    f = compiled([], gt.alloc(1.0, 3000, 4000) * 0 + gt.zeros((2,)).sum(), PY)
    assert any("Alloc" in n for n in op_names(f))  # 12e6 elements: Alloc says no


def test_fast_compile_merges_folds_and_stabilizes_only():
    """FAST_COMPILE runs the stabilize phase (a value must not overflow in one mode only), not canonicalize
    (x * 1 stays) nor specialize; excluding "stabilize" leaves log(1 + x) alone."""
    f = compiled([x], gt.log(1 + x) * 1, COMPILE)
    assert op_names(f) == ["Elemwise{log1p}", "Elemwise{mul}"]
    f = compiled([x], gt.log(1 + x) * 1, gj.get_mode(COMPILE).excluding("stabilize"))
    assert op_names(f) == ["Elemwise{add}", "Elemwise{log}", "Elemwise{mul}"]


# --- shapes ------------------------------------------------------------------------------------
def test_shape_of_an_intermediate_does_not_compute_it():
    f = check_same([x, y], (gt.exp(x) + y).shape[0], [A, B])
    assert not any("exp" in n for n in op_names(f))
    assert f(A, B) == 2


def test_static_shapes_and_useless_shape_ops():
    s = gt.TensorType("float64", (2, 3))("s")
    f = check_same([s], gt.exp(s).shape, [A])
    assert op_names(f) in ([], ["DeepCopyOp"])
    g = check_same([x], gt.reshape(gt.exp(x), gt.exp(x).shape) + 1, [A])
    assert not any("Reshape" in n for n in op_names(g))
    h = check_same([x], gt.alloc(x, x.shape[0], x.shape[1]) * 2, [A])
    assert not any("Alloc" in n for n in op_names(h))


def test_useless_sum_to_shape_disappears():
    """The gradient of x * exp(x) needs no reduction to x's shape (both operands are x-shaped); of x * y it
    does (y may broadcast x at run time); SumToShape(SumToShape(g, s), s) keeps one."""
    from graphjit.tensor.elemwise_grad import SumToShape
    from graphjit.tensor.join import make_vector
    same = check_same([x], gj.grad((x * gt.exp(x)).sum(), x), [A])
    assert not any("SumToShape" in n for n in op_names(same))
    other = check_same([x, y], gj.grad((x * y).sum(), x), [A, B])
    assert any("SumToShape" in n for n in op_names(other))
    row = gt.dmatrix("row")
    s = make_vector([row.shape[0], row.shape[1]], dtype="int64")
    twice = SumToShape((None, None))(SumToShape((None, None))(x * 2.0, s), s)
    f = check_same([x, row], twice, [A, np.ones((1, 3))])
    assert sum("SumToShape" in n for n in op_names(f)) == 1
    np.testing.assert_allclose(f(A, np.ones((1, 3))), (2 * A).sum(axis=0, keepdims=True))


# --- stabilize ---------------------------------------------------------------------------------
def _unstable_then_stable(inputs, out, values, want):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = compiled(inputs, out, NO_STAB)(*values)
        fixed = compiled(inputs, out, PY)(*values)
    assert np.all(np.isfinite(fixed)) and np.allclose(fixed, want, rtol=1e-10, atol=0)
    return raw, fixed


def test_log1p():
    tiny = np.array([1e-20, 1e-17])
    raw, _ = _unstable_then_stable([v], gt.log(1 + v), [tiny], np.log1p(tiny))
    assert np.all(raw == 0)  # the unstable form loses every digit


def test_expm1():
    tiny = np.array([1e-20, -1e-18])
    raw, _ = _unstable_then_stable([v], gt.exp(v) - 1, [tiny], np.expm1(tiny))
    assert np.all(raw == 0)


def test_softplus_from_log1p_exp():
    big = np.array([800.0, 1000.0])
    raw, _ = _unstable_then_stable([v], gt.log(1 + gt.exp(v)), [big], big)
    assert np.all(np.isinf(raw))


def test_log_sigmoid_and_log_one_minus_sigmoid():
    far = np.array([-800.0, 800.0, 40.0])
    raw, _ = _unstable_then_stable([v], gt.log(gt.sigmoid(v)), [far], -np.logaddexp(0, -far))
    assert np.isinf(raw[0])
    raw, _ = _unstable_then_stable([v], gt.log(1 - gt.sigmoid(v)), [far], -np.logaddexp(0, far))
    assert np.isinf(raw[1]) and np.isinf(raw[2])


def test_log_sum_exp():
    from scipy.special import logsumexp
    big = np.array([[1000.0, 999.0], [-1000.0, -1001.0]])
    raw, _ = _unstable_then_stable([x], gt.log(gt.sum(gt.exp(x), axis=1)), [big], logsumexp(big, axis=1))
    assert not np.all(np.isfinite(raw))
    f = compiled([x], gt.log(gt.sum(gt.exp(x))), PY)
    assert any("LogSumExp" in n for n in op_names(f))


def test_log_softmax_and_crossentropy_with_labels():
    from scipy.special import log_softmax
    big = np.array([[1000.0, 0.0, -1000.0], [0.0, 1.0, 2.0]])
    raw, fixed = _unstable_then_stable([x], gt.log(gt.softmax(x)), [big], log_softmax(big, axis=1))
    assert np.isinf(raw[0]).any()
    labels = gt.lvector("labels")
    lab = np.array([2, 0])
    cost = -gt.log(gt.take_labels(gt.softmax(x), labels))
    want = -log_softmax(big, axis=1)[np.arange(2), lab]
    raw, _ = _unstable_then_stable([x, labels], cost, [big, lab], want)
    assert np.isinf(raw[0])


# --- specialize --------------------------------------------------------------------------------
@pytest.mark.parametrize("exponent, op", [(2, "sqr"), (0.5, "sqrt"), (-1, "reciprocal"), (3, "sqr"),
                                          (4, "sqr"), (-2, "reciprocal"), (1.5, "sqrt"), (-1.5, "sqrt")])
def test_pow_specialization(exponent, op):
    f = check_same([x], x ** exponent, [A])
    assert not any("pow" in n for n in op_names(f)) and any(op in n for n in op_names(f))


@pytest.mark.parametrize("exponent", [1.5, -1.5])
def test_pow_three_halves_keeps_numpys_edges(exponent):
    """Signed zeros, infinities, negatives (NaN), tiny and huge values: numpy's power, compiled and in Python."""
    edges = np.array([0.0, -0.0, np.inf, -np.inf, -1.0, np.nan, 1e-300, 1e-206, 3e-206, 1e200, 1e250, 0.3, 7.0])
    for mode in ("FAST_RUN", PY):
        f = compiled([v], v ** exponent, mode)
        assert not any("pow" in n for n in op_names(f))
        with np.errstate(all="ignore"):
            want = np.power(edges, exponent)
            got = f(edges)
        np.testing.assert_allclose(got, want, rtol=4e-16, atol=0)
        assert np.array_equal(np.signbit(got), np.signbit(want))


def test_integer_pow_and_x_times_x():
    i = gt.lvector("i")
    f = check_same([i], i ** 2, [np.arange(4)])
    assert f(np.arange(4)).dtype == np.int64 and any("sqr" in n for n in op_names(f))
    g = check_same([i], i ** 0.5, [np.arange(4)])
    assert g(np.arange(4)).dtype == np.float64
    h = check_same([x], x * x, [A])
    assert any("sqr" in n for n in op_names(h))


def test_sum_of_squares_and_sum_of_alloc():
    f = check_same([v], gt.sum(v ** 2), [np.arange(4.0)])
    assert op_names(f) == ["Dot"]
    n = gt.lscalar("n")
    c = gt.dscalar("c")
    g = check_same([c, n], gt.sum(gt.alloc(c, n, 3)), [2.5, 4])
    assert not any("Alloc" in o or "Sum" in o for o in op_names(g))


def test_switch_of_one_unary_op_applies_it_once():
    """switch(c, -softplus(-v), -softplus(v)) (a Bernoulli log-likelihood) computes softplus and neg once each;
    a branch read elsewhere keeps the graph as it is."""
    c = gt.bvector("c")
    f = check_same([c, v], gt.switch(c, -gt.softplus(-v), -gt.softplus(v)),
                   [np.array([1, 0, 1, 0], "int8"), np.array([-30.0, -1.0, 2.0, 40.0])])
    names = op_names(f)
    assert sum("softplus" in n for n in names) == 1 and sum("switch" in n for n in names) == 1
    s = gt.exp(v)
    g = check_same([c, v], [gt.switch(c, s, gt.exp(-v)), s], [np.array([1, 0], "int8"), np.array([0.5, 2.0])])
    assert sum("exp" in n for n in op_names(g)) == 2


# --- inplace -----------------------------------------------------------------------------------
def test_inplace_rewrite_and_its_limits():
    f = check_same([x], gt.exp(gt.sin(x)) * 2, [A])
    assert sum("inplace" in n for n in op_names(f)) == 2
    a = A.copy()
    f(a)
    assert np.array_equal(a, A)  # inputs are never overwritten
    shared = gt.exp(x)
    g = check_same([x], [gt.sin(shared), shared * 2], [A])  # shared has two readers
    assert not any("exp,inplace" in n for n in op_names(g))
    h = compiled([x], gt.exp(x), Mode(linker="py", rewriter="fast_run", exclude=["inplace"]))
    assert not any("inplace" in n for n in op_names(h))


def test_inplace_never_overwrites_a_smaller_operand():
    col = gt.dmatrix("col")
    f = check_same([col, x], gt.exp(col) + x, [np.ones((2, 1)), A])  # exp(col) broadcasts at run time
    assert f(np.ones((2, 1)), A).shape == (2, 3)


def test_mutable_input_and_shared_update_may_be_overwritten():
    w = gj.shared(np.ones(3), name="w")
    upd = gj.function([], [], updates=[(w, w * 2)], mode=PY)
    assert any("inplace" in str(n.op) for n in upd.maker.fgraph.apply_nodes)
    upd()
    assert np.array_equal(w.get_value(), [2.0, 2.0, 2.0])
    m = gj.function([gj.In(v, mutable=True)], gt.exp(v), mode=PY)
    assert any("inplace" in str(n.op) for n in m.maker.fgraph.apply_nodes)


UNARY = [gt.exp, gt.sin, gt.tanh, gt.neg, gt.sqr, gt.abs]
BINARY = [gt.add, gt.mul, gt.sub, gt.maximum]


@st.composite
def elementwise_graphs(draw):
    """A random small elementwise graph over two matrices and a row, and which outputs to return."""
    pool = [x, y, gt.drow("r")]
    for _ in range(draw(st.integers(2, 8))):
        if draw(st.booleans()):
            pool.append(draw(st.sampled_from(UNARY))(draw(st.sampled_from(pool))))
        else:
            pool.append(draw(st.sampled_from(BINARY))(draw(st.sampled_from(pool)), draw(st.sampled_from(pool))))
    outs = draw(st.lists(st.sampled_from(pool[3:]), min_size=1, max_size=3, unique_by=id))
    return pool[:3], outs


@settings(max_examples=60, deadline=None)
@given(elementwise_graphs(), st.integers(0, 2 ** 31))
def test_inplace_never_changes_a_result(graph, seed):
    inputs, outs = graph
    rng = np.random.default_rng(seed)
    values = [rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (1, 3))]
    kept = [v.copy() for v in values]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compiled(inputs, outs, PY)(*values)
        want = compiled(inputs, outs, Mode(linker="py", rewriter="fast_run", exclude=["inplace"]))(*values)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for a, b in zip(values, kept):
        assert np.array_equal(a, b)


def test_length_forms_identify_the_same_length_written_differently():
    from graphjit.tensor.join import make_vector
    from graphjit.tensor.rewriting.shape import length_form
    from graphjit.tensor.shape import shape_i
    n = gt.lscalar("n")
    same = (x.shape[1], x.shape[-1], shape_i(x, 1), make_vector([x.shape[0], x.shape[1]])[1],
            gt.switch(gt.eq(x.shape[1], 1), x.shape[1], x.shape[1]))
    forms = [length_form(v) for v in same]
    assert all(f == forms[0] for f in forms)
    assert length_form(x.shape[0]) != forms[0] and length_form(y.shape[1]) != forms[0]
    assert length_form(gt.switch(gt.eq(x.shape[1], 1), y.shape[1], x.shape[1])) != forms[0]
    assert length_form(make_vector([n, x.shape[1]])[-1]) == forms[0]
    assert length_form(gt.constant(3)) == ("const", 3)


def test_length_forms_through_the_shape_feature():
    """With a ShapeFeature, a computed variable's length is the length it infers: shape(log_softmax(z))[0]
    and Shape_i{0}(softmax(z)) are both z's first length (what a softmax gradient's SumToShape needs)."""
    from graphjit.graph.fg import FunctionGraph
    from graphjit.tensor.rewriting.shape import length_form, shape_feature_of
    from graphjit.tensor.shape import shape_i
    a, b = gt.log_softmax(x), gt.softmax(x)
    fg = FunctionGraph([x], [a, b], clone=False)
    feature = shape_feature_of(fg)
    la, lb = a.shape[0], shape_i(b, 0)
    assert length_form(la) != length_form(lb)
    assert length_form(la, feature) == length_form(lb, feature) == length_form(x.shape[0])
    assert length_form(shape_i(b, 1), feature) != length_form(la, feature)
