"""pp / pprint: graphjit's ops printed as math, in Theano's style."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.printing import OperatorPrinter, PPrinter, pp, pprint


@pytest.fixture
def xyw():
    return gt.dmatrix("x"), gt.dvector("y"), gt.dvector("w")


def test_pp_is_pprint_and_exported():
    assert pp is pprint is gj.pp is gj.pprint


@pytest.mark.parametrize("build, text", [
    (lambda x, y, w: x + y, "(x + y)"),
    (lambda x, y, w: gt.exp(-x), "exp((-x))"),
    (lambda x, y, w: gt.dot(x, w), "dot(x, w)"),
    (lambda x, y, w: (x - y) - (x - y), "((x - y) - (x - y))"),
    (lambda x, y, w: x * y / 2, "((x * y) / 2.0)"),
    (lambda x, y, w: x ** 2 + x // 3 + x % 4, "(((x ** 2.0) + (x // 3.0)) + (x % 4.0))"),
    (lambda x, y, w: (x > y) & ~(x <= 0), "((x > y) & (~(x <= 0.0)))"),
    (lambda x, y, w: gt.tanh(gt.dot(x, w) + 1), "tanh((dot(x, w) + 1.0))"),
    (lambda x, y, w: gt.switch(x > 0, x, 0), "switch((x > 0.0), x, 0.0)"),
    (lambda x, y, w: gt.maximum(x, y), "maximum(x, y)"),
    (lambda x, y, w: gt.cast(x, "float32"), "cast(x, 'float32')"),
    (lambda x, y, w: x[1:3], "x[1:3]"),
    (lambda x, y, w: x[1, ::-1], "x[1, ::-1]"),
    (lambda x, y, w: x[gt.lscalar("i"):], "x[i:]"),
    (lambda x, y, w: x[[0, 2]], "x[[0, 2]]"),
    (lambda x, y, w: gt.set_subtensor(x[1:], 0.0), "set_subtensor(x[1:], 0.0)"),
    (lambda x, y, w: gt.inc_subtensor(x[:, 0], y), "inc_subtensor(x[:, 0], y)"),
    (lambda x, y, w: x.sum(axis=0), "sum(x, axis=0)"),
    (lambda x, y, w: x.sum(), "sum(x)"),
    (lambda x, y, w: x.max(axis=1), "max(x, axis=1)"),
    (lambda x, y, w: x.prod(axis=(0, 1)), "prod(x)"),
    (lambda x, y, w: x.argmax(axis=0), "argmax(x, axis=0)"),
    (lambda x, y, w: x.T, "x.T"),
    (lambda x, y, w: y.dimshuffle("x", 0), "dimshuffle(y, ('x', 0))"),
    (lambda x, y, w: x.shape, "x.shape"),
    (lambda x, y, w: x.shape[0], "x.shape[0]"),
    (lambda x, y, w: x.reshape((6,)), "reshape(x, 6)"),
    (lambda x, y, w: gt.join(0, x, x), "join(0, x, x)"),
    (lambda x, y, w: gt.alloc(0.0, 3, 4), "alloc(0.0, 3, 4)"),
    (lambda x, y, w: abs(x) + gt.log1p(y), "(abs(x) + log1p(y))"),
])
def test_common_ops_print_as_math(xyw, build, text):
    assert pp(build(*xyw)) == text


def test_mean_and_functions(xyw):
    x, y, w = xyw
    assert pp(x.mean()) == "(sum(x) / cast((x.shape[0] * x.shape[1]), 'float64'))"
    f = gj.function([x, w], gt.exp(-gt.dot(x, w)), mode="PY")
    assert pp(f) == pp(f.maker.fgraph.outputs[0])
    assert pp([x + y, x]) == "(x + y)\nx"


def test_constant_arrays_and_other_graphjit_ops(xyw):
    x, y, w = xyw
    assert pp(x + np.array([[1.0, 2.0]])) == "(x + [[1., 2.]])"
    assert pp(gt.special.softmax(x, axis=-1)).startswith("softmax(x, axis=")


def test_user_printers_win_and_clone_is_independent(xyw):
    x, y, w = xyw
    x, w = gt.dvector("x"), gt.dvector("w")
    mine = pprint.clone()
    mine.assign(gt.add, OperatorPrinter("plus", 30, "either", parens=False))
    assert mine(x + w) == "x plus w" and pprint(x + w) == "(x + w)"
    empty = PPrinter()
    assert empty(x + w) == "Elemwise{add}(x, w)"
