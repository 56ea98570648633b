"""function(profile=True) / config.profile: native per-unit counters, ProfileStats.summary, compile phases."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt


def _mlp():
    x, w = gt.dmatrix("x"), gt.dmatrix("w")
    return [x, w], (gt.tanh(gt.dot(x, w)) * 2).sum(axis=1) + gt.exp(x).mean()


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE", "PY"])
def test_counts_and_times_are_consistent(mode):
    ins, out = _mlp()
    f = gj.function(ins, out, mode=mode, profile=True, name="mlp")
    plain = gj.function(ins, out, mode=mode)
    a, b = np.random.default_rng(0).random((30, 20)), np.random.default_rng(1).random((20, 10))
    for _ in range(7):
        np.testing.assert_allclose(f(a, b), plain(a, b))
    stats = f.profile
    assert stats.calls == 7
    units = stats.unit_times()
    assert all(runs == 7 for _, _, runs in units)                       # every unit ran once per call
    assert {n for nodes, _, _ in units for n in nodes} == set(f.maker.fgraph.apply_nodes)
    assert 0 < stats.unit_time <= stats.total_time
    assert all(t >= 0 for _, t, _ in units)
    classes = stats.class_times()
    assert abs(sum(t for t, _, _ in classes.values()) - stats.unit_time) < 1e-9
    assert "Dot" in classes
    if mode != "PY":
        assert any(k.startswith("FusedLoop[") for k in classes)          # fused loops timed as one unit
    names = [name for name, _, _ in stats.compile_times()]
    assert names[0] == "graph" and names[-1] == "total"
    assert "merge" in names or "(rewritten graph from the cache)" in names          # rewrite steps by name
    if mode != "PY":
        assert "ir_build" in names or "(memory_hit)" in names or any("plan_hit" in n for n in names)
    out_text = io.StringIO()
    stats.summary(file=out_text)
    text = out_text.getvalue()
    for part in ("Function profiling", "Message: mlp", "Time in 7 calls", "Compile time:", "Class", "Apply", "Dot(x, w)"):
        assert part in text
    stats.reset()
    assert stats.calls == 0


def test_profiling_is_off_by_default_and_costs_nothing():
    ins, out = _mlp()
    f = gj.function(ins, out)
    assert f.profile is None
    assert "clock_gettime" not in f.native.llvm_ir
    g = gj.function(ins, out, profile=True)
    assert "clock_gettime" in g.native.llvm_ir
    assert g.native.cache_key != f.native.cache_key                    # a separate compiled variant


def test_profile_of_the_fast_path():
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([x, y], x + y, profile=True)
    one = np.ones(1)
    for _ in range(100):
        f(one, one)
    assert f.profile.calls == 100
    assert f.profile.unit_times()[0][2] == 100


def test_config_profile_prints_at_exit(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, graphjit as gj, graphjit.tensor as gt
        x = gt.dvector("x")
        f = gj.function([x], gt.exp(x).sum(), name="at_exit_fn")
        assert f.profile is not None
        f(np.ones(3)); f(np.ones(3))
    """)
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.environ["PYTHONPATH"], GRAPHJIT_FLAGS="profile=True")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Message: at_exit_fn" in r.stderr and "Time in 2 calls" in r.stderr


def test_debug_mode_cannot_be_profiled():
    x = gt.dvector("x")
    with pytest.raises(ValueError, match="cannot be profiled"):
        gj.function([x], x + 1, mode="DEBUG", profile=True)


@pytest.mark.parametrize("mode", ["FAST_RUN", "PY"])
def test_theano_profile_stats_names(mode):
    """The numbers under Theano's ProfileStats names, used as Theano's docs use them: profile=True, f.profile."""
    import graphjit as theano
    import graphjit.tensor as T

    x, w = T.dmatrix("x"), T.dmatrix("w")
    f = theano.function([x, w], T.tanh(T.dot(x, w)).sum(axis=1), mode=mode, profile=True)
    a, b = np.ones((30, 20)), np.ones((20, 10))
    for _ in range(5):
        f(a, b)
    stats = f.profile
    assert stats.fct_callcount == 5
    assert 0 < sum(stats.apply_time.values()) <= stats.fct_call_time
    assert abs(sum(stats.apply_time.values()) - stats.unit_time) < 1e-12
    assert stats.compile_time == f.maker.compile_stats["total"] > 0
    nodes = f.maker.fgraph.apply_nodes
    assert set(stats.apply_time) == set(stats.apply_callcount) <= set(nodes)
    assert all(n == 5 for n in stats.apply_callcount.values())
    dot = next(n for n in nodes if type(n.op).__name__ == "Dot")
    assert stats.apply_time[dot] > 0 and stats.apply_callcount[dot] == 5
    if mode == "PY":                                    # every node runs on its own
        assert set(stats.apply_time) == set(nodes) and stats.apply_fused == {}
    else:                                               # tanh and the sum run as one loop: timed at its root
        (root, fused), = stats.apply_fused.items()
        assert str(root.op).startswith("Sum") and fused[-1] is root
        assert [type(n.op).__name__ for n in fused] == ["Elemwise", "CAReduce"]
        assert fused[0] not in stats.apply_time and root in stats.apply_time
        assert set(stats.apply_time) | set(fused) == set(nodes)
    out = io.StringIO()
    stats.summary(file=out, n_ops_to_print=1, n_apply_to_print=1)
    text = out.getvalue()
    more = len(stats.class_times()) - 1, len(stats.apply_time) - 1
    assert "Time in 5 calls" in text and [line.strip() for line in text.splitlines() if "more)" in line] == \
        [f"... ({more[0]} more)", f"... ({more[1]} more)"]
