"""Plan aliases (cache/keys.py alias_key): a warm process finds its plan under the rewrite cache's key, without the
structural signature; every change that changes the plan key still misses."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as T
from graphjit.graph.fg import FunctionGraph
from graphjit.link.llvm import linker
from graphjit.link.llvm.cache import in_memory
from graphjit.link.llvm.cache import keys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))


def run_child(cache_dir, mode):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(cache_dir), PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "alias_child.py"), mode], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.soak
def test_a_warm_process_needs_no_structural_signature(tmp_path):
    cold = run_child(tmp_path, "cold")
    assert cold["ok"] and not cold["rewrites_cached"] and not cold["plan_hit"]
    warm = run_child(tmp_path, "warm")          # structural_signature raises in this child
    assert warm["ok"] and warm["rewrites_cached"] and warm["plan_hit"] and warm["cache_hit"]
    assert "rewrite" not in warm["stats"] and "ir_build" not in warm["stats"]


# what a warm process may not load (the boundary of the load-only path, docs/cache.md "A warm compile"): no
# lowering, no IR builder of the native entry, its loops or its instrumentation, no Type layout code
COLD_ONLY = ("graphjit.link.llvm.ops", "graphjit.link.llvm.loops", "graphjit.link.llvm.driver.native_entry",
             "graphjit.link.llvm.ir.graph_context", "graphjit.link.llvm.ir.fallback", "graphjit.link.llvm.ir.callbacks",
             "graphjit.link.llvm.ir.stack_temps", "graphjit.link.llvm.driver.inner_graph", "graphjit.link.llvm.ir.buffers",
             "graphjit.link.llvm.cpython.boxing", "graphjit.link.llvm.cpython.fncall",
             # the IR side of the runtime protocol and of the CPython wrapper: the load side reads ir/protocol.py,
             # cpython/argspec.py and cpython/builtin.py instead (~5 ms of imports of a warm start)
             "graphjit.link.llvm.ir.context", "graphjit.link.llvm.ir.layouts", "graphjit.link.llvm.ir.fastmath",
             "graphjit.link.llvm.ir.output_reuse", "graphjit.link.llvm.ir.blas_shims",
             "graphjit.link.llvm.cpython.wrapper", "graphjit.link.llvm.cpython.unbox",
             "llvmlite.ir")       # jit/lazy_ir.py: the loader's modules import it on first use only


@pytest.mark.soak
def test_a_warm_process_loads_no_lowering(tmp_path):
    """A warm compile + call (plan and object from the disk cache) imports no lowering module and no IR
    builder (COLD_ONLY); a cold one loads them (so the check can fail)."""
    cold = run_child(tmp_path, "cold")
    assert "graphjit.link.llvm.driver.elemwise" in cold["modules"] and cold["builtins_loaded"]
    assert {"graphjit.link.llvm.cpython.wrapper", "graphjit.link.llvm.ir.context", "llvmlite.ir"} <= set(cold["modules"])
    warm = run_child(tmp_path, "warm")
    assert warm["ok"] and warm["plan_hit"]
    loaded = [m for m in warm["modules"] if m.startswith(COLD_ONLY)]
    assert loaded == [] and not warm["builtins_loaded"]


def compile_fresh(x, mode=None):
    """A Function of the same graph (one source line), as a new process would make it (no in-memory entries)."""
    in_memory.clear()
    linker._ALIASES.clear()
    return gj.function([x], T.tanh(x * 2.0).sum(), mode=mode)


def test_a_changed_lowering_version_misses(cache_dir, monkeypatch):
    x = T.dvector("x")
    first = compile_fresh(x)
    second = compile_fresh(x)
    assert second.maker.rewrites_cached and second.maker.fgraph.cache_key is not None
    assert second.native.timings.get("plan_hit") and "ir_build" in first.native.timings
    real = keys.lowering_versions
    monkeypatch.setattr(keys, "lowering_versions", lambda fg, order: (real(fg, order), ("changed",)))
    third = compile_fresh(x)
    assert third.maker.rewrites_cached                       # the rewritten graph is still good
    assert not third.native.timings.get("plan_hit") and "ir_build" in third.native.timings
    a = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(third(a), np.tanh(a * 2.0).sum(), rtol=1e-13)


def test_a_changed_flag_or_level_misses(cache_dir):
    x = T.dvector("x")
    compile_fresh(x)
    assert compile_fresh(x).native.timings.get("plan_hit")
    other = compile_fresh(x, gj.Mode(linker="llvm_o1", rewriter="fast_run"))    # same rewrites, opt level 1
    assert other.maker.rewrites_cached and not other.native.timings.get("plan_hit")
    assert compile_fresh(x, gj.Mode(linker="llvm_o1", rewriter="fast_run")).native.timings.get("plan_hit")


def test_a_changed_graph_forgets_its_cache_key():
    x = T.dvector("x")
    fg = FunctionGraph([x], [T.exp(x)])
    fg.cache_key = "k"
    fg.change_node_input("output", 0, T.log(fg.inputs[0]), reason="test")
    assert fg.cache_key is None
    fg.cache_key = "k"
    assert fg.clone().cache_key is None
