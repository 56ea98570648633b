"""The user's graph keeps Theano's shape (a lower-rank operand broadcast by an explicit DimShuffle), while the compiled
graphs stay what the rewrites made of the pre-shaped constants: their debugprints are pinned here, in full for the
small graphs, as a digest for the workloads (W1, W3, W4, W9, the tutorial's logistic regression; issue #32)."""

import hashlib

import numpy as np
import pytest

import graphjit as theano
import graphjit.tensor as T
from graphjit.printing import debugprint

from w9_graphs import w9


# --- the user's view: Theano's Graph Structures page -------------------------------------------

def test_x_times_2_as_the_graph_structures_page_shows_it():
    x = T.dmatrix("x")
    y = x * 2.
    assert y.owner.op.name == "Elemwise{mul}" and str(y.owner.op) == y.owner.op.name
    assert len(y.owner.inputs) == 2
    assert y.owner.inputs[0] is x
    assert str(y.owner.inputs[1]) == "DimShuffle{x,x}.0"
    assert isinstance(y.owner.inputs[1], T.TensorVariable)
    assert isinstance(y.owner.inputs[1].owner, theano.graph.basic.Apply)
    assert isinstance(y.owner.inputs[1].owner.op, T.DimShuffle)
    (two,) = y.owner.inputs[1].owner.inputs
    assert isinstance(two, T.TensorConstant) and two.ndim == 0 and str(two) == "TensorConstant{2.0}"
    assert debugprint(y, file="str") == (
        "Elemwise{mul} [@A] ''\n"
        " |x [@B]\n"
        " |DimShuffle{x,x} [@C] ''\n"
        "   |TensorConstant{2.0} [@D]\n")


def test_every_lower_rank_operand_is_broadcast_by_a_dimshuffle():
    x, v, s = T.dmatrix("x"), T.dvector("v"), T.dscalar("s")
    for operand, order in ((v, ("x", 0)), (s, ("x", "x")), (np.float64(3), ("x", "x")), (np.ones(3), ("x", 0))):
        z = T.add(x, operand)
        shuffled = z.owner.inputs[1]
        assert isinstance(shuffled.owner.op, T.DimShuffle) and shuffled.owner.op.new_order == order
        assert shuffled.owner.inputs[0].ndim == 2 - order.count("x")
    same_rank = x + np.ones((1, 3))
    assert isinstance(same_rank.owner.inputs[1], T.TensorConstant)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
def test_the_broadcast_constant_computes_as_before(mode):
    x = T.dmatrix("x")
    f = theano.function([x], [x * 2., 1 - x, T.switch(x > 0, x, 0), x ** 2])
    data = np.array([[-1.5, 0.0], [2.0, 3.0]])
    for got, want in zip(f(data), [data * 2., 1 - data, np.where(data > 0, data, 0), data ** 2]):
        np.testing.assert_array_equal(got, want)


def test_the_pow_gradient_sees_through_the_broadcast_constant():
    """d(w**2)/dw is 2*w: no switch on a zero exponent, the constant 2 is not zero (a view of it neither)."""
    w = T.dvector("w")
    g = theano.grad((w ** 2).sum(), w)
    text = debugprint(theano.function([w], g), file="str")
    assert "switch" not in text
    np.testing.assert_allclose(g.eval({w: np.array([0.0, 1.5])}), [0.0, 3.0])


def test_elemwise_names_name_the_scalar_op():
    x = T.dvector("x")
    assert (x + 1).owner.op.name == "Elemwise{add}"
    assert T.exp(x).owner.op.name == "Elemwise{exp}"
    op = T.Elemwise(theano.scalar.math.mul, {0: 0})
    assert op.name == "Elemwise{mul,inplace}" == str(op)
    named = T.Elemwise(theano.scalar.math.mul, name="my_mul")
    assert named.name == "my_mul" == str(named)


# --- the compiled graphs: unchanged by the user's DimShuffles ----------------------------------

def _graphs():
    def w1():
        a, b, c = T.dvector("x"), T.dvector("y"), T.dvector("z")
        return [a, b, c], T.exp(-a * a) * T.sin(b) + a * b / (1 + c * c), None

    def seed_x_times_2():
        x = T.dmatrix("x")
        return [x], x * 2., None

    def seed_v_plus_1_sum():
        v = T.vector()
        return [v], (v + 1).sum(), None

    def scalars_and_fill():
        x = T.dmatrix("x")
        return [x], [T.sqr(x) + 3, T.switch(x > 0, x, 0), T.maximum(x, 0), x ** 2, 1 - x, x / 2, T.fill(x, 3.),
                     T.ones_like(x) * x], None

    def logistic_regression():
        x, y = T.dmatrix("x"), T.dvector("y")
        w = theano.shared(np.zeros(4), name="w")
        b = theano.shared(0., name="b")
        p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
        prediction = p_1 > 0.5
        xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
        cost = xent.mean() + 0.01 * (w ** 2).sum()
        gw, gb = theano.grad(cost, [w, b])
        return [x, y], [prediction, xent], ((w, w - 0.1 * gw), (b, b - 0.1 * gb))

    def w3(dtype):
        x, y = T.matrix("x", dtype=dtype), T.matrix("y", dtype=dtype)
        rng = np.random.default_rng(0)
        shared = [theano.shared(rng.standard_normal(s).astype(dtype), name=n)
                  for s, n in (((5, 4), "W1"), ((4,), "b1"), ((4, 3), "W2"), ((3,), "b2"))]
        W1, b1, W2, b2 = shared
        z = T.dot(T.tanh(T.dot(x, W1) + b1), W2) + b2
        z = z - z.max(axis=1, keepdims=True)
        logp = z - T.log(T.exp(z).sum(axis=1, keepdims=True))
        loss = -(y * logp).sum(axis=1).mean()
        lr = np.asarray(0.1, dtype=dtype)
        return [x, y], loss, [(p, p - lr * g) for p, g in zip(shared, theano.grad(loss, shared))]

    def scan_reduce():
        """a * x + 1 in a step: the 1 stays a constant of the inner graph, not a loop input pushed out"""
        X, a0 = T.dmatrix("X"), T.dvector("a0")
        return [X, a0], theano.reduce(lambda x, a: a * x + 1, sequences=X, outputs_info=a0)[0], None

    def w9_graph(n, seed):
        x, w = T.dmatrix("x"), T.dmatrix("w")
        return [x, w], w9.evaluate(w9.spec(n, seed), T, x, w), None

    return {"w1": w1, "seed_x_times_2": seed_x_times_2, "seed_v_plus_1_sum": seed_v_plus_1_sum,
            "scalars_and_fill": scalars_and_fill, "logistic_regression": logistic_regression,
            "scan_reduce": scan_reduce,
            "w3_float64": lambda: w3("float64"), "w3_float32": lambda: w3("float32"),
            "w9_60": lambda: w9_graph(60, 1), "w9_200": lambda: w9_graph(200, 3)}


GRAPHS = _graphs()

# debugprint(function(...)) as the rewrites made it before the DimShuffles (the base tree's, identical)
EXPECTED = {
    ('w1', 'FAST_RUN'): """\
Elemwise{add} [@A] ''   9
 |Elemwise{mul} [@B] ''   4
 | |Elemwise{exp,inplace} [@C] ''   2
 | | |Elemwise{mul} [@D] ''   1
 | |   |Elemwise{neg} [@E] ''   0
 | |   | |x [@F]
 | |   |x [@F]
 | |Elemwise{sin} [@G] ''   3
 |   |y [@H]
 |Elemwise{true_div} [@I] ''   8
   |Elemwise{mul} [@J] ''   5
   | |x [@F]
   | |y [@H]
   |Elemwise{add,inplace} [@K] ''   7
     |TensorConstant{[1.]} [@L]
     |Elemwise{sqr} [@M] ''   6
       |z [@N]
""",
    ('seed_x_times_2', 'FAST_RUN'): """\
Elemwise{mul} [@A] ''   0
 |x [@B]
 |TensorConstant{[[2.]]} [@C]
""",
    ('seed_v_plus_1_sum', 'FAST_RUN'): """\
Sum [@A] ''   1
 |Elemwise{add} [@B] ''   0
   |<TensorType(float64, vector)> [@C]
   |TensorConstant{[1.]} [@D]
""",
    ('scalars_and_fill', 'FAST_RUN'): """\
Elemwise{add} [@A] ''   1
 |Elemwise{sqr} [@B] ''   0
 | |x [@C]
 |TensorConstant{[[3.]]} [@D]
Elemwise{switch} [@E] ''   3
 |Elemwise{gt} [@F] ''   2
 | |x [@C]
 | |TensorConstant{[[0.]]} [@G]
 |x [@C]
 |TensorConstant{[[0.]]} [@G]
Elemwise{maximum} [@H] ''   4
 |x [@C]
 |TensorConstant{[[0.]]} [@G]
Elemwise{sqr} [@B] ''   0
Elemwise{sub} [@I] ''   5
 |TensorConstant{[[1.]]} [@J]
 |x [@C]
Elemwise{mul} [@K] ''   6
 |x [@C]
 |TensorConstant{[[0.5]]} [@L]
Alloc [@M] ''   9
 |TensorConstant{[[3.]]} [@D]
 |Shape_i{0} [@N] ''   7
 | |x [@C]
 |Shape_i{1} [@O] ''   8
   |x [@C]
Elemwise{mul} [@P] ''   11
 |Alloc [@Q] ''   10
 | |TensorConstant{[[1.]]} [@J]
 | |Shape_i{0} [@N] ''   7
 | |Shape_i{1} [@O] ''   8
 |x [@C]
""",
    ('scalars_and_fill', 'FAST_COMPILE'): """\
Elemwise{add} [@A] ''   1
 |Elemwise{sqr} [@B] ''   0
 | |x [@C]
 |TensorConstant{[[3.]]} [@D]
Elemwise{switch} [@E] ''   3
 |Elemwise{gt} [@F] ''   2
 | |x [@C]
 | |TensorConstant{[[0.]]} [@G]
 |x [@C]
 |TensorConstant{[[0.]]} [@G]
Elemwise{maximum} [@H] ''   4
 |x [@C]
 |TensorConstant{[[0.]]} [@G]
Elemwise{pow} [@I] ''   5
 |x [@C]
 |TensorConstant{[[2.]]} [@J]
Elemwise{sub} [@K] ''   6
 |TensorConstant{[[1.]]} [@L]
 |x [@C]
Elemwise{true_div} [@M] ''   7
 |x [@C]
 |TensorConstant{[[2.]]} [@J]
Elemwise{second} [@N] ''   8
 |x [@C]
 |TensorConstant{[[3.]]} [@D]
Elemwise{mul} [@O] ''   10
 |Elemwise{second} [@P] ''   9
 | |x [@C]
 | |TensorConstant{[[1.]]} [@L]
 |x [@C]
""",
    ('scan_reduce', 'FAST_COMPILE'): """\
Subtensor{-1} [@A] ''   3
 |Scan{scan,for,keep=2} [@B] ''   2
   |Subtensor{0} [@C] ''   1
   | |Shape [@D] ''   0
   |   |X [@E]
   |X [@E]
   |a0 [@F]
""",
    ('scan_reduce', 'FAST_RUN'): """\
Subtensor{-1} [@A] ''   2
 |Scan{scan,for,keep=2} [@B] ''   1
   |Shape_i{0} [@C] ''   0
   | |X [@D]
   |X [@D]
   |a0 [@E]
""",
}

# (lines, the first 16 hex digits of the sha256 of the text) for the larger graphs; the logistic regression's and
# W3's are those of the gradients that read only what the math needs (issue 32: no second(w, ...), no division by
# a sigmoid that cancels), otherwise the same as before the explicit DimShuffle
DIGESTS = {
    ("logistic_regression", "FAST_RUN"): (87, "87fb21f562565bba"),
    ("logistic_regression", "FAST_COMPILE"): (104, "f0e3fe67c97abd19"),
    ("w3_float64", "FAST_RUN"): (143, "515ee5608a6a3fe5"),
    ("w3_float32", "FAST_RUN"): (143, "158abfd253e07875"),
    ("w3_float64", "FAST_COMPILE"): (145, "9af7a87e1a545b24"),
    ("w3_float32", "FAST_COMPILE"): (145, "914c5c73f9555f15"),
    ("w9_60", "FAST_RUN"): (117, "710853c7cd46c4b4"),
    ("w9_60", "FAST_COMPILE"): (120, "11f98cd012d95d34"),
    ("w9_200", "FAST_RUN"): (404, "b12ca4ecd0f37665"),   # its (1,k) x (k,k) products are Gemv{T} (issue 36)
    ("w9_200", "FAST_COMPILE"): (379, "ad3a5fccf9170e1d"),
}


def _compiled_text(name: str, mode: str) -> str:
    inputs, outputs, updates = GRAPHS[name]()
    return debugprint(theano.function(inputs, outputs, updates=updates, mode=mode), file="str")


@pytest.mark.parametrize("name, mode", list(EXPECTED))
def test_compiled_graph_is_unchanged(name, mode):
    assert _compiled_text(name, mode) == EXPECTED[name, mode]


@pytest.mark.parametrize("name, mode", list(DIGESTS))
def test_compiled_graph_digest_is_unchanged(name, mode):
    text = _compiled_text(name, mode)
    got = (len(text.splitlines()), hashlib.sha256(text.encode()).hexdigest()[:16])
    assert got == DIGESTS[name, mode], f"the compiled graph of {name} ({mode}) changed:\n{text}"


def test_a_scan_inner_graph_holds_the_constant_itself():
    X, a0 = T.dmatrix("X"), T.dvector("a0")
    out = theano.reduce(lambda x, a: a * x + 1, sequences=X, outputs_info=a0)[0]
    scan_op = out.owner.inputs[0].owner.op
    inner = scan_op.fgraph
    assert not any(isinstance(n.op, T.DimShuffle) for n in inner.apply_nodes)
    assert any(isinstance(v, T.TensorConstant) and v.data.shape == (1,) for v in inner.variables)
    f = theano.function([X, a0], out, mode="FAST_COMPILE")
    np.testing.assert_allclose(f(np.full((3, 2), 2.0), np.ones(2)), [15.0, 15.0])
