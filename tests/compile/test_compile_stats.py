"""Compile-phase timing (graph/phase_timer.py) as a Function reports it: ``f.compile_stats``."""

import threading

import numpy as np

import graphjit as gj
import graphjit.tensor as T
from graphjit.graph import phase_timer

LLVM_PHASES = {"ir_build", "ir_key", "optimize", "codegen"}


def top_level(stats):
    return sum(s for k, s in stats.items() if ":" not in k and k != "total")


def graph():
    x = T.dmatrix("x")
    return x, T.tanh(x * 2 + 1).sum(axis=0) + T.dot(x.T, x).mean()


def test_cold_compile_records_every_phase(cache_dir):
    x, out = graph()
    f = gj.function([x], out)
    stats = f.compile_stats
    assert {"graph", "rewrite", "total", "order", "wrap"} <= set(stats)
    assert LLVM_PHASES <= set(stats), sorted(stats)
    parts = [k for k in stats if k.startswith("rewrite:")]
    assert "rewrite:canonicalize" in parts and "rewrite:inplace" in parts
    assert sum(stats[k] for k in parts) <= stats["rewrite"]
    assert all(v >= 0 for v in stats.values())
    assert top_level(stats) <= stats["total"]
    assert f.maker.compile_stats == stats
    np.testing.assert_allclose(f(np.ones((3, 2))), np.tanh(3.0) * 3 + 3.0)


def test_warm_compile_skips_rewriting_and_llvm(cache_dir):
    for k in range(2):
        x, out = graph()                   # one source line: the second maker hits the rewritten-graph cache
        f = gj.function([x], out)
    stats = f.compile_stats
    assert "rewrite" not in stats and not LLVM_PHASES & set(stats), sorted(stats)
    assert "cache_lookup" in stats and top_level(stats) <= stats["total"]


def test_py_mode_records_rewriting_only():
    x, out = graph()
    stats = gj.function([x], out, mode="PY").compile_stats
    assert "rewrite" in stats and not LLVM_PHASES & set(stats)


def test_recorder_is_per_thread_and_nests():
    outer = phase_timer.PhaseRecorder()
    seen = []

    def other_thread():
        with phase_timer.phase("elsewhere"):
            seen.append(phase_timer.current())

    with phase_timer.recording(outer):
        with phase_timer.phase("a"):
            t = threading.Thread(target=other_thread)
            t.start()
            t.join()
            with phase_timer.recording() as inner:
                phase_timer.add("b", 0.5)
        phase_timer.add("a:part", 0.25)
    assert seen == [None]
    assert set(outer.seconds) == {"a", "a:part", "total"} and inner.seconds["b"] == 0.5
    assert outer.counts["a"] == 1 and outer.top_level() <= outer.seconds["total"]
    assert phase_timer.current() is None
    with phase_timer.phase("nobody records this"):
        pass
