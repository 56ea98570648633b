"""Rewritten graphs on disk (compile/rewrite_cache.py): a warm maker skips the rewrites, nothing else changes."""

import os
import pickle

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as T
from graphjit.compile import flat_graph, rewrite_cache
from graphjit.compile.mode import get_mode
from graphjit.link.llvm.cache.objects import GRAPH_SUFFIX


def entries(directory):
    return [os.path.join(b, f) for b, _, fs in os.walk(directory) for f in fs
            if f.endswith(GRAPH_SUFFIX)]


def build(x, y):
    q = T.true_div(x, y)
    return q, T.exp(q).sum() + T.log1p(x * x).mean()


def test_second_maker_takes_the_rewritten_graph(cache_dir):
    x, y = T.dvector("x"), T.dvector("y")
    made = []
    for _ in range(2):                                       # one source line: one key
        made.append(gj.function([x, y], build(x, y)[1]))
    first, second = made
    assert (first.maker.rewrites_cached, second.maker.rewrites_cached) == (False, True)
    assert len(entries(cache_dir)) == 1
    a, b = np.linspace(0.1, 1, 5), np.linspace(1, 2, 5)
    np.testing.assert_allclose(second(a, b), first(a, b), rtol=1e-15)
    assert [str(n.op) for n in second.maker.fgraph.toposort()] == [str(n.op) for n in first.maker.fgraph.toposort()]
    with pytest.raises(ValueError) as info:                  # errors still name the user's line
        second(a, b[:3])
    assert "Created at:" in str(info.value) and __file__ in str(info.value)


def test_shared_variables_keep_their_containers(cache_dir):
    w = gj.shared(np.ones(3), name="w")
    x = T.dvector("x")
    fns = []
    for _ in range(2):
        fns.append(gj.function([x], (w * x).sum(), updates=[(w, w + x)]))
    f, g = fns
    assert g.maker.rewrites_cached
    w.set_value(np.array([1.0, 2.0, 3.0]))
    assert g(np.ones(3)) == 6.0
    np.testing.assert_array_equal(w.get_value(), [2.0, 3.0, 4.0])
    assert f(np.ones(3)) == 9.0                               # both see (and update) the same variable
    np.testing.assert_array_equal(w.get_value(), [3.0, 4.0, 5.0])


def test_a_graph_with_in_place_updates_sorts_the_same_when_loaded(cache_dir):
    """The loaded graph gets the DestroyHandler the in-place rewrites attached: same order, same plan, same code."""
    W1, W2 = gj.shared(np.full((4, 3), 0.5), name="W1"), gj.shared(np.full((3, 2), 0.25), name="W2")
    b1, b2 = gj.shared(np.zeros(3), name="b1"), gj.shared(np.zeros(2), name="b2")
    x, y = T.dmatrix("x"), T.dmatrix("y")
    out = T.dot(T.tanh(T.dot(x, W1) + b1), W2) + b2
    cost = ((out - y) ** 2).mean()
    params = [W1, b1, W2, b2]
    updates = [(p, p - 0.1 * g) for p, g in zip(params, gj.grad(cost, params))]
    fns = []
    for _ in range(2):
        fns.append(gj.function([x, y], cost, updates=updates))
    first, second = fns
    assert (first.maker.rewrites_cached, second.maker.rewrites_cached) == (False, True)
    ops = [[str(n.op) for n in f.maker.fgraph.toposort()] for f in fns]
    assert ops[0] == ops[1] and "Gemm{inplace}" in ops[0]
    assert second.native.cache_key == first.native.cache_key


def test_key_follows_names_lines_settings_and_mode(cache_dir, monkeypatch):
    seen = []
    real = rewrite_cache.rewrite_key
    monkeypatch.setattr(rewrite_cache, "rewrite_key",
                        lambda maker, graphs, ends: seen.append(real(maker, graphs, ends)) or seen[-1])
    x, y = T.dvector("x"), T.dvector("y")
    out = build(x, y)[1]
    gj.function([x, y], out)
    gj.function([x, y], out)                                  # the same: the same key
    gj.function([x, y], T.exp(T.true_div(x, y)).sum() + T.log1p(x * x).mean())   # another line
    gj.function([x, y], out, mode="FAST_COMPILE")
    gj.function([x, gj.In(y, mutable=True)], out)
    z = T.dvector("z")
    gj.function([x, z], build(x, z)[1])                       # another input name
    gj.function([x, y], out, mode="PY")                       # its linker keeps no graphs: no key asked
    assert seen[0] == seen[1] and len(seen) == 6 and None not in seen
    assert len(set(seen[1:])) == 5
    assert get_mode("PY").linker.graph_store() is None


def test_bad_entry_means_rewriting_again(cache_dir):
    x = T.dvector("x")
    fns = []
    for _ in range(3):
        if fns:
            (path,) = entries(cache_dir)
            with open(path, "r+b") as f:
                f.truncate(30)
        fns.append(gj.function([x], T.sqrt(x) * 2.0 + T.sqrt(x)))
    assert [f.maker.rewrites_cached for f in fns] == [False, False, False]
    np.testing.assert_allclose(fns[2](np.array([4.0])), [6.0])


def test_a_custom_rewriter_is_part_of_the_key(cache_dir, monkeypatch):
    seen = []
    real = rewrite_cache.rewrite_key
    monkeypatch.setattr(rewrite_cache, "rewrite_key",
                        lambda maker, graphs, ends: seen.append(real(maker, graphs, ends)) or seen[-1])
    calls = []

    def mine(fgraph):
        calls.append(fgraph)

    x = T.dvector("x")
    out = T.exp(x) + 1.0
    mode = gj.Mode(linker="llvm", rewriter=mine)
    for _ in range(2):
        gj.function([x], out, mode=mode)
    gj.function([x], out)
    assert seen[0] == seen[1] != seen[2]
    assert len(calls) == 1                                    # the second maker took the stored graph


def test_loaded_variables_keep_their_traces_and_make_tags_on_first_use(cache_dir):
    """A hit rebuilds the outputs' traces without tag objects (most hold nothing else); .trace and .tag read as on
    the graph that was rewritten."""
    x = T.dvector("x")
    made = []
    for _ in range(2):
        y = T.exp(x) * 2.0
        made.append(gj.function([x], [y, T.tanh(y).sum()]))
    first, second = made
    assert second.maker.rewrites_cached
    outs = [o for n in second.maker.fgraph.toposort() for o in n.outputs]
    first_outs = [o for n in first.maker.fgraph.toposort() for o in n.outputs]
    assert outs and not any("_tag" in o.__dict__ for o in outs)
    assert all(o.trace and __file__ in o.trace for o in outs)
    assert [o.trace for o in first_outs] == [o.trace for o in outs]
    assert all(o.tag.trace == o.trace for o in outs)          # tags made on first use carry the trace


def test_stored_graphs_keep_whole_tags_when_they_hold_more_than_a_trace():
    """flat_graph stores a tag with other entries whole (and drops its transient caches), a bare trace as a str."""
    x = T.dvector("x")
    y = T.exp(x)
    z = y * 2.0
    y.tag.note = "kept"
    y.tag._eval_fns = {"cached": None}
    flat = flat_graph.flat_graph([x], [z])
    (ins, (z2,)) = flat_graph.unflatten(pickle.loads(pickle.dumps(flat)))
    y2 = z2.owner.inputs[0]
    assert y2.tag.note == "kept" and y2.trace == y.trace and not hasattr(y2.tag, "_eval_fns")
    assert "_tag" not in z2.__dict__ and z2.trace == z.trace and z2.tag.trace == z.trace
