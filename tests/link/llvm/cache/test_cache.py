"""The object cache: keys, hits across processes, concurrent compiles, corrupt entries, unusable dirs, CLI."""

import json
import os
import pathlib
import subprocess
import sys
import uuid
import warnings

import pytest

from graphjit.link.llvm.cache import keys as K
from graphjit.link.llvm.cache import objects as C
from graphjit.link.llvm.jit.compiler import get_compiler
from graphjit.link.llvm.ir.modules import symbol_prefix

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))


def run_child(cache_dir, tag, start_file=None):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(cache_dir), PYTHONPATH=os.path.join(ROOT, "src"))
    args = [sys.executable, os.path.join(HERE, "cache_child.py"), tag] + ([start_file] if start_file else [])
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def child_result(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_key_is_deterministic_and_sensitive():
    c = get_compiler()
    text = "define i64 @gj_0_f(i64 %a) {\n  ret i64 %a\n}\n"
    parts = [(text, False)]
    assert c.key_of(parts) == c.key_of([(text, False)])
    assert c.key_of(parts, 3) != c.key_of(parts, 2)
    assert c.key_of(parts) != c.key_of([(text + "\n", False)])
    assert c.key_of(parts) != c.key_of([(text, True)])                     # compiled as light glue
    assert c.key_of(parts + [("", False)]) != c.key_of([(text, False)])
    base = dict(opt_level=3, triple="t", cpu="c", features="+f", vector_library="none")
    assert K.object_key(text, **base) != K.object_key(text, **{**base, "vector_library": "libmvec"})
    assert K.object_key(text, **base) != K.object_key(text, **{**base, "features": "-f"})
    # objects built by another pass pipeline are other objects
    assert K.object_key(text, **base) != K.object_key(text, **{**base, "pipeline": "kernels:O3"})
    assert symbol_prefix("seed") == symbol_prefix("seed") != symbol_prefix("seed#1")
    assert len(symbol_prefix("seed")) == 24 and symbol_prefix("seed").startswith("gj_")


def test_entry_roundtrip_and_corruption_detected(tmp_path):
    cache = C.ObjectCache(str(tmp_path))
    key = "ab" * 32
    assert cache.load(key) is None
    assert cache.store(key, b"object code")
    assert cache.load(key) == b"object code"
    path = cache.path(key)
    blob = pathlib.Path(path).read_bytes()
    for bad in (blob[:-1], blob[:10], b"", blob[:-1] + b"X"):
        with open(path, "wb") as f:
            f.write(bad)
        assert cache.load(key) is None
    assert os.path.exists(path)                      # untrusted but only removed under the lock
    assert cache.load(key, remove_corrupt=True) is None
    assert not os.path.exists(path)
    assert C.cache_info(str(tmp_path))["entries"] == 0


def test_hit_in_second_process(tmp_path):
    tag = uuid.uuid4().hex[:8]
    first = child_result(run_child(tmp_path, tag))
    second = child_result(run_child(tmp_path, tag))
    assert first["ok"] and second["ok"]
    assert (first["hit"], second["hit"]) == (False, True)
    assert first["key"] == second["key"]
    assert C.cache_info(str(tmp_path))["entries"] == 1


@pytest.mark.soak
def test_concurrent_processes_compile_once(tmp_path):
    tag = uuid.uuid4().hex[:8]
    start = str(tmp_path / "go")
    procs = [run_child(tmp_path, tag, start) for _ in range(3)]
    open(start, "w").close()
    results = [child_result(p) for p in procs]
    assert all(r["ok"] for r in results)
    assert sorted(r["hit"] for r in results) == [False, True, True]
    assert C.cache_info(str(tmp_path))["entries"] == 1


@pytest.mark.soak
def test_corrupt_entry_is_recompiled(tmp_path):
    tag = uuid.uuid4().hex[:8]
    first = child_result(run_child(tmp_path, tag))
    path = C.ObjectCache(str(tmp_path)).path(first["key"])
    data = pathlib.Path(path).read_bytes()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])              # truncated: must not be loaded
    second = child_result(run_child(tmp_path, tag))
    assert second["ok"] and not second["hit"]
    third = child_result(run_child(tmp_path, tag))
    assert third["ok"] and third["hit"]


def test_uncreatable_dir_means_no_cache(tmp_path):
    from llvm_kernels import add_module, compile_callable
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    compiler = get_compiler()
    compiler.set_cache_dir(str(blocker / "sub"))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f, lib = compile_callable(add_module(tag=uuid.uuid4().hex[:8]))
            f2, lib2 = compile_callable(add_module(tag=uuid.uuid4().hex[:8]))
        assert not lib.cache_hit and not lib2.cache_hit
        assert sum(issubclass(w.category, C.CacheWarning) for w in caught) == 1
        assert not compiler.cache.enabled
    finally:
        compiler.set_cache_dir(None)


def test_memory_map_shares_identical_modules(cache_dir):
    from llvm_kernels import add_module
    tag = uuid.uuid4().hex[:8]
    c = get_compiler()
    lib1, lib2 = c.compile(add_module(tag=tag)), c.compile(add_module(tag=tag))
    assert lib1 is lib2
    assert C.cache_info(str(cache_dir))["entries"] == 1


@pytest.mark.soak
def test_cli(tmp_path):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.path.join(ROOT, "src"))
    child_result(run_child(tmp_path, uuid.uuid4().hex[:8]))

    def cli(action):
        r = subprocess.run([sys.executable, "-m", "graphjit", "cache", action], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert cli("path").strip() == str(tmp_path)
    assert "entries: 1" in cli("info")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "plan_child.py"), "0.5"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr            # a graph: its object, plan and rewritten graph
    info = C.cache_info(str(tmp_path))
    assert info["plans"] >= 1 and info["graphs"] == 1 and info["entries"] >= 2
    assert "graphs: 1" in cli("info")
    assert f"removed {info['entries']}" in cli("clear")
    assert "entries: 0" in cli("info")
    assert C.cache_info(str(tmp_path)) == {"dir": str(tmp_path), "entries": 0, "plans": 0, "graphs": 0,
                                           "bytes": 0, "refused": None}
    assert not [f for _, _, fs in os.walk(tmp_path) for f in fs]        # nothing left behind


@pytest.mark.soak
@pytest.mark.parametrize("bad", ["not_a_payload", "not_an_object", "truncated_object", "bad_section_table"])
def test_an_authentic_entry_that_does_not_load_is_rebuilt(tmp_path, bad):
    # an entry with a valid header and MAC (written with this user's key) whose payload is no loadable
    # object: every later process must drop and rebuild it, not fail until `cache clear`
    import struct as S
    from graphjit.link.llvm.jit.objfile import pack_objects, unpack_objects
    tag = uuid.uuid4().hex[:8]
    first = child_result(run_child(tmp_path, tag))
    cache = C.ObjectCache(str(tmp_path))
    obj = unpack_objects(cache.load(first["key"]))[0]
    if bad == "not_a_payload":
        payload = b"\x05\x00\x00\x00garbage"
    elif bad == "not_an_object":
        payload = pack_objects([b"garbage!" * 64])
    elif bad == "truncated_object":
        payload = pack_objects([obj[:len(obj) // 3]])
    else:
        broken = bytearray(obj)
        S.pack_into("<Q", broken, 0x28, len(obj) - 8)                # e_shoff: the section table past the end
        payload = pack_objects([bytes(broken)])
    assert cache.store(first["key"], payload)
    second = child_result(run_child(tmp_path, tag))
    assert second["ok"] and not second["hit"]
    third = child_result(run_child(tmp_path, tag))
    assert third["ok"] and third["hit"]


@pytest.mark.soak
def test_an_authentic_plan_that_does_not_load_is_rebuilt(tmp_path):
    from graphjit.link.llvm.cache import plans as P
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.path.join(ROOT, "src"))

    def plan_child():
        proc = subprocess.run([sys.executable, os.path.join(HERE, "plan_child.py"), "0.5"], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    plan_child()
    cache = C.ObjectCache(str(tmp_path))
    plans = [f for b, _, fs in os.walk(tmp_path) for f in fs if f.endswith(C.PLAN_SUFFIX)]
    assert len(plans) == 2                                  # the plan and its alias (keys.alias_key)
    (graph,) = [f for b, _, fs in os.walk(tmp_path) for f in fs if f.endswith(C.GRAPH_SUFFIX)]
    for plan in plans:
        plan_key = plan[:-len(C.PLAN_SUFFIX)]
        state = P.load_json(cache, plan_key)
        P.store_json(cache, plan_key, dict(state, object="../" * 10 + "x", n_temp="many"))
    cache.store(graph[:-len(C.GRAPH_SUFFIX)], b"not a pickle", suffix=C.GRAPH_SUFFIX)
    again = plan_child()
    assert again["ok"] and not again["plan_hit"] and not again["rewrites_cached"]
    assert plan_child()["plan_hit"]
