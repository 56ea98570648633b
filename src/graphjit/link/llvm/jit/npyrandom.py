"""numpy's compiled distributions (``numpy/random/lib/libnpyrandom.a``) loaded into the process for native draws.

numpy ships the C functions its Generator methods call (``random_normal``, ``random_bounded_uint64``, ...) as a
static archive next to the installed package.  ``publish(name)`` reads the archive's members (the ``ar`` format),
maps them with graphjit's own ELF loader (jit/elfload.py; their only undefined symbols are libm's and libc's,
resolved through the process) and publishes each function as ``gj_npr_<name>``.  Called with the same
``bitgen_t*`` and arguments in numpy's order, they give numpy's numbers bit for bit.  The publisher is registered
with jit/symbols.py for every exported function, so an object from the disk cache gets them in a new process.
``unavailable()`` is the reason the archive cannot be used (None when it can): draws then keep perform.
"""

from __future__ import annotations

import os
from typing import Optional

from graphjit.graph import forksafe
from graphjit.link.llvm.jit import binding as _binding, elfload
from graphjit.link.llvm.jit.symbols import provide

PREFIX = "gj_npr_"
# the functions the lowerings call (every global function of the archive is published with the first one)
FUNCTIONS = (
    "random_standard_uniform", "random_standard_uniform_f", "random_standard_normal", "random_standard_normal_f",
    "random_normal", "random_uniform", "random_standard_exponential", "random_standard_exponential_f",
    "random_exponential", "random_gamma", "random_standard_gamma", "random_beta", "random_chisquare",
    "random_f", "random_noncentral_chisquare", "random_noncentral_f", "random_standard_cauchy",
    "random_pareto", "random_weibull", "random_power", "random_laplace", "random_gumbel", "random_logistic",
    "random_lognormal", "random_rayleigh", "random_standard_t", "random_wald", "random_vonmises",
    "random_triangular", "random_poisson", "random_negative_binomial", "random_binomial", "random_logseries",
    "random_geometric", "random_zipf", "random_interval", "random_bounded_uint64", "random_buffered_bounded_uint32",
    "random_buffered_bounded_uint16", "random_buffered_bounded_uint8", "random_buffered_bounded_bool",
    "random_bounded_uint64_fill", "random_bounded_uint32_fill", "random_bounded_uint16_fill",
    "random_bounded_uint8_fill", "random_bounded_bool_fill", "random_standard_normal_fill",
    "random_standard_normal_fill_f", "random_standard_uniform_fill", "random_standard_uniform_fill_f",
    "random_multinomial",
)
# numpy's ziggurat tables (static arrays of distributions.c, local symbols of the archive): the inline normal reads them
TABLES = ("ki_double", "wi_double", "fi_double")
_LOCK = forksafe.new_lock()
_STATE: dict[str, object] = {}        # "image": the LoadedImage, "error": why it did not load


def archive_path() -> str:
    """Where numpy's libnpyrandom.a should be (it may be missing)."""
    import numpy
    return os.path.join(os.path.dirname(numpy.__file__), "random", "lib", "libnpyrandom.a")


def ar_members(data: bytes) -> list[tuple[str, bytes]]:
    """(name, bytes) of each member of a System V / GNU ``ar`` archive, without the symbol and name tables."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive")
    at, names, out = 8, b"", []
    while at + 60 <= len(data):
        header = data[at:at + 60]
        if header[58:60] != b"`\n":
            raise ValueError("ar archive: malformed member header")
        raw = header[:16].decode("latin-1").rstrip()
        size = int(header[48:58].decode("latin-1").strip() or 0)
        body = data[at + 60:at + 60 + size]
        if len(body) != size:
            raise ValueError("ar archive: a member lies outside the file")
        at += 60 + size + (size & 1)
        if raw in ("/", "/SYM64/"):
            continue
        if raw == "//":
            names = body
            continue
        if raw.startswith("/") and raw[1:].isdigit():
            start = int(raw[1:])
            end = names.find(b"/\n", start)
            raw = names[start:end if end >= 0 else None].decode("latin-1")
        out.append((raw.rstrip("/"), body))
    return out


def _load() -> elfload.LoadedImage:
    path = archive_path()
    if not os.path.exists(path):
        raise elfload.Unsupported(f"numpy's {path} is missing")
    with open(path, "rb") as f:
        members = ar_members(f.read())
    objects = [body for name, body in members if name.endswith(".o")]
    if not objects:
        raise elfload.Unsupported(f"{path} holds no object files")
    return elfload.load(objects, _binding.address_of_symbol)


def image() -> Optional[elfload.LoadedImage]:
    """The loaded archive (loaded on first call), or None when it cannot be (unavailable() says why)."""
    if "image" in _STATE or "error" in _STATE:
        return _STATE.get("image")           # type: ignore[return-value]
    with _LOCK:
        if "image" not in _STATE and "error" not in _STATE:
            try:
                _STATE["image"] = _load()
            except (elfload.Unsupported, ValueError, OSError, ImportError) as exc:
                _STATE["error"] = f"numpy's libnpyrandom.a could not be loaded ({exc})"
    return _STATE.get("image")               # type: ignore[return-value]


def unavailable() -> Optional[str]:
    """Why numpy's distributions cannot be called natively (None: they can)."""
    image()
    return _STATE.get("error")               # type: ignore[return-value]


def symbol(name: str) -> str:
    """The JIT symbol of numpy's function `name`."""
    return PREFIX + name


def publish(name: str) -> int:
    """Publish gj_npr_<name> (every function of the archive the first time); its address."""
    address = _binding.address_of_symbol(symbol(name))
    if address:
        return address
    loaded = image()
    if loaded is None:
        raise RuntimeError(f"graphjit: {unavailable()}")
    address = loaded.get_function_address(name)
    if not address:
        raise RuntimeError(f"graphjit: numpy's libnpyrandom.a has no function {name!r}")
    with _LOCK:
        for other in (*FUNCTIONS, name):
            found = loaded.get_function_address(other)
            if found and not _binding.address_of_symbol(symbol(other)):
                _binding.add_symbol(symbol(other), found)
    return address


def publish_table(name: str) -> int:
    """Publish gj_npr_<name> at numpy's static table `name` (a name of TABLES); its address."""
    address = _binding.address_of_symbol(symbol(name))
    if address:
        return address
    loaded = image()
    address = loaded.local_address(name) if loaded is not None else 0
    if not address:
        raise RuntimeError(f"graphjit: numpy's libnpyrandom.a has no table {name!r} ({unavailable()})")
    _binding.add_symbol(symbol(name), address)
    return address


for _name in FUNCTIONS:                 # for cache hits that skip lowering (jit/symbols.py)
    provide(symbol(_name), lambda _n=_name: publish(_n))
for _name in TABLES:
    provide(symbol(_name), lambda _n=_name: publish_table(_n))
