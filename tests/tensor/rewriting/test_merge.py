"""MergeRewriter (common subexpressions): equal nodes merge whether their ops are one instance or equal copies."""

import numpy as np

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.fg import FunctionGraph
from graphjit.tensor.elemwise import DimShuffle
from graphjit.tensor.rewriting.basic import merge_rewriter


def _ops(fg):
    return sorted(type(n.op).__name__ + str(n.op) for n in fg.apply_nodes)


def test_equal_op_instances_merge_and_different_ones_do_not():
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    a = DimShuffle(2, (1, 0))(x)            # three instances of one transpose: equal ops
    b = DimShuffle(2, (1, 0))(x)
    c = DimShuffle(2, (1, 0))(y)            # same op, other input: stays
    d = DimShuffle(2, (0, 1, "x"))(x)       # another op on x: stays
    e = gt.exp(a) + gt.exp(b)               # the exp nodes merge once their inputs have
    fg = FunctionGraph([x, y], [e, c, d.sum(axis=2), a * b])
    assert len(fg.apply_nodes) == 9
    merged = merge_rewriter.apply(fg)
    assert merged == 2 and len(fg.apply_nodes) == 7
    assert merge_rewriter.apply(fg) == 0            # nothing changed since: nothing to do
    shuffles = [n for n in fg.apply_nodes if isinstance(n.op, DimShuffle)]
    assert sorted((n.op.new_order, n.inputs[0].name) for n in shuffles) == [
        ((0, 1, "x"), "x"), ((1, 0), "x"), ((1, 0), "y")]


def test_merged_function_computes_the_same():
    x = gt.dvector("x")
    outs = [gt.exp(x) * 2.0, gt.exp(x) * 2.0 + gt.exp(x)]
    f = gj.function([x], outs, mode="FAST_RUN")
    v = np.linspace(-1.0, 1.0, 5)
    r = f(v)
    np.testing.assert_allclose(r[0], np.exp(v) * 2.0)
    np.testing.assert_allclose(r[1], np.exp(v) * 3.0)
    assert sum(1 for n in f.maker.fgraph.apply_nodes if "exp" in str(n.op).lower()) <= 1


def test_a_graph_without_equal_nodes_is_not_sorted(monkeypatch):
    """No two equal nodes: nothing can merge, and the pass returns without sorting the graph."""
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    fg = FunctionGraph([x, y], [gt.exp(x) + gt.tanh(y), gt.exp(y)])
    def no_sort():
        raise AssertionError("sorted")
    monkeypatch.setattr(fg, "toposort", no_sort)
    assert merge_rewriter.apply(fg) == 0 and len(fg.apply_nodes) == 4
    fg2 = FunctionGraph([x, y], [gt.exp(x) + gt.exp(x)])
    monkeypatch.setattr(fg2, "toposort", no_sort)
    try:
        merge_rewriter.apply(fg2)
    except AssertionError as e:
        assert str(e) == "sorted"               # equal nodes: the ordered pass runs
    else:
        raise AssertionError("equal nodes were not merged in order")
