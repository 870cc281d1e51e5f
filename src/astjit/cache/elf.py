"""A linker of ELF x86-64 relocatable objects into the process, in Python: no LLVM.

The disk cache keeps the object code LLVM emitted (`CompiledModule.objects`). Linking it
through llvmlite's MCJIT means importing llvmlite and initializing LLVM's native target,
which costs a warm-cache process far more than the link itself (docs/caching.md). This
module does the link as a static linker would, for the little LLVM emits for astjit's
code models (`jitdefault`, the large model, for optimized code: it reaches everything
through 64-bit absolute addresses; the small position-independent one for the glue: calls
through stubs, external data through a GOT, jit/engine.py):

- `plan(objects)` parses each object's section headers, symbols and RELA relocations,
  lays out the allocated sections (code first, then data and zeroed bss, page-aligned
  apart) and resolves each undefined symbol among the objects' own globals: plain
  values a cache entry keeps. `cabi.load_image(plan, resolve)` then places them in
  fresh anonymous memory, resolves the other symbols by `resolve(name)`, applies the
  relocations, and makes the code pages read+execute (the data ones stay read+write):
  a warm load runs that half alone, without importing this module.
  `link(objects, resolve)` is the two;
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
from collections.abc import Callable, Sequence

from ..cabi import (
    GOT_RELOCATIONS,
    PAGE,
    R_32,
    R_32S,
    R_64,
    R_GOT64,
    R_GOTOFF64,
    R_GOTPC32,
    R_GOTPC64,
    R_GOTPCREL,
    R_GOTPCRELX,
    R_PC32,
    R_PC64,
    R_PLT32,
    R_REX_GOTPCRELX,
    STUB,
    Image,
    Unsupported,
    load_image,
    supported_host,
)

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

R_NONE = 0
RELOCATIONS = frozenset({R_NONE, R_64, R_PC32, R_PLT32, R_32, R_32S, R_PC64, R_GOTPCREL,
                         R_GOTPCRELX, R_REX_GOTPCRELX, R_GOTOFF64, R_GOTPC32, R_GOT64,
                         R_GOTPC64})
"""The relocation types applied; any other refuses the object."""
WIDE = frozenset({R_64, R_PC64, R_GOTOFF64, R_GOT64, R_GOTPC64})
"""The relocations writing 8 bytes (the others write 4)."""


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


def link(objects: Sequence[bytes], resolve: Callable[[str], int | None]) -> Image:
    """The objects linked together into this process (see the module's docstring)."""
    return load_image(plan(objects), resolve)


def plan(objects: Sequence[bytes]) -> tuple:
    """The objects parsed, checked and laid out, for `load`: (size, data_start, stub_start,
    got_start, code, data, symbols, relocations), plain values `marshal` keeps, so that a
    cached entry is linked without parsing its objects again (a third of a link's
    instructions, in Python). `code` is the image's start (its code sections placed),
    `data` its bytes from `data_start` to the GOT; `symbols` the offset of each global
    symbol; `relocations` as `grouped` sorts them."""
    try:
        return _plan(objects)
    except (ValueError, IndexError, KeyError, struct.error) as exc:  # a malformed object
        raise Unsupported(f"malformed object: {exc!r}") from exc


def laid_out(objects: Sequence[bytes]) -> tuple | None:
    """`plan(objects)` where this process's host runs the code (`cabi.supported_host`) and
    the linker takes the objects, else None: a process linking them links them by LLVM."""
    if not supported_host():
        return None
    try:
        return plan(objects)
    except Unsupported:
        return None


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
            bytes(content[data_start:]), symbols, grouped(relocations))


def grouped(relocations: list[tuple]) -> tuple[list[int], list, list[tuple]]:
    """`relocations` (type, offset, target, addend, weak), the target an offset in the image
    or an external symbol's name, as `cabi.load_image` applies them: the R_X86_64_64 ones
    within the image as one flat list of (offset, target + addend) pairs, those of external
    symbols as one flat list of (name, weak, offset, addend) quadruples (each name one
    string, which `marshal` then writes once), the others as they are. Nearly all of the
    large code model's relocations are R_X86_64_64, which a load applies in loops of their
    own: one loop over all of them, testing each one's type, was most of a link's work."""
    inside: list[int] = []
    outside: list = []
    others = []
    names: dict[str, str] = {}
    for relocation in relocations:
        kind, at, target, addend, weak = relocation
        if kind != R_64:
            others.append(relocation)
        elif type(target) is int:
            inside += (at, target + addend)
        else:
            outside += (names.setdefault(target, target), weak, at, addend)
    return inside, outside, others


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


def _align(offset: int, align: int) -> int:
    return (offset + align - 1) // align * align


