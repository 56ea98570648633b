"""A small loader for the x86-64 ELF relocatable objects LLVM emits for graphjit (no LLVM needed to load them).

``load(objects, resolve)`` maps the allocated sections of one library's objects into one private mapping,
resolves their undefined symbols through ``resolve(name) -> address`` (0: unknown), applies the relocations,
then makes code read+execute and everything else read-only (or read-write for writable data).  References to
symbols outside the mapping go through a GOT (and, for PLT32 calls, 6-byte ``jmp *GOT(%rip)`` stubs) placed
inside it, so every 32-bit PC-relative field reaches its target.

Anything it does not implement (another machine or relocation type, TLS, COMDAT groups, constructors, a
symbol ``resolve`` does not know, a 32-bit field that overflows) raises Unsupported before any byte is made
executable, and the mapping is released: the caller then links with LLVM.  The objects must already have
passed jit/objfile.py's checks (bounds of the headers, sections and symbol tables); this module
bounds-checks what it reads beyond them (relocation tables and offsets).
"""

from __future__ import annotations

import ctypes
import mmap
import platform
import struct
import sys
from typing import Callable

from graphjit.link.llvm.jit.objfile import EHDR, SYM, section_headers

_EM_X86_64 = 62
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_RELA, _SHT_NOTE, _SHT_NOBITS, _SHT_REL = 1, 2, 4, 7, 8, 9
_SHT_X86_64_UNWIND = 0x70000001
# sections that need work this loader does not do: constructors, COMDAT groups, TLS
_SHT_REFUSED = {14, 15, 16, 17, 18}     # INIT_ARRAY, FINI_ARRAY, PREINIT_ARRAY, GROUP, SYMTAB_SHNDX
_SHF_WRITE, _SHF_ALLOC, _SHF_EXEC, _SHF_GROUP, _SHF_TLS = 0x1, 0x2, 0x4, 0x200, 0x400
_SHN_UNDEF, _SHN_ABS, _SHN_COMMON = 0, 0xFFF1, 0xFFF2
_STT_OBJECT, _STT_SECTION, _STT_TLS, _STT_GNU_IFUNC = 1, 3, 6, 10
_STB_LOCAL = 0
_RELA = struct.Struct("<QQq")
_U64, _I32, _U32 = struct.Struct("<Q"), struct.Struct("<i"), struct.Struct("<I")
# relocation types handled (x86-64 psABI numbers)
_R_64, _R_PC32, _R_PLT32, _R_GOTPCREL, _R_32, _R_32S, _R_PC64 = 1, 2, 4, 9, 10, 11, 24
_R_GOTPCRELX, _R_REX_GOTPCRELX = 41, 42
_GOT_TYPES = (_R_GOTPCREL, _R_GOTPCRELX, _R_REX_GOTPCRELX)
_PAGE = mmap.PAGESIZE
_STUB = 6                               # ff 25 <rel32>: jmp *rel32(%rip)

_libc = ctypes.CDLL(None, use_errno=True)
_mmap = _libc.mmap
_mmap.restype = ctypes.c_void_p
_mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_mprotect = _libc.mprotect
_mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_munmap = _libc.munmap
_munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


class Unsupported(Exception):
    """The objects use something this loader does not implement: link them with LLVM instead."""


def available() -> bool:
    """Whether this host can use the loader (Linux or FreeBSD on x86-64)."""
    return sys.platform.startswith(("linux", "freebsd")) and platform.machine() in ("x86_64", "AMD64")


class LoadedImage:
    """One library's code and data mapped and relocated; quacks like the MCJIT engine NativeLibrary holds."""

    def __init__(self, base: int, size: int, exports: dict[str, int], local: dict[str, int] | None = None) -> None:
        self._base, self._size, self._exports = base, size, exports
        self._local = local or {}

    def get_function_address(self, name: str) -> int:
        """Address of a defined global symbol (0 if none)."""
        return self._exports.get(name, 0)

    def local_address(self, name: str) -> int:
        """Address of a named local data object (a static table of a C file; the first of that name), 0 if none."""
        return self._local.get(name, 0)

    get_global_value_address = get_function_address

    def close(self) -> None:
        """Unmap the code and data (nothing may run it any more)."""
        if self._base:
            _munmap(self._base, self._size)
            self._base = 0


class _Object:
    """One object's parsed tables and where its sections go in the mapping."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        machine = EHDR.unpack_from(data)[2]
        if machine != _EM_X86_64:
            raise Unsupported(f"ELF machine {machine}")
        self.sections = section_headers(data)
        self.place: dict[int, int] = {}          # section index -> offset in the mapping
        self.symbols: list[tuple[str, int, int, int, int]] = []   # (name, bind, type, shndx, value)
        for sh in self.sections:
            # COMDAT groups and their members, constructors, TLS, REL relocations: not implemented here
            if sh[1] in _SHT_REFUSED or sh[1] == _SHT_REL or sh[2] & (_SHF_TLS | _SHF_GROUP):
                raise Unsupported(f"section type {sh[1]:#x} flags {sh[2]:#x}")
            if sh[1] == _SHT_SYMTAB:
                self._read_symbols(sh)

    def _read_symbols(self, sh: tuple) -> None:
        strsec = self.sections[sh[6]]
        strtab = self.data[strsec[4]:strsec[4] + strsec[5]]
        for name_at, info, _, shndx, value, _ in SYM.iter_unpack(self.data[sh[4]:sh[4] + sh[5]]):
            end = strtab.find(b"\0", name_at)
            name = strtab[name_at:end].decode("latin-1") if name_at and end >= 0 else ""
            kind = info & 0xF
            if kind in (_STT_TLS, _STT_GNU_IFUNC) or shndx == _SHN_COMMON:
                raise Unsupported(f"symbol {name!r} of type {kind} / section {shndx:#x}")
            self.symbols.append((name, info >> 4, kind, shndx, value))


def _layout(objs: list[_Object]) -> list[tuple[int, int]]:
    """Give each allocated section an offset, code first, then read-only, then writable sections (obj.place).

    Returns [(start, end)] of the three groups, before the caller inserts stubs, GOT and page gaps.
    """
    offset = 0
    groups = []
    for want in ("exec", "ro", "rw"):
        # each group starts on a page: moving it by whole pages later keeps every section's alignment
        offset = start = _round(offset, _PAGE)
        for obj in objs:
            for k, (_, sh_type, flags, _, _, size, _, _, align, _) in enumerate(obj.sections):
                if k == 0 or not flags & _SHF_ALLOC:
                    continue
                if sh_type in (_SHT_X86_64_UNWIND, _SHT_NOTE):
                    continue                     # .eh_frame, .note.gnu.property (a C compiler's): nobody reads them here
                if sh_type not in (_SHT_PROGBITS, _SHT_NOBITS):
                    raise Unsupported(f"allocated section of type {sh_type:#x}")
                group = "exec" if flags & _SHF_EXEC else "rw" if flags & _SHF_WRITE else "ro"
                if group != want:
                    continue
                align = max(align, 1)
                if align > _PAGE or align & (align - 1):
                    raise Unsupported(f"section alignment {align}")
                offset = (offset + align - 1) // align * align
                obj.place[k] = offset
                offset += size
        groups.append((start, offset))
    return groups


def load(objects: list[bytes], resolve: Callable[[str], int]) -> LoadedImage:
    """Map, relocate and protect a library's objects (Unsupported: nothing was made executable)."""
    if not available():
        raise Unsupported("not an x86-64 ELF host")
    objs = [_Object(data) for data in objects]
    (code_start, code_end), (ro_start, ro_end), (rw_start, rw_end) = _layout(objs)
    assert code_start == 0
    defined = {name for obj in objs for name, bind, _, shndx, _ in obj.symbols
               if bind != _STB_LOCAL and name and shndx in obj.place}
    externals = sorted({name for obj in objs for name, _, _, shndx, _ in obj.symbols
                        if shndx == _SHN_UNDEF and name and name not in defined})
    addresses = {}
    for name in externals:
        addr = resolve(name)
        if not addr:
            raise Unsupported(f"symbol {name!r} is not published")
        addresses[name] = addr
    # a GOT slot for every global symbol (8 bytes each: cheaper than finding which are loaded through it),
    # a call stub jumping through its slot for every external one
    got_names = sorted(defined | set(externals))
    # code, then stubs (executable), then read-only data and the GOT, then writable data: each group page-aligned
    stubs_at = code_end
    code_size = _round(stubs_at + _STUB * len(externals), 16)
    shift_ro = _round(code_size, _PAGE) - ro_start
    got_at = _round(ro_end + shift_ro, 8)
    ro_size_end = got_at + 8 * len(got_names)
    shift_rw = _round(ro_size_end, _PAGE) - rw_start
    total = _round(rw_end + shift_rw, _PAGE) or _PAGE
    for obj in objs:
        for k, off in obj.place.items():
            flags = obj.sections[k][2]
            obj.place[k] = off if flags & _SHF_EXEC else off + (shift_rw if flags & _SHF_WRITE else shift_ro)
    exports = {}
    for obj in objs:
        for name, bind, _, shndx, value in obj.symbols:
            if bind != _STB_LOCAL and name and shndx in obj.place:
                exports.setdefault(name, obj.place[shndx] + value)
    base = _mmap(None, total, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if base in (None, _MAP_FAILED):
        raise MemoryError("graphjit: mmap failed loading a compiled library")
    try:
        image = bytearray(total)                 # built here, copied into the mapping in one go
        _fill(objs, image)
        stub = {name: base + stubs_at + _STUB * k for k, name in enumerate(externals)}
        got = {name: base + got_at + 8 * k for k, name in enumerate(got_names)}
        where = {name: base + off for name, off in exports.items()}
        where.update(addresses)
        for name, slot in got.items():
            _U64.pack_into(image, slot - base, where[name])
        for name, at in stub.items():
            image[at - base:at - base + _STUB] = b"\xff\x25" + _I32.pack(_pc32(got[name] - (at + _STUB)))
        for obj in objs:
            _relocate(obj, image, base, where, got, stub)
        ctypes.memmove(base, (ctypes.c_char * total).from_buffer(image), total)
        _protect(base, 0, _round(code_size, _PAGE), mmap.PROT_READ | mmap.PROT_EXEC)
        _protect(base, _round(code_size, _PAGE), _round(ro_size_end, _PAGE), mmap.PROT_READ)
    except BaseException:
        _munmap(base, total)
        raise
    local = {}
    for obj in objs:
        for name, bind, kind, shndx, value in obj.symbols:
            if bind == _STB_LOCAL and kind == _STT_OBJECT and name and shndx in obj.place:
                local.setdefault(name, base + obj.place[shndx] + value)
    return LoadedImage(base, total, {name: base + off for name, off in exports.items()}, local)


def _round(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def _pc32(value: int) -> int:
    if not -(1 << 31) <= value < (1 << 31):
        raise Unsupported("a 32-bit relocation overflows")
    return value


def _protect(base: int, start: int, end: int, prot: int) -> None:
    if end > start and _mprotect(base + start, end - start, prot) != 0:
        raise OSError(ctypes.get_errno(), "graphjit: mprotect failed loading a compiled library")


def _fill(objs: list[_Object], image: bytearray) -> None:
    """Copy each PROGBITS section's bytes to its place (NOBITS stays zero, as mmap gives it)."""
    for obj in objs:
        for k, off in obj.place.items():
            _, sh_type, _, _, offset, size, *_ = obj.sections[k]
            if sh_type == _SHT_PROGBITS and size:
                image[off:off + size] = obj.data[offset:offset + size]


def _targets(obj: _Object, base: int, where: dict[str, int], got: dict[str, int],
             stub: dict[str, int]) -> tuple[list, list, list]:
    """Per symbol index: its address (None: a section not loaded), its GOT slot, its call target."""
    values: list = []
    slots: list = []
    calls: list = []
    for name, bind, kind, shndx, value in obj.symbols:
        if shndx == _SHN_ABS:
            s = value
        elif kind == _STT_SECTION or bind == _STB_LOCAL or not name:
            s = base + obj.place[shndx] + value if shndx in obj.place else None
        else:
            s = where.get(name)
        values.append(s)
        slots.append(got.get(name) if name and bind != _STB_LOCAL else None)
        calls.append(stub.get(name, s) if name and bind != _STB_LOCAL else s)
    return values, slots, calls


def _relocate(obj: _Object, image: bytearray, base: int, where: dict[str, int], got: dict[str, int],
              stub: dict[str, int]) -> None:
    """Apply the RELA relocations of obj's loaded sections to the image (mapped at base)."""
    values, slots, calls = _targets(obj, base, where, got, stub)
    count = len(values)
    pack32, pack64 = _I32.pack_into, _U64.pack_into
    low, high = -(1 << 31), 1 << 31
    for sh in obj.sections:
        if sh[1] != _SHT_RELA or sh[7] not in obj.place:
            continue                             # relocations of .eh_frame or of a non-allocated section
        target_type, size = obj.sections[sh[7]][1], obj.sections[sh[7]][5]
        if target_type != _SHT_PROGBITS:
            raise Unsupported("relocations of a section without bytes")
        if sh[9] != _RELA.size or sh[5] % _RELA.size or obj.sections[sh[6]][1] != _SHT_SYMTAB:
            raise ValueError("object file: malformed relocation table")
        start = obj.place[sh[7]]
        for r_offset, info, addend in _RELA.iter_unpack(obj.data[sh[4]:sh[4] + sh[5]]):
            sym, rtype = info >> 32, info & 0xFFFFFFFF
            wide = rtype == _R_64 or rtype == _R_PC64
            if sym >= count or r_offset + (8 if wide else 4) > size:
                raise ValueError("object file: a relocation lies outside its section")
            at = start + r_offset
            p = base + at
            if rtype in _GOT_TYPES:
                s = slots[sym]
            elif rtype == _R_PLT32:
                s = calls[sym]
            else:
                s = values[sym]
            if s is None:
                raise Unsupported(f"relocation type {rtype} against symbol {obj.symbols[sym][0]!r}")
            if rtype == _R_PC32 or rtype == _R_PLT32 or rtype in _GOT_TYPES:
                v = s + addend - p
            elif rtype == _R_64:
                pack64(image, at, (s + addend) & 0xFFFFFFFFFFFFFFFF)
                continue
            elif rtype == _R_PC64:
                pack64(image, at, (s + addend - p) & 0xFFFFFFFFFFFFFFFF)
                continue
            elif rtype == _R_32S:
                v = s + addend
            elif rtype == _R_32:
                if not 0 <= s + addend < (1 << 32):
                    raise Unsupported("an R_X86_64_32 relocation overflows")
                _U32.pack_into(image, at, s + addend)
                continue
            else:
                raise Unsupported(f"relocation type {rtype}")
            if not low <= v < high:
                raise Unsupported("a 32-bit relocation overflows")
            pack32(image, at, v)
