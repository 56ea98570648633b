"""scipy.special's compiled kernels behind graphjit's special functions, called through ``cython_special`` pointers.

``scipy.special.cython_special`` publishes each ``cpdef`` function as a capsule in ``__pyx_capi__`` whose name is
its C signature, e.g. ``double (double, int __pyx_skip_dispatch)`` (the trailing int is Cython's: pass 0).  A
lowering calls ``gj_special_<name>`` (``declare``), published here with ``llvmlite.binding.add_symbol`` from the
capsule's pointer.  The same publisher is registered with jit/symbols.py, so an object loaded from the disk cache
in a new process (nothing lowered) gets its symbols before it is linked.  scipy is imported only when a symbol
is published (a lowering, or a cached object that needs it); the signature is checked then.
"""

from __future__ import annotations


from graphjit.link.llvm.jit.lazy_ir import ir    # llvmlite.ir on first use (never when warm)

from graphjit.link.llvm.jit import binding as _binding
from graphjit.link.llvm.jit.capsules import capsule_address, capsule_name
from graphjit.link.llvm.jit.symbols import provide
from graphjit.graph import forksafe

_D, _F, _I = "double", "float", "int __pyx_skip_dispatch"
# graphjit's name -> (the capsule's key in cython_special.__pyx_capi__, result type, argument types)
FUNCTIONS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "gammaln": ("gammaln", _D, (_D,)),
    "gamma": ("__pyx_fuse_1gamma", _D, (_D,)),
    "psi": ("__pyx_fuse_1psi", _D, (_D,)),
    "betaln": ("betaln", _D, (_D, _D)),
    "erfinv": ("__pyx_fuse_0erfinv", _D, (_D,)),
    "erfinvf": ("__pyx_fuse_1erfinv", _F, (_F,)),
    "erfcinv": ("erfcinv", _D, (_D,)),
    "erfcx": ("__pyx_fuse_1erfcx", _D, (_D,)),
    "xlogy": ("__pyx_fuse_1xlogy", _D, (_D, _D)),
    "xlog1py": ("__pyx_fuse_1xlog1py", _D, (_D, _D)),
    "logit": ("__pyx_fuse_0logit", _D, (_D,)),
    "logitf": ("__pyx_fuse_1logit", _F, (_F,)),
    "expit": ("__pyx_fuse_0expit", _D, (_D,)),
    "expitf": ("__pyx_fuse_1expit", _F, (_F,)),
    "gammainc": ("gammainc", _D, (_D, _D)),
    "gammaincc": ("gammaincc", _D, (_D, _D)),
    "i0": ("i0", _D, (_D,)),
    "i1": ("i1", _D, (_D,)),
    "i0e": ("i0e", _D, (_D,)),
    "i1e": ("i1e", _D, (_D,)),
}
_LOCK = forksafe.new_lock()


def symbol(name: str) -> str:
    """The JIT symbol of scipy's kernel `name` (a key of FUNCTIONS)."""
    return "gj_special_" + name


def signature(name: str) -> str:
    """The C signature the capsule of `name` must carry."""
    _, ret, args = FUNCTIONS[name]
    return f"{ret} ({', '.join(args + (_I,))})"


def publish(name: str) -> int:
    """Publish gj_special_<name> from scipy's capsule (once per process); its address."""
    sym = symbol(name)
    address = _binding.address_of_symbol(sym)
    if address:
        return address
    with _LOCK:
        address = _binding.address_of_symbol(sym)
        if address:
            return address
        from scipy.special import cython_special
        capsule = cython_special.__pyx_capi__[FUNCTIONS[name][0]]
        found = capsule_name(capsule)
        if found != signature(name):
            raise ImportError(f"graphjit: scipy.special.cython_special.{FUNCTIONS[name][0]} has the C signature "
                              f"{found!r}, graphjit calls it as {signature(name)!r} (an unsupported scipy)")
        address = capsule_address(capsule, found)
        _binding.add_symbol(sym, address)
        return address


def function_type(name: str) -> ir.FunctionType:
    """The LLVM type of scipy's kernel `name` (the trailing i32 is Cython's skip-dispatch flag)."""
    _, ret, args = FUNCTIONS[name]
    types = {_D: ir.DoubleType(), _F: ir.FloatType(), _I: ir.IntType(32)}
    return ir.FunctionType(types[ret], [types[a] for a in args] + [types[_I]])


for _name in FUNCTIONS:                 # for cache hits that skip lowering (jit/symbols.py)
    provide(symbol(_name), lambda _n=_name: publish(_n))
