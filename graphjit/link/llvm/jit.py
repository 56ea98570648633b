"""The process-wide native compiler: one target machine setup, an MCJIT engine per library, the object cache.

Module builders name every exported symbol with the placeholder prefix ``GJMOD_`` (``GJMOD_entry``,
``GJMOD_pywrap``) and give helpers ``internal``/``private`` linkage.  ``compile`` hashes the IR text (with the
placeholder), then replaces ``GJMOD_`` by ``gj_<first 20 hex of the key>_``: the symbols name the code in
tracebacks and profiles, and identical modules share one loaded library while it is alive.

Each NativeLibrary owns the MCJIT engine holding its code (engine.py): when the last reference to it goes
(its Functions, a numba caller's type, the linker's bounded recent list), its intermediate buffers are released
and the engine, with its code, data and LLVM bookkeeping, is freed.  Modules are parsed in an LLVM context of
their own, so the constants and types of a compiled graph do not stay behind in LLVM's global context.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import sys
import struct
import threading
import time
import weakref
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir

from . import forking
from .cache import ObjectCache, cache_key, default_cache_dir
from .engine import free_engine, new_engine
from .symbols import UnresolvedSymbolError, resolve as resolve_symbols

PLACEHOLDER = "GJMOD_"
_KEY_CHARS = 20
LIGHT_GLUE_MARKER = "gj.light_glue"
# SROA only: the entry's allocas become registers.  instcombine and simplifycfg cost more than they save on
# a large graph's glue (W3: 0.24 s -> 0.09 s of LLVM time for the glue; instcombine alone was 0.11 s, and the
# selects and switches simplifycfg makes send the fast instruction selector to SelectionDAG), for ~1 us per
# call on a mid-sized graph of tiny arrays.
_LIGHT_PASSES = ("sroa",)
# Kernels' pipeline, trimmed where it costs compile time and buys nothing on their loops (measured on the W3
# training graph's 18 kernels): the loop vectoriser already interleaves, so the LoopUnrollPass only unrolls
# scalar remainders (-12% kernel LLVM time); loop strength reduction rewrites induction variables that x86's
# base+index*scale addressing already folds (-20%; applied around this module's codegen only, see _emit).
_KERNEL_UNROLL = False
# Position-independent code, small code model: references inside an object are 32-bit PC-relative (safe: the
# engine's memory manager allocates an object's sections in one block), calls and data outside it go through
# GOT entries RuntimeDyld fills (_nonlazybind, _bind_through_got, _with_got_libcalls).  MCJIT's default
# (static, large model) materialises every global's and callee's address as a 64-bit immediate, which the fast
# instruction selector does not handle: every glue function fell back to SelectionDAG (W3's glue codegen:
# 96 ms -> 44 ms).
_CODE_MODEL = ("pic", "small")
_KERNEL_CODEGEN_OPTIONS = ("-disable-lsr",)
# in the cache key; "calls:got": objects cached before it could call through PLT stubs (see _bind_through_got)
PIPELINE = (f"kernels:O<n>,unroll={_KERNEL_UNROLL},{','.join(_KERNEL_CODEGEN_OPTIONS)};"
            f"glue:{','.join(_LIGHT_PASSES)};code:{'-'.join(_CODE_MODEL)};calls:got")
_METADATA_ID = re.compile(r"^!(\d+) = ", re.M)
_PARTS = struct.Struct("<I")
_PART = struct.Struct("<Q")


def mark_light_glue(module: ir.Module) -> None:
    """Compile this module split in two (split.py): kernels at the full level, glue lightly (a marker global)."""
    if LIGHT_GLUE_MARKER not in module.globals:
        g = ir.GlobalVariable(module, ir.IntType(8), LIGHT_GLUE_MARKER)
        g.linkage, g.global_constant, g.initializer = "private", True, ir.Constant(ir.IntType(8), 1)


def _parts(text: str, prefix: str) -> list[tuple[str, bool]]:
    """[(IR text, is glue)]: the whole module, or its kernels and its glue when it carries the marker."""
    if f'@"{LIGHT_GLUE_MARKER}"' in text:
        from .split import split_module
        halves = split_module(text, prefix)
        if halves is not None:
            return [(halves[0], False), (halves[1], True)]
    return [(text, False)]


def pack_objects(objects: list[bytes]) -> bytes:
    """One cache payload holding one or more object files."""
    return _PARTS.pack(len(objects)) + b"".join(_PART.pack(len(o)) + o for o in objects)


def unpack_objects(payload: bytes) -> list[bytes]:
    """The object files of a payload (ValueError if it is malformed)."""
    try:
        (count,), pos, out = _PARTS.unpack_from(payload), _PARTS.size, []
        for _ in range(count):
            (n,) = _PART.unpack_from(payload, pos)
            pos += _PART.size
            out.append(payload[pos:pos + n])
            pos += n
    except struct.error as exc:
        raise ValueError("malformed object payload") from exc
    if pos != len(payload) or any(len(o) == 0 for o in out):
        raise ValueError("malformed object payload")
    return out


def symbol_prefix(key: str) -> str:
    """The prefix that replaces GJMOD_ in a module whose cache key is key."""
    return f"gj_{key[:_KEY_CHARS]}_"


def _setup_vector_library(features: str) -> tuple[str, tuple[str, ...]]:
    """Load glibc's libmvec if possible; returns (vector library name, usable x86 VFABI ISA letters)."""
    if not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")):
        return "none", ()
    try:
        llvm.load_library_permanently("libmvec.so.1")
    except RuntimeError:
        return "none", ()
    if llvm.llvm_version_info[0] <= 20:
        # LLVM <= 20 maps math calls to libmvec itself; LLVM >= 21 dropped the option from the library, and
        # context.call_math attaches "vector-function-abi-variant" attributes instead (works on every version)
        llvm.set_option("", "-vector-library=LIBMVEC-X86")
    flags = set(features.split(","))
    isas = ("b",) + (("d",) if "+avx2" in flags else ()) + (("e",) if "+avx512f" in flags else ())
    glibc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else "glibc"
    return f"libmvec({glibc})", isas


class NativeLibrary:
    """One compiled module loaded into an engine of its own; the code lives as long as this object."""

    def __init__(self, compiler: NativeCompiler, key: str, llvm_ir: str | None, opt_level: int, cache_hit: bool,
                 timings: dict[str, float], engine: Any) -> None:
        self._compiler = compiler
        self._engine = engine
        self.cache_key = key
        self.prefix = symbol_prefix(key)
        self._llvm_ir = llvm_ir           # None when loaded by key alone (plan_cache): set_source() fills it
        self.opt_level = opt_level
        self.cache_hit = cache_hit
        self.timings = timings            # seconds: key, cache_load, ir_parse, optimize, codegen, link, total
        self._optimized_ir: list[tuple[str, bool]] | None = None
        self._asm: str | None = None
        # not at exit: a module global may still call this code while the interpreter shuts down
        weakref.finalize(self, free_engine, engine, self._lookup("drop_buffers")).atexit = False

    @property
    def llvm_ir(self) -> str:
        """The text compiled, with GJMOD_ already replaced by the prefix."""
        if self._llvm_ir is None:
            raise LookupError("this library was loaded from the cache by key; its IR was not rebuilt")
        return self._llvm_ir

    def set_source(self, text: str) -> None:
        """Record the IR (with GJMOD_ placeholders) of a library loaded by key; it must hash to the key."""
        if self._llvm_ir is None:
            if self._compiler.key_of(text, self.opt_level) != self.cache_key:
                raise RuntimeError("the rebuilt IR does not match the cached object's key")
            self._llvm_ir = text.replace(PLACEHOLDER, self.prefix)

    @property
    def optimized_ir(self) -> str:
        """The optimised IR, recomputed on first access (without codegen): printing it costs ~20 ms on a large graph."""
        if self._optimized_ir is None:
            self._optimized_ir = [(str(mod), glue) for mod, glue in
                                  self._compiler.optimize_parts(self.llvm_ir, self.opt_level, self.prefix)]
        return "\n".join(text for text, _ in self._optimized_ir)

    @property
    def asm(self) -> str:
        """Assembly of the optimised module (or of its kernels and its glue), emitted on first access."""
        if self._asm is None:
            self.optimized_ir                  # noqa: B018 - fills the parts
            self._asm = "\n".join(self._compiler.emit(self._compiler.parse(text), self.opt_level, glue, asm=True)
                                   for text, glue in self._optimized_ir)
        return self._asm

    def symbol(self, name: str) -> str:
        """The real symbol of a name given without the GJMOD_ prefix."""
        return self.prefix + name

    def release_buffers(self) -> None:
        """Free the intermediate buffers its entry keeps for later calls, if any (GIL held; calls reallocate)."""
        addr = self._lookup("drop_buffers")
        if addr:
            ctypes.PYFUNCTYPE(None)(addr)()

    def _lookup(self, name: str) -> int:
        symbol = self.symbol(name)
        return self._engine.get_function_address(symbol) or self._engine.get_global_value_address(symbol)

    def get_address(self, name: str) -> int:
        """Address of the exported function or global `name` (given without prefix); valid while self lives."""
        addr = self._lookup(name)
        if not addr:
            raise KeyError(f"no symbol {name!r} ({self.symbol(name)}) in compiled module")
        return addr

    def __repr__(self) -> str:
        return f"<NativeLibrary {self.cache_key[:12]} hit={self.cache_hit}>"


class NativeCompiler:
    """Host target machine, pass pipeline, a weak map of the loaded libraries and the disk cache."""

    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.triple = llvm.get_process_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.vector_library, self.vector_isas = _setup_vector_library(self.features)
        self._target = llvm.Target.from_triple(self.triple)
        self._tms: dict[int, llvm.TargetMachine] = {}
        # an engine that holds no code: creating the first one makes the process' own symbols resolvable
        self.engine = new_engine(self._target, self.triple)
        self.lock = threading.RLock()
        # a library stays here while something uses it (identical modules share it), no longer
        self._libraries: weakref.WeakValueDictionary[str, NativeLibrary] = weakref.WeakValueDictionary()
        self._cache_dir: str | None = None     # explicit directory, else default_cache_dir() at each compile
        self._cache: ObjectCache | None = None
        self._no_cache = False

    def _new_tm(self, opt_level: int) -> llvm.TargetMachine:
        return self._target.create_target_machine(cpu=self.cpu, features=self.features, opt=opt_level,
                                                  reloc=_CODE_MODEL[0], codemodel=_CODE_MODEL[1])

    def target_machine(self, opt_level: int = 3) -> llvm.TargetMachine:
        """The codegen target machine for an opt level (not the engine's)."""
        if opt_level not in self._tms:
            self._tms[opt_level] = self._new_tm(opt_level)
        return self._tms[opt_level]

    # ---------------------------------------------------------------- cache selection
    def set_cache_dir(self, directory: str | None, enabled: bool = True) -> None:
        """Use directory for the object cache (None: $GRAPHJIT_CACHE_DIR / default); enabled=False: no disk cache."""
        with self.lock:
            self._cache_dir, self._no_cache, self._cache = directory, not enabled, None

    @property
    def cache(self) -> ObjectCache | None:
        """The object cache in use (None if disabled)."""
        if self._no_cache:
            return None
        directory = os.path.abspath(self._cache_dir or default_cache_dir())
        if self._cache is None or self._cache.directory != directory:
            self._cache = ObjectCache(directory)
        return self._cache

    def key_of(self, ir_text: str, opt_level: int = 3) -> str:
        """The cache key of IR text (with GJMOD_ placeholders) for this host."""
        return cache_key(ir_text, opt_level=opt_level, triple=self.triple, cpu=self.cpu,
                         features=self.features, vector_library=self.vector_library, pipeline=PIPELINE)

    # ---------------------------------------------------------------- compile
    def compile(self, module: ir.Module | str, opt_level: int = 3) -> NativeLibrary:
        """Compile (or load from cache) a module and add it to the engine; identical modules share one library."""
        t0 = time.perf_counter()
        if isinstance(module, ir.Module):
            from .context import finish_module
            finish_module(module)
        text = str(module)
        key = self.key_of(text, opt_level)
        timings = {"key": time.perf_counter() - t0}
        with self.lock:
            lib = self._libraries.get(key)
            if lib is not None:
                return lib
            from .runtime import ensure_runtime
            ensure_runtime()                    # the symbols generated code refers to must resolve when linking
            real_text = text.replace(PLACEHOLDER, symbol_prefix(key))
            payload, built = self._load_or_build(key, real_text, opt_level, timings)
            try:
                return self._add(key, payload, real_text, opt_level, not built, timings, t0)
            except ValueError:
                if built:
                    raise
            # the cached entry does not load (a malformed object): drop it and build afresh, never fatal
            self.cache.discard(key)
            payload, built = self._load_or_build(key, real_text, opt_level, timings, use_cache=False)
            return self._add(key, payload, real_text, opt_level, False, timings, t0)

    def load(self, key: str, opt_level: int = 3) -> NativeLibrary | None:
        """The library of a key compiled before (this process or the disk cache), without its IR; else None."""
        t0 = time.perf_counter()
        with self.lock:
            lib = self._libraries.get(key)
            if lib is not None:
                return lib
            cache = self.cache
            payload = cache.load(key, remove_corrupt=True) if cache else None
            if payload is None:
                return None
            from .runtime import ensure_runtime
            ensure_runtime()
            timings = {"cache_load": time.perf_counter() - t0}
            try:
                return self._add(key, payload, None, opt_level, True, timings, t0)
            except UnresolvedSymbolError:
                return None         # the caller builds the IR: its lowering publishes what is missing
            except ValueError:
                cache.discard(key)  # a malformed object: dropped, and rebuilt by the caller
                return None

    def _add(self, key: str, payload: bytes, text: str | None, opt_level: int,
             cache_hit: bool,
             timings: dict[str, float], t0: float) -> NativeLibrary:
        """Link object code into an engine of its own and register its library (caller holds the lock).

        ValueError (nothing linked) if the payload is malformed; UnresolvedSymbolError if it needs a symbol
        nothing publishes (symbols.py).
        """
        t1 = time.perf_counter()
        objects = unpack_objects(payload)
        resolve_symbols(objects)          # bounds-checks each object too: llvmlite would crash on a bad one
        engine = new_engine(self._target, self.triple)
        try:
            for obj in objects:
                engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            engine.finalize_object()
        except BaseException:
            free_engine(engine, 0)
            raise
        timings["link"] = time.perf_counter() - t1
        timings["total"] = time.perf_counter() - t0
        lib = NativeLibrary(self, key, text, opt_level, cache_hit, timings, engine)
        self._libraries[key] = lib
        return lib

    def _load_or_build(self, key: str, text: str, opt_level: int,
                       timings: dict[str, float], use_cache: bool = True) -> tuple[bytes, bool]:
        """(object code, built here): from the disk cache, or freshly built under the per-key lock (and
        stored); use_cache=False: built in any case (the entry is replaced)."""
        cache = self.cache
        t0 = time.perf_counter()
        payload = cache.load(key) if cache and use_cache else None
        timings["cache_load"] = time.perf_counter() - t0
        if payload is not None:
            return payload, False
        if cache is None:
            return self._build(text, opt_level, symbol_prefix(key), timings), True
        with cache.lock(key):
            t0 = time.perf_counter()
            # another process may have built it meanwhile
            payload = cache.load(key, remove_corrupt=True) if use_cache else None
            timings["cache_load"] += time.perf_counter() - t0
            if payload is not None:
                return payload, False
            payload = self._build(text, opt_level, symbol_prefix(key), timings)
            cache.store(key, payload)
            return payload, True

    def _build(self, text: str, opt_level: int, prefix: str,
               timings: dict[str, float]) -> bytes:
        objects = []
        for key in ("ir_parse", "optimize", "codegen"):
            timings[key] = 0.0
        for part, glue in _parts(text, prefix):
            t0 = time.perf_counter()
            mod = self.parse(part)
            _check_exports(mod, prefix)
            t1 = time.perf_counter()
            self._run_passes(mod, opt_level, glue)
            t2 = time.perf_counter()
            objects.append(self.emit(mod, opt_level, glue))
            t3 = time.perf_counter()
            timings["ir_parse"] += t1 - t0
            timings["optimize"] += t2 - t1
            timings["codegen"] += t3 - t2
        return pack_objects(objects)

    def emit(self, mod: llvm.ModuleRef, opt_level: int, glue: bool, asm: bool = False) -> Any:
        """Object code (or assembly) of an optimised part: glue by the fast selector, kernels with their options."""
        tm = self.target_machine(0 if glue else opt_level)
        emit = tm.emit_assembly if asm else tm.emit_object
        mod = _bind_through_got(mod)
        if glue or opt_level == 0:
            return emit(mod)
        # LLVM's options are process-wide (numba shares them): set for this codegen only, under the lock
        with self.lock:
            for option in _KERNEL_CODEGEN_OPTIONS:
                llvm.set_option("", f"{option}=true")
            try:
                return emit(mod)
            finally:
                for option in _KERNEL_CODEGEN_OPTIONS:
                    llvm.set_option("", f"{option}=false")

    def parse(self, text: str) -> llvm.ModuleRef:
        """Parse and verify IR text for this target."""
        # a context of its own: the global one would keep every constant and type of every module forever
        mod = llvm.parse_assembly(_nonlazybind(_with_got_libcalls(text)), context=llvm.create_context())
        mod.triple = self.triple
        mod.data_layout = str(self.target_machine(3).target_data)
        mod.verify()
        return mod

    def optimize_parts(self, text: str, opt_level: int, prefix: str) -> list[tuple[llvm.ModuleRef, bool]]:
        """The optimised module, or its optimised kernels and glue (as compile() builds them)."""
        out = []
        for part, glue in _parts(text, prefix):
            mod = self.parse(part)
            self._run_passes(mod, opt_level, glue)
            out.append((mod, glue))
        return out

    def _run_passes(self, mod: llvm.ModuleRef, opt_level: int, glue: bool = False) -> None:
        """The O<opt_level> pipeline; a glue part (split.py) gets SROA only (_LIGHT_PASSES)."""
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pto.loop_vectorization = opt_level >= 2
        pto.slp_vectorization = opt_level >= 2
        pto.loop_unrolling = opt_level >= 2 and _KERNEL_UNROLL
        pb = llvm.create_pass_builder(self.target_machine(opt_level), pto)
        if glue:
            mpm = llvm.create_new_module_pass_manager()
            for name in _LIGHT_PASSES:
                getattr(mpm, f"add_{name}_pass")()
            mpm.run(mod, pb)
            return
        pb.getModulePassManager().run(mod, pb)

    def info(self) -> dict[str, Any]:
        """Target and engine facts, for debugging and bug reports."""
        return {"triple": self.triple, "cpu": self.cpu, "vector_library": self.vector_library,
                "vector_isas": self.vector_isas, "modules": len(self._libraries),
                "cache_dir": self.cache.directory if self.cache else None}


def _with_got_libcalls(text: str) -> str:
    """text with the module flag that makes the backend's library calls (sin, memset...) go through the GOT."""
    if "RtLibUseGOT" in text:
        return text
    ids = [int(m) for m in _METADATA_ID.findall(text)]
    n = max(ids, default=-1) + 1
    return f'{text}\n!llvm.module.flags = !{{!{n}}}\n!{n} = !{{i32 7, !"RtLibUseGOT", i32 1}}\n'


def _bind_through_got(mod: llvm.ModuleRef) -> llvm.ModuleRef:
    """mod, with every function defined outside the object declared ``nonlazybind``: calls load its address
    from the GOT (no PLT stubs).

    RuntimeDyld's x86-64 PLT stub jumps through a GOT entry that llvmlite's memory manager does not reserve
    room for (it counts only GOT-relative relocations): an object without writable data of its own then
    aborts the process when it is linked.  parse() writes the attribute into the IR text; a declaration the
    optimiser added (a library call it chose) sends the module through text once more, since llvmlite 0.47's
    ``add_function_attribute`` attaches attributes to the return value instead.
    """
    for fn in mod.functions:
        # llvmlite yields the function's attribute set as one space-separated string
        bound = b"nonlazybind" in b" ".join(fn.attributes).split()
        if fn.is_declaration and not fn.name.startswith("llvm.") and not bound:
            fresh = llvm.parse_assembly(_nonlazybind(str(mod)), context=llvm.create_context())
            fresh.triple, fresh.data_layout = mod.triple, mod.data_layout
            return fresh
    return mod


_DECLARE = re.compile(r'^(declare\b(?![^\n]*@"?llvm\.)(?![^\n]*nonlazybind)[^\n]*)$', re.M)


def _nonlazybind(text: str) -> str:
    """IR text whose declarations of non-intrinsic functions carry the ``nonlazybind`` attribute."""
    return _DECLARE.sub(r"\1 nonlazybind", text)


def _check_exports(mod: llvm.ModuleRef, prefix: str) -> None:
    """Every externally visible definition must carry the module's prefix (its name in tracebacks and profiles)."""
    for value in [*mod.functions, *mod.global_variables]:
        if value.is_declaration or value.linkage != llvm.Linkage.external:
            continue
        if not value.name.startswith(prefix):
            raise ValueError(f"exported symbol {value.name!r} lacks the {PLACEHOLDER} prefix; "
                             "name exports GJMOD_<name> and give helpers internal/private linkage")


_COMPILER: NativeCompiler | None = None
_COMPILER_LOCK = threading.Lock()
forking.register(lambda: _COMPILER.lock if _COMPILER is not None else None, forking.RANK_COMPILER)
forking.register(lambda: _COMPILER_LOCK, forking.RANK_CREATE)


def get_compiler() -> NativeCompiler:
    """The process-wide NativeCompiler (created on first use)."""
    global _COMPILER
    if _COMPILER is None:
        with _COMPILER_LOCK:
            if _COMPILER is None:
                _COMPILER = NativeCompiler()
    return _COMPILER
