"""Plans: a warm process maps the graph's structure to its cached object without building IR (cache/plans.py)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import graphjit
import graphjit.tensor as T
from graphjit.link.llvm.cache import objects as C
from graphjit.link.llvm.cache import keys as K
from graphjit.link.llvm.cache import plans as P
from graphjit.link.llvm.jit.compiler import get_compiler

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))


def run_child(cache_dir, scale):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(cache_dir), PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "plan_child.py"), str(scale)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def plan_files(directory):
    return [os.path.join(b, f) for b, _, fs in os.walk(directory) for f in fs if f.endswith(C.PLAN_SUFFIX)]


@pytest.mark.soak
def test_second_process_skips_ir_generation(tmp_path):
    first, second = run_child(tmp_path, 0.5), run_child(tmp_path, 0.5)
    assert first["ok"] and second["ok"]
    assert (first["plan_hit"], first["ir_build"], first["cache_hit"]) == (False, True, False)
    assert (second["plan_hit"], second["ir_build"], second["cache_hit"]) == (True, False, True)
    assert (first["rewrites_cached"], second["rewrites_cached"]) == (False, True)
    # a hit never imports the rewrite database (its key needs no more than graphjit's sources then)
    assert (first["rewrite_db_imported"], second["rewrite_db_imported"]) == (True, False)
    assert first["key"] == second["key"]
    other = run_child(tmp_path, 0.25)                # another constant: another plan and object
    assert other["ok"] and not other["plan_hit"] and other["key"] != first["key"]
    assert len(plan_files(tmp_path)) == 4            # per graph: its plan and the alias under its rewrite key


@pytest.mark.soak
def test_corrupt_plan_or_missing_object_recompiles(tmp_path):
    first = run_child(tmp_path, 0.5)
    plans = plan_files(tmp_path)
    assert len(plans) == 2                          # the plan and its alias (linker._alias)
    for plan in plans:
        with open(plan, "r+b") as f:
            f.truncate(20)
    again = run_child(tmp_path, 0.5)
    assert again["ok"] and not again["plan_hit"] and again["cache_hit"]   # the object was still there
    os.unlink(C.ObjectCache(str(tmp_path)).path(first["key"]))
    rebuilt = run_child(tmp_path, 0.5)
    assert rebuilt["ok"] and not rebuilt["plan_hit"] and not rebuilt["cache_hit"]
    assert run_child(tmp_path, 0.5)["plan_hit"]


def test_plan_roundtrip_and_bad_json(tmp_path):
    from graphjit.link.llvm.cpython.argspec import ArgSpec
    cache = C.ObjectCache(str(tmp_path))
    plan = {"object": "ab" * 32, "prefix": "gj_" + "0a" * 10 + "_",
            "in_specs": [ArgSpec.array("float32", 2, (False, True)), ArgSpec.object(),
                         ArgSpec.array("int8", 3, shape=(1000, None, 0))],
            "out_specs": [ArgSpec.scalar("int64")], "messages": ["m %lld"], "message_nodes": [0],
            "fallback_indices": [3], "n_groups": 2, "n_temp": 1, "uses_blas": True, "calls_python": True}
    P.store_plan(cache, "cd" * 32, plan)
    assert P.load_plan(cache, "cd" * 32) == plan
    # a plan with a field missing or of another type is dropped (the object key must be a sha256 hex)
    for bad in ({"object": "../" * 10 + "x"}, {"prefix": "gj_x_"}, {"n_temp": "1"}, {"fallback_indices": [True]},
                {"messages": [1]}, {"calls_python": 1}):
        P.store_plan(cache, "cd" * 32, {**plan, **bad})
        assert P.load_plan(cache, "cd" * 32) is None
        assert not os.path.exists(cache.path("cd" * 32, C.PLAN_SUFFIX))
    P.store_json(cache, "cd" * 32, dict(plan, in_specs=[["array", "int8", 1, [-1], False]], out_specs=[]))
    assert P.load_plan(cache, "cd" * 32) is None          # a negative static length is not a spec
    cache.store("ef" * 32, b"{not json", suffix=C.PLAN_SUFFIX)
    assert P.load_plan(cache, "ef" * 32) is None
    assert P.load_plan(cache, "00" * 32) is None


def test_key_depends_on_structure_and_host():
    host = K.host_parts(get_compiler(), "numpy")
    sig = (3, True, ("a", 1))
    assert K.plan_key(sig, host) == K.plan_key((3, True, ("a", 1)), host)
    assert K.plan_key(sig, host) != K.plan_key((2, True, ("a", 1)), host)
    assert K.plan_key(sig, host) != K.plan_key(sig, K.host_parts(get_compiler(), "scipy"))
    assert K.plan_key((lambda: 0,), host) is None          # does not pickle: no plan, no error
    assert len(K.package_digest()) == 64


def test_stable_pickle_describes_ops_and_types_by_value():
    x = T.dvector("x")
    add, mul = (x + x).owner.op, (x * x).owner.op
    again = type(add)(add.scalar_op, dict(add.inplace_pattern))   # another instance equal to add
    assert again is not add and again == add
    shared = K.stable_pickle(((add, x.type), (add, x.type)))
    separate = K.stable_pickle(((add, x.type), (again, T.dvector("y").type)))
    assert shared is not None and shared == separate
    assert K.stable_pickle(((mul, x.type), (add, x.type))) != shared
    assert K.stable_pickle(((add, T.fvector("z").type), (add, x.type))) != shared
    assert K.stable_pickle((add.scalar_op, lambda: 0)) is None         # an unpicklable part: no key


def test_graph_signature_tokens_types_and_ops_by_value():
    """Types and props ops become tuples in the signature: equal graphs built apart give equal signatures
    (and stable pickles); another op, prop or static shape gives another signature."""
    from graphjit.graph.fg import FunctionGraph
    from graphjit.link.llvm.cache.keys import _token, graph_signature

    def signature(build, x):
        fg = FunctionGraph([x], [build(x)], clone=False)
        return graph_signature(fg, fg.toposort())

    first = signature(lambda x: T.exp(x).dimshuffle("x", 0) + 1.0, T.dvector("x"))
    again = signature(lambda x: T.exp(x).dimshuffle("x", 0) + 1.0, T.dvector("x"))
    assert first == again and K.stable_pickle(first) == K.stable_pickle(again)
    assert hash(first) == hash(again)
    for other in (signature(lambda x: T.exp(x).dimshuffle(0, "x") + 1.0, T.dvector("x")),   # a prop
                  signature(lambda x: T.log(x).dimshuffle("x", 0) + 1.0, T.dvector("x")),   # a scalar op
                  signature(lambda x: T.exp(x).dimshuffle("x", 0) + 1.0, T.fvector("x")),   # a dtype
                  signature(lambda x: T.exp(x).dimshuffle("x", 0) + 1.0, T.tensor("float64", shape=(3,)))):
        assert other != first and K.stable_pickle(other) != K.stable_pickle(first)
    assert _token(T.dvector("x").type) == ("tensor", "float64", (None,))
    opaque = object()
    assert _token(opaque) is opaque


def test_graph_signature_tells_signed_zeros_and_nan_constants_apart():
    """Scalar constants enter the signature bit for bit: a graph computing x * -0.0 never shares a compiled
    object with x * 0.0 (equal as numbers), and a NaN constant matches itself."""
    from graphjit.graph.fg import FunctionGraph
    from graphjit.link.llvm.cache.keys import graph_signature
    from graphjit.scalar.basic import ScalarConstant, ScalarType
    from graphjit.scalar.math import mul

    def signature(c):
        x = ScalarType("float64")("x")
        fg = FunctionGraph([x], [mul(x, ScalarConstant(ScalarType("float64"), c))], clone=False)
        return graph_signature(fg, fg.toposort())

    assert signature(np.float64(0.0)) != signature(np.float64(-0.0))
    assert signature(np.float64(np.nan)) == signature(np.float64(np.nan))
    assert signature(np.float64(1.5)) == signature(np.float64(1.5))


def test_llvm_ir_is_rebuilt_for_a_plan_hit(tmp_path):
    compiler = get_compiler()
    compiler.set_cache_dir(str(tmp_path))
    try:
        x = T.dvector("x")
        out = T.tanh(x) * 3.0
        from graphjit.link.llvm.cache import in_memory
        made = []
        for _ in range(2):                          # one source line: the messages in the IR name it
            in_memory.clear()                      # what a new process sees: only the disk
            compiler._libraries.clear()
            made.append(graphjit.function([x], out))
        first, second = made
        assert second.native.timings.get("plan_hit")
        a = np.linspace(-1, 1, 7)
        np.testing.assert_allclose(second(a), np.tanh(a) * 3)
        assert second.native.llvm_ir == first.native.llvm_ir      # rebuilt on demand, checked against the key
        assert "define" in second.native.optimized_ir
    finally:
        compiler.set_cache_dir(None)


def test_no_cache_means_no_plan(tmp_path):
    compiler = get_compiler()
    compiler.set_cache_dir(str(tmp_path), enabled=False)
    try:
        x = T.dvector("x")
        f = graphjit.function([x], T.sin(x) + 7.5)
        np.testing.assert_allclose(f(np.arange(3.0)), np.sin(np.arange(3.0)) + 7.5)
        assert not plan_files(tmp_path)
    finally:
        compiler.set_cache_dir(None)


def test_shared_code_reports_each_graphs_own_node_and_line():
    x, y = T.dvector("x"), T.dvector("y")
    first = (x + y) * 2.0
    second = (x + y) * 2.0                         # same structure, another line: one compiled module
    f = graphjit.function([x, y], first)
    g = graphjit.function([x, y], second)
    assert g.native.memory_hit and g.native.cache_key == f.native.cache_key
    for fn, var in ((f, first), (g, second)):
        for call in (fn, fn.fn.native_call):       # the Function's own vectorcall, and the thunk's builtin
            with pytest.raises(ValueError, match="could not be broadcast") as info:
                call(np.ones(3), np.ones(4))
            assert f"Created at: {var.trace}" in str(info.value)
    assert all("Apply node that caused the error" in m for m in g.native.messages)


def test_error_wording():
    from graphjit.link.llvm.ir import errors
    assert errors.fill("a %lld b %lld 100%% c %lld", (1, 2)) == "a 1 b 2 100% c ?"
    exc = errors.describe(["bad %lld"], [-1], None, 2, 0, 5, 7, 0, 0)
    assert isinstance(exc, IndexError) and str(exc) == "bad 7"
    exc = errors.describe([], None, None, 99, 3, 1, 0, 0, 0)
    assert isinstance(exc, RuntimeError) and "native error 99" in str(exc)


_FLAGGED_CHILD = """
import graphjit as gj, graphjit.tensor as gt
from graphjit import config
x = gt.dvector("x")
with config.change_flags(inline_exp=False):
    f = gj.function([x], gt.exp(x), mode="FAST_RUN")
print(f.native.cache_hit, "llvm.exp.f64" in f.native.llvm_ir)
"""


@pytest.mark.soak
def test_ir_rebuilt_after_a_plan_hit_uses_the_flags_of_its_compile(tmp_path):
    """f.native.llvm_ir after a plan hit rebuilds the IR; it must be built under the flags the function was
    compiled with (inline_exp=False here), not those in force when it is asked for."""
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.path.join(ROOT, "src"))
    outs = [subprocess.run([sys.executable, "-c", _FLAGGED_CHILD], env=env, capture_output=True, text=True,
                           timeout=120) for _ in range(2)]
    assert [p.returncode for p in outs] == [0, 0], outs[1].stderr
    assert [p.stdout.split() for p in outs] == [["False", "True"], ["True", "True"]]


def test_plan_keys_cover_the_sources_of_ops_from_outside_graphjit():
    """An op class defined outside graphjit puts its module's source digest into the plan key (its code may
    change without graphjit's), plain or instrumented; graphjit's own ops add none."""
    from graphjit.graph.fg import FunctionGraph
    from graphjit.link.llvm.instrument_options import Instrumentation
    from graphjit.link.llvm.linker import structural_signature
    from toy_ops import DivMod, double

    x = double("x")
    fg = FunctionGraph([x], [DivMod()(x, x)[0]], clone=False)
    order = fg.toposort()
    digest = K.source_digest(DivMod.__module__)
    assert digest
    for inst in (Instrumentation(), Instrumentation(profile=True)):
        assert K._signature_sources(structural_signature(fg, order, 3, False, inst)) == [digest]
    y = T.dscalar("y")
    own = FunctionGraph([y], [T.exp(y)], clone=False)
    assert K._signature_sources(structural_signature(own, own.toposort(), 3, False)) == []
