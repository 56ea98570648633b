"""Where a numpy Generator object keeps what a native draw needs: its ``bitgen_t`` and its bit generator's lock.

numpy's ``Generator`` (a Cython class) holds a copy of its bit generator's ``bitgen_t`` (the state pointer and
the ``next_*`` function pointers; its methods pass ``&self._bitgen`` to the C distributions) and the bit
generator's ``threading.RLock``, taken around every draw.  Both sit at fixed offsets in the object for one numpy
build; ``layout()`` finds them once per process by looking for the values it can read from Python (the capsule's
``bitgen_t``, ``id(lock)``) in a probe Generator's memory, and checks that the lock's raw ``PyThread_type_lock``
(the word after the object header of CPython's rlockobject, then the owner's thread id and the count) is the
one ``lock.acquire()`` takes.  The native entry
then reads ``gen + bitgen_offset`` and ``*(gen + lock_offset)`` without the Python API (nor the GIL).  Anything
unexpected (another CPython lock layout, a numpy that keeps them elsewhere) makes ``layout()`` return a reason
instead, and draws keep their Python perform.

``gj_rng_copy`` (a callback: ctypes takes the GIL) returns a new reference to a copy of a Generator, made as a
draw's perform makes it; published here, on the load side, so a cached object that calls it links in a new
process.
"""

from __future__ import annotations

import _thread
import ctypes
import sys
import threading
from typing import Union

import numpy as np

from graphjit.graph import forksafe
from graphjit.tensor.random import _copy_generator
from graphjit.link.llvm.jit.capsules import capsule_address
from graphjit.link.llvm.jit import binding as _binding
from graphjit.link.llvm.jit.symbols import CallbackSymbol, provide

BITGEN_SIZE = 40                  # bitgen_t: state, next_uint64, next_uint32, next_double, next_raw
# CPython's rlockobject: PyObject_HEAD, its PyThread_type_lock, the owner's thread id, the recursion count
LOCK_RAW_OFFSET, LOCK_OWNER_OFFSET, LOCK_COUNT_OFFSET = 16, 24, 32
_acquire = ctypes.pythonapi.PyThread_acquire_lock
_acquire.restype = ctypes.c_int
_acquire.argtypes = [ctypes.c_void_p, ctypes.c_int]
_release = ctypes.pythonapi.PyThread_release_lock
_release.restype = None
_release.argtypes = [ctypes.c_void_p]
_FOUND: dict[str, Union[tuple[int, int], str, int]] = {}
_LOCK = forksafe.new_lock()


def _find(gen: np.random.Generator) -> Union[tuple[int, int], str]:
    bitgen = capsule_address(gen.bit_generator.capsule, "BitGenerator")
    wanted = ctypes.string_at(bitgen, BITGEN_SIZE)
    lock = gen.bit_generator.lock
    if type(lock) is not _thread.RLock or getattr(gen, "_bit_generator", None) is None:
        return "the bit generator's lock is not a threading.RLock"
    size = sys.getsizeof(gen)
    memory = ctypes.string_at(id(gen), size)
    at_bitgen = [k for k in range(0, size - BITGEN_SIZE + 1, 8) if memory[k:k + BITGEN_SIZE] == wanted]
    lock_word = id(lock).to_bytes(8, sys.byteorder)
    at_lock = [k for k in range(0, size - 7, 8) if memory[k:k + 8] == lock_word]
    if len(at_bitgen) != 1 or len(at_lock) != 1:
        return "numpy's Generator keeps its bitgen_t or lock where graphjit does not find them"
    word = id(lock)
    raw = ctypes.c_void_p.from_address(word + LOCK_RAW_OFFSET).value
    with lock:                        # held by Python: the raw lock is taken, this thread owns it once
        taken_while_held = _acquire(raw, 0)
        owner = ctypes.c_ulong.from_address(word + LOCK_OWNER_OFFSET).value
        count = ctypes.c_ulong.from_address(word + LOCK_COUNT_OFFSET).value
    free = _acquire(raw, 0)
    if free:
        _release(raw)
    after = ctypes.c_ulong.from_address(word + LOCK_COUNT_OFFSET).value
    if taken_while_held or not free or owner != threading.get_ident() or count != 1 or after != 0:
        return "this Python's threading.RLock has another layout"
    return at_bitgen[0], at_lock[0]


def layout() -> Union[tuple[int, int], str]:
    """(offset of the bitgen_t, offset of the lock object pointer) in a Generator, or why they are not known."""
    found = _FOUND.get("layout")
    if found is None:
        with _LOCK:
            if "layout" not in _FOUND:
                # two probes of different bit generators: both must agree
                one = _find(np.random.Generator(np.random.PCG64(1)))
                two = _find(np.random.Generator(np.random.Philox(2)))
                _FOUND["layout"] = one if one == two or isinstance(one, str) else "Generator layouts differ"
            found = _FOUND["layout"]
    return found


def _copy(address: int) -> int:
    """gj_rng_copy: a new reference to a copy of the Generator at address (0 on failure)."""
    new = _copy_generator(ctypes.cast(address, ctypes.py_object).value)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(new))
    return id(new)


COPY_SYMBOL = CallbackSymbol("gj_rng_copy", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p), _copy)


PCG64_SYMBOL = "gj_pcg64_next64"
PCG64_MULTIPLIER = (2549297995355413924 << 64) | 4865540595714422341


def _pcg64_check() -> int:
    """numpy's PCG64 next_uint64 function, if its state is laid out as graphjit steps it inline (else 0): the
    bitgen_t's state points to {pcg64_random_t*, ...}, whose 128-bit state and increment are little-endian
    words at offsets 0 and 16, and one step is state * multiplier + inc with the XSL-RR output."""
    gen = np.random.PCG64(20261207)
    bitgen = capsule_address(gen.capsule, "BitGenerator")
    state_ptr, next64 = ctypes.c_void_p.from_address(bitgen).value, ctypes.c_void_p.from_address(bitgen + 8).value
    pcg = ctypes.c_void_p.from_address(state_ptr).value
    words = ctypes.string_at(pcg, 32)
    state, inc = gen.state["state"]["state"], gen.state["state"]["inc"]
    if words != state.to_bytes(16, "little") + inc.to_bytes(16, "little"):
        return 0
    stepped = (state * PCG64_MULTIPLIER + inc) % (1 << 128)
    folded = ((stepped >> 64) ^ stepped) & ((1 << 64) - 1)
    rot = stepped >> 122
    want = ((folded >> rot) | (folded << (64 - rot))) & ((1 << 64) - 1)
    return next64 if int(gen.random_raw()) == want else 0


def pcg64_next64() -> int:
    """The address of numpy's PCG64 next_uint64 (published as gj_pcg64_next64), or 0 when it is not inlined."""
    found = _FOUND.get("pcg64")
    if found is None:
        with _LOCK:
            if "pcg64" not in _FOUND:
                address = _pcg64_check()
                if address:
                    _binding.add_symbol(PCG64_SYMBOL, address)
                _FOUND["pcg64"] = address
            found = _FOUND["pcg64"]
    return found        # type: ignore[return-value]


provide(PCG64_SYMBOL, pcg64_next64)


def _pcg64_buffer_check() -> bool:
    """Whether numpy's PCG64 keeps its buffered half-word as graphjit's inline next_uint32 reads it: an int
    ``has_uint32`` at byte 8 and a uint32 ``uinteger`` at byte 12 of the state the bitgen_t points to, returned
    (and cleared) by next_uint32 before the generator steps again."""
    gen = np.random.PCG64(20261207)
    state = gen.state
    state["has_uint32"], state["uinteger"] = 1, 0x9E3779B9
    gen.state = state
    state_ptr = ctypes.c_void_p.from_address(capsule_address(gen.capsule, "BitGenerator")).value
    has, word = ctypes.c_int.from_address(state_ptr + 8), ctypes.c_uint32.from_address(state_ptr + 12)
    if has.value != 1 or word.value != 0x9E3779B9:
        return False
    first = gen.ctypes.next_uint32(gen.ctypes.state)
    return first == 0x9E3779B9 and has.value == 0 and gen.state["has_uint32"] == 0


def pcg64_buffer_inline() -> bool:
    """Whether numpy's float32 uniform draw (next_uint32) can be inlined on PCG64 (see _pcg64_buffer_check)."""
    found = _FOUND.get("pcg64_buffer")
    if found is None:
        with _LOCK:
            if "pcg64_buffer" not in _FOUND:
                _FOUND["pcg64_buffer"] = int(bool(pcg64_next64()) and _pcg64_buffer_check())
            found = _FOUND["pcg64_buffer"]
    return bool(found)
