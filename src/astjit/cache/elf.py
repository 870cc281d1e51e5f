"""A linker of ELF x86-64 relocatable objects into the process, in Python: no LLVM.

The disk cache keeps the object code LLVM emitted (`CompiledModule.objects`). Linking it
through llvmlite's MCJIT means importing llvmlite and initializing LLVM's native target,
which costs a warm-cache process far more than the link itself (docs/caching.md). This
module does the link as a static linker would, for the little LLVM emits for astjit's
code model (`jitdefault`: the large model, where code reaches everything through 64-bit
absolute addresses):

- `link(objects, resolve)` parses each object's section headers, symbols and RELA
  relocations, places the allocated sections (code first, then data and zeroed bss,
  page-aligned apart) in fresh anonymous memory, resolves each undefined symbol among
  the objects' own globals first and then by `resolve(name)`, applies the
  relocations, and makes the code pages read+execute (the data ones stay read+write);
- it refuses (`Unsupported`) anything it does not handle exactly: another machine or
  byte order, a relocation type not in `RELOCATIONS`, thread-local or constructor
  sections, common symbols, a 32-bit field whose value does not fit; and an undefined
  symbol `resolve` does not know (`Unresolved`). The caller then links through LLVM.

Not loaded: `.eh_frame` (unwind tables, which MCJIT registers for C++ exceptions and
debuggers; astjit's code raises no C++ exception and nothing unwinds through it) and
non-allocated sections. The memory is unmapped when the `Image` is collected: whatever
runs the code keeps its Image.
"""
from __future__ import annotations

import struct
import sys
import weakref
from _ctypes import get_errno
from collections.abc import Callable, Sequence

from .. import cabi
from ..cabi import c_void_p

HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
SECTION = struct.Struct("<IIQQQQIIQQ")
SYMBOL = struct.Struct("<IBBHQQ")
RELA = struct.Struct("<QQq")

EM_X86_64, ET_REL = 62, 1
SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 2, 4, 8, 9
REFUSED_TYPES = {14, 15, 16}
"""SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY: code to run at load, which astjit's
modules never have."""
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_TLS = 0x1, 0x2, 0x4, 0x400
SHN_UNDEF, SHN_ABS, SHN_COMMON = 0, 0xFFF1, 0xFFF2
STB_LOCAL, STB_WEAK = 0, 2
STT_SECTION = 3
SKIPPED = frozenset({b".eh_frame"})

R_NONE, R_64, R_PC32, R_PLT32, R_32, R_32S, R_PC64 = 0, 1, 2, 4, 10, 11, 24
R_GOTPCREL, R_GOTPCRELX, R_REX_GOTPCRELX = 9, 41, 42
R_GOTOFF64, R_GOTPC32, R_GOT64, R_GOTPC64 = 25, 26, 27, 29
RELOCATIONS = frozenset({R_NONE, R_64, R_PC32, R_PLT32, R_32, R_32S, R_PC64, R_GOTPCREL,
                         R_GOTPCRELX, R_REX_GOTPCRELX, R_GOTOFF64, R_GOTPC32, R_GOT64,
                         R_GOTPC64})
"""The relocation types applied; any other refuses the object."""
WIDE = frozenset({R_64, R_PC64, R_GOTOFF64, R_GOT64, R_GOTPC64})
"""The relocations writing 8 bytes (the others write 4)."""
GOT_RELOCATIONS = frozenset({R_GOTPCREL, R_GOTPCRELX, R_REX_GOTPCRELX, R_GOT64})
STUB = 16
"""Bytes of a branch stub: `jmp *0(%rip)` then the target's 8-byte address (a PLT32 call
whose target lies beyond 2 GiB goes through one)."""

PAGE = 4096
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20


class Unsupported(Exception):
    """The object is not one this linker handles exactly."""


class Unresolved(LookupError):
    """An undefined symbol resolves nowhere."""


class _Section:
    __slots__ = ("align", "flags", "info", "kind", "link", "name", "offset", "place", "size")

    def __init__(self, name: bytes, kind: int, flags: int, offset: int, size: int, align: int,
                 link: int, info: int) -> None:
        self.name, self.kind, self.flags = name, kind, flags
        self.offset, self.size, self.align = offset, size, align
        self.link, self.info = link, info
        self.place = -1
        """Offset in the image, or -1: not loaded."""


class _Object:
    def __init__(self, data: bytes, sections: list[_Section]) -> None:
        self.data = data
        self.sections = sections
        self.symbols: list[tuple[bytes, int, int, int]] = []
        """(name, binding, type, section index) of each symbol, in the symbol table's order."""
        self.values: list[int] = []
        """The value (offset in its section) of each symbol."""


class Image:
    """Linked code in memory of its own: the addresses of its global symbols. The memory is
    unmapped when the Image is collected."""

    def __init__(self, base: int, size: int, symbols: dict[str, int]) -> None:
        self.base = base
        self.size = size
        self.symbols = symbols
        weakref.finalize(self, _unmap, base, size)

    def __repr__(self) -> str:
        return f"<astjit.cache.elf.Image {self.size} bytes at {self.base:#x}>"


def supported_host() -> bool:
    """Whether this process runs x86-64 Linux code (the objects' machine and ABI)."""
    import os

    return sys.platform.startswith("linux") and os.uname().machine == "x86_64"


def link(objects: Sequence[bytes], resolve: Callable[[str], int | None]) -> Image:
    """The objects linked together into this process (see the module's docstring)."""
    return load(plan(objects), resolve)


def plan(objects: Sequence[bytes]) -> tuple:
    """The objects parsed, checked and laid out, for `load`: (size, data_start, stub_start,
    got_start, code, data, symbols, relocations), plain values `marshal` keeps, so that a
    cached entry is linked without parsing its objects again (a third of a link's
    instructions, in Python). `code` is the image's start (its code sections placed),
    `data` its bytes from `data_start` to the GOT; `symbols` the offset of each global
    symbol; `relocations` (type, offset, target, addend, weak) with the target an offset
    in the image or an external symbol's name."""
    try:
        return _plan(objects)
    except (ValueError, IndexError, KeyError, struct.error) as exc:  # a malformed object
        raise Unsupported(f"malformed object: {exc!r}") from exc


def _plan(objects: Sequence[bytes]) -> tuple:
    parsed = [_parse(data) for data in objects]
    code_size = data_size = stubs = got = 0
    for obj in parsed:  # code first, then data, each section at its alignment
        for section in obj.sections:
            if section.place >= 0 and section.flags & SHF_EXECINSTR:
                code_size = _align(code_size, section.align)
                section.place, code_size = code_size, code_size + section.size
        for section in obj.sections:
            if section.kind == SHT_RELA and obj.sections[section.info].place >= 0:
                kinds = [info & 0xFFFFFFFF for _, info, _ in
                         RELA.iter_unpack(obj.data[section.offset:section.offset + section.size])]
                stubs += sum(kind == R_PLT32 for kind in kinds)
                got += sum(kind in GOT_RELOCATIONS for kind in kinds)
    stub_start = _align(code_size, STUB)
    code_size = stub_start + stubs * STUB
    data_start = _align(code_size, PAGE)
    data_size = data_start
    for obj in parsed:
        for section in obj.sections:
            if section.place >= 0 and not section.flags & SHF_EXECINSTR:
                data_size = _align(data_size, section.align)
                section.place, data_size = data_size, data_size + section.size
    got_start = _align(data_size, 8)
    total = _align(max(got_start + got * 8, 1), PAGE)
    content = bytearray(got_start)  # the stubs, the GOT and the code page's end stay zeros
    for obj in parsed:
        for section in obj.sections:
            if section.place >= 0 and section.kind != SHT_NOBITS:
                content[section.place:section.place + section.size] = \
                    obj.data[section.offset:section.offset + section.size]
    symbols = _globals(parsed)
    relocations = [relocation for obj in parsed
                   for relocation in _relocations(obj, symbols, got_start)]
    return (total, data_start, stub_start, got_start, bytes(content[:stub_start]),
            bytes(content[data_start:]), symbols, relocations)


def load(laid_out: tuple, resolve: Callable[[str], int | None]) -> Image:
    """The objects `plan` laid out, mapped into this process and relocated, their external
    symbols found by `resolve` (Unresolved where it knows one not)."""
    total, data_start, stub_start, got_start, code, data, symbols, relocations = laid_out
    base = _map(total)
    try:
        image = bytearray(total)
        image[:len(code)] = code
        image[data_start:data_start + len(data)] = data
        linker = _Relocator(image, base, stub_start, got_start, resolve)
        for kind, at, target, addend, weak in relocations:
            value = base + target if type(target) is int else linker.external(target, weak)
            linker.apply(kind, at, value, addend)
        cabi.memmove(c_void_p(base), bytes(image), c_void_p(total))
        if data_start and _libc()["mprotect"](c_void_p(base), c_void_p(data_start),
                                               PROT_READ | PROT_EXEC) != 0:
            raise OSError(get_errno(), "mprotect failed")
    except BaseException:
        _unmap(base, total)
        raise
    return Image(base, total, {name: base + offset for name, offset in symbols.items()})


def _parse(data: bytes) -> _Object:
    if len(data) < HEADER.size:
        raise Unsupported("not an ELF object: too short")
    ident, kind, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, shstrndx = \
        HEADER.unpack_from(data)
    if ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
        raise Unsupported("not a little-endian 64-bit ELF object")
    if kind != ET_REL or machine != EM_X86_64 or shentsize != SECTION.size:
        raise Unsupported(f"ELF type {kind}, machine {machine}: not an x86-64 relocatable object")
    if shoff + shnum * SECTION.size > len(data):
        raise Unsupported("truncated section headers")
    headers = [SECTION.unpack_from(data, shoff + k * SECTION.size) for k in range(shnum)]
    names_at = headers[shstrndx][4]
    sections = []
    for k, (name, kind, flags, _, offset, size, link, info, align, _) in enumerate(headers):
        end = data.index(b"\0", names_at + name)
        section = _Section(data[names_at + name:end], kind, flags, offset, size,
                           max(align, 1), link, info)
        if kind in REFUSED_TYPES or flags & SHF_TLS or kind == SHT_REL:
            raise Unsupported(f"section {section.name!r} of type {kind}")
        if kind != SHT_NOBITS and offset + size > len(data):
            raise Unsupported(f"section {section.name!r} past the end of the object")
        if flags & SHF_ALLOC and section.name not in SKIPPED and k:
            if section.align > PAGE:
                raise Unsupported(f"section {section.name!r} aligned to {section.align}")
            section.place = 0
        sections.append(section)
    obj = _Object(data, sections)
    symtabs = [s for s in sections if s.kind == SHT_SYMTAB]
    if len(symtabs) > 1:
        raise Unsupported("several symbol tables")
    for table in symtabs:
        names_at = sections[table.link].offset
        for name, info, _, shndx, value, _ in SYMBOL.iter_unpack(
                data[table.offset:table.offset + table.size]):
            if shndx == SHN_COMMON:
                raise Unsupported("a common symbol")
            end = data.index(b"\0", names_at + name)
            obj.symbols.append((data[names_at + name:end], info >> 4, info & 0xF, shndx))
            obj.values.append(value)
    return obj


def _globals(parsed: list[_Object]) -> dict[str, int]:
    """The objects' defined global and weak symbols -> offset in the image (a strong symbol
    defined twice refuses the link; the first of weak ones wins)."""
    found: dict[str, int] = {}
    strong: set[str] = set()
    for obj in parsed:
        for (name, binding, _, shndx), value in zip(obj.symbols, obj.values):
            if binding == STB_LOCAL or shndx == SHN_UNDEF:
                continue
            offset = _symbol_offset(obj, shndx, value)
            text = name.decode()
            if binding != STB_WEAK:
                if text in strong:
                    raise Unsupported(f"{text} defined twice")
                strong.add(text)
                found[text] = offset
            else:
                found.setdefault(text, offset)
    return found


def _symbol_offset(obj: _Object, shndx: int, value: int) -> int:
    if shndx == SHN_ABS:  # never in astjit's objects: their symbols live in their sections
        raise Unsupported("an absolute symbol")
    if shndx >= len(obj.sections) or obj.sections[shndx].place < 0:
        raise Unsupported("a symbol in a section that is not loaded")
    return obj.sections[shndx].place + value


def _relocations(obj: _Object, symbols: dict[str, int], got: int) -> list[tuple]:
    """The relocations of `obj`'s loaded sections, as `plan` describes them."""
    found = []
    for table in obj.sections:
        if table.kind != SHT_RELA or obj.sections[table.info].place < 0:
            continue
        target = obj.sections[table.info]
        for offset, info, addend in RELA.iter_unpack(
                obj.data[table.offset:table.offset + table.size]):
            kind, index = info & 0xFFFFFFFF, info >> 32
            if kind not in RELOCATIONS:
                raise Unsupported(f"relocation type {kind} in {target.name!r}")
            if kind == R_NONE:
                continue
            if offset + (8 if kind in WIDE else 4) > target.size:
                raise Unsupported("a relocation past its section's end")
            name, binding, symbol_kind, shndx = obj.symbols[index]
            if shndx != SHN_UNDEF and (symbol_kind == STT_SECTION or binding == STB_LOCAL):
                where: int | str = _symbol_offset(obj, shndx, obj.values[index])
            elif shndx != SHN_UNDEF:
                where = symbols[name.decode()]
            elif name == b"_GLOBAL_OFFSET_TABLE_":
                where = got
            else:
                where = symbols.get(name.decode(), name.decode())
            found.append((kind, target.place + offset, where, addend, binding == STB_WEAK))
    return found


class _Relocator:
    def __init__(self, image: bytearray, base: int, stubs: int, got: int,
                 resolve: Callable[[str], int | None]) -> None:
        self.image, self.base = image, base
        self.next_stub, self.got = stubs, got
        self.got_slots: dict[int, int] = {}
        self.resolve = resolve
        self.externals: dict[str, int] = {}

    def external(self, name: str, weak: bool) -> int:
        """The address of the external symbol `name` (0 for a weak one resolving nowhere)."""
        address = self.externals.get(name)
        if address is None:
            address = self.resolve(name)
            if address is None:
                if not weak:
                    raise Unresolved(name)
                address = 0
            self.externals[name] = address
        return address

    def apply(self, kind: int, at: int, value: int, addend: int) -> None:
        place = self.base + at
        if kind == R_64:
            struct.pack_into("<Q", self.image, at, (value + addend) & (2**64 - 1))
        elif kind == R_PC64:
            struct.pack_into("<Q", self.image, at, (value + addend - place) & (2**64 - 1))
        elif kind == R_GOTOFF64:
            struct.pack_into("<Q", self.image, at,
                             (value + addend - self.base - self.got) & (2**64 - 1))
        elif kind == R_GOTPC64:
            struct.pack_into("<Q", self.image, at,
                             (self.base + self.got + addend - place) & (2**64 - 1))
        elif kind == R_GOTPC32:
            self.signed32(at, self.base + self.got + addend - place)
        elif kind in (R_PC32, R_PLT32):
            if kind == R_PLT32 and not -2**31 <= value + addend - place < 2**31:
                value = self.stub(value)
            self.signed32(at, value + addend - place)
        elif kind == R_GOT64:
            struct.pack_into("<Q", self.image, at,
                             (self.got_slot(value) - self.base - self.got + addend) & (2**64 - 1))
        elif kind in GOT_RELOCATIONS:
            self.signed32(at, self.got_slot(value) + addend - place)
        elif kind == R_32:
            if not 0 <= value + addend < 2**32:
                raise Unsupported("an R_X86_64_32 value past 4 GiB")
            struct.pack_into("<I", self.image, at, value + addend)
        else:  # R_32S
            self.signed32(at, value + addend)

    def signed32(self, at: int, number: int) -> None:
        if not -2**31 <= number < 2**31:
            raise Unsupported("a 32-bit relocation out of range")
        struct.pack_into("<i", self.image, at, number)

    def stub(self, target: int) -> int:
        """The address of a new stub jumping to `target`."""
        at, self.next_stub = self.next_stub, self.next_stub + STUB
        self.image[at:at + 6] = b"\xff\x25\x00\x00\x00\x00"  # jmp *0(%rip)
        struct.pack_into("<Q", self.image, at + 6, target)
        return self.base + at

    def got_slot(self, target: int) -> int:
        """The address of the GOT slot holding `target` (one per target)."""
        slot = self.got_slots.get(target)
        if slot is None:
            slot = self.got + 8 * len(self.got_slots)
            struct.pack_into("<Q", self.image, slot, target)
            self.got_slots[target] = slot
        return self.base + slot


def _align(offset: int, align: int) -> int:
    return (offset + align - 1) // align * align


_LIBC: dict = {}
"""The C library's `mmap`, `munmap` and `mprotect` (errno kept), made on first use."""


def _libc() -> dict:
    if not _LIBC:
        _LIBC.update((name, cabi.process_function(name, c_void_p if name == "mmap" else None,
                                                  errno=True))
                     for name in ("mmap", "munmap", "mprotect"))
    return _LIBC


MAP_FAILED = (1 << 64) - 1
"""`mmap`'s `(void *) -1`, as an unsigned address."""


def _map(size: int) -> int:
    address = _libc()["mmap"](None, c_void_p(size), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, c_void_p(0))
    if address is None or address == MAP_FAILED:
        raise OSError(get_errno(), "mmap failed")
    return address


def _unmap(base: int, size: int) -> None:
    _libc()["munmap"](c_void_p(base), c_void_p(size))
