"""The host facts the cache keys hold (triple, CPU name and features, vector library, LLVM version), kept in
the disk cache so that a warm process gets them without loading LLVM.

LLVM detects them (``from_llvm``); the result is stored in the cache under a key derived from what identifies
this host and toolchain cheaply (``fingerprint``, cache/keys.py host_fingerprint: the first CPU's /proc/cpuinfo
entry without its clock lines, the machine, OS and C library, llvmlite's version), MAC-checked like every
entry.  Another CPU, kernel view of its features or llvmlite gives another fingerprint, hence LLVM again: facts
are never reused across them.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any

from graphjit.link.llvm.cache.keys import host_fingerprint as fingerprint  # noqa: F401 (the facts' key)
from graphjit.link.llvm.cache.objects import HOST_SUFFIX
from graphjit.link.llvm.jit import binding as _binding
from graphjit.link.llvm.jit.binding import llvm


def from_llvm() -> dict[str, Any]:
    """The facts as LLVM sees them (loads llvmlite.binding and, if it loads, libmvec)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    features = llvm.get_host_cpu_features().flatten()
    vector_library, isas = _vector_library(features)
    return {"triple": llvm.get_process_triple(), "cpu": llvm.get_host_cpu_name(), "features": features,
            "vector_library": vector_library, "vector_isas": list(isas),
            "llvm_version": ".".join(map(str, llvm.llvm_version_info))}


def _vector_library(features: str) -> tuple[str, tuple[str, ...]]:
    """Load glibc's libmvec if possible; (vector library name, usable x86 VFABI ISA letters)."""
    if not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")):
        return "none", ()
    try:
        _binding.load_library("libmvec.so.1")
    except RuntimeError:
        return "none", ()
    flags = set(features.split(","))
    isas = ("b",) + (("d",) if "+avx2" in flags else ()) + (("e",) if "+avx512f" in flags else ())
    glibc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else "glibc"
    return f"libmvec({glibc})", isas


def load(cache: Any, key: str) -> dict[str, Any] | None:
    """The facts stored under key, with the libraries they name loaded; None if absent or unusable."""
    payload = cache.load(key, suffix=HOST_SUFFIX)
    if payload is None:
        return None
    try:
        facts = json.loads(payload)
        if not all(isinstance(facts.get(k), str) for k in ("triple", "cpu", "features", "vector_library",
                                                           "llvm_version")):
            return None
    except (ValueError, AttributeError):
        return None
    if facts["vector_library"] != "none":
        try:
            _binding.load_library("libmvec.so.1")
        except RuntimeError:
            return None
    return facts


def store(cache: Any, key: str, facts: dict[str, Any]) -> None:
    """Keep the facts for later processes."""
    cache.store(key, json.dumps(facts, sort_keys=True).encode(), suffix=HOST_SUFFIX)
