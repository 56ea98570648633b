"""Compile work that grows linearly with the graph (W9): large random graphs compile and agree with numpy, and the
work per node of the rewriting, the shape bookkeeping and the fusion planner stays bounded as graphs grow
(counted, not timed: these guards cannot be flaky).  The 10,000-node random graph itself is W9's
(benchmarks/w9_compile_growth.py: ~1 min cold on this 2-core machine, too long for the suite)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as T
from graphjit.compile.io import In
from graphjit.compile.maker import FunctionMaker
from graphjit.graph import basic as graph_basic
from graphjit.tensor import shape_feature
from w9_graphs import w9


def build(n, seed):
    steps = w9.spec(n, seed)
    x, w = T.dmatrix("x"), T.dmatrix("w")
    return steps, x, w, w9.evaluate(steps, T, x, w)


@pytest.mark.soak
def test_a_3000_node_random_graph_compiles_and_matches_numpy(cache_dir):
    steps, x, w, outs = build(3000, seed=4)
    f = gj.function([x, w], outs)
    assert len(f.maker.fgraph.apply_nodes) > 3000
    X, W = w9.data(4)
    for got, want in zip(f(X, W), w9.reference(steps, X, W)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.soak
def test_a_10000_op_elementwise_chain_compiles(cache_dir):
    """The deepest graph there is: no recursion limit, and a fused group's length is capped."""
    x = T.dvector("x")
    out, want = x, np.linspace(-1, 1, 9)
    a = want.copy()
    for k in range(10000):
        out = T.tanh(out) if k % 2 else out * 0.999
        want = np.tanh(want) if k % 2 else want * 0.999
    f = gj.function([x], out)
    np.testing.assert_allclose(f(a), want, rtol=1e-12)
    assert f.native.n_loop_groups >= 10000 // 256


def maker_counts(n, seed, monkeypatch):
    """(node rewrites tried, shape-graph walk steps, shape substitution steps) per operation of a random graph."""
    steps_walked = [0]
    real_walk = graph_basic.walk

    def counting_walk(roots, expand, *args, **kwargs):
        def counted(v):
            steps_walked[0] += 1
            return expand(v)
        return real_walk(roots, counted, *args, **kwargs)

    substituted = [0]
    real_between = shape_feature._nodes_between

    def counting_between(old, outputs, clean):
        found = real_between(old, outputs, clean)
        substituted[0] += len(found)
        return found

    monkeypatch.setattr(shape_feature, "walk", counting_walk)
    monkeypatch.setattr(shape_feature, "_nodes_between", counting_between)
    _, x, w, outs = build(n, seed)
    maker = FunctionMaker([In(x), In(w)], outs, mode="PY")
    profile = maker.fgraph.rewrite_profile
    tried = sum(v[1] for v in profile.node_rewrites.values())
    passes = max(runs for runs, _ in profile.graph_rewrites.values())
    return tried / n, steps_walked[0] / n, substituted[0] / n, passes


@pytest.mark.parametrize("seed", [0, 1])
def test_rewriting_work_per_node_stays_bounded(monkeypatch, seed):
    small = maker_counts(300, seed, monkeypatch)
    large = maker_counts(3000, seed, monkeypatch)
    tried, walked, substituted, passes = (b / max(a, 1e-9) for a, b in zip(small, large))
    assert tried < 1.3, (small, large)                    # node rewrites tried per node
    # ShapeFeature's index, per node: ~8 walk steps at 300 nodes; at 3000, 10 (seed 0) and 38 (seed 1: shape
    # expressions inserted in the graph and replaced there are substituted in every shape downstream of them,
    # which the deep substitution needs); before it stopped at other variables' lengths, ~500 (60x)
    assert walked < 6.0, (small, large)
    assert large[2] < 5, (small, large)                   # substitution steps per node (was ~20 at 10k)
    assert large[3] <= 12, (small, large)                 # no rewriter runs a number of times growing with n


def test_fusion_planning_work_per_node_stays_bounded(monkeypatch):
    from graphjit.link.llvm.loops import fusion
    calls = [0]
    real = fusion.fusable_elemwise

    def counting(node):
        calls[0] += 1
        return real(node)

    monkeypatch.setattr(fusion, "fusable_elemwise", counting)
    per_node = []
    for n in (500, 4000):
        x = T.dvector("x")
        out = x
        for k in range(n):
            out = T.tanh(out) if k % 2 else out * 0.999
        fgraph = FunctionMaker([In(x)], out, mode="PY").fgraph
        calls[0] = 0
        fusion.plan_groups(fgraph, fgraph.toposort())
        per_node.append(calls[0] / n)
    assert per_node[1] < 1.3 * per_node[0], per_node        # the old fixpoint loop was ~8x here


def test_equal_kernels_are_shared_and_read_their_own_operands(cache_dir):
    x, y = T.dmatrix("x"), T.dmatrix("y")
    one = gj.function([x], T.tanh(x * 2.0 + 1.0).sum(axis=0))
    two = gj.function([x, y], [T.tanh(x * 2.0 + 1.0).sum(axis=0), T.tanh(y * 2.0 + 1.0).sum(axis=0)])

    def kernels(f):
        return sorted(ln.split("@")[1].split("(")[0].split("k.", 1)[1] for ln in f.native.llvm_ir.splitlines()
                      if ln.startswith("define") and "k.node" in ln)

    assert len(kernels(two)) == len(kernels(one))          # the second group calls the first group's kernel
    a = np.random.default_rng(0).normal(size=(6, 5))
    b = np.random.default_rng(1).normal(size=(8, 5))[::2]   # another shape, strided
    got = two(a, b)
    np.testing.assert_allclose(got[0], np.tanh(a * 2 + 1).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(got[1], np.tanh(b * 2 + 1).sum(axis=0), rtol=1e-12)


_CHILD = """
import json, sys
sys.path.insert(0, {tests!r})
import numpy as np
import graphjit as gj, graphjit.tensor as T
from w9_graphs import w9
steps = w9.spec(400, 7)
x, w = T.dmatrix("x"), T.dmatrix("w")
f = gj.function([x, w], w9.evaluate(steps, T, x, w))
X, W = w9.data(7)
ok = all(np.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(f(X, W), w9.reference(steps, X, W)))
print(json.dumps({{"ok": ok, "stats": f.compile_stats, "hit": f.native.cache_hit,
                  "cached": f.maker.rewrites_cached}}))
"""


@pytest.mark.soak
def test_warm_compile_in_a_new_process_loads_graph_and_object_only(tmp_path):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path))
    code = _CHILD.format(tests=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["ok"] and warm["ok"]
    assert not cold["cached"] and {"rewrite", "ir_build", "optimize", "codegen"} <= set(cold["stats"])
    assert warm["cached"] and warm["hit"]
    assert not {"rewrite", "ir_build", "ir_key", "optimize", "codegen"} & set(warm["stats"]), warm["stats"]
