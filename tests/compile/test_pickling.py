"""Pickled Functions: round trips in every mode, shared values and settings kept, process pools, warm cache."""

from __future__ import annotations

import multiprocessing
import pickle
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.maker import FunctionMaker

MODES = ["PY", "FAST_COMPILE", "FAST_RUN", "DEBUG"]


def _w1() -> gj.compile.compiled_function.Function:
    x, y = gt.dvector("x"), gt.dvector("y")
    return gj.function([x, y], gt.exp(-x * x) * gt.sin(y) + x * y / (1 + y * y))


def _apply(blob: bytes, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Worker: unpickle a Function and call it (module level, so spawn can import it)."""
    return pickle.loads(blob)(a, b)


def _apply_function(fn: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Worker receiving the Function itself (pickled by the pool)."""
    return fn(a, b)


def _timed_unpickle(warmup: bytes, blob: bytes, a: np.ndarray) -> tuple[dict, np.ndarray]:
    """Worker: warm the process (runtime set up) with one Function, then time unpickling another."""
    pickle.loads(warmup)
    t0 = time.perf_counter()
    fn = pickle.loads(blob)
    wall = time.perf_counter() - t0
    timings = dict(fn.native.timings)
    timings["wall"] = wall
    return timings, fn(a)


@pytest.mark.parametrize("mode", MODES)
def test_round_trip_values(mode: str) -> None:
    x, y = gt.dvector("x"), gt.dmatrix("y")
    f = gj.function([x, y], [x * 2 + y, (x * y).sum()], mode=mode, name="two")
    g = pickle.loads(pickle.dumps(f))
    a, b = np.arange(3.0), np.ones((2, 3))
    for got, want in zip(g(a, b), f(a, b)):
        np.testing.assert_allclose(got, want)
    assert g.name == "two" and g.maker.mode.name == f.maker.mode.name


def test_single_output_and_defaults_kept() -> None:
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([x, gj.In(y, value=np.full(3, 5.0), name="yy")], x - y)
    f["yy"] = np.full(3, 7.0)
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_allclose(g(np.zeros(3)), -7.0)
    np.testing.assert_allclose(g(np.zeros(3), yy=np.ones(3)), -1.0)


def test_shared_values_and_updates_kept() -> None:
    w = gj.shared(np.ones(3), name="w")
    x = gt.dvector("x")
    f = gj.function([x], (x * w).sum(), updates=[(w, w * 2)])
    f(np.ones(3))
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_allclose(g.input_storage[1].data, 2.0)
    assert float(g(np.ones(3))) == 6.0 and float(g(np.ones(3))) == 12.0
    np.testing.assert_allclose(w.get_value(), 2.0)          # the sender's shared variable is untouched


def test_functions_pickled_together_share_state() -> None:
    w = gj.shared(np.zeros(2), name="w")
    inc = gj.function([], [], updates=[(w, w + 1)])
    read = gj.function([], w * 1)
    inc2, read2 = pickle.loads(pickle.dumps((inc, read)))
    inc2()
    inc2()
    np.testing.assert_allclose(read2(), 2.0)


def test_unpickling_skips_rewrites_and_codegen() -> None:
    f = _w1()
    g = pickle.loads(pickle.dumps(f))
    assert [str(n.op) for n in g.maker.fgraph.toposort()] == [str(n.op) for n in f.maker.fgraph.toposort()]
    assert g.native.cache_key == f.native.cache_key


def test_maker_pickles() -> None:
    f = _w1()
    maker = pickle.loads(pickle.dumps(f.maker))
    assert isinstance(maker, FunctionMaker)
    a = np.linspace(0, 1, 4)
    np.testing.assert_allclose(maker.create()(a, a), f(a, a))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing(method: str) -> None:
    f = _w1()
    a, b = np.linspace(-1, 1, 5), np.linspace(0, 2, 5)
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(1) as pool:
        got = pool.apply_async(_apply, (pickle.dumps(f), a, b)).get(timeout=120)
    np.testing.assert_allclose(got, f(a, b))


def test_process_pool_executor() -> None:
    f = _w1()
    blocks = [np.full(4, float(k)) for k in range(3)]
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(_apply_function, [f] * 3, blocks, blocks, timeout=120))
    for got, blk in zip(results, blocks):
        np.testing.assert_allclose(got, f(blk, blk))


def test_warm_worker_reuses_cache(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHJIT_CACHE_DIR", str(tmp_path))
    x = gt.dvector("x")
    expr = x
    for k in range(15):                                   # a graph this process has never compiled
        expr = gt.sin(expr) * (1.0 + k / 97.0) + gt.exp(-expr * expr)
    f = gj.function([x], expr)
    cold = f.native.timings
    assert not cold["cache_hit"] and not cold["memory_hit"]
    cold_compile = cold["ir_build"] + cold["total"]
    a = np.linspace(-1, 1, 7)
    warmup = pickle.dumps(gj.function([x], x + 1.0))
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        timings, got = pool.apply_async(_timed_unpickle, (warmup, pickle.dumps(f), a)).get(timeout=120)
    np.testing.assert_allclose(got, f(a))
    assert timings["cache_hit"] and "codegen" not in timings
    assert timings["plan_hit"] and "ir_build" not in timings          # the plan skipped IR generation
    warm_compile = timings["total"]
    print(f"cold compile {cold_compile * 1e3:.1f} ms; warm worker {warm_compile * 1e3:.1f} ms "
          f"(unpickle wall {timings['wall'] * 1e3:.1f} ms)")
    assert warm_compile < 0.5 * cold_compile
