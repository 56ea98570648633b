"""graphjit's own ELF loader (jit/elfload.py) against MCJIT's: same objects, same results; refusals fall back."""

import ctypes
import json
import os
import struct
import subprocess
import sys
import textwrap

import llvmlite.binding as llvm
import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.jit import compiler, elfload
from graphjit.link.llvm.jit.compiler import get_compiler
from graphjit.link.llvm.jit.objfile import unpack_objects
from graphjit.link.llvm.jit.runtime import blas_source, ensure_runtime

from tests.link.llvm.jit.test_jit import _PARTS, _calls_module, run_unary, unary_loop_module

pytestmark = pytest.mark.skipif(not elfload.available(), reason="the loader reads x86-64 ELF objects only")

_RELA = struct.Struct("<QQq")
_SHDR = struct.Struct("<IIQQQQIIQQ")


def _objects(lib):
    payload = get_compiler().cache.load(lib.cache_key)
    assert payload is not None
    return unpack_objects(payload)


class _Lib:
    """An elfload image seen as a NativeLibrary by run_unary."""

    def __init__(self, image, prefix):
        self.image, self.prefix = image, prefix

    def get_address(self, name):
        addr = self.image.get_function_address(self.prefix + name)
        assert addr
        return addr


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("part", sorted(_PARTS))
def test_loader_runs_what_mcjit_runs(part, opt_level):
    """libm calls through the GOT, the backend's libcalls, a PC-relative constant table: same answers."""
    lib = get_compiler().compile(_calls_module(part), opt_level=opt_level)
    image = elfload.load(_objects(lib), llvm.address_of_symbol)
    try:
        xs = np.linspace(-3.0, 3.0, 1001)[::-1].copy()
        np.testing.assert_array_equal(run_unary(_Lib(image, lib.prefix), xs), run_unary(lib, xs))
        np.testing.assert_allclose(run_unary(_Lib(image, lib.prefix), xs), _PARTS[part](xs), rtol=1e-12,
                                   atol=1e-12)
    finally:
        image.close()


def _function():
    x, y = gt.dmatrices("x", "y")
    return gj.function([x, y], [(gt.exp(x) + y).sum(axis=0) * gt.tanh(x).mean() + gt.dot(x, y.T).sum(),
                                gt.dot(x, y.T)])


def _expected(a, b):
    return [(np.exp(a) + b).sum(axis=0) * np.tanh(a).mean() + (a @ b.T).sum(), a @ b.T]


def test_whole_functions_link_through_the_loader(monkeypatch):
    """A graph with BLAS, vector math and the CPython wrapper, linked by the loader (no fallback)."""
    used = []
    real = elfload.load

    def spy(objects, resolve):
        image = real(objects, resolve)
        used.append(image)
        return image

    monkeypatch.setattr(compiler, "ELF_LOADER", True)
    monkeypatch.setattr(elfload, "load", spy)
    f = _function()
    a, b = np.random.rand(4, 4), np.random.rand(4, 4)
    for got, want in zip(f(a, b[:, ::-1]), _expected(a, b[:, ::-1])):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert used and isinstance(f.native._compiled.library._engine, elfload.LoadedImage)


def test_refusal_falls_back_to_llvm(monkeypatch):
    """A loader refusal links with MCJIT instead: still correct."""
    refused = []

    def refuse(objects, resolve):
        refused.append(len(objects))
        raise elfload.Unsupported("test")

    monkeypatch.setattr(compiler, "ELF_LOADER", True)
    monkeypatch.setattr(elfload, "load", refuse)
    lib = get_compiler().compile(unary_loop_module("fallback", lambda ctx, v: ctx.call_math("sin", [v])))
    assert refused and not isinstance(lib._engine, elfload.LoadedImage)
    xs = np.linspace(-2.0, 2.0, 33)
    np.testing.assert_allclose(run_unary(lib, xs), np.sin(xs), rtol=1e-12)


def _patched(obj: bytes, edit) -> bytes:
    """obj with edit(data, section header offset, header) applied to every section header."""
    data = bytearray(obj)
    shoff, shnum = struct.unpack_from("<Q", data, 0x28)[0], struct.unpack_from("<H", data, 0x3C)[0]
    for k in range(shnum):
        at = shoff + k * _SHDR.size
        edit(data, at, _SHDR.unpack_from(data, at))
    return bytes(data)


def _reloc_object():
    lib = get_compiler().compile(_calls_module("declared"), opt_level=3)
    return lib, _objects(lib)


def test_unknown_relocation_type_is_refused():
    lib, objects = _reloc_object()

    def retype(data, at, sh):
        if sh[1] == 4:                      # RELA: the first relocation becomes R_X86_64_GOTPC32 (26)
            offset, info, addend = _RELA.unpack_from(data, sh[4])
            _RELA.pack_into(data, sh[4], offset, (info >> 32) << 32 | 26, addend)

    with pytest.raises(elfload.Unsupported, match="relocation type 26"):
        elfload.load([_patched(o, retype) for o in objects], llvm.address_of_symbol)


def test_unpublished_symbol_and_tls_are_refused():
    lib, objects = _reloc_object()
    with pytest.raises(elfload.Unsupported, match="not published"):
        elfload.load(objects, lambda name: 0)

    def tls(data, at, sh):
        if sh[2] & 0x4:                     # the code section gets SHF_TLS
            struct.pack_into("<Q", data, at + 8, sh[2] | 0x400)

    with pytest.raises(elfload.Unsupported, match="flags"):
        elfload.load([_patched(o, tls) for o in objects], llvm.address_of_symbol)

    def comdat(data, at, sh):
        if sh[1] == 0x6FFF4C03 or sh[2] == 0 and sh[1] == 1:     # a non-allocated section becomes a group
            struct.pack_into("<I", data, at + 4, 17)

    grouped = [_patched(o, comdat) for o in objects]
    assert grouped != objects                                  # .note.GNU-stack was there to patch
    with pytest.raises(elfload.Unsupported, match="type 0x11"):
        elfload.load(grouped, llvm.address_of_symbol)


def test_relocation_outside_its_section_is_malformed():
    lib, objects = _reloc_object()

    def stretch(data, at, sh):
        if sh[1] == 4:
            offset, info, addend = _RELA.unpack_from(data, sh[4])
            _RELA.pack_into(data, sh[4], 1 << 40, info, addend)

    with pytest.raises(ValueError, match="outside its section"):
        elfload.load([_patched(o, stretch) for o in objects], llvm.address_of_symbol)


def test_image_protections_and_unmap():
    """Code is read+execute, not writable: the loaded code's page is listed r-xp in /proc/self/maps."""
    lib = get_compiler().compile(unary_loop_module("prot", lambda ctx, v: ctx.builder.fadd(v, v)))
    image = elfload.load(_objects(lib), llvm.address_of_symbol)
    addr = image.get_function_address(lib.symbol("f"))
    with open("/proc/self/maps") as maps:
        perms = [line.split()[1] for line in maps
                 if int(line.split("-")[0], 16) <= addr < int(line.split()[0].split("-")[1], 16)]
    assert perms == ["r-xp"]
    assert image.get_function_address("nope") == 0
    image.close()
    image.close()                               # idempotent


_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from graphjit.link.llvm.jit import compiler, elfload
    compiler.ELF_LOADER = {on!r}
    used = []
    real = elfload.load
    def spy(objects, resolve):
        used.append(1)
        return real(objects, resolve)
    elfload.load = spy
    a, b = np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(0, 2, 12).reshape(3, 4)
    import graphjit as gj, graphjit.tensor as gt
    x, y = gt.dmatrices("x", "y")
    f = gj.function([x, y], [(gt.exp(x) + y).sum(axis=0) * gt.tanh(x).mean() + gt.dot(x, y.T).sum(),
                             gt.dot(x, y.T)])
    want = [(np.exp(a) + b).sum(axis=0) * np.tanh(a).mean() + (a @ b.T).sum(), a @ b.T]
    ok = all(np.allclose(g, w, rtol=1e-12) for g, w in zip(f(a, b), want))
    print(json.dumps({{"ok": ok, "used": len(used), "hit": bool(f.native.timings.get("plan_hit"))}}))
""")


@pytest.mark.soak
def test_warm_process_loads_through_the_loader(tmp_path):
    """Fresh processes over one disk cache: the first builds (LLVM path), the next loads the cached object
    with the loader, republishing BLAS and the runtime's symbols, and computes the right results."""
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path / "cache"))
    out = []
    for on in (False, True):
        code = _CHILD.format(on=on)
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert out[0]["ok"] and out[0]["used"] == 0
    assert out[1]["ok"] and out[1]["used"] >= 1 and out[1]["hit"]


def test_runtime_symbols_resolve_for_the_loader():
    """Everything a lowered graph calls is published where the loader looks (the JIT's symbol table)."""
    ensure_runtime()
    blas_source()
    for name in ("gj_PyArray_New", "gj_native_error", "PyErr_SetString", "cos"):
        assert llvm.address_of_symbol(name), name
    assert ctypes.c_void_p(llvm.address_of_symbol("gj_native_error")).value


_WARM = textwrap.dedent("""
    import json, sys
    import numpy as np
    a, b = np.linspace(-1, 1, 20).reshape(4, 5)[:, ::-1], np.linspace(0, 2, 20).reshape(4, 5)
    import graphjit as gj, graphjit.tensor as gt
    x, y = gt.dmatrices("x", "y")
    f = gj.function([x, y], [(gt.exp(x) + y).sum(axis=0) * gt.tanh(x).mean() + gt.dot(x, y.T).sum(),
                             gt.dot(x, y.T)])
    want = [(np.exp(a) + b).sum(axis=0) * np.tanh(a).mean() + (a @ b.T).sum(), a @ b.T]
    ok = all(np.allclose(g, w, rtol=1e-12) for g, w in zip(f(a, b), want))
    print(json.dumps({{"ok": ok, "llvm": "llvmlite.binding" in sys.modules,
                      "hit": bool(f.native.timings.get("plan_hit"))}}))
""")


@pytest.mark.soak
def test_a_warm_process_never_loads_llvm(tmp_path):
    """The second process finds host facts, plan and object in the cache: it links with the ELF loader and
    computes the right answers without llvmlite.binding ever imported (the first one needed LLVM to build)."""
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path / "cache"))
    code = _WARM.format()
    out = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert out[0]["ok"] and out[0]["llvm"] and not out[0]["hit"]
    assert out[1]["ok"] and out[1]["hit"] and not out[1]["llvm"]


def test_host_facts_come_from_the_cache(tmp_path):
    """Facts stored by LLVM are read back equal; a damaged entry is ignored (LLVM asked again)."""
    from graphjit.link.llvm.cache.objects import HOST_SUFFIX, ObjectCache
    from graphjit.link.llvm.jit import hostfacts
    cache, key = ObjectCache(str(tmp_path / "c")), hostfacts.fingerprint()
    assert key is not None
    facts = hostfacts.from_llvm()
    assert facts["triple"] == get_compiler().triple and facts["features"] == get_compiler().features
    hostfacts.store(cache, key, facts)
    assert hostfacts.load(cache, key) == facts
    path = cache.path(key, HOST_SUFFIX)
    with open(path, "r+b") as fh:
        fh.seek(-3, 2)
        fh.write(b"xyz")
    assert hostfacts.load(cache, key) is None


def test_symbols_published_before_llvm_loads_reach_it():
    """The symbol table is graphjit's: what is published while LLVM is not loaded is copied into LLVM's table
    when it loads (through graphjit, or imported by someone else), and later publications go to both."""
    code = textwrap.dedent("""
        import sys
        from graphjit.link.llvm.jit import binding
        binding.add_symbol("gj_test_early", 1234)
        assert "llvmlite.binding" not in sys.modules and binding.address_of_symbol("gj_test_early") == 1234
        import llvmlite.binding as llvm
        assert binding.loaded() and llvm.address_of_symbol("gj_test_early") == 1234
        binding.add_symbol("gj_test_late", 5678)
        assert llvm.address_of_symbol("gj_test_late") == 5678
        assert binding.address_of_symbol("gj_test_nowhere") == 0
        assert binding.address_of_symbol("PyErr_SetString")      # the process's own symbols
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
