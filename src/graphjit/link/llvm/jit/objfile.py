"""Object files checked before they reach the JIT (well-formed ELF, the global symbols they need and define), and
the cache payload that packs one or more of them.

llvmlite parses an object with no bounds checks (a damaged one crashes the process in ``from_data``) and
RuntimeDyld links a reference to a symbol nobody published as address 0 (the call crashes later).  So the
loader (jit/compiler.py) first reads the ELF headers, section table and symbol table here, in Python, with every
offset bounds-checked; a malformed object raises ValueError and is dropped.  Objects that are not ELF64
little-endian (other hosts' formats) are not inspected: ``symbols`` returns None for them.
"""

from __future__ import annotations

import struct
import sys

_IDENT = b"\x7fELF\x02\x01"          # magic, ELFCLASS64, ELFDATA2LSB
EHDR = struct.Struct("<16sHHIQQQIHHHHHH")   # the ELF64 file header (elfload.py reads it too)
_SHDR = struct.Struct("<IIQQQQIIQQ")
SYM = struct.Struct("<IBBHQQ")           # an ELF64 symbol table entry
_SHT_NOBITS, _SHT_SYMTAB, _SHT_STRTAB = 8, 2, 3
_STB_GLOBAL, _STB_WEAK = 1, 2
_ET_REL = 1
# resolved by RuntimeDyld itself, never through the process's symbol table
_LINKER_SYMBOLS = frozenset({"_GLOBAL_OFFSET_TABLE_"})
_ELF_HOST = sys.platform.startswith(("linux", "freebsd"))      # where LLVM emits ELF objects


def section_headers(data: bytes) -> list[tuple]:
    """The section headers of an ELF64 relocatable object (ValueError if any lies outside the data)."""
    if len(data) < EHDR.size:
        raise ValueError("object file: shorter than an ELF header")
    (_, e_type, _, _, _, _, shoff, _, ehsize, _, _, shentsize, shnum, shstrndx) = EHDR.unpack_from(data)
    if e_type != _ET_REL or ehsize != EHDR.size or shentsize != _SHDR.size:
        raise ValueError("object file: not a relocatable ELF64 object")
    if shnum == 0 or shstrndx >= shnum or shoff + shnum * _SHDR.size > len(data):
        raise ValueError("object file: section table out of bounds")
    sections = [_SHDR.unpack_from(data, shoff + k * _SHDR.size) for k in range(shnum)]
    for _, sh_type, _, _, offset, size, link, _, _, _ in sections[1:]:
        if link >= shnum or (sh_type != _SHT_NOBITS and offset + size > len(data)):
            raise ValueError("object file: a section lies outside the file")
    return sections


def _name(strtab: bytes, offset: int) -> str:
    end = strtab.find(b"\0", offset)
    if offset >= len(strtab) or end < 0:
        raise ValueError("object file: a symbol name lies outside its string table")
    return strtab[offset:end].decode("latin-1")


def symbols(data: bytes) -> tuple[set[str], set[str]] | None:
    """(undefined, defined) global symbol names of an ELF64 little-endian object; None if not such ELF.

    Weak undefined symbols are left out (they may stay unresolved); ValueError if the object is malformed.
    """
    if not data.startswith(_IDENT):
        if data.startswith(b"\x7fELF") or not _ELF_HOST:
            return None                      # another class, byte order or object format: not checked here
        raise ValueError("object file: not an ELF object")
    sections = section_headers(data)
    undefined: set[str] = set()
    defined: set[str] = set()
    for _, sh_type, _, _, offset, size, link, first_global, _, entsize in sections:
        if sh_type != _SHT_SYMTAB:
            continue
        if entsize != SYM.size or size % SYM.size or first_global * SYM.size > size:
            raise ValueError("object file: malformed symbol table")
        str_type, str_offset, str_size = sections[link][1], sections[link][4], sections[link][5]
        if str_type != _SHT_STRTAB:
            raise ValueError("object file: the symbol table's string table is not one")
        strtab = data[str_offset:str_offset + str_size]
        view = memoryview(data)[offset + first_global * SYM.size:offset + size]
        for name_at, info, _, shndx, _, _ in SYM.iter_unpack(view):
            bind = info >> 4
            if bind not in (_STB_GLOBAL, _STB_WEAK) or not name_at:
                continue
            name = _name(strtab, name_at)
            if shndx != 0:
                defined.add(name)
            elif bind == _STB_GLOBAL and name not in _LINKER_SYMBOLS:
                undefined.add(name)
    return undefined, defined


_PARTS = struct.Struct("<I")
_PART = struct.Struct("<Q")


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
