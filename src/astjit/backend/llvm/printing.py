"""The text of an emitted llvmlite module: `module_text(module)`, the same text as
`str(module)`, made with fewer Python calls per instruction.

llvmlite prints an instruction through several layers (a block's format of it, its
cached `__str__`, `_to_string`, `descr` filling a buffer with `str.format`), a large
part of a big kernel's compile: a gradient's glue has thousands of instructions. Here
each common instruction class is one f-string with llvmlite's exact spacing (the space
some leave before their metadata included, stripped where there is none, as llvmlite
strips it), with operands' references and types' texts read from llvmlite's own caches
(`_ref`, `_str`). An instruction of a class not listed (alloca, atomics, vector element
operations ...) is printed by llvmlite, and so is everything outside function bodies.
The formats are those of llvmlite `CHECKED_LLVMLITE`; with another version llvmlite
prints the whole module (tests/backend/test_printing.py compares both texts, every
listed class with and without metadata).
"""
from __future__ import annotations

from collections.abc import Callable

import llvmlite
from llvmlite import ir
from llvmlite.ir._utils import _StrCaching, _StringReferenceCaching

CHECKED_LLVMLITE = "0.50"
"""The llvmlite version (major.minor) whose instruction formats `FORMATS` repeats."""


def module_text(module: ir.Module) -> str:
    """`str(module)`, the bodies of its functions printed by `FORMATS`."""
    if not _formats_apply():
        return str(module)
    lines = [f'; ModuleID = "{module.name}"', f'target triple = "{module.triple}"',
             f'target datalayout = "{module.data_layout}"', ""]
    lines += [t.get_declaration() for t in module.get_identified_types().values()]
    lines += [_function(v) if isinstance(v, ir.Function) and v.blocks else str(v)
              for v in module.globals.values()]
    lines += module._get_metadata_lines()
    return "\n".join(lines)


def _formats_apply() -> bool:
    return llvmlite.__version__.split(".")[:2] == CHECKED_LLVMLITE.split(".")


def _function(function: ir.Function) -> str:
    buf: list[str] = []
    function.descr_prototype(buf)
    buf.append("{\n")
    for block in function.blocks:
        buf.append(f"{block._format_name()}:\n")
        buf += [f"  {instruction_text(i)}\n" for i in block.instructions]
    buf.append("}\n")
    return "".join(buf)


def instruction_text(instruction: ir.Instruction) -> str:
    """`str(instruction)`: its result's name, its operation, then its metadata."""
    kind = type(instruction)
    text = FORMATS.get(kind)
    if text is None:
        return str(instruction)
    operation = text(instruction)
    if instruction.metadata:
        space = " " if kind in SPACED_METADATA else ""
        operation += space + instruction._stringify_metadata(leading_comma=True)
    if isinstance(instruction.type, ir.VoidType):
        return operation.rstrip()
    return f"{_ref(instruction)} = {operation}".rstrip()


_REFERENCE = "_StringReferenceCaching__cached_refstr"
_TEXT = "_StrCaching__cached_str"
"""Where llvmlite `CHECKED_LLVMLITE` caches a value's reference and a type's text."""
_CACHING_REFERENCE = _StringReferenceCaching.get_reference
_CACHING_STR = _StrCaching.__str__


def _ref(value: ir.Value) -> str:
    """`value.get_reference()`, cached where llvmlite caches it, without llvmlite's way of
    finding it missing (an AttributeError caught): most values are referred to for the
    first time here, and constants are made anew for each use, so the exception was
    raised for most operands, a sixth of the printing's time. (Inline assembly and block
    addresses make their reference their own way, each time.)"""
    known = value.__dict__
    reference = known.get(_REFERENCE)
    if reference is None:
        if type(value).get_reference is not _CACHING_REFERENCE:
            return value.get_reference()
        reference = known[_REFERENCE] = value._get_reference()
    return reference


def _str(ty: ir.Type) -> str:
    """`str(ty)`, as `_ref` finds a reference (the types that print themselves another
    way, `double` or `void`, by their own `__str__`)."""
    known = ty.__dict__
    text = known.get(_TEXT)
    if text is None:
        if type(ty).__str__ is not _CACHING_STR:
            return str(ty)
        text = known[_TEXT] = ty._to_string()
    return text


def _typed(value: ir.Value) -> str:
    return f"{_str(value.type)} {_ref(value)}"


def _plain(i: ir.Instruction) -> str:
    opname = " ".join([i.opname, *i.flags]) if i.flags else i.opname
    return f"{opname} {_str(i.type)} {', '.join([_ref(op) for op in i.operands])}"


def _compare(i: ir.CompareInstr) -> str:
    a, b = i.operands
    flags = "".join([" " + flag for flag in i.flags])
    return f"{i.opname}{flags} {i.op} {_str(a.type)} {_ref(a)}, {_ref(b)}"


def _select(i: ir.SelectInstr) -> str:
    condition, a, b = i.operands
    return f"select {' '.join(i.flags)} {_typed(condition)}, {_typed(a)}, {_typed(b)}"


def _branch(i: ir.Terminator) -> str:
    return f"{i.opname} {', '.join([_typed(op) for op in i.operands])}"


def _ret(i: ir.Ret) -> str:
    return f"{i.opname} {_typed(i.operands[0])}" if i.operands else i.opname


def _load(i: ir.LoadInstr) -> str:
    align = "" if i.align is None else f", align {i.align:d}"
    return f"load {_str(i.type)}, {_typed(i.operands[0])}{align}"


def _store(i: ir.StoreInstr) -> str:
    align = "" if i.align is None else f", align {i.align:d}"
    return f"store {_typed(i.operands[0])}, {_typed(i.operands[1])}{align}"


def _gep(i: ir.GEPInstr) -> str:
    op = "getelementptr inbounds" if i.inbounds else "getelementptr"
    indices = ", ".join([_typed(index) for index in i.indices])
    return f"{op} {_str(i.source_etype)}, {_typed(i.pointer)}, {indices}"


def _phi(i: ir.PhiInstr) -> str:
    incomings = ", ".join([f"[{_ref(v)}, {_ref(b)}]"
                           for v, b in i.incomings])
    return f"phi {' '.join(i.flags)} {_str(i.type)} {incomings}"


def _extract(i: ir.ExtractValue) -> str:
    return f"extractvalue {_typed(i.aggregate)}, {', '.join(map(str, i.indices))}"


def _insert(i: ir.InsertValue) -> str:
    return (f"insertvalue {_typed(i.aggregate)}, {_typed(i.value)}, "
            f"{', '.join(map(str, i.indices))}")


def _cast(i: ir.CastInstr) -> str:
    return f"{i.opname} {_typed(i.operands[0])} to {_str(i.type)}"


def _call(i: ir.CallInstr) -> str:
    callee = i.operands[0]
    function_type = callee.function_type
    returns = function_type.return_type
    shown = function_type if function_type.var_arg else returns
    target = f"{_str(shown)} {_ref(callee)}"
    if i.cconv:
        target = f"{i.cconv} {target}"
    tail = f"{i.tail} " if i.tail else ""
    fastmath = " " + " ".join(i.fastmath._to_list(returns)) if i.fastmath else ""
    attributes = " " + " ".join(i.attributes._to_list(returns)) if i.attributes else ""
    args = ", ".join([_argument(i, k, a) for k, a in enumerate(i.operands[1:])])
    return f"{tail}call{fastmath} {target}({args}){attributes}"


def _argument(i: ir.CallInstr, k: int, arg: ir.Value) -> str:
    attributes = i.arg_attributes.get(k)
    shown = " ".join(attributes._to_list(arg.type)) + " " if attributes is not None else ""
    return f"{_str(arg.type)} {shown}{_ref(arg)}"


FORMATS: dict[type, Callable[[ir.Instruction], str]] = {
    ir.Instruction: _plain, ir.ICMPInstr: _compare, ir.FCMPInstr: _compare,
    ir.SelectInstr: _select, ir.Branch: _branch, ir.ConditionalBranch: _branch, ir.Ret: _ret,
    ir.LoadInstr: _load, ir.StoreInstr: _store, ir.GEPInstr: _gep, ir.PhiInstr: _phi,
    ir.ExtractValue: _extract, ir.InsertValue: _insert, ir.CastInstr: _cast,
    ir.CallInstr: _call}
"""Each instruction class printed here (exactly that class, not a subclass) -> its
operation's text after `%name = ` and before its metadata, as llvmlite
`CHECKED_LLVMLITE` writes it."""

SPACED_METADATA = frozenset({ir.ICMPInstr, ir.FCMPInstr, ir.SelectInstr, ir.GEPInstr,
                             ir.PhiInstr, ir.ExtractValue, ir.InsertValue, ir.CastInstr})
"""The classes whose metadata llvmlite writes after a space (`, %b , !tag !0`); the
others' follows the operation directly."""
