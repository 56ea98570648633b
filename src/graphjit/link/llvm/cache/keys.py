"""Every key of the LLVM backend's caches, and every part of one, computed here (docs/cache.md "Keys").

* object key (``.gjo``, object_key): the sha256 of the IR text, the host, the versions, opt level and pass pipeline;
* structural signature (structural_signature): the graph's structure (graph_signature) and its variant (opt level,
  threading, math flags, size limits, users' lowering and layout versions, instrumentation): the in-memory map's
  key, and, pickled and hashed with the sources and the host (plan_key), the disk plan's;
* plan alias (alias_key): the rewrite cache's key of the graph with the same variant, the order's check, the
  sources and the host: what a warm process computes instead of the structural signature;
* rewritten graph key (rewritten_graph_key), the in-memory key of a plan (memory_key), the symbol prefix's seed
  (prefix_seed), the fingerprint of the host facts (host_fingerprint).

Sources: graphjit's own (package_digest) cover its code, its lowerings and layouts included: these need no version
in any key.  A registration made outside graphjit (registry.py records its ``version=``), a user op's ``lower``
hook (``lower_version``) and a user Type's ``llvm_version`` add theirs, and the modules defining op and Type
classes outside graphjit add their source digests.  Nothing here loads the backend's lowering modules (a warm
process never does; a registration from outside loads them itself) or the compiler: the host facts come from
the caller's compiler (host_parts).
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import platform
import sys
from typing import Any, Callable, Iterable, Optional, Sequence

import llvmlite
import numpy as np

from graphjit.config import config
from graphjit.graph.basic import Apply, Constant, Variable, io_toposort
from graphjit.graph.op import Op
from graphjit.graph.type import Type
from graphjit.tensor.type import TensorType
from graphjit.link.llvm import limits    # read at call time (tests change them)
from graphjit.link.llvm.instrument_options import Instrumentation
from graphjit.link.llvm.registry import branch_lowerings, layouts, lowerings, scalar_lowerings

OBJECT_FORMAT = "gjo2"    # gjo2: a payload is one or more object files (jit/objfile.py pack_objects)
PLAN_FORMAT = "gjp3"      # gjp3: plans carry their library's symbol prefix
ALIAS_FORMAT = "gja1"
HOST_FACTS_FORMAT = "facts1"

# the two methods of the inline exp (ir/fastmath.py's ExpMethod names)
MEMORY_TABLE_NAME = "table256"
REGISTER_TABLE_NAME = "reg8"


# ---------------------------------------------------------------------------------------------- sources
_SOURCES: dict[str, str] = {}


def _file_digest(path: str) -> str:
    digest = _SOURCES.get(path)
    if digest is None:
        try:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            digest = "?"
        _SOURCES[path] = digest
    return digest


def package_digest() -> str:
    """A digest of graphjit's own sources: path, size and modification time of each (once per process).

    Reading every file costs more than the rest of a warm compile; an edit (or a checkout) changes the
    modification time, which is what matters here.
    """
    here = os.path.abspath(__file__)                       # graphjit/link/llvm/cache/keys.py
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(here))))     # graphjit/
    digest = _SOURCES.get(root)
    if digest is None:
        h = hashlib.sha256()
        for base, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(base, name)
                st = os.stat(path)
                h.update(f"{path[len(root):]}:{st.st_size}:{st.st_mtime_ns}\0".encode())
        digest = _SOURCES[root] = h.hexdigest()
    return digest


def _own(module: str) -> bool:
    """Whether a module is graphjit's (its code is covered by package_digest)."""
    return module.split(".")[0] == "graphjit"


def source_digest(module_name: str) -> str:
    """The digest of a module's source file when it is not graphjit's own ("" otherwise or without a file)."""
    if _own(module_name):
        return ""
    path = getattr(sys.modules.get(module_name), "__file__", None)
    return _file_digest(path) if path else ""


def foreign_sources(modules: Iterable[str]) -> list[str]:
    """The source digests of the modules outside graphjit among modules, sorted."""
    return sorted({d for d in (source_digest(m) for m in modules) if d})


def _signature_sources(signature: tuple) -> list[str]:
    """Digests of the modules defining a structural signature's op classes outside graphjit."""
    # structural_signature: (level, parallel, variant, (inputs, nodes, outputs, op classes)[, instrumentation])
    graph = signature[3] if isinstance(signature, tuple) and len(signature) >= 4 else None
    if not (isinstance(graph, tuple) and len(graph) == 4 and isinstance(graph[3], tuple)):
        return []
    return foreign_sources(cls.__module__ for cls in graph[3] if isinstance(cls, type))


# ---------------------------------------------------------------------------------------------- versions
def _defined_outside(cls: type, name: str) -> bool:
    """Whether the attribute name of cls comes from a class outside graphjit."""
    owner = next((base for base in cls.__mro__ if name in vars(base)), None)
    return owner is not None and not _own(owner.__module__)


def lowering_version(op: Op) -> tuple | None:
    """What op's lowering adds to the keys: the version of a registration made outside graphjit, or of a user's
    ``lower`` hook (its ``lower_version``, (0,) without one); None when graphjit's sources cover it.

    Along the MRO as registry.lookup goes: a registration of a class comes before a hook it defines.  Only
    registrations made outside graphjit are looked at, so the answer is the same whether or not the backend's
    own are loaded (any registration from outside loads them); one of those beyond the entry that lookup finds
    only makes a key change that did not need to.
    """
    cls = type(op)
    for base in cls.__mro__:
        version = lowerings.user_version(base)
        if version is not None:
            branch = branch_lowerings.user_version(base)
            return version if branch is None else (*version, ("branch", branch))
        if "lower" in vars(base):
            if _own(base.__module__) and not _defined_outside(cls, "lower_version"):
                return None
            hook = getattr(op, "lower_version", None)
            return tuple(hook()) if hook is not None else (0,)
    return None


def layout_version(type_: Type) -> tuple | None:
    """What a Type's layout adds to the keys: the version of a registration made outside graphjit, else its
    ``llvm_version`` hook's when a class outside graphjit defines one; None when graphjit's sources cover it."""
    cls = type(type_)
    for base in cls.__mro__:
        version = layouts.user_version(base)
        if version is not None:
            return version
    return tuple(type_.llvm_version()) if _defined_outside(cls, "llvm_version") else None


def lowering_versions(fgraph: Any, order: Sequence[Apply]) -> tuple:
    """The versions users' lowerings and Type layouts add for a graph, once per class in first-use order, and
    those of users' scalar lowerings (all of them: they sit inside Elemwise ops)."""
    seen: dict[type, tuple | None] = {}
    for node in order:
        cls = type(node.op)
        if cls not in seen:
            seen[cls] = lowering_version(node.op)
    types: dict[type, tuple | None] = {}
    for var in (*fgraph.inputs, *fgraph.outputs):
        cls = type(var.type)
        if cls not in types:
            types[cls] = layout_version(var.type)
    return tuple(seen.values()), tuple(types.values()), scalar_lowerings.user_versions()


# ---------------------------------------------------------------------------------------------- variant
def uses_register_table(features: str) -> bool:
    """Whether a host of these CPU features has its exp use the 8-entry register table (AVX-512 makes its
    lookup one permute)."""
    return "+avx512f" in features.split(",")


def lowering_flags(compiler: Any) -> tuple:
    """The flags that change how math lowers: the inline exp, and the exp method compiler's host uses."""
    method = REGISTER_TABLE_NAME if uses_register_table(compiler.features) else MEMORY_TABLE_NAME
    return (config.inline_exp, method)


def sizes() -> tuple:
    """The size limits in force (limits.py)."""
    return (limits.COMPACT_MIN_GROUPS, limits.STACK_TEMP_MAX_BYTES, limits.STACK_TEMPS_MAX_TOTAL,
            limits.SMALL_GRAPH_MAX_NODES, limits.PROVE_LENGTHS)


def variant(fgraph: Any, order: Sequence[Apply], opt_level: int, parallel: bool, compiler: Any) -> tuple:
    """What shapes the code besides the graph: the level, threading, math flags, size limits, users' versions."""
    return opt_level, parallel, (lowering_flags(compiler), sizes(), lowering_versions(fgraph, order))


def _instrumentation(inst: Instrumentation) -> tuple | None:
    """An instrumented entry is its own variant (ir/callbacks.py)."""
    return (inst.guard, inst.hooks, inst.profile) if inst.active else None


# ---------------------------------------------------------------------------------------------- graph structure
def structural_signature(fgraph: Any, order: Sequence[Apply], opt_level: int, parallel: bool, inst: Instrumentation,
                         compiler: Any) -> Any:
    """A hashable description of the graph's structure (ops, types, constants, wiring) and variant; None if
    it is not hashable.  The in-memory map's key; plan_key hashes it."""
    graph = graph_signature(fgraph, order)
    if graph is None:
        return None
    signature = (*variant(fgraph, order, opt_level, parallel, compiler), graph)
    instrument = _instrumentation(inst)
    if instrument is not None:
        signature += (("instrument", *instrument),)
    try:
        hash(signature)
    except TypeError:
        return None
    return signature


def graph_signature(fgraph: Any, order: Sequence[Apply], named: bool = False) -> tuple | None:
    """(inputs, nodes, outputs, classes) of fgraph as types, ops, constant digests and wiring; None if a node
    reads a variable from outside the graph.  named: also the names and source lines (what error messages quote).

    A node is ``(op class, op token, input references, outputs)``, inputs are referred to by position.
    Tensor types and ops with ``__props__`` appear as plain tuples (_token): equal to each other exactly
    when the objects are, and pickled for the disk keys without a Python-level reduce per occurrence.  Op
    classes appear as their position in ``classes`` (each pickled once: the keys pickle without a memo).
    """
    classes: dict[type, int] = {}
    tokens: dict[int, Any] = {}         # id -> token: ops and types are shared by many nodes (the graph keeps them alive)

    def class_ref(cls: type) -> int:
        ref = classes.get(cls)
        if ref is None:
            ref = classes[cls] = len(classes)
        return ref

    def token(obj: Any) -> Any:
        found = tokens.get(id(obj))
        if found is None:
            found = tokens[id(obj)] = _token(obj, class_ref)
        return found

    def described(v: Variable) -> tuple:
        return (token(v.type), v.name, v.trace) if named else (token(v.type),)

    # the loop below inlines token() and described() (the key of every warm compile walks the whole graph)
    get_token = tokens.get
    where: dict[Variable, tuple] = {v: ("in", k) for k, v in enumerate(fgraph.inputs)}
    get_where = where.get
    nodes = []
    for i, node in enumerate(order):
        refs = []
        for v in node.inputs:
            ref = get_where(v)
            if ref is not None:
                refs.append(ref)
            elif isinstance(v, Constant):
                refs.append(("const", *described(v), _data_digest(v.data)))
            else:
                return None
        op = node.op
        cls_ref = class_ref(type(op))          # before the op's token (its props may add classes)
        op_token = get_token(id(op))
        if op_token is None:
            op_token = token(op)
        outs = []
        for j, o in enumerate(node.outputs):
            typ = o.type
            if type(typ) is TensorType:                 # _token's first case; most outputs have a Type of their own
                t = ("tensor", typ.dtype, typ.shape)
            else:
                t = get_token(id(typ))
                if t is None:
                    t = token(typ)
            outs.append((t, o.name, o.trace) if named else (t,))
            where[o] = ("node", i, j)
        nodes.append((cls_ref, op_token, tuple(refs), tuple(outs)))
    outs = tuple(where.get(v) or ("const", token(v.type), _data_digest(getattr(v, "data", None)))
                 for v in fgraph.outputs)
    return tuple(described(v) for v in fgraph.inputs), tuple(nodes), outs, tuple(classes)


def _token(obj: Any, class_ref: Optional[Callable[[type], Any]] = None) -> Any:
    """A TensorType as ("tensor", dtype, shape); an op with __props__ as ("op", class, props), the class given
    as class_ref(class) if class_ref is given (graph_signature's table); else obj."""
    if type(obj) is TensorType:
        return ("tensor", obj.dtype, obj.shape)
    if isinstance(obj, Op) and hasattr(obj, "__props__"):
        cls = type(obj)
        return ("op", class_ref(cls) if class_ref is not None else cls,
                tuple(_token(p, class_ref) for p in obj._props()))
    return obj


def _data_digest(data: Any) -> Any:
    if isinstance(data, np.ndarray):
        return (data.dtype.str, data.shape, hashlib.sha1(np.ascontiguousarray(data).tobytes()).hexdigest())
    if isinstance(data, (float, complex, np.inexact)):     # bit for bit: 0.0 == -0.0, but x * -0.0 differs
        return (type(data), np.asarray(data).tobytes())
    try:
        hash(data)
        return (type(data), data)
    except TypeError:
        return ("id", id(data))


def stable_pickle(obj: Any) -> bytes | None:
    """obj pickled without the memo, so equal structures give equal bytes however their objects are shared.

    (With the memo, a graph whose nodes share one op instance pickles differently from an equal graph with
    an instance per node: a plan written by one would never be found by the other.)  None if it does not
    pickle.
    """
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=4)
    pickler.fast = True
    try:
        pickler.dump(obj)
    except Exception:   # noqa: BLE001 - any state pickle rejects (or a cycle) just means no key
        return None
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------- host
def host_parts(compiler: Any, blas: str) -> tuple[str, ...]:
    """What the disk keys hold of the host: target, CPU, vector library, BLAS source (jit/runtime.py's
    blas_source), llvmlite, LLVM and numpy versions; compiler: the NativeCompiler (its host facts)."""
    return (compiler.triple, compiler.cpu, compiler.features, compiler.vector_library, blas, llvmlite.__version__,
            compiler.llvm_version, np.__version__)


def _digest(parts: Iterable[str], blob: bytes = b"") -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    h.update(blob)
    return h.hexdigest()


_VOLATILE = ("cpu mhz", "bogomips", "core id", "apicid", "initial apicid", "processor", "siblings", "cpu cores")


def host_fingerprint() -> str | None:
    """The key of the host facts (jit/hostfacts.py) in the cache: a digest of what determines them (the first
    CPU's /proc/cpuinfo entry without its clock lines, the machine, OS and C library, llvmlite's version), or
    None where it cannot be read cheaply (then LLVM decides)."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            first = f.read(65536).split(b"\n\n", 1)[0].decode("latin-1")
    except OSError:
        return None
    lines = [line for line in first.splitlines() if line.split(":", 1)[0].strip().lower() not in _VOLATILE]
    if not lines:
        return None
    libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else ""
    text = "\n".join([*lines, sys.platform, platform.machine(), libc or "", llvmlite.__version__, HOST_FACTS_FORMAT])
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------- the keys
def object_key(ir_text: str, *, opt_level: int, triple: str, cpu: str, features: str,
               vector_library: str, pipeline: str = "", llvm_version: str = "") -> str:
    """The object cache's key: sha256 hex of the IR text and of target, vector library, versions, opt level and
    pass pipeline."""
    graphjit_version = str(getattr(sys.modules.get("graphjit"), "__version__", "0"))
    parts = (OBJECT_FORMAT, triple, cpu, features, vector_library, llvmlite.__version__, llvm_version,
             graphjit_version, f"O{opt_level}", pipeline)
    return _digest(parts, ir_text.encode())


def plan_key(signature: Any, host: Sequence[str], blob: bytes | None = None) -> str | None:
    """The disk plan's key of a structural signature on a host (host_parts); None when the signature does not
    pickle.  blob: the signature's stable_pickle, if the caller has it."""
    blob = stable_pickle(signature) if blob is None else blob
    if blob is None:
        return None
    return _digest([PLAN_FORMAT, package_digest(), *_signature_sources(signature), *host], blob)


def alias_key(fgraph: Any, order: Sequence[Apply], opt_level: int, parallel: bool, inst: Instrumentation,
              compiler: Any, host: Sequence[str]) -> str | None:
    """The plan alias of a graph rewritten under the rewrite cache's key ``fgraph.cache_key`` (None if it does
    not pickle).

    That key pins the rewritten graph (it covers graphjit's sources); the alias adds what structural_signature
    adds to the graph (the variant, instrumentation), the sources of op and Type classes defined outside
    graphjit, the host, and the order's check: order as positions in the graph's plain dependency order, which
    the feature orderings (the destroy handler's) may change, so a plan's node indices always refer to the
    same nodes.
    """
    plain_toposort = getattr(fgraph, "plain_toposort", None)      # FunctionGraph's reuses its cached order
    plain = plain_toposort() if plain_toposort is not None else io_toposort(fgraph.inputs, fgraph.outputs)
    if plain == order:
        check: Any = "plain"
    else:
        position = {n: k for k, n in enumerate(plain)}
        check = tuple(position.get(n, -1) for n in order)
    state = (fgraph.cache_key, variant(fgraph, order, opt_level, parallel, compiler), _instrumentation(inst), check)
    blob = stable_pickle(state)
    if blob is None:
        return None
    modules = {type(n.op).__module__ for n in order}
    modules.update(type(v.type).__module__ for v in (*fgraph.inputs, *fgraph.outputs))
    return _digest([ALIAS_FORMAT, package_digest(), *foreign_sources(modules), *host], blob)


def rewritten_graph_key(state: Any, named_signature: Any) -> str | None:
    """The key of a rewritten graph (cache/graphs.py): sha256 of graphjit's sources, the rewrite cache's state
    and the graph's named signature; None if they do not pickle."""
    blob = stable_pickle((package_digest(), state, named_signature))
    return hashlib.sha256(blob).hexdigest() if blob is not None else None


def memory_key(plan: dict) -> tuple:
    """The in-memory key of a plan's code: every field (two plans equal in all of them make the same entry)."""
    return ("plan", repr(sorted((k, v) for k, v in plan.items() if k != "ir_build")))


def prefix_seed(blob: bytes | None, fgraph: Any, order: Sequence[Apply], opt_level: int) -> str:
    """The seed of a library's symbol prefix: the digest of its signature's pickle blob, else (no signature)
    its ops and types, deterministic (graphs that share it get distinct prefixes from compile_unique)."""
    if blob is not None:
        return hashlib.sha256(blob).hexdigest()
    parts = [str(opt_level), *(str(v.type) for v in fgraph.inputs)]
    parts += [f"{type(n.op).__module__}.{type(n.op).__qualname__}:{','.join(str(o.type) for o in n.outputs)}"
              for n in order]
    return "coarse:" + "|".join(parts)
