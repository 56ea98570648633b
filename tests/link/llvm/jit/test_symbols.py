"""Symbols published by lowerings are re-established on every cache hit (jit/symbols.py), objects checked (jit/objfile.py)."""

import ctypes
import json
import os
import struct
import subprocess
import sys
import uuid

import llvmlite.binding as llvm
import pytest

from graphjit.link.llvm.jit import objfile
from graphjit.link.llvm.jit import symbols
from graphjit.link.llvm.jit.compiler import get_compiler
from graphjit.link.llvm.jit.objfile import unpack_objects
from llvm_kernels import add_module

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))


def run_child(cache_dir, *args):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(cache_dir), PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "publish_child.py"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.soak
def test_every_publishing_lowering_survives_a_warm_process(tmp_path):
    # as_op (tensor: its cfunc and numba's NRT; elementwise: its cfunc), a perform callback, BLAS, libgomp:
    # the second process links the cached object through the plan and the rewritten graph, lowering nothing
    first = run_child(tmp_path, "compile", "publishers")
    second = run_child(tmp_path, "compile", "publishers")
    assert first["ok"] and not first["cache_hit"]
    assert second["ok"] and second["plan_hit"] and second["cache_hit"] and second["rewrites_cached"]


@pytest.mark.soak
def test_a_symbol_without_provider_rebuilds_the_ir_instead_of_crashing(tmp_path):
    assert run_child(tmp_path, "compile", "user_lower")["ok"]
    warm = run_child(tmp_path, "compile", "user_lower")
    assert warm["ok"] and not warm["plan_hit"] and warm["cache_hit"]     # lowering ran again, and published


@pytest.mark.soak
def test_unpickled_function_in_a_fresh_process(tmp_path):
    pkl = tmp_path / "f.pkl"
    cache = tmp_path / "cache"
    assert run_child(cache, "pickle", "publishers", pkl)["ok"]
    worker = run_child(cache, "unpickle", pkl)
    assert worker["ok"] and worker["plan_hit"] and worker["cache_hit"]


def _objects(tag):
    c = get_compiler()
    lib = c.compile(add_module(tag=f"{tag}{uuid.uuid4().hex[:8]}"))
    return unpack_objects(c.cache.load(lib.cache_key)), lib


def test_objfile_reads_the_symbols_of_an_object(cache_dir):
    (obj, *_), lib = _objects("objfile")
    undefined, defined = objfile.symbols(obj)
    assert any(name.startswith(lib.prefix) for name in defined)
    assert all(llvm.address_of_symbol(n) for n in undefined)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "section_table", "section", "symtab_entsize"])
def test_objfile_rejects_a_malformed_object(cache_dir, damage):
    (obj, *_), _ = _objects("objfile")
    shoff, shnum = struct.unpack_from("<Q", obj, 0x28)[0], struct.unpack_from("<H", obj, 0x3C)[0]
    bad = bytearray(obj)
    if damage == "truncated":
        bad = bad[:len(obj) // 2]
    elif damage == "garbage":
        bad = bytearray(b"garbage!" * 40)
    elif damage == "section_table":
        struct.pack_into("<Q", bad, 0x28, len(obj))
    elif damage == "section":                        # every section's offset past the end
        for k in range(1, shnum):
            struct.pack_into("<Q", bad, shoff + k * 64 + 24, len(obj) + 1)
    else:
        for k in range(1, shnum):
            if struct.unpack_from("<I", obj, shoff + k * 64 + 4)[0] == 2:     # SHT_SYMTAB
                struct.pack_into("<Q", bad, shoff + k * 64 + 56, 7)
    with pytest.raises(ValueError):
        objfile.symbols(bytes(bad))
    with pytest.raises(ValueError):
        symbols.resolve([bytes(bad)])


def test_resolve_publishes_through_providers_and_names_what_is_missing(monkeypatch):
    calls = []
    monkeypatch.setattr(symbols, "symbols", lambda obj: ({"gj_test_provided", "gj_test_nobody"}, set()))

    def publish():
        calls.append(1)
        llvm.add_symbol("gj_test_provided", llvm.address_of_symbol("gj_PyArray_Empty") or 1)

    symbols.provide("gj_test_provided", publish)
    with pytest.raises(symbols.UnresolvedSymbolError, match="gj_test_nobody") as info:
        symbols.resolve([b"obj"])
    assert calls == [1] and info.value.names == ["gj_test_nobody"]
    monkeypatch.setattr(symbols, "symbols", lambda obj: ({"gj_test_provided"}, set()))
    symbols.resolve([b"obj"])                        # now resolved: the provider is not called again
    assert calls == [1]


def test_a_prefix_names_the_module_to_import_for_its_symbols(monkeypatch, tmp_path):
    """provided_by: the module is imported only when an object needs a symbol of its prefix, and its providers
    then publish it."""
    address = ctypes.cast(ctypes.pythonapi.Py_IncRef, ctypes.c_void_p).value
    (tmp_path / "gj_lazy_provider_mod.py").write_text(
        "import llvmlite.binding as llvm\n"
        "from graphjit.link.llvm.jit import symbols\n"
        f"symbols.provide('gj_lazytest_sym', lambda: llvm.add_symbol('gj_lazytest_sym', {address}))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(symbols, "_BY_PREFIX", {})
    symbols.provided_by("gj_lazytest_", "gj_lazy_provider_mod")
    symbols.provide("gj_other_sym", lambda: llvm.add_symbol("gj_other_sym", address))
    monkeypatch.setattr(symbols, "symbols", lambda obj: ({"gj_other_sym"}, set()))
    symbols.resolve([b"obj"])
    assert "gj_lazy_provider_mod" not in sys.modules          # nothing of its prefix was needed
    monkeypatch.setattr(symbols, "symbols", lambda obj: ({"gj_lazytest_sym"}, set()))
    symbols.resolve([b"obj"])
    assert "gj_lazy_provider_mod" in sys.modules and llvm.address_of_symbol("gj_lazytest_sym") == address
    monkeypatch.delitem(sys.modules, "gj_lazy_provider_mod")
