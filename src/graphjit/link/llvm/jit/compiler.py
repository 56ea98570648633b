"""The process-wide native compiler: one target machine setup, an MCJIT engine per library, the object cache.

A library is compiled from IR whose exported symbols already carry their prefix (ir/modules.py): the text is
final when it is produced, and its hash is the object cache key.  Its parts are a kernels module (the full
pipeline) and a glue module: a large glue gets light passes and the fast instruction selector, a small one
is linked into the kernels (llvmlite.binding's link_in) and compiled with them.

Each NativeLibrary owns the MCJIT engine holding its code (jit/engine.py): when the last reference to it goes
(its Functions, a numba caller's type, the linker's bounded recent list), its intermediate buffers are released
and the engine, with its code, data and LLVM bookkeeping, is freed.  Modules are parsed in an LLVM context of
their own, so the constants and types of a compiled graph do not stay behind in LLVM's global context.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import time
import weakref
from typing import Any, Callable, Iterator

from graphjit.link.llvm.jit import (binding as _binding, bulk, elfload, hostfacts, parallel, pipelines,
                                    runtime as _runtime, worker_client)
from graphjit.link.llvm.jit.binding import llvm
from graphjit.graph import phase_timer
from graphjit.link.llvm.jit.objfile import pack_objects, unpack_objects  # noqa: F401  (also the object payload format of tests)
from graphjit.link.llvm.cache.keys import object_key
from graphjit.link.llvm.cache.objects import ObjectCache, default_cache_dir
from graphjit.link.llvm.jit.engine import free_engine, new_engine
from graphjit.link.llvm.ir.modules import KERNEL_INFIX, symbol_prefix
# a cycle (runtime creates the compiler): looked up at call time
from graphjit.link.llvm.jit.symbols import UnresolvedSymbolError, resolve as resolve_symbols
from graphjit.link.llvm.jit.ir_prep import (BULK, BULK_VECTOR, GLUE, LINKED, Buildable, Kind, Parts,  # noqa: F401  (re-exported)
                                           check_exports, key_text, bind_through_got, ir_parts)
from graphjit.graph import forksafe

# Kernels' pipeline, trimmed where it costs compile time and buys nothing on their loops (measured on the W3
# training graph's 18 kernels): the loop vectoriser already interleaves, so the LoopUnrollPass only unrolls
# scalar remainders (-12% kernel LLVM time); loop strength reduction rewrites induction variables that x86's
# base+index*scale addressing already folds (-20%; applied around this module's codegen only, see _emit).
_KERNEL_UNROLL = False
# Position-independent code, small code model: references inside an object are 32-bit PC-relative (safe: the
# engine's memory manager allocates an object's sections in one block), calls and data outside it go through
# GOT entries RuntimeDyld fills (bind_through_got, _got_libcalls).  MCJIT's default
# (static, large model) materialises every global's and callee's address as a 64-bit immediate, which the fast
# instruction selector does not handle: every glue function fell back to SelectionDAG (W3's glue codegen:
# 96 ms -> 44 ms).
_CODE_MODEL = ("pic", "small")
_KERNEL_CODEGEN_OPTIONS = ("-disable-lsr",)
# in the cache key; "calls:got": objects cached before it could call through PLT stubs (see bind_through_got)
PIPELINE = (f"kernels:O<n>,unroll={_KERNEL_UNROLL},{','.join(_KERNEL_CODEGEN_OPTIONS)};"
            f"glue:{','.join(pipelines.LIGHT_PASSES)};code:{'-'.join(_CODE_MODEL)};calls:got;"
            f"bulk:{bulk.SPLIT_MIN_KERNELS}/{bulk.BULK_PART_KERNELS}:{bulk.describe_options()},codegen:O0")
# link objects with graphjit's own ELF loader (jit/elfload.py; LLVM when it refuses one) instead of MCJIT's
# RuntimeDyld: with the host facts of the cache keys (jit/hostfacts.py) and the symbol table of jit/binding.py,
# a warm process never loads LLVM (docs/cache.md).  False: MCJIT links every object.
ELF_LOADER = True


class PrefixClash(Exception):
    """Another live library already exports symbols under this prefix from different IR."""


class NativeLibrary:
    """One compiled library loaded into an engine of its own; the code lives as long as this object."""

    def __init__(self, compiler: NativeCompiler, key: str, prefix: str, parts: Parts | None, opt_level: int,
                 cache_hit: bool, timings: dict[str, float], engine: Any) -> None:
        self._compiler = compiler
        self._engine = engine
        self.cache_key = key
        self.prefix = prefix
        self._parts = parts               # None when loaded by key alone (cache/plans.py): set_source() fills it
        self.opt_level = opt_level
        self.cache_hit = cache_hit
        self.timings = timings            # seconds: key, cache_load, ir_parse, optimize, codegen, link, total
        self._optimized_ir: list[tuple[str, bool]] | None = None
        self._asm: str | None = None
        # not at exit: a module global may still call this code while the interpreter shuts down
        weakref.finalize(self, free_engine, engine, self._lookup("drop_buffers")).atexit = False

    @property
    def llvm_ir(self) -> str:
        """The IR compiled (its kernels' and its glue's modules one after the other)."""
        if self._parts is None:
            raise LookupError("this library was loaded from the cache by key; its IR was not rebuilt")
        return "\n".join(text for text, _ in self._parts)

    def set_source(self, modules: Buildable) -> None:
        """Record the IR of a library loaded by key, built again; it must hash to the key."""
        if self._parts is None:
            prefix, parts = ir_parts(modules)
            if prefix != self.prefix or self._compiler.key_of(parts, self.opt_level) != self.cache_key:
                raise RuntimeError("the rebuilt IR does not match the cached object's key")
            self._parts = parts

    @property
    def optimized_ir(self) -> str:
        """The optimised IR, recomputed on first access (without codegen): printing it costs ~20 ms on a large graph."""
        if self._optimized_ir is None:
            self.llvm_ir                       # noqa: B018 - raises if the IR is unknown
            self._optimized_ir = [(str(mod), kind) for mod, kind in
                                  self._compiler.optimize_parts(self._parts, self.opt_level, self.prefix)]
        return "\n".join(text for text, _ in self._optimized_ir)

    @property
    def asm(self) -> str:
        """Assembly of the optimised module (or of its kernels and its glue), emitted on first access."""
        if self._asm is None:
            self.optimized_ir                  # noqa: B018 - fills the parts
            self._asm = "\n".join(self._compiler.emit(self._compiler.parse(text), self.opt_level, kind, asm=True)
                                   for text, kind in self._optimized_ir)
        return self._asm

    def symbol(self, name: str) -> str:
        """The real symbol of an exported name given without the prefix."""
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
        self.lock = forksafe.new_rlock()
        self._facts: dict[str, Any] | None = None     # host facts (jit/hostfacts.py): from the cache or LLVM
        self._target: Any = None                       # LLVM's target, set up when LLVM is first needed
        self.engine: Any = None
        self._tms: dict[int, llvm.TargetMachine] = {}
        # a library stays here while something uses it (identical modules share it), no longer
        self._libraries: weakref.WeakValueDictionary[str, NativeLibrary] = weakref.WeakValueDictionary()
        # the live library of each symbol prefix: another IR must not export the same names (compile_unique)
        self._prefixes: weakref.WeakValueDictionary[str, NativeLibrary] = weakref.WeakValueDictionary()
        self._cache_dir: str | None = None     # explicit directory, else default_cache_dir() at each compile
        self._cache: ObjectCache | None = None
        self._no_cache = False

    # ---------------------------------------------------------------- host facts and LLVM, on first use
    def _host(self) -> dict[str, Any]:
        """The host facts of the keys: stored in the cache by a process that asked LLVM, else LLVM's."""
        if self._facts is None:
            with self.lock:
                if self._facts is None:
                    cache, print_ = self.cache, hostfacts.fingerprint()
                    facts = hostfacts.load(cache, print_) if cache is not None and print_ else None
                    if facts is None:
                        facts = hostfacts.from_llvm()
                        if cache is not None and print_:
                            hostfacts.store(cache, print_, facts)
                    self._facts = facts
        return self._facts

    def adopt_host(self, facts: dict[str, Any]) -> None:
        """Compile for these host facts (a compile worker takes its parent's: the same keys, the same code)."""
        if self._facts is None:
            self._facts = dict(facts)
        elif self._facts != facts:
            raise RuntimeError("a compile worker serves one host's facts")

    @property
    def triple(self) -> str:
        """The host's target triple."""
        return self._host()["triple"]

    @property
    def cpu(self) -> str:
        """The host CPU's name, as LLVM knows it."""
        return self._host()["cpu"]

    @property
    def features(self) -> str:
        """The host CPU's features, as LLVM knows them (comma-separated)."""
        return self._host()["features"]

    @property
    def vector_library(self) -> str:
        """The vector math library the code may call ("none" or "libmvec(<glibc>)")."""
        return self._host()["vector_library"]

    @property
    def vector_isas(self) -> tuple[str, ...]:
        """The x86 VFABI ISA letters of the vector library usable here."""
        return tuple(self._host()["vector_isas"])

    @property
    def llvm_version(self) -> str:
        """LLVM's version (in the keys)."""
        return self._host()["llvm_version"]

    def _llvm_target(self) -> Any:
        """LLVM's target for this host, LLVM loaded and set up on the first call."""
        if self._target is None:
            with self.lock:
                if self._target is None:
                    llvm.initialize_native_target()
                    llvm.initialize_native_asmprinter()
                    if self.vector_library != "none" and llvm.llvm_version_info[0] <= 20:
                        # LLVM <= 20 maps math calls to libmvec itself; LLVM >= 21 dropped the option from the
                        # library, and context.call_math attaches "vector-function-abi-variant" attributes
                        # instead (works on every version)
                        llvm.set_option("", "-vector-library=LIBMVEC-X86")
                    target = llvm.Target.from_triple(self.triple)
                    # an engine that holds no code: creating the first one makes the process' own symbols
                    # resolvable
                    self.engine = new_engine(target, self.triple)
                    self._target = target
        return self._target

    def _new_tm(self, opt_level: int) -> llvm.TargetMachine:
        return self._llvm_target().create_target_machine(cpu=self.cpu, features=self.features, opt=opt_level,
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

    def key_of(self, parts: Parts, opt_level: int = 3) -> str:
        """The cache key of a library's IR parts for this host."""
        return object_key(key_text(parts), opt_level=opt_level, triple=self.triple, cpu=self.cpu,
                          features=self.features, vector_library=self.vector_library, pipeline=PIPELINE,
                          llvm_version=self.llvm_version)

    # ---------------------------------------------------------------- compile
    def compile(self, modules: Buildable, opt_level: int = 3) -> NativeLibrary:
        """Compile (or load from cache) a library's modules; identical IR shares one library.

        PrefixClash if a live library exports the same prefix from other IR (compile_unique picks another).
        """
        t0 = time.perf_counter()
        prefix, parts = ir_parts(modules)
        key = self.key_of(parts, opt_level)
        timings = {"key": time.perf_counter() - t0}
        phase_timer.add("ir_key", timings["key"])
        with self.lock:
            lib = self._live(key, prefix)
            if lib is not None:
                return lib
            if prefix in self._prefixes:
                raise PrefixClash(prefix)
            _runtime.ensure_runtime()           # the symbols generated code refers to must resolve when linking
            payload, built = self._load_or_build(key, prefix, parts, opt_level, timings)
            try:
                return self._add(key, prefix, payload, parts, opt_level, not built, timings, t0)
            except ValueError:
                if built:
                    raise
            # the cached entry does not load (a malformed object): drop it and build afresh, never fatal
            self.cache.discard(key)
            payload, built = self._load_or_build(key, prefix, parts, opt_level, timings, use_cache=False)
            return self._add(key, prefix, payload, parts, opt_level, False, timings, t0)

    def compile_unique(self, build: Callable[[str], Buildable], seed: str, opt_level: int = 3) -> NativeLibrary:
        """Compile the modules build(prefix) returns, the prefix drawn from seed (then seed#1, seed#2... while
        a live library holds it with other IR): names are fixed before the IR exists, and never shared."""
        for n in itertools.count():
            try:
                return self.compile(build(symbol_prefix(f"{seed}#{n}" if n else seed)), opt_level)
            except PrefixClash:
                continue
        raise AssertionError("unreachable")

    def load(self, key: str, prefix: str, opt_level: int = 3) -> NativeLibrary | None:
        """The library of a key compiled before (this process or the disk cache), without its IR; else None."""
        t0 = time.perf_counter()
        with self.lock:
            lib = self._live(key, prefix)
            if lib is not None:
                return lib
            cache = self.cache
            if cache is None or prefix in self._prefixes:
                return None
            payload = cache.load(key, remove_corrupt=True)
            phase_timer.add("cache_lookup", time.perf_counter() - t0)
            if payload is None:
                return None
            _runtime.ensure_runtime()
            timings = {"cache_load": time.perf_counter() - t0}
            try:
                return self._add(key, prefix, payload, None, opt_level, True, timings, t0)
            except UnresolvedSymbolError:
                return None         # the caller builds the IR: its lowering publishes what is missing
            except ValueError:
                cache.discard(key)  # a malformed object: dropped, and rebuilt by the caller
                return None

    def _live(self, key: str, prefix: str) -> NativeLibrary | None:
        """The loaded library of key, if it is alive (caller holds the lock)."""
        lib = self._libraries.get(key)
        if lib is None:
            lib = self._prefixes.get(prefix)
            return lib if lib is not None and lib.cache_key == key else None
        return lib

    def _add(self, key: str, prefix: str, payload: bytes, parts: Parts | None, opt_level: int,
             cache_hit: bool, timings: dict[str, float], t0: float) -> NativeLibrary:
        """Link object code into an engine of its own and register its library (caller holds the lock).

        ValueError (nothing linked) if the payload is malformed; UnresolvedSymbolError if it needs a symbol
        nothing publishes (jit/symbols.py).
        """
        t1 = time.perf_counter()
        objects = unpack_objects(payload)
        resolve_symbols(objects)          # bounds-checks each object too: llvmlite would crash on a bad one
        engine = self._load_elf(objects) if ELF_LOADER else None
        if engine is None:
            engine = new_engine(self._llvm_target(), self.triple)
            try:
                for obj in objects:
                    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
                engine.finalize_object()
            except BaseException:
                free_engine(engine, 0)
                raise
        timings["link"] = time.perf_counter() - t1
        phase_timer.add("link", timings["link"])
        timings["total"] = time.perf_counter() - t0
        lib = NativeLibrary(self, key, prefix, parts, opt_level, cache_hit, timings, engine)
        self._libraries[key] = lib
        self._prefixes[prefix] = lib
        return lib

    @staticmethod
    def _load_elf(objects: list[bytes]) -> elfload.LoadedImage | None:
        """The objects mapped by graphjit's own loader (jit/elfload.py), or None: link them with LLVM."""
        try:
            return elfload.load(objects, _binding.address_of_symbol)
        except elfload.Unsupported:
            return None

    def _load_or_build(self, key: str, prefix: str, parts: Parts, opt_level: int,
                       timings: dict[str, float], use_cache: bool = True) -> tuple[bytes, bool]:
        """(object code, built here): from the disk cache, or freshly built under the per-key lock (and
        stored); use_cache=False: built in any case (the entry is replaced)."""
        cache = self.cache
        t0 = time.perf_counter()
        payload = cache.load(key) if cache and use_cache else None
        timings["cache_load"] = time.perf_counter() - t0
        phase_timer.add("cache_lookup", timings["cache_load"])
        if payload is not None:
            return payload, False
        if cache is None:
            return self._build_anywhere(parts, opt_level, prefix, timings), True
        with cache.lock(key):
            t0 = time.perf_counter()
            # another process may have built it meanwhile
            payload = cache.load(key, remove_corrupt=True) if use_cache else None
            timings["cache_load"] += time.perf_counter() - t0
            phase_timer.add("cache_lookup", time.perf_counter() - t0)
            if payload is not None:
                return payload, False
            payload = self._build_anywhere(parts, opt_level, prefix, timings)
            with phase_timer.phase("cache_store"):
                cache.store(key, payload)
            return payload, True

    def _build_anywhere(self, parts: Parts, opt_level: int, prefix: str, timings: dict[str, float]) -> bytes:
        """The packed objects of a library: built by the compile worker (jit/worker_client.py), or here."""
        payload = worker_client.build(parts, opt_level, prefix, self._host(), timings)
        if payload is None:
            return self.build_here(parts, opt_level, prefix, timings)
        for phase in ("ir_parse", "optimize", "codegen"):     # the worker's times, counted in this process
            phase_timer.add(phase, timings[phase])
        return payload

    def build_here(self, parts: Parts, opt_level: int, prefix: str, timings: dict[str, float]) -> bytes:
        """Parse, optimise and emit a library's parts in this process; their packed objects."""
        for key in ("ir_parse", "optimize", "codegen"):
            timings[key] = 0.0
        kinds = [kind for _, kind in parts]
        if (sum(kind in (BULK, BULK_VECTOR) for kind in kinds) > 1 and LINKED not in kinds and opt_level > 0
                and parallel.cores() > 1 and parallel.available()):
            # the light glue joins the pool too, instead of following them; longest jobs first: the O3 parts,
            # the glue, then the parts of vector kernels (about half an O3 part's time each)
            order = [k for first in (BULK, GLUE, BULK_VECTOR) for k, kind in enumerate(kinds) if kind == first]
            built = self._build_side_by_side([parts[k] for k in order], opt_level, prefix, timings)
            objects = dict(zip(order, built))
            return pack_objects([objects[k] for k in range(len(parts))])
        parsed = self._parse_parts(parts, prefix)
        for _, _, parse_time in parsed:
            timings["ir_parse"] += parse_time
            phase_timer.add("ir_parse", parse_time)
        objects: list[bytes] = []
        for mod, kind, _ in parsed:
            t1 = time.perf_counter()
            with self._bulk_options(kind):
                self._run_passes(mod, opt_level, kind)
            t2 = time.perf_counter()
            objects.append(self.emit(mod, opt_level, kind))
            t3 = time.perf_counter()
            self._count(timings, t2 - t1, t3 - t2)
        return pack_objects(objects)

    @staticmethod
    def _count(timings: dict[str, float], optimize: float, codegen: float) -> None:
        timings["optimize"] += optimize
        timings["codegen"] += codegen
        phase_timer.add("optimize", optimize)
        phase_timer.add("codegen", codegen)

    def _build_side_by_side(self, parts: Parts, opt_level: int, prefix: str,
                            timings: dict[str, float]) -> list[bytes]:
        """Parse, optimise and emit the bulk parts (and a light glue) on one thread per core (jit/parallel.py),
        each in an LLVM context and with a target machine and pass manager of its own; times counted as wall
        time, split between ir_parse, optimize and codegen as the threads spent theirs."""
        tools = []
        layout = str(self.target_machine(3).target_data)
        for _, kind in parts:               # each thread its own context, target machine and pass builder (made
            tm = self._new_tm(pipelines.codegen_level(kind, opt_level))  # here, under llvmlite's lock)
            pb = llvm.create_pass_builder(tm, self._tuning(pipelines.pass_level(kind, opt_level)))
            tools.append((llvm.create_context(), tm, pb, pipelines.pass_manager(kind, pb, opt_level)))

        def job(text: str, context: Any, tm: Any, pb: Any, mpm: Any) -> Callable[[], tuple]:
            def run() -> tuple[bytes, float, float, float]:
                t0 = time.perf_counter()
                mod = parallel.parse_assembly(text, context)
                mod.triple, mod.data_layout = self.triple, layout
                mod.verify()
                check_exports(mod, prefix)
                t1 = time.perf_counter()
                parallel.run_passes(mpm, mod, pb)
                t2 = time.perf_counter()
                obj = parallel.emit_object(tm, bind_through_got(mod))
                return obj, t1 - t0, t2 - t1, time.perf_counter() - t2
            return run

        t0 = time.perf_counter()
        # the options are process-wide: the bulk vectoriser's do not touch SROA, -disable-lsr not an O0 codegen
        with self._bulk_options(BULK), self._codegen_options(opt_level):
            done = parallel.run_all([job(text, *tool) for (text, _), tool in zip(parts, tools)], parallel.cores())
        wall = time.perf_counter() - t0
        spent = [sum(d[k] for d in done) for k in (1, 2, 3)]
        shares = [t / sum(spent) if sum(spent) > 0 else 1 / 3 for t in spent]
        timings["ir_parse"] += wall * shares[0]
        phase_timer.add("ir_parse", wall * shares[0])
        self._count(timings, wall * shares[1], wall * shares[2])
        return [d[0] for d in done]

    def _parse_parts(self, parts: Parts, prefix: str) -> list[tuple[llvm.ModuleRef, Kind, float]]:
        """[(module, its kind, seconds to parse it)]: the LINKED parts linked into one, first; the others apart."""
        out: list[tuple[llvm.ModuleRef, Kind, float]] = []
        linked: list[llvm.ModuleRef] = []
        context, t_linked = llvm.create_context(), 0.0
        for text, kind in parts:
            t0 = time.perf_counter()
            mod = self.parse(text, context if kind is LINKED else llvm.create_context())
            check_exports(mod, prefix)
            if kind is not LINKED:
                out.append((mod, kind, time.perf_counter() - t0))
                continue
            if linked:
                linked[0].link_in(mod)
            linked.append(mod)
            t_linked += time.perf_counter() - t0
        if len(linked) > 1:                 # kernels and the glue calling them in one module: nothing to export
            for fn in linked[0].functions:
                if fn.name.startswith(prefix + KERNEL_INFIX) and not fn.is_declaration:
                    fn.linkage = llvm.Linkage.internal
        return ([(linked[0], LINKED, t_linked)] if linked else []) + out

    def emit(self, mod: llvm.ModuleRef, opt_level: int, kind: Kind, asm: bool = False) -> Any:
        """Object code (or assembly) of an optimised part: glue by the fast selector, kernels with their options."""
        level = pipelines.codegen_level(kind, opt_level)
        tm = self.target_machine(level)
        emit = tm.emit_assembly if asm else tm.emit_object
        mod = bind_through_got(mod)
        if level == 0:
            return emit(mod)
        with self._codegen_options(opt_level):
            return emit(mod)

    @contextlib.contextmanager
    def _codegen_options(self, opt_level: int) -> Iterator[None]:
        """The kernels' codegen options, for the block (LLVM's options are process-wide, numba shares them:
        set for this codegen only, under the lock)."""
        if opt_level == 0:
            yield
            return
        with self.lock:
            for option in _KERNEL_CODEGEN_OPTIONS:
                llvm.set_option("", f"{option}=true")
            try:
                yield
            finally:
                for option in _KERNEL_CODEGEN_OPTIONS:
                    llvm.set_option("", f"{option}=false")

    @contextlib.contextmanager
    def _bulk_options(self, kind: Kind) -> Iterator[None]:
        """The bulk parts' vectoriser options (jit/bulk.py) for the block, if kind is BULK."""
        if kind != BULK:
            yield
            return
        with self.lock, bulk.options():
            yield

    def parse(self, text: str, context: Any = None) -> llvm.ModuleRef:
        """Parse and verify IR text for this target (in context, else in a new LLVM context)."""
        # a context of its own: the global one would keep every constant and type of every module forever
        mod = llvm.parse_assembly(text, context=context or llvm.create_context())
        mod.triple = self.triple
        mod.data_layout = str(self.target_machine(3).target_data)
        mod.verify()
        return mod

    def optimize_parts(self, parts: Parts, opt_level: int, prefix: str) -> list[tuple[llvm.ModuleRef, Kind]]:
        """The optimised modules as compile() builds them: the linked kernels (or their bulk halves), and the
        light glue if any."""
        out = []
        for mod, kind, _ in self._parse_parts(parts, prefix):
            with self._bulk_options(kind):
                self._run_passes(mod, opt_level, kind)
            out.append((mod, kind))
        return out

    @staticmethod
    def _tuning(opt_level: int) -> Any:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pto.loop_vectorization = opt_level >= 2
        pto.slp_vectorization = opt_level >= 2
        pto.loop_unrolling = opt_level >= 2 and _KERNEL_UNROLL
        return pto

    def _run_passes(self, mod: llvm.ModuleRef, opt_level: int, kind: Kind = LINKED) -> None:
        """The O<opt_level> pipeline; a light glue part and a part of kernels
        emitted already vectorised their short lists (jit/pipelines.py)."""
        level = pipelines.pass_level(kind, opt_level)
        pb = llvm.create_pass_builder(self.target_machine(level), self._tuning(level))
        pipelines.pass_manager(kind, pb, opt_level).run(mod, pb)

    def info(self) -> dict[str, Any]:
        """Target and engine facts, for debugging and bug reports."""
        return {"triple": self.triple, "cpu": self.cpu, "vector_library": self.vector_library,
                "vector_isas": self.vector_isas, "modules": len(self._libraries),
                "cache_dir": self.cache.directory if self.cache else None, "compile_worker": worker_client.info()}


_COMPILER: NativeCompiler | None = None
_COMPILER_LOCK = forksafe.new_lock()


def get_compiler() -> NativeCompiler:
    """The process-wide NativeCompiler (created on first use)."""
    global _COMPILER
    if _COMPILER is None:
        with _COMPILER_LOCK:
            if _COMPILER is None:
                _COMPILER = NativeCompiler()
    return _COMPILER
