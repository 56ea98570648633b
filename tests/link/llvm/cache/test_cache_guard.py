"""The cache holds code: private directories, refused when foreign or writable by others, entries authenticated."""

import hashlib
import json
import os
import pathlib
import pickle
import stat
import struct
import subprocess
import sys
import uuid
import warnings

import pytest

from graphjit.link.llvm.cache import objects as C
from graphjit.link.llvm.cache import guard as G
from graphjit.link.llvm.jit.compiler import get_compiler

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
KEY = "ab" * 32
NOBODY = 65534


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def run(script, cache_dir, *args):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(cache_dir), PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.run([sys.executable, os.path.join(HERE, script), *args], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def files(directory):
    """{path: (size, mtime)} of every file below directory."""
    return {os.path.join(b, f): (os.stat(os.path.join(b, f)).st_size, os.stat(os.path.join(b, f)).st_mtime_ns)
            for b, _, fs in os.walk(directory) for f in fs}


def entries(directory, suffix):
    return [p for p in files(directory) if p.endswith(suffix)]


def make_foreign(path, monkeypatch):
    """path owned by another user: chowned to nobody when we are root, else we pretend to be someone else."""
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    else:
        monkeypatch.setattr(G.os, "geteuid", lambda: os.getuid() + 1)


def test_directories_are_private_whatever_the_umask(tmp_path):
    root = tmp_path / "a" / "b" / "cache"
    old = os.umask(0)
    try:
        cache = C.ObjectCache(str(root))
        assert cache.store(KEY, b"payload")
        with cache.lock(KEY) as locked:
            assert locked
    finally:
        os.umask(old)
    for d in (tmp_path / "a", tmp_path / "a" / "b", root, root / KEY[:2]):
        assert mode(d) == 0o700, d
    for f in (root / G.KEY_NAME, cache.path(KEY), root / KEY[:2] / (KEY + C.LOCK_SUFFIX)):
        assert mode(f) == 0o600, f
    assert cache.load(KEY) == b"payload"


@pytest.mark.parametrize("unsafe", ["world_writable", "group_writable", "foreign"])
def test_an_unsafe_directory_is_refused_once_and_never_touched(tmp_path, unsafe, monkeypatch):
    d = tmp_path / "cache"
    assert C.ObjectCache(str(d)).store(KEY, b"trusted before")
    if unsafe == "foreign":
        make_foreign(d, monkeypatch)
    else:
        os.chmod(d, 0o777 if unsafe == "world_writable" else 0o770)
    before = files(d)
    compiler = get_compiler()
    compiler.set_cache_dir(str(d))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                cache = C.ObjectCache(str(d))
                assert cache.load(KEY) is None and not cache.store(KEY, b"x")
            from llvm_kernels import add_module, compile_callable
            f, lib = compile_callable(add_module(tag=uuid.uuid4().hex[:8]))
        assert not lib.cache_hit and not compiler.cache.enabled
        import numpy as np
        assert np.array_equal(f(np.ones((2, 2)), np.ones((2, 2))), np.full((2, 2), 2.0))
    finally:
        compiler.set_cache_dir(None)
    refusals = [w for w in caught if issubclass(w.category, C.CacheWarning)]
    assert len(refusals) == 1, [str(w.message) for w in refusals]
    assert ("owned by uid" if unsafe == "foreign" else "writable by group or others") in str(refusals[0].message)
    assert files(d) == before                          # nothing written, removed or replaced
    assert C.cache_info(str(d))["refused"]


def test_unsafe_directory_in_a_fresh_process_compiles_without_the_cache(tmp_path):
    d = tmp_path / "cache"
    d.mkdir()
    os.chmod(d, 0o777)
    out, err = run("plan_child.py", d, "0.5")
    assert out["ok"] and not out["cache_hit"] and not out["plan_hit"]
    assert err.count("CacheWarning") == 1 and files(d) == {}


@pytest.mark.parametrize("problem", ["readable", "foreign", "short"])
def test_an_unsafe_key_file_is_refused(tmp_path, problem, monkeypatch):
    d = tmp_path / "cache"
    assert C.ObjectCache(str(d)).store(KEY, b"payload")
    key_file = d / G.KEY_NAME
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache = C.ObjectCache(str(d))                # the directory is fine: the key is read on first use
        if problem == "readable":
            os.chmod(key_file, 0o644)
        elif problem == "foreign":
            make_foreign(key_file, monkeypatch)
        else:
            key_file.write_bytes(b"short")
        assert cache.load(KEY) is None and not cache.store(KEY, b"x")
        assert C.ObjectCache(str(d)).load(KEY) is None
    assert sum(issubclass(w.category, C.CacheWarning) for w in caught) == 1
    assert not cache.enabled


def test_a_foreign_or_shared_entry_is_not_trusted(tmp_path, monkeypatch):
    cache = C.ObjectCache(str(tmp_path / "cache"))
    assert cache.store(KEY, b"payload")
    os.chmod(cache.path(KEY), 0o666)
    assert cache.load(KEY) is None
    assert cache.store(KEY, b"payload") and cache.load(KEY) == b"payload"
    if os.geteuid() == 0:
        os.chown(cache.path(KEY), NOBODY, NOBODY)
        assert cache.load(KEY) is None


def test_an_entry_is_bound_to_its_name_and_kind(tmp_path):
    cache = C.ObjectCache(str(tmp_path))
    other = "cd" * 32
    assert cache.store(KEY, b"payload")
    os.makedirs(os.path.dirname(cache.path(other)), exist_ok=True)
    with open(cache.path(KEY), "rb") as f:
        blob = f.read()
    for path in (cache.path(other), cache.path(KEY, C.PLAN_SUFFIX)):
        with open(path, "wb") as f:
            f.write(blob)
    assert cache.load(other) is None and cache.load(KEY, suffix=C.PLAN_SUFFIX) is None
    assert cache.load(KEY) == b"payload"


def forge(path, payload):
    """Rewrite an entry as an attacker without the key would: valid layout, sha256 where the MAC goes."""
    with open(path, "wb") as f:
        f.write(C._HEADER.pack(C._MAGIC, len(payload), hashlib.sha256(payload).digest()) + payload)


@pytest.mark.soak
def test_a_tampered_object_is_rebuilt(tmp_path):
    tag = uuid.uuid4().hex[:8]
    first, _ = run("cache_child.py", tmp_path, tag)
    (path,) = entries(tmp_path, C.ENTRY_SUFFIX)
    with open(path, "rb") as f:
        payload = bytearray(f.read()[C._HEADER.size:])
    for k in range(len(payload) // 2, len(payload) // 2 + 16):
        payload[k] ^= 0xFF
    forge(path, bytes(payload))
    second, _ = run("cache_child.py", tmp_path, tag)
    assert second["ok"] and not second["hit"]
    third, _ = run("cache_child.py", tmp_path, tag)
    assert third["ok"] and third["hit"] and third["key"] == first["key"]


class Payload:
    """A pickle that runs code when loaded."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.soak
def test_tampered_plans_and_graphs_are_rebuilt_and_never_run(tmp_path):
    cache_dir, marker = tmp_path / "cache", tmp_path / "pwned"
    first, _ = run("plan_child.py", cache_dir, "0.5")
    plans, (graph,) = entries(cache_dir, C.PLAN_SUFFIX), entries(cache_dir, C.GRAPH_SUFFIX)
    assert len(plans) == 2                                          # the plan and its alias (keys.alias_key)
    evil = pickle.dumps(Payload(marker))
    pickle.loads(pickle.dumps(Payload(tmp_path / "check")))        # the payload does run when unpickled
    assert os.path.exists(tmp_path / "check")
    forge(graph, evil)
    for plan in plans:
        state = json.loads(pathlib.Path(plan).read_bytes()[C._HEADER.size:])
        forge(plan, json.dumps(dict(state, object="00" * 32)).encode())
    second, _ = run("plan_child.py", cache_dir, "0.5")
    assert second["ok"] and not second["plan_hit"] and not second["rewrites_cached"] and second["cache_hit"]
    assert not marker.exists()
    third, _ = run("plan_child.py", cache_dir, "0.5")
    assert third["ok"] and third["plan_hit"] and third["rewrites_cached"]
    # the same payload under a MAC made with a key of one's own is refused as well
    with open(graph, "wb") as f:
        length = struct.pack("<Q", len(evil))
        f.write(C._MAGIC + length + G.mac(os.urandom(32), os.path.basename(graph), C._MAGIC + length, evil) + evil)
    fourth, _ = run("plan_child.py", cache_dir, "0.5")
    assert fourth["ok"] and not fourth["rewrites_cached"] and not marker.exists()
